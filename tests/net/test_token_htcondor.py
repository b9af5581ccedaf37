"""HTCondor's own client (htcondor2) against epcore's collector with TOKEN and AES-GCM.

The client has only a token file (SEC_TOKEN_DIRECTORY) and the collector's address; it may
authenticate only by TOKEN and requires encryption. The collector runs in a process of its own
(tests/net/token_collector.py) and offers no method but IDTOKENS, so nothing else can stand in
for the token. Each client runs in a fresh process with HTCondor's security debugging on, so a
refusal shows the client's own account of it; the collector's log must say who was refused,
from where, and why.
"""

from __future__ import annotations

import json
import os
import socket
import subprocess
import sys
import threading
import time
from collections.abc import Iterator
from pathlib import Path

import attrs
import pytest

from epcore.config import Config
from epcore.net import client, tokens
from epcore.net.commands import QUERY_STARTD_ADS
from epcore.net.conversation import Refused

HERE = Path(__file__).resolve().parent
ROOT = HERE.parent.parent
sys.path.insert(0, str(HERE))
from token_collector import SECRET  # noqa: E402

REVOKED_JTI = "0badc0de0badc0de0badc0de0badc0de"
SERVER_CONFIG = """\
SEC_PASSWORD_DIRECTORY = {directory}/passwords.d
TRUST_DOMAIN = pool.example
SEC_DEFAULT_AUTHENTICATION = REQUIRED
SEC_DEFAULT_AUTHENTICATION_METHODS = IDTOKENS
SEC_DEFAULT_ENCRYPTION = REQUIRED
SEC_TOKEN_REVOCATION_EXPR = jti == "{revoked}"
ALLOW_READ = *@pool.example
ALLOW_DAEMON = condor@pool.example
"""
CLIENT_CONFIG = """\
COLLECTOR_HOST = 127.0.0.1:{port}
SEC_CLIENT_AUTHENTICATION_METHODS = TOKEN
SEC_CLIENT_ENCRYPTION = REQUIRED
SEC_TOKEN_DIRECTORY = {tokens}
"""
#: What the client process runs: a query, or an advertisement, and prints the outcome.
CLIENT = """
import json, sys, htcondor2, classad2
htcondor2.enable_debug()
try:
    if sys.argv[1] == "query":
        ads = htcondor2.Collector().query(htcondor2.AdTypes.Startd)
        print(json.dumps({"ads": [dict((k, str(v)) for k, v in ad.items()) for ad in ads]}))
    elif sys.argv[1] == "again":
        collector = htcondor2.Collector()
        counts = [len(collector.query(htcondor2.AdTypes.Startd)) for _ in range(3)]
        print(json.dumps({"counts": counts}))
    else:
        ad = classad2.ClassAd({"MyType": "Machine", "Name": "fake@x", "Machine": "x"})
        htcondor2.Collector().advertise([ad], "UPDATE_STARTD_AD")
        print(json.dumps({"advertised": True}))
except Exception as error:
    print(json.dumps({"error": str(error)}))
"""


@attrs.frozen
class Pool:
    """The collector process's directory, port and log."""

    directory: Path
    port: int
    log: Path

    @property
    def settings(self) -> tokens.TokenSettings:
        return tokens.TokenSettings.from_lookup(Config.load(self.directory / "condor_config").get)

    def token(self, name: str, **options: object) -> Path:
        """Write a token signed with the pool's key (unless ``key`` is given) for the client."""
        key = options.pop("key", None) or tokens.read_signing_key(self.settings, "POOL")
        claims: dict[str, object] = {
            "key_id": "POOL",
            "issuer": "pool.example",
            "subject": "alice@pool.example",
            "now": int(time.time()),
            "authorizations": ("READ",),
        }
        claims.update(options)
        directory = self.directory / f"tokens-{name}"
        directory.mkdir(mode=0o700)
        path = directory / name
        path.write_text(tokens.create_token(key, **claims) + "\n")  # type: ignore[arg-type]
        path.chmod(0o600)
        return directory


def _free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return int(probe.getsockname()[1])


