"""The schedd's end of file transfer (epcore.schedd.transfer) served by a real CEDAR listener
on loopback, and the starter's end (epcore.starter.fetch) pulling and pushing through it."""

from __future__ import annotations

import logging
import selectors
import socket
import threading
import time
from collections.abc import Callable, Iterator
from pathlib import Path

import attrs
import pytest

from epcore.classad import ClassAd
from epcore.config import Config
from epcore.errors import JobSetupError
from epcore.net.dispatch import CommandTable
from epcore.net.handshake import SecurityServer
from epcore.net.listener import CedarListener
from epcore.net.methods import default_registry
from epcore.schedd.transfer import TransferKeys
from epcore.starter.fetch import RemoteTransfer, remote_transfer
from epcore.starter.identity import JobUser
from epcore.starter.outcome import EXITED, HELD, Ending

CONFIG = """
ALLOW_WRITE = *
ALLOW_READ = *
FILESYSTEM_DOMAIN = execute.example
"""
ROOT = JobUser("root", 0, 0, "/root")


class _Loop:
    def __init__(self) -> None:
        self.selector = selectors.DefaultSelector()

    def close_in_child(self) -> None:
        pass


@pytest.fixture
def served() -> Iterator[TransferKeys]:
    """A TransferKeys answering on a listener turned by a thread until the test ends."""
    config = Config.from_text(CONFIG, subsystem="SCHEDD")
    log = logging.getLogger("test.schedd.transfer")
    holder: list[CedarListener] = []
    keys = TransferKeys(
        lambda: str(holder[0].sinful) if holder else None, host_name="submit.example", log=log
    )
    table = CommandTable()
    for command, handler in keys.handlers().items():
        table.register(command, handler)
    security = SecurityServer(lambda: config, table.levels, methods=default_registry(), log=log)
    listener = CedarListener("127.0.0.1", 0, table, security, config=lambda: config, log=log)
    loop = _Loop()
    listener.open(loop)
    holder.append(listener)
    stop = threading.Event()

    def turn() -> None:
        while not stop.is_set():
            ready = loop.selector.select(0.02)
            listener.ready([(key.fileobj, key.data) for key, _ in ready])
            listener.tick()
            listener.flush()

    thread = threading.Thread(target=turn)
    thread.start()
    try:
        yield keys
    finally:
        stop.set()
        thread.join(10)
        listener.close()


def _job(iwd: Path, **extra: object) -> ClassAd:
    job = ClassAd()
    job["ClusterId"] = 7
    job["ProcId"] = 0
    job["GlobalJobId"] = "submit.example#7.0#1"
    job["Owner"] = "root"
    job["Iwd"] = str(iwd)
    job["Cmd"] = str(iwd / "prog")
    job["Out"] = "out"
    job["ShouldTransferFiles"] = "YES"
    for name, value in extra.items():
        job[name] = value
    return job


def _transfer(keys: TransferKeys, job: ClassAd, sandbox: Path) -> RemoteTransfer:
    offered = keys.offer("7.0", job)
    assert offered is not None
    config = Config.from_text(CONFIG, subsystem="STARTER")
    found = remote_transfer(
        offered, config, slot_name="slot1@exec", user=ROOT, sandbox=str(sandbox), clock=time.time
    )
    assert found is not None
    return found


def _dirs(tmp_path: Path) -> tuple[Path, Path]:
    iwd, sandbox = tmp_path / "iwd", tmp_path / "sandbox"
    iwd.mkdir()
    sandbox.mkdir()
    (iwd / "prog").write_text("#!/bin/sh\n")
    (iwd / "prog").chmod(0o644)
    (iwd / "in.txt").write_text("input")
    (iwd / "tree" / "deep").mkdir(parents=True)
    (iwd / "tree" / "deep" / "f").write_text("deep")
    return iwd, sandbox


def test_input_comes_and_output_goes_over_loopback(served: TransferKeys, tmp_path: Path) -> None:
    """The starter pulls executable, files and a directory, runs with the sandbox ad, and
    pushes stdout and new files back to the Iwd, with the bytes counted each way."""
    iwd, sandbox = _dirs(tmp_path)
    transfer = _transfer(served, _job(iwd, TransferInput="in.txt, tree"), sandbox)
    run_ad = transfer.fetch()
    assert (sandbox / "prog").stat().st_mode & 0o700 == 0o700
    assert (sandbox / "in.txt").read_text() == "input"
    assert (sandbox / "tree" / "deep" / "f").read_text() == "deep"
    assert run_ad.evaluate("Iwd") == str(sandbox)
    assert run_ad.evaluate("Out") == f"{sandbox}/_condor_stdout"
    (sandbox / "_condor_stdout").write_text("printed")
    (sandbox / "new.txt").write_text("new")
    ending = transfer.send_back(Ending(EXITED, "exited", 0))
    assert ending.outcome == EXITED
    assert (iwd / "out").read_text() == "printed"
    assert (iwd / "new.txt").read_text() == "new"
    assert not (iwd / "in.txt.1").exists()
    assert transfer.figures.evaluate("BytesRecvd") == len("#!/bin/sh\n") + len("input") + 4
    assert transfer.figures.evaluate("BytesSent") == len("printed") + len("new")


def test_a_missing_input_is_a_hold_13_naming_it(served: TransferKeys, tmp_path: Path) -> None:
    """An input the schedd cannot read fails the fetch with code 13, errno 2 and HTCondor's
    reason naming the access point and the file."""
    iwd, sandbox = _dirs(tmp_path)
    transfer = _transfer(served, _job(iwd, TransferInput="missing.txt"), sandbox)
    with pytest.raises(JobSetupError) as caught:
        transfer.fetch()
    assert caught.value.hold_code == 13
    assert caught.value.hold_subcode == 2
    assert caught.value.reason == (
        "Transfer input files failure at access point submit.example while sending files to "
        f"execution point slot1@exec. Details: reading from file {iwd}/missing.txt: "
        "(errno 2) No such file or directory"
    )


