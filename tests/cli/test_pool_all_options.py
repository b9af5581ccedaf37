"""``ep q -all``/``-allusers`` and ``ep userprio -all``/``-allusers`` against a real pool, as
condor_q and condor_userprio take them (issue 18, finding 15)."""

from __future__ import annotations

import re
import sys
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "pool"))

from epcore.testing.pool import pool_factory, shared_dir, submit_as

__all__ = ["pool_factory", "shared_dir"]

pytestmark = pytest.mark.system

SLEEPER = "executable = /bin/sleep\narguments = 300\nhold = true\nqueue\n"


@pytest.mark.parametrize("flag", ["-all", "-allusers"])
def test_q_all_shows_every_users_jobs(
    pool_factory, slot_users, shared_dir: Path, flag: str
) -> None:
    """``ep q -all`` (condor_q's prefix of -allusers) lists another user's jobs too; plain
    ``ep q`` lists only the asker's."""
    pool = pool_factory()
    alice, bob = slot_users[0], slot_users[1]
    submit_as(pool, alice, shared_dir, SLEEPER)
    submit_as(pool, bob, shared_dir, SLEEPER)
    own = pool.ep("q", user=alice)
    assert own.status == 0, own.stderr
    assert " 1.0 " in own.stdout and " 2.0 " not in own.stdout
    everyone = pool.ep("q", flag, user=alice)
    assert everyone.status == 0, everyone.stderr
    assert " 1.0 " in everyone.stdout and " 2.0 " in everyone.stdout
    assert bob.name in everyone.stdout


def test_userprio_all_shows_every_column_and_allusers_every_submitter(
    pool_factory, slot_users, shared_dir: Path
) -> None:
    """``ep userprio -all`` adds the Real Priority and the usage start and last usage times;
    ``-allusers`` also lists a submitter with no recent usage; neither is refused."""
    pool = pool_factory()
    user = slot_users[0]
    home = submit_as(pool, user, shared_dir, "executable = /bin/true\nqueue\n")
    pool.wait_for(
        lambda: bool(pool.jobs("JobStatus == 4", history=True)), 60, "the job to complete"
    )
    assert home.exists()
    pool.wait_for(
        lambda: user.name in pool.ep("userprio", "-allusers").stdout, 60, "the submitter's record"
    )
    default = pool.ep("userprio", "-allusers")
    everything = pool.ep("userprio", "-all", "-allusers")
    assert default.status == 0 and everything.status == 0, everything.stderr
    assert "Real" not in default.stdout and "Start Time" not in default.stdout
    headings = everything.stdout.splitlines()[1:3]
    assert "Real" in headings[0] and "Usage Time" in headings[1] and "Start Time" in headings[1]
    row = next(line for line in everything.stdout.splitlines() if user.name in line)
    # Name, Effective, Real, Factor, In Use, Usage, (start), last date and time, since.
    assert re.search(r" \d+\.\d\d +\d+\.\d\d +\d+\.\d\d +\d+ ", row), row
    assert re.search(r" \d{1,2}/\d\d/\d{4} \d\d:\d\d +\S+$", row), row
    most = pool.ep("userprio", "-most")
    assert most.status == 0, most.stderr
