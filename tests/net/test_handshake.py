"""DC_AUTHENTICATE, server side, against epcore's client side through real framing."""

from __future__ import annotations

import logging
from collections.abc import Callable, Generator

import pytest

from epcore.classad import ClassAd
from epcore.config import Config
from epcore.net import commands
from epcore.net.client import start_command
from epcore.net.codec import Reader
from epcore.net.conversation import Refused, Step, Stream, receive, send
from epcore.net.frames import PacketProtection, Transcript
from epcore.net.handshake import Peer, SecurityServer
from epcore.net.methods import FileSystemMethod, MethodContext, MethodRegistry, default_registry
from tests.net.converse import converse, streams

SERVER_CONFIG = """
ALLOW_READ = *
ALLOW_DAEMON = condor@*
SEC_DEFAULT_AUTHENTICATION = REQUIRED
SEC_READ_AUTHENTICATION = OPTIONAL
UID_DOMAIN = pool.test
"""


def _server(text: str = SERVER_CONFIG, **kwargs: object) -> SecurityServer:
    """A server answering a READ and a DAEMON command and DC_NOP_READ, configured by ``text``."""
    config = Config.from_text(text, subsystem="COLLECTOR")
    levels = {
        commands.QUERY_STARTD_ADS.number: commands.READ,
        commands.UPDATE_STARTD_AD.number: commands.DAEMON,
        commands.DC_NOP_READ.number: commands.READ,
    }
    return SecurityServer(
        lambda: config,
        lambda: levels,
        methods=default_registry(),
        log=logging.getLogger("test.cedar"),
        **kwargs,  # type: ignore[arg-type]
    )


def _client_config(text: str = "") -> Config:
    return Config.from_text(text + "\nUID_DOMAIN = pool.test", subsystem="TOOL")


def _start(
    server: SecurityServer, command: int, client_text: str = ""
) -> tuple[object, object, Stream]:
    pair = streams()
    client, served = converse(
        start_command(pair[0], command, _client_config(client_text)), server.start(pair[1]), pair
    )
    return client.result or client.error, served.result or served.error, pair[1]


def test_fs_authenticates_the_owner_of_the_directory() -> None:
    """A DAEMON command authenticates by FS; root's directory maps to the pool's user."""
    client, served, _ = _start(_server(), commands.UPDATE_STARTD_AD.number)
    assert isinstance(served, tuple)
    peer, rest = served
    assert isinstance(peer, Peer)
    assert peer.user == "condor@pool.test"
    assert peer.identity is not None and peer.identity.method == "FS"
    assert rest is None
    assert client.user == "condor@pool.test" and client.method == "FS"  # type: ignore[attr-defined]


def test_read_needs_no_authentication_when_optional() -> None:
    """With READ authentication OPTIONAL on both sides nobody authenticates; ALLOW_READ admits."""
    client, served, _ = _start(_server(), commands.QUERY_STARTD_ADS.number)
    peer, _ = served  # type: ignore[misc]
    assert peer.identity is None
    assert client.method is None  # type: ignore[attr-defined]


def test_denied_peer_is_told_and_the_refusal_logged(caplog: pytest.LogCaptureFixture) -> None:
    """A peer outside ALLOW_DAEMON gets DENIED; the log names who, where, what and why."""
    server = _server(SERVER_CONFIG.replace("condor@*", "alice@*"))
    with caplog.at_level(logging.WARNING):
        client, served, _ = _start(server, commands.UPDATE_STARTD_AD.number)
    assert isinstance(client, Refused) and "'DENIED'" in str(client)
    assert isinstance(served, Refused)
    assert (
        "refused UPDATE_STARTD_AD (0) from condor@pool.test at <127.0.0.1:40000>: "
        "no entry of ALLOW_DAEMON matches condor@pool.test at 127.0.0.1"
    ) in caplog.text


def test_unknown_command_ends_the_connection(caplog: pytest.LogCaptureFixture) -> None:
    """A command nobody answers ends the connection before negotiation, as HTCondor's does."""
    with caplog.at_level(logging.WARNING):
        client, served, _ = _start(_server(), 4242)
    assert isinstance(served, Refused)
    assert isinstance(client, Refused)
    assert "command 4242 from unauthenticated at <127.0.0.1:40000>: no such command here" in (
        caplog.text
    )


