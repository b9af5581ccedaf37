"""run_blocking: a conversation's consecutive messages go out together, in order, before it
waits for an answer and when it ends."""

from __future__ import annotations

import socket
from collections.abc import Generator

import pytest

from epcore.net.codec import Reader, Writer
from epcore.net.conversation import Receive, Refused, Step, Stream, receive, run_blocking, send
from epcore.net.frames import Framer


class Counting:
    """A socket that counts its sendall calls."""

    def __init__(self, sock: socket.socket) -> None:
        self.sock = sock
        self.sendalls = 0

    def sendall(self, data: bytes) -> None:
        self.sendalls += 1
        self.sock.sendall(data)

    def recv(self, size: int) -> bytes:
        return self.sock.recv(size)


def test_consecutive_messages_go_out_in_one_call_before_the_answer_is_awaited() -> None:
    """Three messages then a wait: one sendall carries the three (the peer reads them in
    order); the two after the answer go out at the end, in a second sendall."""
    ours, theirs = socket.socketpair()
    with ours, theirs:
        stream = Stream(Framer(), ("a", 1), ("b", 2))
        peer = Stream(Framer(), ("b", 2), ("a", 1))

        def conversation() -> Generator[Step, bytes | None, int]:
            for number in (1, 2, 3):
                yield from send(stream.writer().put_int(number))
            reader = yield from receive(stream, "the answer")
            answer = reader.get_int()
            yield from send(stream.writer().put_int(answer + 1))
            yield from send(stream.writer().put_int(answer + 2))
            return answer

        theirs.sendall(peer.framer.frame(Writer().put_int(10).bytes()))
        counting = Counting(ours)
        assert run_blocking(counting, stream, conversation()) == 10  # type: ignore[arg-type]
        assert counting.sendalls == 2
        theirs.settimeout(5)
        got: list[int] = []
        while len(got) < 5:
            peer.framer.receive(theirs.recv(65536))
            while (message := peer.framer.next_message()) is not None:
                got.append(Reader(message).get_int())
        assert got == [1, 2, 3, 11, 12]


def test_a_peer_closing_instead_of_an_optional_answer_gives_none() -> None:
    """A receive that may end gets None when the peer closes without a word; one that may
    not is Refused, naming what it waited for."""

    def conversation(may_end: bool) -> Generator[Step, bytes | None, str]:
        data = yield Receive("the answer to ALIVE", may_end=may_end)
        return "closed" if data is None else "answered"

    for may_end, expected in ((True, "closed"), (False, None)):
        ours, theirs = socket.socketpair()
        with ours, theirs:
            theirs.close()
            stream = Stream(Framer(), ("a", 1), ("b", 2))
            if expected is not None:
                assert run_blocking(ours, stream, conversation(may_end)) == expected
            else:
                with pytest.raises(Refused, match="before the answer to ALIVE"):
                    run_blocking(ours, stream, conversation(may_end))
