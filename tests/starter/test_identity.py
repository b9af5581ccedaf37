"""Who a job runs as (identity.job_user), against a table of fake accounts."""

from __future__ import annotations

import os
import pwd

import pytest

from epcore.classad import parse_ad
from epcore.config import Config
from epcore.errors import ConfigError, JobSetupError
from epcore.jobs.codes import HoldCode
from epcore.starter.identity import job_user


def _entry(name: str, uid: int) -> pwd.struct_passwd:
    return pwd.struct_passwd((name, "x", uid, uid + 1000, "", f"/home/{name}", "/bin/sh"))


ACCOUNTS = {
    e.pw_name: e
    for e in (
        _entry("root", 0),
        _entry("toor", 0),
        _entry("alice", 2001),
        _entry("slotuser1", 3001),
        _entry("slotuser2", 3002),
        _entry("nobody", 65534),
    )
}


def _lookup(name: str) -> pwd.struct_passwd:
    return ACCOUNTS[name]


def _without_nobody(name: str) -> pwd.struct_passwd:
    if name == "nobody":
        raise KeyError(name)
    return ACCOUNTS[name]


@pytest.mark.parametrize(
    ("config", "job", "slot", "expected", "why"),
    [
        ("", '[Owner = "alice"]', 1, "alice", "Owner 'alice'"),
        ("SLOT1_USER = slotuser1", '[Owner = "alice"]', 1, "alice", "Owner"),
        ("", '[Owner = "alice"; RunAsOwner = true]', 1, "alice", "Owner"),
        ("", '[Owner = "root"]', 1, "nobody", "nobody"),
        ("", '[Owner = "toor"]', 1, "nobody", "nobody"),
        ("SLOT1_USER = slotuser1", '[Owner = "root"]', 1, "slotuser1", "SLOT1_USER"),
        ("SLOT2_USER = slotuser2", '[Owner = "root"]', 2, "slotuser2", "SLOT2_USER"),
        ("SLOT2_USER = slotuser2", '[Owner = "root"]', 1, "nobody", "nobody"),
        ("SLOT1_USER = slotuser1", '[Owner = "mallory"]', 1, "slotuser1", "SLOT1_USER"),
        ("SLOT1_USER = slotuser1", "[]", 1, "slotuser1", "SLOT1_USER"),
        ("SLOT1_USER = slotuser1", "[Owner = 42]", 1, "slotuser1", "SLOT1_USER"),
        ("SLOT1_USER = slotuser1", '[Owner = ""]', 1, "slotuser1", "SLOT1_USER"),
        (
            "STARTER_ALLOW_RUNAS_OWNER = false\nSLOT1_USER = slotuser1",
            '[Owner = "alice"]',
            1,
            "slotuser1",
            "SLOT1_USER",
        ),
        ("STARTER_ALLOW_RUNAS_OWNER = false", '[Owner = "alice"]', 1, "nobody", "nobody"),
        (
            "SLOT1_USER = slotuser1",
            '[Owner = "alice"; RunAsOwner = false]',
            1,
            "slotuser1",
            "SLOT1_USER",
        ),
        # Only an explicit SLOT<N>_USER may name root.
        ("SLOT1_USER = root", '[Owner = "root"]', 1, "root", "SLOT1_USER"),
    ],
    ids=[
        "owner",
        "owner-before-slot-user",
        "runasowner-true",
        "owner-root-nobody",
        "owner-uid0-nobody",
        "owner-root-slot-user",
        "slot2-user",
        "other-slot-user-ignored",
        "owner-missing",
        "no-owner",
        "owner-not-string",
        "owner-empty",
        "runas-owner-disallowed",
        "runas-owner-disallowed-nobody",
        "job-runasowner-false",
        "slot-user-root",
    ],
)
def test_job_user_as_root(config: str, job: str, slot: int, expected: str, why: str) -> None:
    """As root the job runs as its Owner when allowed and not root, else SLOT<N>_USER, else
    nobody; the JobUser says why."""
    user = job_user(Config.from_text(config), parse_ad(job), slot, as_root=True, lookup=_lookup)
    entry = ACCOUNTS[expected]
    assert (user.name, user.uid, user.gid, user.home) == (
        entry.pw_name,
        entry.pw_uid,
        entry.pw_gid,
        entry.pw_dir,
    )
    assert why in user.why
    assert user.dedicated is False


@pytest.mark.parametrize("owner", ["alice", "root", "nobody"])
def test_not_root_runs_as_own_user(owner: str) -> None:
    """A startd that is not root runs every job as its own user, whatever the job asks."""
    own = pwd.getpwuid(65534 if os.geteuid() == 0 else os.geteuid())
    user = job_user(
        Config.from_text("SLOT1_USER = slotuser1"),
        parse_ad(f'[Owner = "{owner}"]'),
        1,
        as_root=False,
        lookup=_lookup,
        own_uid=own.pw_uid,
    )
    assert (user.name, user.uid) == (own.pw_name, own.pw_uid)
    assert "not run as root" in user.why