def test_claimtobe_works_only_where_configured() -> None:
    """CLAIMTOBE is believed when the level names it, and the session is limited to that level."""
    text = SERVER_CONFIG + "SEC_DAEMON_AUTHENTICATION_METHODS = CLAIMTOBE\nALLOW_DAEMON = alice@*"
    client_text = "SEC_CLIENT_AUTHENTICATION_METHODS = CLAIMTOBE\nSEC_CLAIMTOBE_USER = alice"
    client, served, _ = _start(_server(text), commands.UPDATE_STARTD_AD.number, client_text)
    peer, _ = served  # type: ignore[misc]
    assert peer.user == "alice@pool.test" and peer.identity.method == "CLAIMTOBE"
    # Not named by the server's policy: the client's CLAIMTOBE finds no common method.
    client, served, _ = _start(_server(), commands.UPDATE_STARTD_AD.number, client_text)
    assert isinstance(served, Refused) and "authentication failed (it is required)" in str(served)
    assert isinstance(client, Refused) and "no authentication method succeeded" in str(client)


def test_session_resumes_and_unknown_sessions_are_refused() -> None:
    """A client naming a live session id resumes it (AUTHORIZED, same user); an unknown id
    gets SID_NOT_FOUND."""
    server = _server()
    client, _, _ = _start(server, commands.UPDATE_STARTD_AD.number)
    sid = client.sid  # type: ignore[attr-defined]

    def resume(session: str) -> Callable[[Stream], Generator[Step, bytes | None, ClassAd]]:
        def conversation(stream: Stream) -> Generator[Step, bytes | None, ClassAd]:
            ad = ClassAd(
                {
                    "Command": commands.UPDATE_STARTD_AD.number,
                    "UseSession": "YES",
                    "Sid": session,
                    "ResumeResponse": True,
                }
            )
            yield from send(
                stream.writer().put_int(commands.DC_AUTHENTICATE.number).put_classad(ad)
            )
            reader = yield from receive(stream, "the answer")
            return reader.get_classad()

        return conversation

    pair = streams()
    client_side, served = converse(resume(sid)(pair[0]), server.start(pair[1]), pair)
    assert client_side.result.evaluate("ReturnCode") == "AUTHORIZED"
    assert served.result[0].user == "condor@pool.test"
    pair = streams()
    client_side, served = converse(resume("nope")(pair[0]), server.start(pair[1]), pair)
    assert client_side.result.evaluate("ReturnCode") == "SID_NOT_FOUND"
    assert isinstance(served.error, Refused)


def test_required_encryption_without_crypto_is_refused(caplog: pytest.LogCaptureFixture) -> None:
    """A client requiring encryption from a server with no key exchange is refused, logged."""

    def client(stream: Stream) -> Generator[Step, bytes | None, None]:
        ad = ClassAd(
            {
                "Command": commands.QUERY_STARTD_ADS.number,
                "Encryption": "REQUIRED",
                "Authentication": "OPTIONAL",
                "CryptoMethods": "AES",
                "AuthMethods": "FS",
            }
        )
        yield from send(stream.writer().put_int(commands.DC_AUTHENTICATE.number).put_classad(ad))
        yield from receive(stream, "the actions")

    pair = streams()
    with caplog.at_level(logging.WARNING):
        _, served = converse(client(pair[0]), _server().start(pair[1]), pair)
    assert isinstance(served.error, Refused)
    assert "security negotiation failed: encryption" in caplog.text


class _Xor:
    """A stand-in protection for the seam: XOR and a one-byte tag."""

    def sealed_size(self, size: int) -> int:
        return size + 1

    def seal(self, head: bytes, body: bytes, transcript: Transcript) -> bytes:
        return bytes(b ^ 0x33 for b in body) + b"T"

    def open(self, head: bytes, body: bytes, transcript: Transcript) -> bytes:
        assert body[-1:] == b"T"
        return bytes(b ^ 0x33 for b in body[:-1])


class _FakeExchange:
    """A key exchange that records what it was given and makes _Xor protections."""

    methods = ("AES",)

    def __init__(self) -> None:
        self.started: list[tuple[str, str]] = []

    def start(
        self, client_public_key: str, method: str
    ) -> tuple[str, Callable[[bool, bool], PacketProtection | None]]:
        self.started.append((client_public_key, method))
        return "SERVER-PUBLIC", lambda encrypt, integrity: _Xor() if encrypt or integrity else None


