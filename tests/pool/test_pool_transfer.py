"""File transfer end to end through a real ``ep run``: the schedd serves the files on its
CEDAR port and the starter pulls the input and pushes the output over TCP, as on one host
HTCondor does when should_transfer_files = YES.
"""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from epcore.testing.pool import PoolProcess, submit_as, user_home
from epcore.testing.system import SlotUser

pytestmark = pytest.mark.system

#: A job that shows where it runs, reads its inputs and writes its outputs.
_PROGRAM = """#!/bin/sh
pwd
cat data.txt
cat sub/inner.txt
cat loose.txt
echo made > result.txt
echo extra > extra.txt
echo err >&2
"""


def _write(path: Path, text: str, user: SlotUser, mode: int = 0o644) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    os.chown(path.parent, user.uid, user.gid)
    path.write_text(text)
    os.chown(path, user.uid, user.gid)
    path.chmod(mode)
    return path


def _ended(pool: PoolProcess, cluster: int) -> object:
    """The job's ad once it left the queue or went on hold, else None."""
    held = pool.jobs(f"ClusterId == {cluster} && JobStatus == 5")
    if held:
        return held[0]
    done = pool.jobs(f"ClusterId == {cluster}", history=True)
    return done[0] if done else None


def _wait(pool: PoolProcess, cluster: int) -> object:
    found: list[object] = []

    def ended() -> bool:
        found[:] = [_ended(pool, cluster)]
        return found[0] is not None

    pool.wait_for(ended, 60, f"job {cluster} to end")
    return found[0]


def _prepare(home: Path, user: SlotUser) -> None:
    _write(home / "prog.sh", _PROGRAM, user, 0o755)
    _write(home / "data.txt", "data-in\n", user)
    _write(home / "tree" / "sub" / "inner.txt", "inner-in\n", user)
    _write(home / "loose" / "loose.txt", "loose-in\n", user)


def test_input_goes_to_the_sandbox_and_output_comes_back(
    pool_factory, slot_users, shared_dir: Path
) -> None:
    """A should_transfer_files = YES job runs in its sandbox with its executable, files and
    directories (``dir`` itself, ``dir/`` its contents) and gets stdout, stderr and its new
    files back in its Iwd, the bytes recorded in its ad."""
    pool = pool_factory()
    user = slot_users[0]
    home = user_home(shared_dir, user)
    _prepare(home, user)
    submit_as(
        pool,
        user,
        shared_dir,
        "executable = prog.sh\noutput = out\nerror = err\n"
        "should_transfer_files = YES\ntransfer_input_files = data.txt, tree/, loose/\n"
        "queue\n",
    )
    job = _wait(pool, 1)
    assert job.evaluate("JobStatus") == 4, job.evaluate("HoldReason")
    lines = (home / "out").read_text().splitlines()
    assert lines[0] != str(home)  # it ran in the sandbox, not in place
    assert lines[1:] == ["data-in", "inner-in", "loose-in"]
    assert (home / "err").read_text() == "err\n"
    assert (home / "result.txt").read_text() == "made\n"
    assert (home / "extra.txt").read_text() == "extra\n"
    assert (home / "result.txt").stat().st_uid == user.uid
    assert not (home / "prog.sh.out").exists()
    assert job.evaluate("BytesRecvd") > len(_PROGRAM)
    assert job.evaluate("BytesSent") > 0
    assert isinstance(job.evaluate("TransferInFinished"), int)


def test_listed_output_with_remaps(pool_factory, slot_users, shared_dir: Path) -> None:
    """Only the listed outputs come back, under the names TransferOutputRemaps give them."""
    pool = pool_factory()
    user = slot_users[0]
    home = user_home(shared_dir, user)
    _prepare(home, user)
    (home / "results").mkdir()
    os.chown(home / "results", user.uid, user.gid)
    submit_as(
        pool,
        user,
        shared_dir,
        "executable = prog.sh\noutput = out\n"
        "should_transfer_files = YES\ntransfer_input_files = data.txt, tree/, loose/\n"
        "transfer_output_files = result.txt\n"
        'transfer_output_remaps = "result.txt = results/renamed.txt"\nqueue\n',
    )
    job = _wait(pool, 1)
    assert job.evaluate("JobStatus") == 4, job.evaluate("HoldReason")
    assert (home / "results" / "renamed.txt").read_text() == "made\n"
    assert not (home / "result.txt").exists()
    assert not (home / "extra.txt").exists()


