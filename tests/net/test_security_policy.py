"""The SEC_<level>_* policy and its reconciliation, as HTCondor negotiates it."""

from __future__ import annotations

import json
import os
import subprocess
import sys

import pytest

from epcore.classad import ClassAd
from epcore.config import Config
from epcore.net import commands
from epcore.net.client import start_command
from epcore.net.codec import Reader
from epcore.net.commands import READ
from epcore.net.conversation import Send, Stream
from epcore.net.frames import Framer
from epcore.net.policy import (
    DEFAULT_CRYPTO,
    DEFAULT_METHODS,
    NEVER,
    OPTIONAL,
    PREFERRED,
    REQUIRED,
    LevelPolicy,
    PolicyError,
    reconcile,
)

# HTCondor's table (condor_secman.cpp): client, server -> YES / NO / fail (None).
TABLE = [
    (REQUIRED, REQUIRED, "YES"),
    (REQUIRED, PREFERRED, "YES"),
    (REQUIRED, OPTIONAL, "YES"),
    (REQUIRED, NEVER, None),
    (PREFERRED, REQUIRED, "YES"),
    (PREFERRED, PREFERRED, "YES"),
    (PREFERRED, OPTIONAL, "YES"),
    (PREFERRED, NEVER, "NO"),
    (OPTIONAL, REQUIRED, "YES"),
    (OPTIONAL, PREFERRED, "YES"),
    (OPTIONAL, OPTIONAL, "NO"),
    (OPTIONAL, NEVER, "NO"),
    (NEVER, REQUIRED, None),
    (NEVER, PREFERRED, "NO"),
    (NEVER, OPTIONAL, "NO"),
    (NEVER, NEVER, "NO"),
]


def _ad(**values: object) -> ClassAd:
    return ClassAd(values)


@pytest.mark.parametrize(("client", "server", "result"), TABLE)
def test_reconciliation_follows_htcondors_table(
    client: str, server: str, result: str | None
) -> None:
    """Each pair of requirements gives HTCondor's action, or a PolicyError where it fails."""
    client_ad = _ad(Authentication=client, Encryption=client, Integrity=client)
    server_ad = _ad(Authentication=server, Encryption=server, Integrity=server)
    if result is None:
        with pytest.raises(PolicyError):
            reconcile(client_ad, server_ad)
        return
    actions = reconcile(client_ad, server_ad)
    for name in ("Authentication", "Encryption", "Integrity"):
        assert actions.evaluate(name) == result
    assert actions.evaluate("Enact") == "YES"


def test_methods_are_the_common_ones_in_the_servers_order() -> None:
    """AuthMethodsList is the methods both name, in the server's order; the token method's
    spellings match each other."""
    actions = reconcile(
        _ad(AuthMethods="FS,TOKEN,SSL", Authentication="REQUIRED"),
        _ad(AuthMethods="IDTOKENS,SSL,FS", Authentication="OPTIONAL"),
    )
    assert actions.evaluate("AuthMethodsList") == "TOKEN,SSL,FS"
    assert actions.evaluate("AuthMethods") == "TOKEN"


def test_aes_with_authentication_turns_encryption_and_integrity_on() -> None:
    """As in HTCondor 9+: authenticating with AES first among the crypto methods means both on."""
    actions = reconcile(
        _ad(Authentication="REQUIRED", CryptoMethods="AES,BLOWFISH", Encryption="OPTIONAL"),
        _ad(Authentication="OPTIONAL", CryptoMethods="AES", Encryption="OPTIONAL"),
    )
    assert actions.evaluate("CryptoMethods") == "AES"
    assert actions.evaluate("Encryption") == "YES" and actions.evaluate("Integrity") == "YES"


def test_shorter_duration_and_lease_win() -> None:
    """The session lasts the shorter duration; a lease of 0 leaves the other side's."""
    actions = reconcile(
        _ad(SessionDuration="60", SessionLease=0), _ad(SessionDuration="86400", SessionLease=3600)
    )
    assert actions.evaluate("SessionDuration") == "60"
    assert actions.evaluate("SessionLease") == 3600


def test_old_client_is_compared_on_authentication_alone() -> None:
    """A client without AuthenticationNew is reconciled against the server's Authentication."""
    actions = reconcile(
        _ad(Authentication="OPTIONAL"),
        _ad(Authentication="OPTIONAL", AuthenticationNew="REQUIRED"),
    )
    assert actions.evaluate("Authentication") == "NO"