#: Supplementary groups of the fake accounts (their primary group is uid + 1000).
MEMBERS = {"alice": [3001, 4100, 3001], "slotuser1": [4001, 4100], "nobody": [66534]}


def _grouplist(name: str, gid: int) -> list[int]:
    return [gid, *MEMBERS.get(name, [])]


@pytest.mark.parametrize(
    ("config", "job", "groups"),
    [
        ("", '[Owner = "alice"]', (3001, 4100)),
        ("SLOT1_USER = slotuser1", '[Owner = "alice"; RunAsOwner = false]', (4001, 4100)),
        ("", "[]", (66534,)),
    ],
)
def test_a_job_run_by_name_gets_the_accounts_groups(
    config: str, job: str, groups: tuple[int, ...]
) -> None:
    """As root, the Owner, a slot account and nobody alike get every group the account is in
    (its primary group first, each once), as initgroups gives them."""
    user = job_user(
        Config.from_text(config),
        parse_ad(job),
        1,
        as_root=True,
        lookup=_lookup,
        grouplist=_grouplist,
    )
    assert user.groups == groups


def test_groups_that_cannot_be_read_are_hold_23() -> None:
    """An account whose groups cannot be read is a JobSetupError with hold code 23 naming it."""

    def broken(name: str, gid: int) -> list[int]:
        raise OSError(5, "Input/output error")

    with pytest.raises(JobSetupError, match="cannot read the groups of alice") as raised:
        job_user(
            Config.from_text(""),
            parse_ad('[Owner = "alice"]'),
            1,
            as_root=True,
            lookup=_lookup,
            grouplist=broken,
        )
    assert raised.value.hold_code == 23


def test_a_startd_not_root_sets_no_groups() -> None:
    """A startd that is not root leaves the job its own groups: JobUser.groups is empty."""
    own = pwd.getpwuid(65534 if os.geteuid() == 0 else os.geteuid())
    user = job_user(
        Config.from_text(""),
        parse_ad('[Owner = "alice"]'),
        1,
        as_root=False,
        lookup=_lookup,
        own_uid=own.pw_uid,
        grouplist=_grouplist,
    )
    assert user.groups == ()


def test_missing_slot_account_is_hold_23_naming_the_knob() -> None:
    """SLOT1_USER naming an account that does not exist is a JobSetupError, hold code 23."""
    config = Config.from_text("SLOT1_USER = ghost")
    with pytest.raises(JobSetupError, match=r"SLOT1_USER names account 'ghost'") as raised:
        job_user(config, parse_ad('[Owner = "root"]'), 1, as_root=True, lookup=_lookup)
    assert raised.value.hold_code == HoldCode.FAILED_TO_ACCESS_USER_ACCOUNT == 23


def test_no_account_at_all_is_hold_23() -> None:
    """No Owner account, no SLOT<N>_USER and no nobody is a JobSetupError, hold code 23."""
    with pytest.raises(JobSetupError, match="SLOT3_USER") as raised:
        job_user(Config.from_text(""), parse_ad("[]"), 3, as_root=True, lookup=_without_nobody)
    assert raised.value.hold_code == 23


@pytest.mark.parametrize(
    ("pattern", "dedicated"),
    [
        ("slotuser[0-9]+", True),
        ("slotuser", False),
        ("slot.*", True),
        ("alice|bob", False),
    ],
)
def test_dedicated_execute_account_regexp(pattern: str, dedicated: bool) -> None:
    """DEDICATED_EXECUTE_ACCOUNT_REGEXP marks the account dedicated when it matches it whole."""
    config = Config.from_text(
        f"SLOT1_USER = slotuser1\nDEDICATED_EXECUTE_ACCOUNT_REGEXP = {pattern}"
    )
    user = job_user(config, parse_ad("[]"), 1, as_root=True, lookup=_lookup)
    assert (user.name, user.dedicated) == ("slotuser1", dedicated)


def test_bad_dedicated_regexp_is_a_config_error_naming_the_knob() -> None:
    """An invalid DEDICATED_EXECUTE_ACCOUNT_REGEXP is a ConfigError naming the knob and line."""
    config = Config.from_text(
        "SLOT1_USER = slotuser1\nDEDICATED_EXECUTE_ACCOUNT_REGEXP = slot(user", source="cfg"
    )
    with pytest.raises(ConfigError, match="DEDICATED_EXECUTE_ACCOUNT_REGEXP") as raised:
        job_user(config, parse_ad("[]"), 1, as_root=True, lookup=_lookup)
    assert raised.value.line == 2
