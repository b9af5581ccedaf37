"""A job runs with its user's supplementary groups (issue 18, finding 11), as HTCondor's
starter initialises them: a real group with a slot user as member, and ``id -G`` in a job
through ``ep run``."""

from __future__ import annotations

import grp
import shutil
import subprocess
from collections.abc import Iterator
from pathlib import Path

import pytest
from security_support import assert_pool_serves

from epcore.testing.pool import submit_as
from epcore.testing.system import SlotUser, missing

pytestmark = pytest.mark.system


@pytest.fixture
def member_group(slot_users: tuple[SlotUser, ...], run_tag: str) -> Iterator[int]:
    """A real group (groupadd) with slot_users[0] as a member (usermod -aG); its gid.
    Removed afterwards."""
    if shutil.which("groupadd") is None or shutil.which("usermod") is None:
        missing("groupadd/usermod are not installed")
    name = f"epg{run_tag}"
    subprocess.run(["groupadd", name], check=True, capture_output=True)
    try:
        subprocess.run(
            ["usermod", "-aG", name, slot_users[0].name], check=True, capture_output=True
        )
        yield grp.getgrnam(name).gr_gid
    finally:
        subprocess.run(["groupdel", name], check=False, capture_output=True)


def test_a_job_has_its_users_supplementary_groups(
    pool_factory, slot_users, shared_dir: Path, member_group: int
) -> None:
    """``id -G`` in a job run as its Owner shows the Owner's primary group and the group it
    was added to, and ``id -g`` its primary group."""
    pool = pool_factory()
    user = slot_users[0]
    home = submit_as(
        pool,
        user,
        shared_dir,
        "executable = /bin/sh\narguments = \"-c 'id -g; id -G'\"\noutput = id.out\n"
        "error = id.err\nqueue\n",
    )
    pool.wait_for(
        lambda: bool(pool.jobs("JobStatus == 4", history=True)), 60, "the job to complete"
    )
    primary, groups = (home / "id.out").read_text().split("\n")[:2]
    assert int(primary) == user.gid
    assert {user.gid, member_group} <= {int(g) for g in groups.split()}, groups
    assert_pool_serves(pool, slot_users[3], shared_dir)
