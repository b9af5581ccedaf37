"""The startd's control interface: dispatch of requests, the client, the listening socket."""

from __future__ import annotations

import os
import socket
import stat
import threading
from collections.abc import Iterator
from pathlib import Path

import pytest
from hypothesis import given
from hypothesis import strategies as st

from epcore.classad import ClassAd, parse_ad
from epcore.errors import EpError
from epcore.runtime import framing
from epcore.runtime.control import ControlError, answer, listen, request
from epcore.startd.control import COMMANDS, StartdClient, dispatch

JOB = parse_ad('[ Owner = "alice"; ClusterId = 1; ProcId = 0; RequestCpus = 1 ]')


class FakeStartd:
    """A StartdControl that records every call and refuses when told to."""

    def __init__(self, refuse: str | None = None) -> None:
        self.calls: list[tuple[str, tuple[object, ...]]] = []
        self.refuse = refuse

    def _record(self, name: str, *arguments: object) -> None:
        self.calls.append((name, arguments))
        if self.refuse is not None:
            raise ControlError(self.refuse)

    def claim(self, slot: str, job: ClassAd, client: str = "", by_priority: bool = False) -> str:
        self._record("claim", slot, job, client, by_priority)
        return "<unix:/x>#1#1#abc"

    def activate(self, claim_id: str, job: ClassAd | None = None) -> None:
        self._record("activate", claim_id, job)

    def release(self, claim_id: str, *, removed: bool = False) -> None:
        self._record("release", claim_id)

    def alive(self, claim_id: str) -> None:
        self._record("alive", claim_id)

    def vacate(self, slot: str, fast: bool = False) -> None:
        self._record("vacate", slot, fast)

    def drain(self, how: str, check: str | None = None, start: str | None = None) -> None:
        self._record("drain", how, check, start)

    def cancel_drain(self) -> None:
        self._record("cancel_drain")

    def query(self, constraint: str | None = None) -> list[ClassAd]:
        self._record("query", constraint)
        return [ClassAd({"Name": "slot1@h", "Cpus": 1}), ClassAd({"Name": "slot2@h"})]

    def reconfig(self) -> None:
        self._record("reconfig")

    def shutdown(self, fast: bool = False) -> None:
        self._record("shutdown", fast)


@pytest.mark.parametrize(
    ("command", "arguments", "call"),
    [
        ("Claim", {"Slot": "slot1", "Job": JOB}, ("claim", ("slot1", JOB, "", False))),
        (
            "Claim",
            {"Slot": "slot1", "Job": JOB, "Client": "submit.example"},
            ("claim", ("slot1", JOB, "submit.example", False)),
        ),
        (
            "Claim",
            {"Slot": "slot1", "Job": JOB, "ByPriority": True},
            ("claim", ("slot1", JOB, "", True)),
        ),
        ("Activate", {"ClaimId": "c1"}, ("activate", ("c1", None))),
        ("Activate", {"ClaimId": "c1", "Job": JOB}, ("activate", ("c1", JOB))),
        ("Release", {"ClaimId": "c1"}, ("release", ("c1",))),
        ("Alive", {"ClaimId": "c1"}, ("alive", ("c1",))),
        ("Vacate", {"Slot": "slot1_2"}, ("vacate", ("slot1_2", False))),
        ("Vacate", {"Slot": "slot1", "Fast": True}, ("vacate", ("slot1", True))),
        ("Vacate", {"Slot": "slot1", "Fast": False}, ("vacate", ("slot1", False))),
        ("Drain", {"How": "graceful"}, ("drain", ("graceful", None, None))),
        (
            "Drain",
            {"How": "quick", "Check": "Cpus > 1", "Start": "false"},
            ("drain", ("quick", "Cpus > 1", "false")),
        ),
        ("CancelDrain", {}, ("cancel_drain", ())),
        ("Query", {}, ("query", (None,))),
        ("Query", {"Constraint": 'State == "Owner"'}, ("query", ('State == "Owner"',))),
        ("Reconfig", {}, ("reconfig", ())),
        ("Shutdown", {}, ("shutdown", (False,))),
        ("Shutdown", {"Fast": True}, ("shutdown", (True,))),
    ],
)
def test_dispatch_calls_the_startd(
    command: str, arguments: dict[str, object], call: tuple[str, tuple[object, ...]]
) -> None:
    """Each command calls the matching StartdControl method with its arguments, Ok = true."""
    startd = FakeStartd()
    reply = dispatch(startd, request(command, **arguments))
    assert reply.evaluate("Ok") is True, reply
    assert "Error" not in reply
    assert startd.calls == [call]


