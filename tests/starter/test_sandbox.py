"""The job's sandbox: made 0700 for the job user, holding the ads, measured, removed."""

from __future__ import annotations

import contextlib
import errno
import os
import stat
from pathlib import Path

import pytest

from epcore.classad import ClassAd, format_old, parse_ad
from epcore.errors import JobSetupError
from epcore.jobs.codes import HoldCode
from epcore.starter.sandbox import (
    Sandbox,
    SandboxError,
    disk_usage_kb,
    make_sandbox,
    remove_sandbox,
    sandbox_path,
    write_ads,
)

JOB = ClassAd(
    {
        "Owner": "alice",
        "Cmd": "/bin/echo",
        "Arguments": 'say "hi" there',
        "RequestMemory": 128,
        "Env": "A=1;B=é",
    }
)
MACHINE = ClassAd({"Name": "slot1@host", "Memory": 1024, "Cpus": 0.5, "Start": True})


def test_sandbox_path_is_dir_of_the_starter_id() -> None:
    """The sandbox of starter 1234 is <EXECUTE>/dir_1234."""
    assert sandbox_path("/var/execute", 1234) == "/var/execute/dir_1234"
    assert Sandbox("/x/dir_1").job_ad_path == "/x/dir_1/.job.ad"
    assert Sandbox("/x/dir_1").machine_ad_path == "/x/dir_1/.machine.ad"


@pytest.mark.system
def test_make_sandbox_is_0700_and_owned_by_the_job_user(execute_dir: Path, slot_users) -> None:
    """As root, the sandbox is made mode 0700 and owned by the job user."""
    user = slot_users[0]
    box = make_sandbox(str(execute_dir), 4242, user.uid, user.gid)
    info = os.stat(box.path)
    assert box.path == str(execute_dir / "dir_4242")
    assert stat.S_IMODE(info.st_mode) == 0o700
    assert (info.st_uid, info.st_gid) == (user.uid, user.gid)
    remove_sandbox(box)


def test_existing_sandbox_is_hold_14_naming_the_path(tmp_path: Path) -> None:
    """A sandbox directory that already exists is a JobSetupError, hold code 14, with its path."""
    (tmp_path / "dir_7").mkdir()
    with pytest.raises(JobSetupError, match=str(tmp_path / "dir_7")) as raised:
        make_sandbox(str(tmp_path), 7, os.getuid(), os.getgid())
    assert (raised.value.hold_code, raised.value.hold_subcode) == (HoldCode.IWD_ERROR, errno.EEXIST)
    assert HoldCode.IWD_ERROR == 14


def test_missing_execute_dir_is_hold_14(tmp_path: Path) -> None:
    """An EXECUTE directory that does not exist is a JobSetupError, hold code 14."""
    with pytest.raises(JobSetupError, match="cannot make the job's sandbox") as raised:
        make_sandbox(str(tmp_path / "absent"), 1, os.getuid(), os.getgid())
    assert (raised.value.hold_code, raised.value.hold_subcode) == (14, errno.ENOENT)


@pytest.mark.system
def test_write_ads_are_readable_back_in_old_syntax(execute_dir: Path, slot_users) -> None:
    """The job and machine ads are written in old syntax, owned by the job user, and read back
    with parse_ad to the same ads; rewriting replaces them."""
    user = slot_users[1]
    box = make_sandbox(str(execute_dir), 1, user.uid, user.gid)
    try:
        write_ads(box, JOB, MACHINE, user.uid, user.gid)
        for path, ad in ((box.job_ad_path, JOB), (box.machine_ad_path, MACHINE)):
            text = Path(path).read_text(encoding="utf-8")
            assert not text.lstrip().startswith("[")
            assert parse_ad(text) == ad
            assert os.stat(path).st_uid == user.uid
        changed = JOB.copy()
        changed["ExitCode"] = 0
        write_ads(box, changed, MACHINE, user.uid, user.gid)
        assert parse_ad(Path(box.job_ad_path).read_text(encoding="utf-8")) == changed
        assert sorted(os.listdir(box.path)) == [".job.ad", ".machine.ad"]
    finally:
        remove_sandbox(box)


@pytest.mark.parametrize(
    ("files", "at_least", "at_most"),
    [
        ({}, 0, 0),
        ({"a": 100 * 1024}, 100, 120),
        ({"a": 100 * 1024, "sub/b": 300 * 1024, "sub/deeper/c": 1}, 401, 460),
    ],
    ids=["empty", "one-file", "nested"],
)
def test_disk_usage_kb(tmp_path: Path, files: dict[str, int], at_least: int, at_most: int) -> None:
    """disk_usage_kb counts the blocks of every file below the path, directories included."""
    root = tmp_path / "box"
    root.mkdir()
    for name, size in files.items():
        path = root / name
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_bytes(os.urandom(size))
    usage = disk_usage_kb(str(root))
    assert at_least <= usage <= at_most + 4 * len(files)


