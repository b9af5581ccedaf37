"""Whether a pool runs jobs as their owner, which decides if an owner without an account
may submit."""

from __future__ import annotations

import pytest

from epcore.config import Config
from epcore.schedd.requests import runs_jobs_as_owner


@pytest.mark.parametrize(
    ("text", "euid", "expected"),
    [
        ("", 0, True),
        ("", 1000, False),
        ("STARTER_ALLOW_RUNAS_OWNER = false", 0, False),
        ("SLOT1_USER = slot1", 0, False),
        ("slot12_user = slot12", 0, False),
        ("SLOT1_USER =", 0, True),
    ],
)
def test_jobs_run_as_their_owner_only_in_a_root_pool_without_slot_accounts(
    text: str, euid: int, expected: bool
) -> None:
    """A root pool with STARTER_ALLOW_RUNAS_OWNER (the default) and no SLOT<N>_USER runs jobs
    as their owner; a pool not run by root, one that forbids it, or one naming a slot account
    (set, not empty) does not."""
    assert runs_jobs_as_owner(Config.from_text(text, subsystem="SCHEDD"), euid) is expected
