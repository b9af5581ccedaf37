"""Issue 18, finding 1: removing a job's sandbox never follows its user's links.

A real ``ep run`` as root runs a real user's job that leaves a large tree in its sandbox;
while the starter removes it, the user's own process keeps renaming a directory of the tree
away and planting a link to a root-owned directory in its place. Root must neither change
that directory's mode nor remove anything in it, EXECUTE keeps its mode, the sandbox and the
job's cgroups go, and later jobs run. A tree deeper than Python's recursion limit, left by a
job or found in EXECUTE when ``ep run`` starts, is removed too.
"""

from __future__ import annotations

import contextlib
import os
import stat
import time
from pathlib import Path

import pytest
from security_support import assert_pool_serves, start_as_user

from epcore.testing.pool import PoolProcess, submit_as, user_home
from epcore.testing.system import V1_ROOT, SlotUser

pytestmark = pytest.mark.system

#: How many files the job leaves in ``x/``: enough to make the removal take a while.
FILES = 30000
#: How long the user's process keeps swapping links in (then the starter must finish).
RACE_SECONDS = 15.0
#: How deep the job's tree goes: past Python's default recursion limit of 1,000.
DEPTH = 1500

_RACE_SCRIPT = """#!/bin/sh
cat /proc/self/cgroup > {home}/cgroups.txt
cd "$_CONDOR_SCRATCH_DIR" || exit 1
mkdir x && cd x || exit 1
seq {files} | xargs touch
mkdir victimdir && touch victimdir/inside
echo "$_CONDOR_SCRATCH_DIR" > {home}/ready.tmp && mv {home}/ready.tmp {home}/ready
i=0
while [ ! -e {home}/go ] && [ $i -lt 600 ]; do sleep 0.1; i=$((i+1)); done
"""

_DEEP_SCRIPT = """#!/bin/sh
cat /proc/self/cgroup > {home}/cgroups.txt
cd "$_CONDOR_SCRATCH_DIR" || exit 1
i=0
while [ $i -lt {depth} ]; do mkdir d && cd d || exit 1; i=$((i+1)); done
touch deepest
echo "$_CONDOR_SCRATCH_DIR" > {home}/ready.tmp && mv {home}/ready.tmp {home}/ready
"""


def _exit_code(pid: int, timeout: float) -> int:
    """The exit status of child ``pid``, killing it when it runs past ``timeout``."""
    deadline = time.monotonic() + timeout
    while True:
        done, status = os.waitpid(pid, os.WNOHANG)
        if done == pid:
            return os.waitstatus_to_exitcode(status)
        if time.monotonic() > deadline:
            os.kill(pid, 9)
            os.waitpid(pid, 0)
            raise AssertionError(f"the user's process {pid} ran past {timeout} s")
        time.sleep(0.05)


def _job(pool: PoolProcess, user: SlotUser, root: Path, script: str) -> Path:
    """Submit ``script`` (formatted with the user's home) as ``user``'s job; the home."""
    home = user_home(root, user)
    program = home / "job.sh"
    program.write_text(script.format(home=home, files=FILES, depth=DEPTH))
    program.chmod(0o755)
    os.chown(program, user.uid, user.gid)
    submit_as(pool, user, root, "executable = job.sh\noutput = out\nerror = err\nqueue\n")
    return home


def _job_groups(home: Path) -> list[Path]:
    """The cgroup v1 directories the job ran in (from its /proc/self/cgroup)."""
    groups = []
    for line in (home / "cgroups.txt").read_text().splitlines():
        _, controllers, path = line.split(":", 2)
        for controller in controllers.split(","):
            if path != "/" and (V1_ROOT / controller).is_dir():
                groups.append(V1_ROOT / controller / path.lstrip("/"))
    return groups


def _completed(pool: PoolProcess, cluster: int) -> bool:
    pool.check_alive()
    done = pool.jobs(f"ClusterId == {cluster}", history=True)
    return bool(done) and done[0].evaluate("JobStatus") == 4


def _root_owned_victim(root: Path) -> tuple[Path, int]:
    """A root-owned directory holding ``victimdir/keep``, and its mode."""
    victim = root / "rootowned"
    (victim / "victimdir").mkdir(parents=True)
    (victim / "victimdir" / "keep").write_text("root's\n")
    (victim / "victimdir" / "inside").write_text("root's too\n")
    victim.chmod(0o755)
    return victim, 0o755


def _gone(pool: PoolProcess, sandbox: Path, groups: list[Path]) -> None:
    pool.wait_for(lambda: not os.path.lexists(sandbox), 120, f"{sandbox} to be removed")
    pool.wait_for(
        lambda: not any(g.exists() for g in groups), 30, f"the job's cgroups {groups} to go"
    )