@pytest.fixture
def pool(tmp_path: Path) -> Iterator[Pool]:
    """A running collector process answering CEDAR with TOKEN and AES-GCM only."""
    config = tmp_path / "condor_config"
    config.write_text(SERVER_CONFIG.format(directory=tmp_path, revoked=REVOKED_JTI))
    port = _free_port()
    log = tmp_path / "collector.log"
    env = {
        **os.environ,
        "PYTHONPATH": os.pathsep.join([str(ROOT), os.environ.get("PYTHONPATH", "")]),
    }
    with log.open("w") as out:
        process = subprocess.Popen(
            [sys.executable, str(HERE / "token_collector.py"), str(config), str(port)],
            stdout=out,
            stderr=subprocess.STDOUT,
            env=env,
        )
    try:
        deadline = time.monotonic() + 30
        while "listening on" not in log.read_text():
            assert process.poll() is None, log.read_text()
            assert time.monotonic() < deadline, "the collector did not start"
            time.sleep(0.05)
        yield Pool(tmp_path, port, log)
    finally:
        process.terminate()
        process.wait(timeout=30)


@attrs.frozen
class Outcome:
    """What the htcondor2 client printed (its result) and logged (its security account)."""

    result: dict[str, object]
    account: str


def _client(pool: Pool, token_directory: Path, action: str = "query", port: int = 0) -> Outcome:
    config = pool.directory / f"client-{token_directory.name}-{action}"
    config.write_text(CLIENT_CONFIG.format(port=port or pool.port, tokens=token_directory))
    env = {
        key: value for key, value in os.environ.items() if not key.startswith(("_CONDOR", "CONDOR"))
    }
    env |= {"CONDOR_CONFIG": str(config), "_CONDOR_TOOL_DEBUG": "D_SECURITY:2"}
    done = subprocess.run(
        [sys.executable, "-c", CLIENT, action],
        capture_output=True,
        text=True,
        env=env,
        timeout=120,
        check=False,
    )
    lines = [line for line in done.stdout.splitlines() if line.startswith("{")]
    assert lines, done.stdout + done.stderr
    return Outcome(json.loads(lines[-1]), done.stdout + done.stderr)


def _wait_for(log: Path, text: str) -> str:
    deadline = time.monotonic() + 10
    while text not in log.read_text() and time.monotonic() < deadline:
        time.sleep(0.05)
    return log.read_text()


@pytest.mark.oracle
def test_a_client_with_only_a_token_queries_the_collector_encrypted(pool: Pool) -> None:
    """htcondor2 authenticates by the token ``ep token create``'s code made, negotiates AES
    (ECDH) and reads the slot ad through the encrypted stream."""
    outcome = _client(pool, pool.token("alice"))
    ads = outcome.result.get("ads")
    assert isinstance(ads, list) and [ad["Name"] for ad in ads] == ["slot1@token-test"], outcome
    assert "Authentication was a Success" in outcome.account
    assert "IDTOKENS" in outcome.account
    assert "generating AES key for session" in outcome.account


@pytest.mark.oracle
def test_later_queries_resume_the_session_under_aes(pool: Pool) -> None:
    """Three queries from one client process: the first authenticates, the others resume the
    cached session on new connections, each sealed afresh (its own IV and transcript)."""
    outcome = _client(pool, pool.token("alice"), action="again")
    assert outcome.result == {"counts": [1, 1, 1]}, outcome.account[-2000:]
    assert outcome.account.count("resume, NOT reauthenticating") == 2
    assert outcome.account.count("Authentication was a Success") == 1


