"""An execute host (``ep run`` with the startd alone, on 127.0.0.3) and a schedd's side
played by the test over CEDAR with the pool's DAEMON token: the job's result comes back to
the address the claim request named, as EP_JOB_RESULT (epcore.links.results), and a claim
whose schedd sends no ALIVE for its short lease is given up by the startd (issue 23)."""

from __future__ import annotations

import logging
import time
from collections.abc import Callable, Generator
from pathlib import Path
from types import SimpleNamespace

import pytest

from epcore.classad import ClassAd
from epcore.config import Config
from epcore.net import commands
from epcore.net.client import connect, start_command
from epcore.net.codec import Writer
from epcore.net.conversation import Step, Stream, receive, run_blocking, send
from epcore.net.sinful import parse_sinful
from epcore.net.tokens import create_signing_key
from epcore.schedd.cedar import result_handlers
from epcore.schedd.results import ResultReceiver
from epcore.testing.pool import POOL_DOMAIN, POOL_SECURITY, PoolProcess, install_token, pool_token
from epcore.testing.system import SlotUser
from tests.links.negotiate_peers import serving

pytestmark = pytest.mark.system

EXECUTE_IP = "127.0.0.3"
EXECUTE = (
    POOL_SECURITY
    + """
DAEMON_LIST = MASTER STARTD
NETWORK_INTERFACE = {ip}
COLLECTOR_HOST = 127.0.0.2:9
SEC_PASSWORD_DIRECTORY = {keys}
STARTD_ADDRESS_FILE = $(LOCAL_DIR)/startd_address
"""
)
#: The test's schedd side: the pool's key checks the startd's token.
SCHEDD_SIDE = POOL_SECURITY + "SEC_PASSWORD_DIRECTORY = {keys}\nCEDAR_CLIENT_TIMEOUT = 10\n"


def _execute_host(factory: Callable[..., PoolProcess], keys: Path) -> tuple[PoolProcess, Config]:
    """The execute host started with the pool's token; the configuration the test's side
    speaks with (the same token)."""
    create_signing_key(keys / "POOL")
    host = factory(EXECUTE.format(ip=EXECUTE_IP, keys=keys), cpus=1, start=False)
    install_token(host.directory, pool_token(host.config_path))
    host.launch()
    return host, Config.load(host.config_path)


def _command(
    config: Config, address: str, command: int, body: Callable[[Writer], object], answers: int
) -> list[int | str]:
    """One command to the startd at ``address`` with the message ``body`` writes; the
    answer's fields (``answers``: 1, an int; 2, an int and a string)."""
    where = parse_sinful(address)
    sock, stream = connect(where.host, where.port, 10)

    def talk(stream: Stream) -> Generator[Step, bytes | None, list[int | str]]:
        yield from start_command(stream, command, config, subsystem="SCHEDD")
        writer = stream.writer()
        body(writer)
        yield from send(writer)
        reader = yield from receive(stream, "the answer")
        found: list[int | str] = [reader.get_int("the answer")]
        if answers == 2:
            found.append(reader.get_string("the answer's text"))
        return found

    with sock:
        sock.settimeout(10)
        return run_blocking(sock, stream, talk(stream))


def _job(user: SlotUser, command: str, arguments: str, lease: int) -> ClassAd:
    return ClassAd(
        {
            "ClusterId": 1,
            "ProcId": 0,
            "Owner": user.name,
            "User": f"{user.name}@{POOL_DOMAIN}",
            "Cmd": command,
            "Arguments": arguments,
            "Iwd": "/tmp",
            "JobUniverse": 5,
            "RequestCpus": 1,
            "RequestMemory": 64,
            "RequestDisk": 1024,
            "JobLeaseDuration": lease,
        }
    )


def _run_remotely(
    pool_factory: Callable[..., PoolProcess], keys: Path, job: ClassAd, wait: float
) -> tuple[PoolProcess, str, list[ClassAd]]:
    """Start the execute host, claim its slot for ``job`` naming a listener of the test's
    as the schedd, activate it, and wait up to ``wait`` seconds for a result there; the
    host, the claim id and the results heard (sending no ALIVE meanwhile)."""
    host, config = _execute_host(pool_factory, keys)
    address_file = host.directory / "startd_address"
    host.wait_for(address_file.exists, 60, "the startd's address file")
    startd = address_file.read_text().splitlines()[0]
    heard: list[ClassAd] = []
    running: dict[str, object] = {}
    receiver = ResultReceiver(
        SimpleNamespace(running=running),  # type: ignore[arg-type]  # what receive reads
        lambda result, now: heard.append(result),
        logging.getLogger("test.results"),
    )
    handlers = result_handlers(receiver, log=logging.getLogger("test.results"), clock=time.time)
    with serving(handlers, SCHEDD_SIDE.format(keys=keys)) as served:

        def schedd_side() -> str:
            def request(writer: Writer) -> None:
                writer.put_string("slot1").put_classad(job).put_string(served.address)
                writer.put_int(300).put_int(0).put_int(0)

            claimed = _command(config, startd, commands.REQUEST_CLAIM.number, request, 2)
            assert claimed[0] == 1, claimed
            claim_id = str(claimed[1])
            running[claim_id] = SimpleNamespace(job_id="1.0")

            def activation(writer: Writer) -> None:
                writer.put_string(claim_id).put_int(0).put_classad(ClassAd())

            assert _command(config, startd, commands.ACTIVATE_CLAIM.number, activation, 1) == [1]
            deadline = time.monotonic() + wait
            while not heard and time.monotonic() < deadline:
                host.check_alive()
                time.sleep(0.2)
            return claim_id

        claim_id = served.call(schedd_side)
    return host, claim_id, heard


def test_a_remote_jobs_result_comes_back_to_its_claims_schedd(
    pool_factory: Callable[..., PoolProcess],
    slot_users: tuple[SlotUser, ...],
    shared_dir: Path,
) -> None:
    """A claim requested with the test's address and activated with /bin/true: the
    execute host hands the job's result (exited, its claim id) to that address over
    EP_JOB_RESULT, authenticated with its DAEMON token, and its StartLog says so."""
    job = _job(slot_users[0], "/bin/true", "", 2400)
    host, claim_id, heard = _run_remotely(pool_factory, shared_dir / "keys", job, 60)
    assert len(heard) == 1
    assert heard[0].evaluate("ClaimId") == claim_id
    assert heard[0].evaluate("JobOutcome") == "exited", heard[0]
    assert "result of job 1.0 delivered to the schedd at" in host.log("StartLog")


def test_a_claim_whose_schedd_sends_no_alive_is_vacated_at_its_lease(
    pool_factory: Callable[..., PoolProcess],
    slot_users: tuple[SlotUser, ...],
    shared_dir: Path,
) -> None:
    """A job of a 60 s sleep with a 4 s lease, whose schedd never sends ALIVE: the startd
    evicts it when the claim lease expires (seconds, not the sleep's minute), releases the
    slot, and hands the eviction's result to the claim's schedd."""
    job = _job(slot_users[0], "/bin/sleep", "60", 4)
    started = time.monotonic()
    host, claim_id, heard = _run_remotely(pool_factory, shared_dir / "keys", job, 40)
    assert time.monotonic() - started < 30
    assert len(heard) == 1
    assert heard[0].evaluate("ClaimId") == claim_id
    assert heard[0].evaluate("JobOutcome") == "evicted", heard[0]
    after = host.log("StartLog").split("(the claim lease expired)", 1)[1]
    assert "the claim ended" in after