def test_level_falls_back_to_default_then_htcondors_defaults() -> None:
    """SEC_<level>_* wins, then SEC_DEFAULT_*, then HTCondor's built-in defaults."""
    config = Config.from_text(
        "SEC_DEFAULT_AUTHENTICATION = REQUIRED\nSEC_READ_ENCRYPTION = never", subsystem="COLLECTOR"
    )
    policy = LevelPolicy.from_config(config, READ)
    assert policy.authentication == REQUIRED
    assert policy.encryption == NEVER
    assert policy.integrity == OPTIONAL
    assert policy.negotiation == PREFERRED
    assert policy.methods == DEFAULT_METHODS
    assert policy.crypto_methods == DEFAULT_CRYPTO
    assert policy.session_duration == 86400 and policy.session_lease == 3600


def test_only_runnable_methods_are_offered_and_required_crypto_without_any_fails() -> None:
    """Methods and crypto this process cannot run are left out; requiring crypto then fails
    naming the knob."""
    config = Config.from_text("SEC_READ_INTEGRITY = REQUIRED", subsystem="COLLECTOR")
    with pytest.raises(PolicyError, match="SEC_READ_INTEGRITY is REQUIRED"):
        LevelPolicy.from_config(config, READ, methods=["FS"], crypto=())
    policy = LevelPolicy.from_config(Config.from_text(""), READ, methods=["FS"], crypto=())
    assert policy.methods == ("FS",)
    assert policy.encryption == NEVER and policy.integrity == NEVER


def test_bad_requirement_is_refused() -> None:
    """A value that is not a requirement level is a PolicyError naming the knob."""
    with pytest.raises(PolicyError, match="SEC_READ_AUTHENTICATION = maybe"):
        LevelPolicy.from_config(Config.from_text("SEC_READ_AUTHENTICATION = maybe"), READ)


_PARAMS = """
import htcondor2, json
names = ["SEC_DEFAULT_AUTHENTICATION_METHODS"] + [
    f"SEC_{level}_{what}"
    for level in ("DEFAULT", "CLIENT", "READ", "WRITE", "ADMINISTRATOR", "DAEMON", "NEGOTIATOR")
    for what in ("AUTHENTICATION", "ENCRYPTION", "INTEGRITY", "NEGOTIATION", "CRYPTO_METHODS")
]
print(json.dumps({name: htcondor2.param.get(name) for name in names}))
"""


def test_defaults_match_htcondor2s_param(tmp_path: os.PathLike[str]) -> None:
    """HTCondor's own configuration (htcondor2.param, no config file) has the same methods
    default and leaves every requirement to the built-in OPTIONAL/PREFERRED, as epcore does."""
    config_file = os.path.join(tmp_path, "condor_config")
    with open(config_file, "w") as handle:
        handle.write("")
    env = {**os.environ, "CONDOR_CONFIG": config_file}
    output = subprocess.run(
        [sys.executable, "-c", _PARAMS], env=env, capture_output=True, text=True, check=True
    ).stdout
    params = json.loads(output)
    assert tuple(params.pop("SEC_DEFAULT_AUTHENTICATION_METHODS").split(",")) == DEFAULT_METHODS
    assert set(params.values()) == {None}
    assert Config.from_text("").get("SEC_DEFAULT_AUTHENTICATION_METHODS") == ",".join(
        DEFAULT_METHODS
    )


@pytest.mark.parametrize(
    ("subsystem", "duration"), [("TOOL", "60"), ("SUBMIT", "60"), ("STARTD", "86400")]
)
def test_a_daemons_client_proposes_a_days_session_and_a_tools_a_minute(
    subsystem: str, duration: str
) -> None:
    """start_command's SessionDuration is HTCondor's default for who asks: a startd's session
    with its collector outlives UPDATE_INTERVAL (it resumes, never authenticates again),
    a tool's lasts a minute."""
    stream = Stream(Framer(), ("127.0.0.1", 1), ("127.0.0.1", 2))
    conversation = start_command(stream, 0, Config.from_text(""), subsystem=subsystem)
    step = next(conversation)
    assert isinstance(step, Send)
    reader = Reader(step.message)
    assert reader.get_int() == commands.DC_AUTHENTICATE.number
    assert reader.get_classad().evaluate("SessionDuration") == duration