def test_dispatch_covers_every_command() -> None:
    """Every name in COMMANDS is dispatched (none answers 'unknown Command')."""
    for command in COMMANDS:
        reply = dispatch(FakeStartd(), request(command))
        assert "unknown Command" not in str(reply.evaluate("Error")), command


def test_dispatch_results() -> None:
    """Claim answers the ClaimId and Query the ads."""
    startd = FakeStartd()
    claimed = dispatch(startd, request("Claim", Slot="slot1", Job=JOB))
    assert claimed.evaluate("ClaimId") == "<unix:/x>#1#1#abc"
    ads = dispatch(startd, request("Query")).evaluate("Ads")
    assert isinstance(ads, list) and [ad.evaluate("Name") for ad in ads] == ["slot1@h", "slot2@h"]


@pytest.mark.parametrize(
    ("text", "named"),
    [
        ('[ Command = "Claim"; Job = [ A = 1 ] ]', "Slot"),
        ('[ Command = "Claim"; Slot = "slot1" ]', "Job"),
        ('[ Command = "Claim"; Slot = 1; Job = [ A = 1 ] ]', "Slot must be a str"),
        ('[ Command = "Claim"; Slot = "slot1"; Job = "[ A = 1 ]" ]', "Job must be a ClassAd"),
        ('[ Command = "Claim"; Slot = "s"; Job = [ A = 1 ]; Client = 3 ]', "Client must be a str"),
        ('[ Command = "Activate" ]', "ClaimId"),
        ('[ Command = "Release"; ClaimId = 17 ]', "ClaimId must be a str"),
        ('[ Command = "Alive"; ClaimId = undefined ]', "ClaimId"),
        ('[ Command = "Vacate" ]', "Slot"),
        ('[ Command = "Vacate"; Slot = "slot1"; Fast = 1 ]', "Fast must be a bool"),
        ('[ Command = "Vacate"; Slot = "slot1"; Fast = "yes" ]', "Fast must be a bool"),
        ('[ Command = "Drain" ]', "How"),
        ('[ Command = "Drain"; How = "graceful"; Check = 3 ]', "Check must be a str"),
        ('[ Command = "Drain"; How = "graceful"; Check = "Cpus >" ]', "Check is not a ClassAd"),
        ('[ Command = "Drain"; How = "graceful"; Start = "(((" ]', "Start is not a ClassAd"),
        ('[ Command = "Query"; Constraint = "a == == b" ]', "Constraint is not a ClassAd"),
        ('[ Command = "Query"; Constraint = true ]', "Constraint must be a str"),
        ('[ Command = "Shutdown"; Fast = "true" ]', "Fast must be a bool"),
        ('[ Command = "Frobnicate" ]', "unknown Command 'Frobnicate'"),
        ('[ Command = "claim"; Slot = "slot1"; Job = [ A = 1 ] ]', "unknown Command 'claim'"),
        ('[ Slot = "slot1" ]', "unknown Command"),
        ("[ Command = 4 ]", "unknown Command 4"),
    ],
)
def test_bad_requests_answer_ok_false_naming_the_problem(text: str, named: str) -> None:
    """A request with a missing or ill-typed attribute, an expression that does not parse or
    an unknown Command is answered Ok = false with an Error naming it; the startd is not called."""
    startd = FakeStartd()
    reply = dispatch(startd, parse_ad(text))
    assert reply.evaluate("Ok") is False
    assert named in str(reply.evaluate("Error"))
    assert startd.calls == []


def test_missing_attribute_is_reported_as_missing() -> None:
    """A request without a required attribute says that the attribute is needed."""
    reply = dispatch(FakeStartd(), request("Activate"))
    assert "needs attribute ClaimId" in str(reply.evaluate("Error"))


