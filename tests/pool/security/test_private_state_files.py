"""Finding 10 of issue 18: ``spool/startd_claims`` and ``startd_history`` were 0644, so any
user could read other users' job environments and arguments, and the claim ids.

After a real ``ep run`` ran a job, every file under SPOOL and LOG is mode 0600 or stricter
(the pool's socket, which every user must reach, is not a file), files an older version left
0644 are made private when the pool starts, and a slot user can open none of them.
"""

from __future__ import annotations

import os
import re
import stat
from pathlib import Path

import pytest
from security_support import assert_pool_serves

from epcore.testing.pool import PoolProcess, submit_as
from epcore.testing.system import SlotUser

pytestmark = pytest.mark.system

#: What the victim's job carries that no other user may read in the pool's files.
SECRET = "s3cret-token-of-the-victim"


#: Files every user must read, as every user must reach the pool's socket: where HTCondor's
#: tools find the daemons' CEDAR port (<SUBSYS>_ADDRESS_FILE: an address, no secret).
PUBLIC = re.compile(r"\.(collector|schedd|startd|negotiator)_address(\.super)?")


def _state_files(pool: PoolProcess) -> list[Path]:
    """Every file (not socket, not directory) under the pool's SPOOL and LOG, but the public
    address files."""
    found = []
    for top in (pool.directory / "spool", pool.directory / "log"):
        for directory, _dirs, names in os.walk(top):
            for name in names:
                path = Path(directory) / name
                if PUBLIC.fullmatch(name):
                    continue
                if stat.S_ISREG(path.lstat().st_mode):
                    found.append(path)
    return found


def _readable_by(user: SlotUser, paths: list[Path]) -> list[str]:
    """The paths ``user`` can open for reading (checked from a child that became the user)."""
    read, write = os.pipe()
    pid = os.fork()
    if pid == 0:  # pragma: no cover - the child
        try:
            os.close(read)
            os.setgroups([])
            os.setgid(user.gid)
            os.setuid(user.uid)
            opened = []
            for path in paths:
                try:
                    with open(path, "rb"):
                        opened.append(str(path))
                except OSError:
                    continue
            os.write(write, "\n".join(opened).encode())
        finally:
            os._exit(0)
    os.close(write)
    with os.fdopen(read, "rb") as handle:
        data = handle.read().decode()
    os.waitpid(pid, 0)
    return [line for line in data.split("\n") if line]


def test_state_files_are_private_after_a_job_ran(
    pool_factory, slot_users, shared_dir: Path
) -> None:
    """Files an older version left 0644 are 0600 once the pool started; after a job with a
    secret in its environment and arguments ran, every file under SPOOL and LOG is 0600 or
    stricter and another slot user can read none of them."""
    pool = pool_factory(start=False)
    for relative in ("spool/startd_history", "spool/accountant.ads", "log/StartLog"):
        old = pool.directory / relative
        old.parent.mkdir(exist_ok=True)
        old.write_text("")
        old.chmod(0o644)
    pool.start()
    victim, snoop = slot_users[0], slot_users[1]
    submit_as(
        pool,
        victim,
        shared_dir,
        f'executable = /bin/echo\narguments = {SECRET}\nenvironment = "TOKEN={SECRET}"\n'
        "output = out\nqueue\n",
    )
    pool.wait_for(
        lambda: not pool.jobs() and bool(pool.jobs(history=True)), 60, "the job to complete"
    )
    files = _state_files(pool)
    names = {path.name for path in files}
    assert {"startd_history", "startd_claims", "job_queue.db", "StartLog", "SchedLog"} <= names
    assert any(SECRET in path.read_text(errors="replace") for path in files)
    wide = {str(p): oct(p.stat().st_mode & 0o777) for p in files if p.stat().st_mode & 0o077}
    assert wide == {}
    assert _readable_by(snoop, files) == []
    assert_pool_serves(pool, slot_users[3], shared_dir)