def test_a_missing_listed_output_is_a_hold_12(served: TransferKeys, tmp_path: Path) -> None:
    """A TransferOutput file the job did not make holds it with 12 and errno 2."""
    iwd, sandbox = _dirs(tmp_path)
    transfer = _transfer(served, _job(iwd, TransferOutput="result"), sandbox)
    transfer.fetch()
    (sandbox / "_condor_stdout").write_text("")
    ending = transfer.send_back(Ending(EXITED, "exited", 0))
    assert ending.outcome == HELD
    assert (ending.hold_code, ending.hold_subcode) == (12, 2)
    assert ending.exit_code == 0
    assert f"reading from file {sandbox}/result" in ending.reason
    assert ending.reason.startswith("Transfer output files failure at execution point slot1@exec")


def test_an_unknown_key_is_refused(served: TransferKeys, tmp_path: Path) -> None:
    """A key the schedd never gave (or took back when the job ended) reaches no file."""
    iwd, sandbox = _dirs(tmp_path)
    transfer = _transfer(served, _job(iwd), sandbox)
    served.forget("7.0")
    with pytest.raises(JobSetupError) as caught:
        transfer.fetch()
    assert caught.value.hold_code == 13
    assert not (sandbox / "prog").exists()


def test_jobs_of_this_domain_or_without_transfer_get_no_transfer(
    served: TransferKeys, tmp_path: Path
) -> None:
    """NO gets no key; IF_NEEDED of the execute host's own domain runs in place."""
    iwd, _ = _dirs(tmp_path)
    assert served.offer("7.0", _job(iwd, ShouldTransferFiles="NO")) is None
    offered = served.offer(
        "7.0", _job(iwd, ShouldTransferFiles="IF_NEEDED", FileSystemDomain="execute.example")
    )
    assert offered is not None
    config = Config.from_text(CONFIG, subsystem="STARTER")
    found = remote_transfer(
        offered, config, slot_name="s", user=ROOT, sandbox=str(tmp_path), clock=time.time
    )
    assert found is None


def _closed_port() -> int:
    """A loopback port nobody listens on (a schedd that is down)."""
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return int(probe.getsockname()[1])


class _Pauses:
    """The retries' sleep and clock: each pause is recorded and moves the clock on;
    ``then`` runs at the first pause (the submit side comes back)."""

    def __init__(self, then: Callable[[], None] = lambda: None) -> None:
        self.now = 1000.0
        self.taken: list[float] = []
        self.then = then

    def sleep(self, seconds: float) -> None:
        self.taken.append(seconds)
        self.now += seconds
        if len(self.taken) == 1:
            self.then()


def test_a_submit_side_down_is_tried_again_until_the_job_lease_ends(
    served: TransferKeys, tmp_path: Path
) -> None:
    """A schedd that cannot be reached is tried again with pauses doubling to 10 s until the
    job's lease (30 s) would pass, then the input's failure holds the job (13)."""
    iwd, sandbox = _dirs(tmp_path)
    transfer = _transfer(served, _job(iwd, JobLeaseDuration=30), sandbox)
    pauses = _Pauses()
    transfer = attrs.evolve(
        transfer, port=_closed_port(), sleep=pauses.sleep, monotonic=lambda: pauses.now
    )
    with pytest.raises(JobSetupError) as caught:
        transfer.fetch()
    assert caught.value.hold_code == 13
    assert pauses.taken == [1.0, 2.0, 4.0, 8.0, 10.0]


def test_the_input_comes_once_a_restarted_schedd_answers(
    served: TransferKeys, tmp_path: Path
) -> None:
    """The schedd is down at the first try and back (the same port, the key restored from
    its queue) at the second: the input comes and the output goes with the same key."""
    iwd, sandbox = _dirs(tmp_path)
    job = _job(iwd, TransferInput="in.txt", JobLeaseDuration=60)
    transfer = _transfer(served, job, sandbox)
    key, port = transfer.key, transfer.port
    served.forget("7.0")  # the schedd's process is gone with its keys
    pauses = _Pauses()

    def restarted() -> None:
        transfer.port = port
        assert served.restore("7.0", job, key)

    pauses.then = restarted
    transfer = attrs.evolve(
        transfer, port=_closed_port(), sleep=pauses.sleep, monotonic=lambda: pauses.now
    )
    transfer.fetch()
    assert pauses.taken == [1.0]
    assert (sandbox / "in.txt").read_text() == "input"
    (sandbox / "_condor_stdout").write_text("printed")
    assert transfer.send_back(Ending(EXITED, "exited", 0)).outcome == EXITED
    assert (iwd / "out").read_text() == "printed"


def test_a_refused_key_or_a_job_without_lease_is_not_tried_again(
    served: TransferKeys, tmp_path: Path
) -> None:
    """Once the schedd took the connection and the key, its refusal is final, and a job
    without JobLeaseDuration is not waited for: neither pauses."""
    iwd, sandbox = _dirs(tmp_path)
    transfer = _transfer(served, _job(iwd, JobLeaseDuration=60), sandbox)
    served.forget("7.0")
    pauses = _Pauses()
    transfer = attrs.evolve(transfer, sleep=pauses.sleep, monotonic=lambda: pauses.now)
    with pytest.raises(JobSetupError):
        transfer.fetch()
    unleased = attrs.evolve(
        _transfer(served, _job(iwd), sandbox), port=_closed_port(), sleep=pauses.sleep
    )
    with pytest.raises(JobSetupError):
        unleased.fetch()
    assert pauses.taken == []