def test_refusal_carries_the_startds_message() -> None:
    """When the startd refuses (an EpError), the answer is Ok = false with its message."""
    reply = dispatch(FakeStartd(refuse="slot1 is not Unclaimed"), request("Vacate", Slot="slot1"))
    assert reply.evaluate("Ok") is False
    assert reply.evaluate("Error") == "slot1 is not Unclaimed"


@given(
    command=st.sampled_from((*COMMANDS, "Bogus")),
    arguments=st.dictionaries(
        st.sampled_from(["Slot", "Job", "ClaimId", "Fast", "How", "Check", "Start", "Constraint"]),
        st.one_of(
            st.text(st.characters(blacklist_categories=("Cs",), blacklist_characters="\x00")),
            st.integers(-(2**63), 2**63 - 1),
            st.booleans(),
            st.just(JOB),
            st.none(),
        ),
    ),
)
def test_dispatch_always_answers(command: str, arguments: dict[str, object]) -> None:
    """Whatever the request holds, dispatch answers with a boolean Ok (an Error when false)."""
    reply = dispatch(FakeStartd(), request(command, **arguments))
    ok = reply.evaluate("Ok")
    assert isinstance(ok, bool)
    assert ok or isinstance(reply.evaluate("Error"), str)


def test_answer_and_request_ads() -> None:
    """answer() and request() build the ads the socket carries (None arguments left out)."""
    assert str(answer(True)) == "[ Ok = true ]"
    reply = answer(False, "no", ClaimId="c")
    assert (reply.evaluate("Ok"), reply.evaluate("Error"), reply.evaluate("ClaimId")) == (
        False,
        "no",
        "c",
    )
    assert sorted(request("Drain", How="fast", Check=None)) == ["Command", "How"]


# -- the client and the socket ------------------------------------------------------------


class Server:
    """A tiny control server: a thread accepting on a listen() socket and calling dispatch."""

    def __init__(self, path: str, startd: FakeStartd) -> None:
        self.sock = listen(path)
        self.sock.setblocking(True)
        self.sock.settimeout(0.2)
        self.startd = startd
        self.stopping = False
        self.raw_reply: bytes | None = None
        self.thread = threading.Thread(target=self._serve)
        self.thread.start()

    def _serve(self) -> None:
        while not self.stopping:
            try:
                conn, _ = self.sock.accept()
            except TimeoutError:
                continue
            with conn:
                conn.settimeout(10)
                data = framing.read_line(conn)
                if not data:  # a probe that only connected (as listen() does)
                    continue
                if self.raw_reply is not None:
                    conn.sendall(self.raw_reply)
                    continue
                try:
                    reply = dispatch(self.startd, framing.decode(data.rstrip(b"\n"), None))
                except framing.ProtocolError as error:
                    reply = answer(False, str(error))
                conn.sendall(framing.encode(reply))

    def stop(self) -> None:
        self.stopping = True
        self.thread.join(10)
        self.sock.close()


@pytest.fixture
def served(tmp_path: Path) -> Iterator[tuple[StartdClient, Server]]:
    """A StartdClient talking to a Server over a real Unix socket."""
    path = str(tmp_path / "startd_control")
    server = Server(path, FakeStartd())
    try:
        yield StartdClient(path, timeout=10), server
    finally:
        server.stop()


def test_client_methods_reach_the_startd(served: tuple[StartdClient, Server]) -> None:
    """Every StartdClient method sends its request over the socket and returns the result."""
    client, server = served
    assert client.claim("slot1", JOB, "schedd") == "<unix:/x>#1#1#abc"
    client.activate("c")
    client.release("c")
    client.alive("c")
    client.vacate("slot1", fast=True)
    client.drain("graceful", check="Cpus > 0")
    client.cancel_drain()
    assert [ad.evaluate("Name") for ad in client.query("true")] == ["slot1@h", "slot2@h"]
    client.reconfig()
    client.shutdown()
    assert server.startd.calls == [
        ("claim", ("slot1", JOB, "schedd", False)),
        ("activate", ("c", None)),
        ("release", ("c",)),
        ("alive", ("c",)),
        ("vacate", ("slot1", True)),
        ("drain", ("graceful", "Cpus > 0", None)),
        ("cancel_drain", ()),
        ("query", ("true",)),
        ("reconfig", ()),
        ("shutdown", (False,)),
    ]


