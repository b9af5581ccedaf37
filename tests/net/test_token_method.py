"""TOKEN in the handshake: epcore's client and server in memory through real framing, and
what a server announces for it."""

from __future__ import annotations

import io
import logging
import time
from pathlib import Path

import pytest

from epcore.config import Config
from epcore.net import commands, tokens
from epcore.net.aesgcm import AesGcmProtection
from epcore.net.client import start_command
from epcore.net.codec import Writer
from epcore.net.conversation import Refused, Stream
from epcore.net.handshake import SecurityServer
from epcore.net.keyexchange import EcdhClientKeyExchange, EcdhKeyExchange
from epcore.net.methods import MethodContext, default_registry
from epcore.net.token_method import TokenMethod
from epcore.net.tokens import TokenSettings
from tests.net.converse import converse, streams


def _handshake(
    tmp_path: Path,
    command: int,
    authorizations: tuple[str, ...],
    key: bytes | None = None,
    times: int = 1,
) -> tuple[object, object, tuple[Stream, Stream], str]:
    """epcore's client against epcore's server, TOKEN only and encryption required, in memory
    through real framing; the client's and the server's outcomes, the streams and the log."""
    passwords = tmp_path / "passwords.d"
    tokens.create_signing_key(passwords / "POOL", bytes(range(64)))
    server_config = Config.from_text(
        f"SEC_PASSWORD_DIRECTORY = {passwords}\nTRUST_DOMAIN = pool.example\n"
        "SEC_DEFAULT_AUTHENTICATION = REQUIRED\nSEC_DEFAULT_AUTHENTICATION_METHODS = IDTOKENS\n"
        "SEC_DEFAULT_ENCRYPTION = REQUIRED\nALLOW_READ = *\nALLOW_WRITE = *\n"
        "ALLOW_DAEMON = *\n",
        subsystem="COLLECTOR",
    )
    levels = {
        commands.QUERY_STARTD_ADS.number: commands.READ,
        commands.UPDATE_STARTD_AD.number: commands.DAEMON,
        commands.DC_NOP_WRITE.number: commands.WRITE,
    }
    stream = io.StringIO()
    log = logging.getLogger(f"test.token.{tmp_path.name}")
    log.addHandler(logging.StreamHandler(stream))
    log.setLevel(logging.INFO)
    server = SecurityServer(
        lambda: server_config,
        lambda: levels,
        methods=default_registry(),
        log=log,
        key_exchange=EcdhKeyExchange(),
    )
    token_dir = tmp_path / "tokens"
    token_dir.mkdir(mode=0o700)
    signing = key or tokens.read_signing_key(TokenSettings.from_lookup(server_config.get), "POOL")
    (token_dir / "t").write_text(
        tokens.create_token(
            signing,
            key_id="POOL",
            issuer="pool.example",
            subject="bob@pool.example",
            now=int(time.time()),
            authorizations=authorizations,
        )
    )
    (token_dir / "t").chmod(0o600)
    client_config = Config.from_text(
        f"SEC_TOKEN_DIRECTORY = {token_dir}\nSEC_CLIENT_AUTHENTICATION_METHODS = TOKEN\n"
        "SEC_CLIENT_ENCRYPTION = REQUIRED\n",
        subsystem="TOOL",
    )
    for _ in range(times):  # the same server, one new connection each time
        pair = streams()
        client, served = converse(
            start_command(pair[0], command, client_config, key_exchange=EcdhClientKeyExchange()),
            server.start(pair[1]),
            pair,
        )
    return (
        client.result or client.error,
        served.result or served.error,
        pair,
        stream.getvalue(),
    )