@pytest.mark.oracle
def test_the_wire_carries_nothing_of_the_ads_in_the_clear(pool: Pool) -> None:
    """A recording proxy between client and collector sees the whole session: the slot's
    attribute values never cross it in the clear, though the client receives them."""
    recorded = bytearray()
    listener = socket.create_server(("127.0.0.1", 0))
    stop = threading.Event()

    def pump(source: socket.socket, target: socket.socket) -> None:
        while data := source.recv(65536):
            recorded.extend(data)
            target.sendall(data)
        target.shutdown(socket.SHUT_WR)

    def proxy() -> None:
        listener.settimeout(0.2)
        while not stop.is_set():
            try:
                client, _ = listener.accept()
            except TimeoutError:
                continue
            server = socket.create_connection(("127.0.0.1", pool.port))
            threading.Thread(target=pump, args=(server, client), daemon=True).start()
            threading.Thread(target=pump, args=(client, server), daemon=True).start()

    thread = threading.Thread(target=proxy, daemon=True)
    thread.start()
    try:
        outcome = _client(pool, pool.token("alice"), port=listener.getsockname()[1])
    finally:
        stop.set()
        thread.join()
        listener.close()
    assert SECRET in json.dumps(outcome.result), outcome.account
    assert b"slot1@token-test" not in recorded and SECRET.encode() not in recorded
    assert b"DC_AUTHENTICATE" not in recorded and b"ECDHPublicKey" in recorded  # the clear part


@pytest.mark.oracle
@pytest.mark.parametrize(
    ("name", "options", "client_says", "server_says"),
    [
        pytest.param(
            "forged",
            {"key": b"not the pool's key" * 4},
            "Hash supplied by server doesn't match",
            "does not match this server's signing key",
            id="wrong key",
        ),
        pytest.param(
            "expired",
            {"now": int(time.time()) - 3600, "lifetime": 60},
            "Server sent status indicating not OK",
            "token has been expired for",
            id="expired",
        ),
        pytest.param(
            "revoked",
            {"jti": REVOKED_JTI},
            "Server sent status indicating not OK",
            f"token {REVOKED_JTI} has been revoked",
            id="revoked",
        ),
    ],
)
def test_a_bad_token_is_refused_and_both_sides_say_why(
    pool: Pool, name: str, options: dict[str, object], client_says: str, server_says: str
) -> None:
    """The query fails; the client's security log tells its side, and the collector's log
    names the token's user, the client's address and the reason."""
    outcome = _client(pool, pool.token(name, **options))
    assert "error" in outcome.result, outcome.result
    assert "Failed to authenticate using IDTOKENS" in outcome.account
    assert client_says in outcome.account
    log = _wait_for(pool.log, server_says)
    assert server_says in log
    assert "token presented for 'alice@pool.example'" in log
    assert "refused QUERY_STARTD_ADS (5) from unauthenticated at <127.0.0.1:" in log


@pytest.mark.oracle
def test_a_read_token_cannot_advertise(pool: Pool) -> None:
    """A token limited to READ authenticates, but the DAEMON-level update is refused and
    the collector logs the limit."""
    outcome = _client(pool, pool.token("reader"), action="advertise")
    log = _wait_for(pool.log, "limited to")
    assert "refused UPDATE_STARTD_AD (0) from alice@pool.example at <127.0.0.1:" in log
    assert "the session is limited to" in log
    assert outcome.result == {"error": "Failed to advertise to collector."}
    assert "DENIED" in outcome.account


def test_epcore_s_own_client_presents_the_token_too(pool: Pool) -> None:
    """query_collector (``ep status -pool``'s client) with the same client configuration picks
    the token for the announced trust domain, seals the session with AES-GCM and gets the ad;
    with a forged token it is refused."""
    good = pool.token("mine")
    config = Config.from_text(
        CLIENT_CONFIG.format(port=pool.port, tokens=good) + "UID_DOMAIN = client.test\n",
        subsystem="TOOL",
    )
    ads = client.query_collector("127.0.0.1", pool.port, QUERY_STARTD_ADS.number, config)
    assert [ad.evaluate("Args") for ad in ads] == [SECRET]
    forged = pool.token("forged-mine", key=b"x" * 64)
    config = Config.from_text(CLIENT_CONFIG.format(port=pool.port, tokens=forged), subsystem="TOOL")
    with pytest.raises(Refused, match="no authentication method succeeded"):
        client.query_collector("127.0.0.1", pool.port, QUERY_STARTD_ADS.number, config)
    assert "token presented for 'alice@pool.example'" in _wait_for(pool.log, "presented")