def test_client_raises_the_refusal(served: tuple[StartdClient, Server]) -> None:
    """A refusal comes back to the caller as ControlError with the startd's message."""
    client, server = served
    server.startd.refuse = "claim refused: START is false"
    with pytest.raises(ControlError, match="START is false"):
        client.claim("slot1", JOB)


def test_client_reports_an_unreadable_answer(served: tuple[StartdClient, Server]) -> None:
    """An answer that is not a ClassAd is a ControlError naming the socket."""
    client, server = served
    server.raw_reply = b"\xffgarbage\n"
    with pytest.raises(ControlError, match=r"unreadable answer from .*startd_control"):
        client.reconfig()


def test_client_reports_a_connection_closed_without_answer(
    served: tuple[StartdClient, Server],
) -> None:
    """A startd that closes the connection without answering is reported with the socket."""
    client, server = served
    server.raw_reply = b""
    with pytest.raises(ControlError, match="startd_control"):
        client.reconfig()


def test_client_without_a_startd_names_the_socket(tmp_path: Path) -> None:
    """Calling a socket nobody serves is a ControlError naming its path."""
    path = str(tmp_path / "nobody_here")
    with pytest.raises(ControlError, match=r"cannot reach the startd at .*nobody_here"):
        StartdClient(path, timeout=5).query()


def test_listen_refuses_a_live_socket(served: tuple[StartdClient, Server]) -> None:
    """listen() on a path where a live server answers is a ControlError, and that server keeps
    its socket."""
    client, _ = served
    with pytest.raises(ControlError, match="another daemon is serving"):
        listen(client.path)
    assert len(client.query()) == 2


def test_listen_replaces_a_stale_socket(tmp_path: Path) -> None:
    """A socket file left by a dead server is replaced by a working one, mode 0600."""
    path = str(tmp_path / "startd_control")
    stale = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    stale.bind(path)
    stale.close()
    assert os.path.exists(path)
    server = listen(path)
    try:
        assert stat.S_IMODE(os.stat(path).st_mode) == 0o600
        with socket.socket(socket.AF_UNIX, socket.SOCK_STREAM) as client:
            client.connect(path)
    finally:
        server.close()


def test_listen_does_not_delete_a_regular_file(tmp_path: Path) -> None:
    """A regular file at the control socket's path is refused, not deleted."""
    path = tmp_path / "condor_config"
    path.write_text("START = True\n")
    with pytest.raises(EpError):
        listen(str(path)).close()
    assert path.read_text() == "START = True\n"


CONNECT = """
import socket, sys
s = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
try:
    s.connect(sys.argv[1])
except PermissionError:
    sys.exit(13)
sys.exit(0)
"""


def _connect_as(user, path: str) -> int:
    import subprocess

    done = subprocess.run(
        ["/usr/bin/python3", "-I", "-c", CONNECT, path],
        user=user.uid,
        group=user.gid,
        extra_groups=[],
        timeout=60,
        check=False,
    )
    return done.returncode


@pytest.mark.system
def test_other_users_cannot_connect(execute_dir: Path, slot_users) -> None:
    """Only the owner may connect to the 0600 control socket: another user gets permission
    denied (and can connect once the mode is opened, so the directory is not what stops it)."""
    path = str(execute_dir / "startd_control")
    server = listen(path)
    try:
        assert _connect_as(slot_users[0], path) == 13
        os.chmod(path, 0o666)
        assert _connect_as(slot_users[0], path) == 0
    finally:
        server.close()
        os.unlink(path)


@pytest.mark.system
def test_real_startd_control_socket_is_owner_only(startd_factory, slot_users) -> None:
    """A real startd's control socket has mode 0600 and refuses another user's connection."""
    startd = startd_factory(cpus=1, memory=512)
    info = os.stat(startd.control)
    assert stat.S_ISSOCK(info.st_mode)
    assert stat.S_IMODE(info.st_mode) == 0o600
    assert info.st_uid == os.geteuid()
    assert os.stat(os.path.dirname(startd.control)).st_mode & 0o001
    assert _connect_as(slot_users[1], startd.control) == 13