def test_a_missing_input_file_holds_with_13_naming_it(
    pool_factory, slot_users, shared_dir: Path
) -> None:
    """An input file that is not there holds the job with code 13, the errno as subcode and
    HTCondor's reason naming the file."""
    pool = pool_factory()
    user = slot_users[0]
    home = user_home(shared_dir, user)
    _prepare(home, user)
    submit_as(
        pool,
        user,
        shared_dir,
        "executable = prog.sh\nshould_transfer_files = YES\n"
        "transfer_input_files = data.txt, nothere.txt\nqueue\n",
    )
    job = _wait(pool, 1)
    assert job.evaluate("JobStatus") == 5
    assert job.evaluate("HoldReasonCode") == 13
    assert job.evaluate("HoldReasonSubCode") == 2
    reason = str(job.evaluate("HoldReason"))
    assert reason.startswith("Transfer input files failure at access point")
    assert f"reading from file {home}/nothere.txt: (errno 2) No such file or directory" in reason


def test_an_unwritable_output_holds_with_12(pool_factory, slot_users, shared_dir: Path) -> None:
    """Output the owner may not write in the Iwd holds the job with code 12 naming the file."""
    pool = pool_factory()
    user = slot_users[0]
    home = user_home(shared_dir, user)
    _prepare(home, user)
    locked = home / "locked"
    locked.mkdir()
    locked.chmod(0o755)  # root's: the owner cannot write in it
    submit_as(
        pool,
        user,
        shared_dir,
        "executable = prog.sh\nshould_transfer_files = YES\n"
        "transfer_input_files = data.txt, tree/, loose/\ntransfer_output_files = result.txt\n"
        'transfer_output_remaps = "result.txt = locked/result.txt"\nqueue\n',
    )
    job = _wait(pool, 1)
    assert job.evaluate("JobStatus") == 5
    assert job.evaluate("HoldReasonCode") == 12
    assert job.evaluate("HoldReasonSubCode") == 13
    reason = str(job.evaluate("HoldReason"))
    assert "Transfer output files failure at access point" in reason
    assert f"writing to file {locked}/result.txt: (errno 13) Permission denied" in reason
    assert not (locked / "result.txt").exists()


@pytest.mark.parametrize(
    ("remap", "program_tail"),
    [
        ("result.txt = ../escaped.txt", ""),
        (f"result.txt = {'/tmp/ep_transfer_escaped.txt'}", ""),
        ("", "rm result.txt; ln -s /etc/passwd result.txt\n"),
    ],
    ids=["dotdot-remap", "absolute-remap", "symlink"],
)
def test_hostile_remaps_and_links_are_refused(
    pool_factory, slot_users, shared_dir: Path, remap: str, program_tail: str
) -> None:
    """A remap leaving the Iwd or an output that is a link in the sandbox holds the job with
    code 12, and nothing is written outside the Iwd."""
    pool = pool_factory()
    user = slot_users[0]
    home = user_home(shared_dir, user)
    _prepare(home, user)
    _write(home / "prog.sh", _PROGRAM + program_tail, user, 0o755)
    remaps = f'transfer_output_remaps = "{remap}"\n' if remap else ""
    submit_as(
        pool,
        user,
        shared_dir,
        "executable = prog.sh\nshould_transfer_files = YES\n"
        "transfer_input_files = data.txt, tree/, loose/\ntransfer_output_files = result.txt\n"
        f"{remaps}queue\n",
    )
    job = _wait(pool, 1)
    assert job.evaluate("JobStatus") == 5, job.evaluate("ExitReason")
    assert job.evaluate("HoldReasonCode") == 12
    assert not (shared_dir / "escaped.txt").exists()
    assert not Path("/tmp/ep_transfer_escaped.txt").exists()
    assert not (home / "result.txt").exists()


def test_a_job_without_transfer_runs_in_place(pool_factory, slot_users, shared_dir: Path) -> None:
    """A job of this host's FILESYSTEM_DOMAIN (the default IF_NEEDED) runs in its Iwd, with
    no transfer."""
    pool = pool_factory()
    user = slot_users[0]
    home = user_home(shared_dir, user)
    _write(home / "prog.sh", "#!/bin/sh\npwd\necho here > made.txt\n", user, 0o755)
    submit_as(pool, user, shared_dir, "executable = prog.sh\noutput = out\nqueue\n")
    job = _wait(pool, 1)
    assert job.evaluate("JobStatus") == 4
    assert (home / "out").read_text() == f"{home}\n"
    assert (home / "made.txt").read_text() == "here\n"
    assert "TransferInStarted" not in job
