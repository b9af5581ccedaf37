"""The pipes and process groups of the programs the startd's loop watches."""

from __future__ import annotations

import os
import selectors
import signal
import socket
import subprocess
import sys
import time

from epcore.runtime import framing, loop_pipes


def test_a_stale_closed_registration_makes_way() -> None:
    """A pipe gets the descriptor number of a closed starter channel still registered in the
    selector: registering the pipe replaces the stale entry instead of failing."""
    with selectors.DefaultSelector() as selector:
        left, right = socket.socketpair()
        channel = framing.Channel(left, None)
        selector.register(channel, selectors.EVENT_READ, "old")
        number = channel.fileno()
        channel.close()
        right.close()
        read, write = os.pipe()
        try:
            if read != number:
                os.dup2(read, number)
                os.close(read)
            with open(number, "rb", buffering=0) as stream:
                loop_pipes.register(selector, stream, selectors.EVENT_READ, "new")
                assert selector.get_key(stream).data == "new"
                assert not os.get_blocking(stream.fileno())
                assert loop_pipes.read_chunk(stream) is None
                os.write(write, b"abc")
                assert loop_pipes.read_chunk(stream) == b"abc"
                os.close(write)
                write = -1
                assert loop_pipes.read_chunk(stream) == b""
                loop_pipes.close(selector, stream)
                assert stream.closed
                assert not selector.get_map()
        finally:
            if write >= 0:
                os.close(write)


def test_a_leader_that_ended_stays_unreaped_until_waited_for() -> None:
    """leader_ended says whether a child has ended without reaping it, and a signal to its
    group reaches the children it started."""
    process = subprocess.Popen(
        [
            sys.executable,
            "-c",
            "import subprocess, time; subprocess.Popen(['sleep', '60']); time.sleep(60)",
        ],
        start_new_session=True,
    )
    try:
        assert not loop_pipes.leader_ended(process.pid)
        loop_pipes.signal_group(process.pid, signal.SIGKILL)
        deadline = time.monotonic() + 10
        while not loop_pipes.leader_ended(process.pid):
            assert time.monotonic() < deadline
            time.sleep(0.01)
        assert loop_pipes.leader_ended(process.pid)  # still a zombie: not reaped
        assert process.wait(5) == -signal.SIGKILL
    finally:
        loop_pipes.signal_group(process.pid, signal.SIGKILL)
        if process.returncode is None:
            process.wait(5)
    loop_pipes.signal_group(process.pid, signal.SIGKILL)  # a gone group is not an error