@pytest.mark.system
@pytest.mark.parametrize(
    "garbage",
    [
        b"this is not a ClassAd\n",
        b"\xff\xfe\xfd\n",
        b'[ Command = "Claim"; Slot = 7 ]\n',
        b'[ Command = "Vacate"; Slot = "slot99" ]\n',
        b'[ Command = "Drain"; How = "sideways" ]\n',
        b'[ Command = "Activate"; ClaimId = "not-a-claim" ]\n',
        b'[ Command = "Query"; Constraint = "1/0 == " ]\n',
        b'[ Command = "Claim"; Slot = "slot1"; Job = [ RequestCpus = "many" ] ]\n',
        b'[ Command = "Claim"; Slot = ""; Job = [ RequestCpus = 1 ] ]\n',
        b'[ Command = "Claim"; Slot = "slot1"; Job = [ RequestCpus = -1; RequestMemory = 64 ] ]\n',
        b'[ Command = "Claim"; Slot = "slot1"; Job = [ RequestCpus = 1; RequestMemory = 1e99 ] ]\n',
        b'[ Command = "Claim"; Slot = "slot1_1"; Job = [ RequestCpus = 1; RequestMemory = 64 ] ]\n',
        b'[ Command = "Drain"; How = "graceful"; Check = "nosuchfunction(1)" ]\n',
        b'[ Command = "Release"; ClaimId = "" ]\n',
        b'[ Command = "Vacate"; Slot = "" ]\n',
    ],
    ids=[
        "prose",
        "bad-utf8",
        "ill-typed",
        "no-such-slot",
        "bad-drain",
        "unknown-claim",
        "bad-constraint",
        "weird-job",
        "empty-slot",
        "negative-cpus",
        "huge-memory",
        "no-such-dynamic-slot",
        "unknown-function",
        "empty-claimid",
        "empty-vacate",
    ],
)
def test_real_startd_answers_malformed_requests(startd_factory, garbage: bytes) -> None:
    """A malformed or impossible request over the real socket is answered Ok = false, and the
    startd keeps serving."""
    startd = startd_factory(cpus=1, memory=512)
    reply = parse_ad(_ask(startd.control, garbage).decode())
    assert reply.evaluate("Ok") is False, reply
    assert isinstance(reply.evaluate("Error"), str)
    assert startd.places() == {"slot1": "Unclaimed/Idle"}
    assert startd.process is not None and startd.process.poll() is None


def _ask(path: str, line: bytes) -> bytes:
    with socket.socket(socket.AF_UNIX, socket.SOCK_STREAM) as sock:
        sock.settimeout(20)
        sock.connect(path)
        sock.sendall(line)
        return framing.read_line(sock)


@pytest.mark.system
@pytest.mark.parametrize(
    "requests",
    [
        'RequestCpus = real("NaN"); RequestMemory = 64; RequestDisk = 1',
        'RequestCpus = 1; RequestMemory = real("INF"); RequestDisk = 1',
        'RequestCpus = 1; RequestMemory = 64; RequestDisk = real("NaN")',
    ],
    ids=["nan-cpus", "infinite-memory", "nan-disk"],
)
def test_real_startd_survives_non_finite_requests(startd_factory, requests: str) -> None:
    """A claim for a job whose request is NaN or infinite is answered and the startd lives
    on: such a request counts as none (as an unusable number in HTCondor's EvalInteger), so
    the default share is carved for Cpus, and memory or disk that must be sized is refused
    with a reason naming it."""
    startd = startd_factory(cpus=1, memory=512)
    line = f'[ Command = "Claim"; Slot = "slot1"; Job = [ {requests} ] ]\n'.encode()
    reply = parse_ad(_ask(startd.control, line).decode())
    assert startd.process is not None and startd.process.poll() is None
    if reply.evaluate("Ok") is True:
        assert "slot1_1" in startd.places()
    else:
        assert "no usable Request" in reply.evaluate("Error")
    assert "slot1" in startd.places()