def test_epcore_client_and_server_agree_on_token_and_aes(tmp_path: Path) -> None:
    """The server names bob@pool.example authenticated by TOKEN; both framers are sealed with
    AES-GCM after authentication."""
    client, served, pair, _ = _handshake(tmp_path, commands.QUERY_STARTD_ADS.number, ("READ",))
    assert isinstance(served, tuple), served
    peer = served[0]
    assert peer.identity.fqu == "bob@pool.example" and peer.identity.method == "TOKEN"
    assert peer.identity.limits == ("READ",)
    assert client.user == "bob@pool.example" and client.method == "TOKEN"  # type: ignore[attr-defined]
    assert all(isinstance(s.framer.protection, AesGcmProtection) for s in pair)
    assert all(s.encrypted for s in pair)


def test_a_token_s_scopes_and_their_implied_levels_bound_the_session(tmp_path: Path) -> None:
    """A WRITE token may run a READ command (WRITE implies READ) but not a DAEMON one; the
    refusal is logged with the user and the limit."""
    _, served, _, _ = _handshake(tmp_path / "a", commands.QUERY_STARTD_ADS.number, ("WRITE",))
    assert isinstance(served, tuple), served
    client, served, _, log = _handshake(
        tmp_path / "b", commands.UPDATE_STARTD_AD.number, ("WRITE",)
    )
    assert isinstance(served, Refused) and isinstance(client, Refused)
    assert "DENIED" in str(client)
    assert "refused UPDATE_STARTD_AD (0) from bob@pool.example" in log
    assert "limited to READ,WRITE" in log


def test_the_server_refuses_a_forged_token_in_the_handshake(tmp_path: Path) -> None:
    """A token signed with another key fails TOKEN; the log says why and for whom."""
    client, served, _, log = _handshake(
        tmp_path, commands.QUERY_STARTD_ADS.number, ("READ",), key=b"k" * 64
    )
    assert isinstance(served, Refused) and isinstance(client, Refused)
    assert "does not match this server's signing key" in log
    assert "token presented for 'bob@pool.example'" in log


def test_repeated_authentication_failures_cost_one_log_line_per_period(tmp_path: Path) -> None:
    """A client failing TOKEN over and over from one host is logged once (why and for whom)
    until the period passes, as the listener's other refusals are: it cannot flood the log."""
    _, served, _, log = _handshake(
        tmp_path, commands.QUERY_STARTD_ADS.number, ("READ",), key=b"k" * 64, times=5
    )
    assert isinstance(served, Refused)
    assert log.count("does not match this server's signing key") == 1
    assert log.count("authentication failed (it is required)") == 1


def test_a_server_announces_its_trust_domain_and_readable_keys(tmp_path: Path) -> None:
    """TrustDomain always; IssuerKeys (POOL first, then the password directory's keys) only
    when TOKEN is offered; the key names are remembered for a minute."""
    passwords = tmp_path / "passwords.d"
    tokens.create_signing_key(passwords / "POOL")
    config = Config.from_text(f"SEC_PASSWORD_DIRECTORY = {passwords}\nTRUST_DOMAIN = td\n")
    now = [1000.0]
    method = TokenMethod(clock=lambda: now[0])
    assert method.metadata(config, "FS,IDTOKENS") == {"TrustDomain": "td", "IssuerKeys": "POOL"}
    assert method.metadata(config, "FS") == {"TrustDomain": "td"}
    tokens.create_signing_key(passwords / "EXTRA")
    assert method.metadata(config, "TOKEN")["IssuerKeys"] == "POOL"
    now[0] += 61
    assert method.metadata(config, "TOKEN")["IssuerKeys"] == "POOL, EXTRA"


def test_a_malformed_hello_ends_the_connection() -> None:
    """Garbage where the hello belongs raises Refused naming the message: the exchange cannot
    go on in step."""
    server_stream, _ = streams()
    context = MethodContext(server_stream, Config.from_text(""))
    conversation = TokenMethod().server(context)
    next(conversation)
    with pytest.raises(Refused, match="the TOKEN client's hello"):
        conversation.send(Writer().put_int(0).put_int(99999).bytes())