def test_links_swapped_in_while_the_sandbox_is_removed_are_never_followed(
    pool_factory, slot_users, shared_dir: Path
) -> None:
    """While the starter removes a sandbox of 30,000 files, the job's user keeps swapping
    ``x`` for a link to a root-owned directory (many times, for 15 s, adding files to
    ``x/victimdir`` so that removing it fails meanwhile): that directory keeps its mode
    and its ``victimdir``, EXECUTE keeps its mode, the sandbox and the job's cgroups go, and
    another user is served and runs a job."""
    pool = pool_factory()
    attacker = slot_users[0]
    victim, mode = _root_owned_victim(shared_dir)
    execute = pool.directory / "execute"
    execute_mode = stat.S_IMODE(execute.stat().st_mode)
    home = _job(pool, attacker, shared_dir, _RACE_SCRIPT)
    swaps_file = home / "swaps"

    def race() -> int:
        deadline = time.monotonic() + 300
        while not (home / "ready").exists():
            if time.monotonic() > deadline:
                return 3
            time.sleep(0.01)
        sandbox = Path((home / "ready").read_text().strip())
        x = sandbox / "x"
        # Kept open across the renames: files added here make removing victimdir fail, so
        # that the remover has an error to handle while the link is in place.
        inner = os.open(x / "victimdir", os.O_RDONLY | os.O_DIRECTORY)
        (home / "go").write_text("")
        swaps = made = 0
        stop = time.monotonic() + RACE_SECONDS
        while os.path.lexists(sandbox) and time.monotonic() < stop:
            with contextlib.suppress(OSError):
                os.close(os.open(f"p{made}", os.O_WRONLY | os.O_CREAT, 0o644, dir_fd=inner))
                made += 1
            moved = sandbox / f"moved{swaps}"
            try:
                os.rename(x, moved)
            except OSError:
                time.sleep(0.001)
                continue
            with contextlib.suppress(OSError):
                os.symlink(victim, x)
                swaps += 1
                # The link stays most of the time; then the tree goes back, to race again.
                time.sleep(0.002)
                os.unlink(x)
            with contextlib.suppress(OSError):
                os.rename(moved, x)
        swaps_file.write_text(str(swaps))
        return 0

    racer = start_as_user(attacker, race)
    pool.wait_for(lambda: _completed(pool, 1), 300, "the attacker's job to complete")
    assert _exit_code(racer, 300) == 0
    sandbox = Path((home / "ready").read_text().strip())
    assert int(swaps_file.read_text()) >= 10, "the race never swapped the link in"
    _gone(pool, sandbox, _job_groups(home))
    assert stat.S_IMODE(victim.stat().st_mode) == mode
    assert (victim / "victimdir" / "keep").read_text() == "root's\n"
    assert (victim / "victimdir" / "inside").read_text() == "root's too\n"
    assert stat.S_IMODE(execute.stat().st_mode) == execute_mode
    assert_pool_serves(pool, slot_users[3], shared_dir)


def _all_logs(pool: PoolProcess) -> str:
    """Every log of the pool and its output, together."""
    logs = sorted((pool.directory / "log").iterdir())
    return "".join(p.read_text(errors="replace") for p in logs) + pool.output.read_text()


def _deep_tree(top: Path, depth: int) -> int:
    """Build ``depth`` nested directories in ``top`` (run as its owner); exit status 0."""
    fd = os.open(top, os.O_RDONLY | os.O_DIRECTORY)
    for _ in range(depth):
        os.mkdir("d", dir_fd=fd)
        inner = os.open("d", os.O_RDONLY | os.O_DIRECTORY, dir_fd=fd)
        os.close(fd)
        fd = inner
    os.close(fd)
    return 0


def test_a_tree_deeper_than_python_recursion_is_removed_and_ep_run_restarts(
    pool_factory, slot_users, shared_dir: Path
) -> None:
    """A job that leaves a 1,500-level tree has its sandbox and cgroups removed; a 1,500-level
    tree found in EXECUTE when ``ep run`` starts again is swept, and the pool serves."""
    pool = pool_factory()
    attacker = slot_users[1]
    home = _job(pool, attacker, shared_dir, _DEEP_SCRIPT)
    pool.wait_for(lambda: _completed(pool, 1), 300, "the deep job to complete")
    sandbox = Path((home / "ready").read_text().strip())
    _gone(pool, sandbox, _job_groups(home))
    assert "RecursionError" not in _all_logs(pool)

    # A tree of the same depth left in EXECUTE while no startd ran (a machine that went down).
    pool.terminate()
    stale = pool.directory / "execute" / "dir_999999"
    stale.mkdir()
    os.chown(stale, attacker.uid, attacker.gid)
    assert _exit_code(start_as_user(attacker, lambda: _deep_tree(stale, DEPTH)), 120) == 0
    pool.start()
    pool.wait_for(lambda: not stale.exists(), 120, "the start-up sweep to remove the deep tree")
    assert "RecursionError" not in _all_logs(pool)
    assert_pool_serves(pool, slot_users[3], shared_dir)