def test_key_exchange_seam_protects_the_stream_after_authentication() -> None:
    """With a key exchange, the server answers its public key and AES, turns encryption on
    after authenticating, and every later packet (the post-auth ad) is sealed."""
    exchange = _FakeExchange()
    server = _server(key_exchange=exchange)

    def client(stream: Stream) -> Generator[Step, bytes | None, tuple[ClassAd, ClassAd]]:
        ad = ClassAd(
            {
                "Command": commands.UPDATE_STARTD_AD.number,
                "Authentication": "REQUIRED",
                "AuthMethods": "FS",
                "CryptoMethods": "AES,BLOWFISH",
                "Encryption": "OPTIONAL",
                "Integrity": "OPTIONAL",
                "ECDHPublicKey": "CLIENT-PUBLIC",
                "NewSession": "YES",
            }
        )
        yield from send(stream.writer().put_int(commands.DC_AUTHENTICATE.number).put_classad(ad))
        actions = (yield from receive(stream, "actions")).get_classad()
        yield from send(stream.writer().put_int(4))
        assert (yield from receive(stream, "method")).get_int() == 4
        assert (yield from FileSystemMethod().client(MethodContext(stream, _client_config())))
        assert (yield from receive(stream, "no key")).get_int() == 0
        stream.framer.protect(_Xor())
        stream.encrypted = True
        verdict = (yield from receive(stream, "verdict")).get_classad()
        return actions, verdict

    pair = streams()
    client_side, _ = converse(client(pair[0]), server.start(pair[1]), pair)
    actions, verdict = client_side.result
    assert exchange.started == [("CLIENT-PUBLIC", "AES")]
    assert actions.evaluate("ECDHPublicKey") == "SERVER-PUBLIC"
    assert actions.evaluate("CryptoMethods") == "AES"
    assert actions.evaluate("Encryption") == "YES" and actions.evaluate("Integrity") == "YES"
    assert verdict.evaluate("ReturnCode") == "AUTHORIZED"
    assert pair[1].encrypted and pair[1].framer.protection is not None


def test_raw_command_is_authorized_as_unauthenticated() -> None:
    """A command sent without DC_AUTHENTICATE runs as unauthenticated, its payload after it."""
    server = _server()

    def client(stream: Stream) -> Generator[Step, bytes | None, None]:
        writer = stream.writer().put_int(commands.QUERY_STARTD_ADS.number).put_string("payload")
        yield from send(writer)

    pair = streams()
    _, served = converse(client(pair[0]), server.start(pair[1]), pair)
    peer, rest = served.result
    assert peer.identity is None
    assert isinstance(rest, Reader) and rest.get_string() == "payload"
    # DAEMON commands need ALLOW_DAEMON, which the unauthenticated user does not match.
    pair = streams()

    def daemon_client(stream: Stream) -> Generator[Step, bytes | None, None]:
        yield from send(stream.writer().put_int(commands.UPDATE_STARTD_AD.number))

    _, served = converse(daemon_client(pair[0]), server.start(pair[1]), pair)
    assert isinstance(served.error, Refused)


def test_method_registry_takes_new_methods() -> None:
    """A method registered by another module is found by name and by bit."""
    registry = MethodRegistry()
    registry.register(FileSystemMethod())
    assert registry.get("fs") is registry.by_bit(4)
    assert registry.get("IDTOKENS") is None


class _FakeClientExchange:
    """The client's half of the stand-in key exchange."""

    methods = ("AES",)

    def __init__(self) -> None:
        self.finished: list[tuple[str, str]] = []

    def public_key(self) -> str:
        return "CLIENT-PUBLIC"

    def finish(
        self, server_public_key: str, method: str
    ) -> Callable[[bool, bool], PacketProtection | None]:
        self.finished.append((server_public_key, method))
        return lambda encrypt, integrity: _Xor() if encrypt or integrity else None


def test_both_sides_protect_the_stream_through_the_key_exchange_seams() -> None:
    """epcore's client and server with key exchanges agree on AES, authenticate by FS, then
    seal every packet both ways: the verdict and the command's payload arrive intact and
    no clear text of them is on the wire."""
    server = _server(key_exchange=_FakeExchange())
    exchange = _FakeClientExchange()
    pair = streams()
    wire: list[bytes] = []
    original = pair[0].framer.frame

    def recording(message: bytes) -> bytes:
        framed = original(message)
        wire.append(framed)
        return framed

    pair[0].framer.frame = recording  # type: ignore[method-assign]

    def client(stream: Stream) -> Generator[Step, bytes | None, object]:
        session = yield from start_command(
            stream, commands.UPDATE_STARTD_AD.number, _client_config(), key_exchange=exchange
        )
        yield from send(stream.writer().put_string("the payload"))
        return session

    def served(stream: Stream) -> Generator[Step, bytes | None, str]:
        _, first = yield from server.start(stream)
        assert first is None
        reader = yield from receive(stream, "the payload")
        return reader.get_string()

    client_side, server_side = converse(client(pair[0]), served(pair[1]), pair)
    assert client_side.error is None and server_side.error is None
    assert client_side.result.user == "condor@pool.test"
    assert server_side.result == "the payload"
    assert exchange.finished == [("SERVER-PUBLIC", "AES")]
    assert pair[0].encrypted and pair[1].encrypted
    assert not any(b"the payload" in framed for framed in wire)