def test_disk_usage_of_a_sparse_file_counts_blocks(tmp_path: Path) -> None:
    """A sparse file counts what it allocates, not its length (as du)."""
    with open(tmp_path / "sparse", "wb") as handle:
        handle.truncate(1024 * 1024 * 1024)
    assert disk_usage_kb(str(tmp_path)) < 1024


def test_disk_usage_of_a_missing_path_is_zero(tmp_path: Path) -> None:
    """A sandbox that is gone uses 0 KB."""
    assert disk_usage_kb(str(tmp_path / "gone")) == 0


def _leave_read_only_mess(root: Path) -> None:
    (root / "ro" / "deep").mkdir(parents=True)
    (root / "ro" / "deep" / "f").write_text("x")
    (root / "ro" / "f").write_text("x")
    (root / "none").mkdir()
    (root / "none" / "g").write_text("x")
    (root / "file").write_text("x")
    (root / "file").chmod(0o400)
    (root / "ro" / "deep").chmod(0o500)
    (root / "ro").chmod(0o500)
    (root / "none").chmod(0o000)


def test_remove_sandbox_removes_read_only_directories(tmp_path: Path) -> None:
    """remove_sandbox removes read-only and unreadable directories a job left in its sandbox."""
    root = tmp_path / "dir_1"
    root.mkdir()
    _leave_read_only_mess(root)
    remove_sandbox(Sandbox(str(root)))
    assert not root.exists()


def _as_user(uid: int, gid: int, sandbox: Sandbox) -> int:
    """remove_sandbox(sandbox) in a forked child running as uid:gid; the child's exit status."""
    pid = os.fork()
    if pid == 0:  # pragma: no cover - the child
        status = 1
        try:
            os.setgroups([])
            os.setresgid(gid, gid, gid)
            os.setresuid(uid, uid, uid)
            remove_sandbox(sandbox)
            status = 0
        finally:
            os._exit(status)
    return os.waitstatus_to_exitcode(os.waitpid(pid, 0)[1])


@pytest.mark.system
def test_remove_sandbox_as_its_owner_removes_read_only_directories(
    execute_dir: Path, slot_users
) -> None:
    """Run by the (unprivileged) owner of the sandbox, remove_sandbox still removes the
    read-only and unreadable directories the job left, by making them writable again."""
    user = slot_users[2]
    box = make_sandbox(str(execute_dir), 9, user.uid, user.gid)
    root = Path(box.path)
    _leave_read_only_mess(root)
    for path in (root, *root.rglob("*")):
        os.chown(path, user.uid, user.gid)
    # The sandbox itself lives in EXECUTE; let its owner remove it from there.
    os.chmod(execute_dir, 0o777)
    try:
        status = _as_user(user.uid, user.gid, box)
    finally:
        os.chmod(execute_dir, 0o755)
        if os.path.exists(box.path):
            remove_sandbox(box)
    assert status == 0
    assert not os.path.exists(box.path)


def _deep_tree(root: Path, depth: int) -> Path:
    """A chain of ``depth`` nested directories under ``root``, a file in the deepest; the
    deepest directory. Made fd-relative, since its path outgrows PATH_MAX."""
    fd = os.open(root, os.O_RDONLY | os.O_DIRECTORY)
    try:
        for _ in range(depth):
            os.mkdir("d", dir_fd=fd)
            inner = os.open("d", os.O_RDONLY | os.O_DIRECTORY, dir_fd=fd)
            os.close(fd)
            fd = inner
        os.close(os.open("f", os.O_WRONLY | os.O_CREAT, 0o644, dir_fd=fd))
    finally:
        os.close(fd)
    return root


def _outside(tmp_path: Path) -> tuple[Path, dict[str, bytes], int]:
    """A directory outside the sandbox with two files in it: the directory, its files and
    its mode, to check afterwards that nothing there changed."""
    victim = tmp_path / "victim"
    (victim / "sub").mkdir(parents=True)
    files = {"victimfile": b"keep me", "sub/inner": b"me too"}
    for name, data in files.items():
        (victim / name).write_bytes(data)
    victim.chmod(0o751)
    return victim, files, 0o751


def _untouched(victim: Path, files: dict[str, bytes], mode: int) -> None:
    assert stat.S_IMODE(victim.stat().st_mode) == mode
    for name, data in files.items():
        assert (victim / name).read_bytes() == data


