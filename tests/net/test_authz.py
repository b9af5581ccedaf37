"""ALLOW_<level> / DENY_<level> in HTCondor's syntax, with the levels' implications."""

from __future__ import annotations

import pytest

from epcore.config import Config
from epcore.net.authz import UNAUTHENTICATED, Authorization, Entry
from epcore.net.commands import ADMINISTRATOR, ALLOW, DAEMON, READ, WRITE


def _authz(text: str) -> Authorization:
    return Authorization.from_config(Config.from_text(text))


@pytest.mark.parametrize(
    ("entry", "user", "ip", "expected"),
    [
        ("*", "alice@pool", "10.1.2.3", True),
        ("*/*", UNAUTHENTICATED, "10.1.2.3", True),
        ("alice@pool", "alice@pool", "10.1.2.3", True),
        ("alice@pool", "bob@pool", "10.1.2.3", False),
        ("*@pool/10.1.*", "bob@pool", "10.1.9.9", True),
        ("*@pool/10.1.*", "bob@pool", "10.2.9.9", False),
        ("10.0.0.0/8", "bob@pool", "10.200.1.1", True),
        ("10.0.0.0/255.0.0.0", "bob@pool", "11.0.0.1", False),
        ("127.0.0.1", "anyone@x", "127.0.0.1", True),
        ("condor/*", "condor@pool", "1.2.3.4", True),
    ],
)
def test_entries_match_user_and_host(entry: str, user: str, ip: str, expected: bool) -> None:
    """An entry is user@domain/host, a user alone (with @), a host alone, or a network."""
    assert Entry.parse(entry).matches(user, ip) is expected


def test_deny_wins_over_allow() -> None:
    """A DENY entry that matches refuses even when ALLOW admits, and says so."""
    decision = _authz("ALLOW_READ = *\nDENY_READ = bob@*").decide(READ, "bob@pool", "1.1.1.1")
    assert not decision.allowed
    assert decision.reason == "DENY_READ matches bob@pool at 1.1.1.1 (bob@*)"


def test_higher_levels_imply_lower_ones() -> None:
    """ALLOW_DAEMON admits to WRITE and READ commands; ALLOW_READ does not admit to WRITE."""
    authz = _authz("ALLOW_DAEMON = condor@*\nALLOW_READ = alice@*")
    assert authz.decide(READ, "condor@pool", "1.1.1.1").allowed
    assert authz.decide(WRITE, "condor@pool", "1.1.1.1").allowed
    assert not authz.decide(WRITE, "alice@pool", "1.1.1.1").allowed
    assert not authz.decide(ADMINISTRATOR, "condor@pool", "1.1.1.1").allowed


def test_unset_level_admits_nobody_and_default_applies() -> None:
    """A level with no ALLOW list refuses everyone; ALLOW_DEFAULT fills in for unset levels."""
    assert "ALLOW_DAEMON is not set" in _authz("").decide(DAEMON, "root@x", "1.1.1.1").reason
    assert _authz("ALLOW_DEFAULT = *").decide(DAEMON, None, "1.1.1.1").allowed


def test_unauthenticated_peer_is_its_own_user() -> None:
    """A peer that did not authenticate matches only entries admitting unauthenticated@unmapped."""
    authz = _authz("ALLOW_READ = *@pool")
    assert not authz.decide(READ, None, "1.1.1.1").allowed
    assert authz.decide(ALLOW, None, "1.1.1.1").allowed