def test_remove_sandbox_removes_a_tree_deeper_than_python_recursion(tmp_path: Path) -> None:
    """A 3,000-level tree is removed whole (no RecursionError, no descriptor per level) and
    measured with disk_usage_kb."""
    root = tmp_path / "dir_1"
    root.mkdir()
    _deep_tree(root, 3000)
    assert disk_usage_kb(str(root)) >= 3000 * 4
    remove_sandbox(Sandbox(str(root)))
    assert not root.exists()


def test_remove_sandbox_removes_links_and_never_their_targets(tmp_path: Path) -> None:
    """Links in the sandbox to a directory and a file outside are removed as links: what
    they point to keeps its mode and contents, and the sandbox's parent keeps its mode."""
    victim, files, mode = _outside(tmp_path)
    execute = tmp_path / "execute"
    execute.mkdir(mode=0o755)
    execute.chmod(0o755)
    root = execute / "dir_2"
    (root / "x" / "y").mkdir(parents=True)
    (root / "x" / "victimdir").symlink_to(victim)
    (root / "x" / "y" / "file").symlink_to(victim / "victimfile")
    (root / "top").symlink_to(victim)
    (root / "x").chmod(0o500)
    remove_sandbox(Sandbox(str(root)))
    assert not root.exists()
    _untouched(victim, files, mode)
    assert stat.S_IMODE(execute.stat().st_mode) == 0o755


def test_a_sandbox_that_is_a_link_is_removed_as_a_link(tmp_path: Path) -> None:
    """When the sandbox's own name is a link, the link goes and its target is untouched."""
    victim, files, mode = _outside(tmp_path)
    link = tmp_path / "dir_3"
    link.symlink_to(victim)
    remove_sandbox(Sandbox(str(link)))
    assert not os.path.lexists(link)
    _untouched(victim, files, mode)


def test_disk_usage_does_not_follow_links_out_of_the_sandbox(tmp_path: Path) -> None:
    """A link to a large directory outside counts as the link alone."""
    big = tmp_path / "big"
    big.mkdir()
    (big / "blob").write_bytes(os.urandom(2 * 1024 * 1024))
    root = tmp_path / "dir_4"
    root.mkdir()
    (root / "link").symlink_to(big)
    assert disk_usage_kb(str(root)) < 64
    assert disk_usage_kb(str(root / "link")) == 0


def test_remove_sandbox_raced_by_link_swaps_never_touches_the_target(tmp_path: Path) -> None:
    """While the sandbox is removed, another process keeps renaming its directory ``x`` away
    and planting a link to an outside directory in its place: the outside directory's mode
    and contents are never changed, whatever the interleaving (10 rounds)."""
    victim, files, mode = _outside(tmp_path)
    (victim / "x").mkdir()
    (victim / "x" / "victimfile").write_bytes(b"keep me")
    files["x/victimfile"] = b"keep me"
    for round_ in range(10):
        root = tmp_path / f"dir_{100 + round_}"
        (root / "x").mkdir(parents=True)
        for n in range(300):
            os.close(os.open(root / "x" / f"f{n}", os.O_WRONLY | os.O_CREAT, 0o644))
        (root / "x" / "victimfile").mkdir()
        pid = os.fork()
        if pid == 0:  # pragma: no cover - the racing child
            try:
                for attempt in range(20000):
                    try:
                        os.rename(root / "x", root / f"moved{attempt}")
                        os.symlink(victim, root / "x")
                        break
                    except OSError:
                        continue
            finally:
                os._exit(0)
        with contextlib.suppress(SandboxError):
            remove_sandbox(Sandbox(str(root)))
        os.waitpid(pid, 0)
        _untouched(victim, files, mode)
        if root.exists():
            remove_sandbox(Sandbox(str(root)))
        assert not os.path.lexists(root)


def test_remove_sandbox_reports_what_it_cannot_remove(tmp_path: Path) -> None:
    """A sandbox that cannot be reached (its parent is a file) is a SandboxError naming it."""
    (tmp_path / "file").write_text("x")
    with pytest.raises(SandboxError, match=r"cannot remove the sandbox .*file/dir_1"):
        remove_sandbox(Sandbox(str(tmp_path / "file" / "dir_1")))


def test_a_machine_ad_given_as_text_is_written_as_it_is(tmp_path: Path) -> None:
    """The machine ad may come as its old-syntax text (as the startd sends it): the file
    holds that text, and the job ad beside it is written from the ad."""
    text = format_old(MACHINE)
    box = make_sandbox(str(tmp_path), 5, os.getuid(), os.getgid(), (JOB, text))
    try:
        assert Path(box.machine_ad_path).read_text(encoding="utf-8") == text
        assert parse_ad(Path(box.job_ad_path).read_text(encoding="utf-8")) == JOB
    finally:
        remove_sandbox(box)
