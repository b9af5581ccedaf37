"""Files travelling between a job's Iwd and its sandbox (epcore.starter.transfer)."""

from __future__ import annotations

import os
import stat
import subprocess
import tempfile
from collections.abc import Iterator
from pathlib import Path

import pytest

from epcore.classad import parse_ad
from epcore.errors import JobSetupError
from epcore.jobs.codes import HoldCode
from epcore.starter.transfer import (
    executable_into,
    stamps,
    transfer_in,
    transfer_out,
)
from epcore.testing.system import SlotUser

ME = (os.getuid(), os.getgid())


@pytest.fixture
def places(tmp_path: Path) -> tuple[Path, Path]:
    """An Iwd and a sandbox, both the test's own."""
    iwd, sandbox = tmp_path / "iwd", tmp_path / "sandbox"
    iwd.mkdir()
    sandbox.mkdir()
    return iwd, sandbox


def test_input_files_and_directories_are_copied_into_the_sandbox(
    places: tuple[Path, Path],
) -> None:
    """TransferInput copies files, a directory with its name, and a ``dir/``'s contents."""
    iwd, sandbox = places
    (iwd / "a.txt").write_text("a")
    (iwd / "data").mkdir()
    (iwd / "data" / "b.txt").write_text("b")
    (iwd / "flat").mkdir()
    (iwd / "flat" / "c.txt").write_text("c")
    job = parse_ad('[ TransferInput = "a.txt, data,flat/" ]')
    made = transfer_in(job, str(iwd), str(sandbox), *ME)
    assert made == ("a.txt", "data", ".")
    assert (sandbox / "a.txt").read_text() == "a"
    assert (sandbox / "data" / "b.txt").read_text() == "b"
    assert (sandbox / "c.txt").read_text() == "c"


@pytest.mark.parametrize(
    "listed",
    ["missing.txt", "ok.txt, missing.txt", "/no/such/absolute/file"],
)
def test_a_missing_input_holds_the_job_with_code_13(places: tuple[Path, Path], listed: str) -> None:
    """An input that cannot be copied is a JobSetupError with code 13 naming the file."""
    iwd, sandbox = places
    (iwd / "ok.txt").write_text("ok")
    job = parse_ad(f'[ TransferInput = "{listed}" ]')
    with pytest.raises(JobSetupError) as caught:
        transfer_in(job, str(iwd), str(sandbox), *ME)
    assert caught.value.hold_code == HoldCode.UPLOAD_FILE_ERROR
    assert "missing" in str(caught.value) or "/no/such" in str(caught.value)


def test_input_links_to_files_are_followed_and_to_directories_refused(
    places: tuple[Path, Path], tmp_path: Path
) -> None:
    """As HTCondor's file transfer: a link to a file is read through (the copy is a regular
    file), a link to a directory is refused unless named with a trailing / (its contents)."""
    iwd, sandbox = places
    (tmp_path / "real.txt").write_text("real")
    (tmp_path / "realdir").mkdir()
    (tmp_path / "realdir" / "inner.txt").write_text("inner")
    (iwd / "link").symlink_to(tmp_path / "real.txt")
    (iwd / "dirlink").symlink_to(tmp_path / "realdir")
    assert transfer_in(
        parse_ad('[ TransferInput = "link, dirlink/" ]'), str(iwd), str(sandbox), *ME
    )
    assert (sandbox / "link").read_text() == "real" and not (sandbox / "link").is_symlink()
    assert (sandbox / "inner.txt").read_text() == "inner"
    with pytest.raises(JobSetupError, match="link to a directory") as caught:
        transfer_in(parse_ad('[ TransferInput = "dirlink" ]'), str(iwd), str(sandbox), *ME)
    assert caught.value.hold_code == HoldCode.UPLOAD_FILE_ERROR


def test_a_directorys_fifos_are_left_out_and_links_inside_follow_the_same_rules(
    places: tuple[Path, Path], tmp_path: Path
) -> None:
    """Inside an input directory a FIFO is left out (never opened, so nothing blocks), a link
    to a file is copied as a file, and a link to a directory is refused."""
    iwd, sandbox = places
    (tmp_path / "real.txt").write_text("real")
    data = iwd / "data"
    data.mkdir()
    os.mkfifo(data / "pipe")
    (data / "link").symlink_to(tmp_path / "real.txt")
    transfer_in(parse_ad('[ TransferInput = "data" ]'), str(iwd), str(sandbox), *ME)
    assert sorted(p.name for p in (sandbox / "data").iterdir()) == ["link"]
    assert (sandbox / "data" / "link").read_text() == "real"
    (data / "up").symlink_to(iwd)
    with pytest.raises(JobSetupError, match="link to a directory"):
        transfer_in(parse_ad('[ TransferInput = "data" ]'), str(iwd), str(sandbox), *ME)


def _deep(base: Path, levels: int) -> str:
    """Make ``levels`` nested directories ``d`` under ``base``, each from the one above
    (no recursion, no long path looked up again); the path of the last."""
    fd = os.open(base, os.O_RDONLY | os.O_DIRECTORY)
    try:
        for _ in range(levels):
            os.mkdir("d", dir_fd=fd)
            below = os.open("d", os.O_RDONLY | os.O_DIRECTORY, dir_fd=fd)
            os.close(fd)
            fd = below
    finally:
        os.close(fd)
    return str(base) + "/d" * levels


def _remove_deep(path: Path) -> None:
    """Remove a tree too deep for pathlib and shutil.rmtree (they recurse): rm -rf walks it
    without."""
    subprocess.run(["rm", "-rf", "--", str(path)], check=True)


def test_a_deep_input_tree_is_copied_without_recursion(places: tuple[Path, Path]) -> None:
    """A 1,100-level input directory (deeper than Python's recursion limit) is copied whole."""
    iwd, sandbox = places
    levels = 1100
    (iwd / "deep").mkdir()
    leaf = _deep(iwd / "deep", levels)
    Path(leaf, "bottom.txt").write_text("bottom")
    try:
        transfer_in(parse_ad('[ TransferInput = "deep" ]'), str(iwd), str(sandbox), *ME)
        copied = str(sandbox / "deep") + "/d" * levels + "/bottom.txt"
        assert Path(copied).read_text() == "bottom"
    finally:
        _remove_deep(iwd / "deep")
        _remove_deep(sandbox / "deep")


def test_the_executable_is_copied_and_made_executable(places: tuple[Path, Path]) -> None:
    """executable_into copies the program into the sandbox with its user's execute bit."""
    iwd, sandbox = places
    program = iwd / "run.sh"
    program.write_text("#!/bin/sh\necho hi\n")
    program.chmod(0o600)
    path = executable_into(str(program), str(sandbox), *ME)
    assert path == str(sandbox / "run.sh")
    assert os.stat(path).st_mode & 0o700 == 0o700
    assert Path(path).read_text() == program.read_text()


def test_a_missing_executable_holds_with_code_6(places: tuple[Path, Path]) -> None:
    """An executable that is gone is a JobSetupError with code 6 naming it."""
    iwd, sandbox = places
    with pytest.raises(JobSetupError) as caught:
        executable_into(str(iwd / "gone"), str(sandbox), *ME)
    assert caught.value.hold_code == 6
    assert "gone" in str(caught.value)


def test_new_and_changed_files_go_back_and_others_stay(places: tuple[Path, Path]) -> None:
    """Without TransferOutput, what the job made or changed at the top goes back to the Iwd;
    unchanged inputs, the ad files, directories and links do not."""
    iwd, sandbox = places
    (sandbox / ".job.ad").write_text("x")
    (sandbox / "input.txt").write_text("same")
    (sandbox / "changed.txt").write_text("old")
    before = stamps(str(sandbox))
    (sandbox / "changed.txt").write_text("new and longer")
    (sandbox / "made.txt").write_text("made")
    (sandbox / "subdir").mkdir()
    (sandbox / "link").symlink_to("/etc/passwd")
    job = parse_ad('[ Cmd = "x" ]')
    assert transfer_out(job, str(sandbox), str(iwd), before, *ME) is None
    assert sorted(p.name for p in iwd.iterdir()) == ["changed.txt", "made.txt"]
    assert (iwd / "changed.txt").read_text() == "new and longer"


def test_transfer_output_names_what_goes_back(places: tuple[Path, Path]) -> None:
    """TransferOutput copies exactly the named files and directories."""
    iwd, sandbox = places
    (sandbox / "one.txt").write_text("1")
    (sandbox / "two.txt").write_text("2")
    (sandbox / "results").mkdir()
    (sandbox / "results" / "r.txt").write_text("r")
    job = parse_ad('[ TransferOutput = "two.txt,results" ]')
    assert transfer_out(job, str(sandbox), str(iwd), {}, *ME) is None
    assert sorted(p.name for p in iwd.iterdir()) == ["results", "two.txt"]
    assert (iwd / "results" / "r.txt").read_text() == "r"


@pytest.mark.parametrize(
    ("make", "expected"),
    [
        (lambda sandbox: None, "made no out.txt"),
        (lambda sandbox: (sandbox / "out.txt").symlink_to("/etc/passwd"), "cannot copy"),
    ],
)
def test_an_output_that_cannot_go_back_is_reported(
    places: tuple[Path, Path], make: object, expected: str
) -> None:
    """A named output the job did not make, or one that is a link, gives the reason back."""
    iwd, sandbox = places
    assert callable(make)
    make(sandbox)
    job = parse_ad('[ TransferOutput = "out.txt" ]')
    problem = transfer_out(job, str(sandbox), str(iwd), {}, *ME)
    assert problem is not None and expected in problem
    assert not (iwd / "out.txt").exists()


# -- as a real unprivileged user, with root's starter ------------------------------------------


@pytest.fixture
def user_places(slot_users: tuple[SlotUser, ...]) -> Iterator[tuple[SlotUser, Path, Path, Path]]:
    """A slot user, its Iwd and its sandbox (both its own), and a directory of root's (0700)
    holding ``secret.txt`` and the directory ``keep``; all under a directory the user can
    reach, removed afterwards."""
    user = slot_users[0]
    top = Path(tempfile.mkdtemp(prefix="ep_test_transfer_"))
    top.chmod(0o755)
    try:
        iwd, sandbox, private = top / "iwd", top / "sandbox", top / "private"
        for made in (iwd, sandbox):
            made.mkdir()
            os.chown(made, user.uid, user.gid)
        private.mkdir(mode=0o700)
        (private / "secret.txt").write_text("root's")
        (private / "keep").mkdir()
        (private / "keep" / "kept.txt").write_text("kept")
        yield user, iwd, sandbox, private
    finally:
        subprocess.run(["rm", "-rf", "--", str(top)], check=True)


@pytest.mark.system
def test_a_symlinked_executable_is_copied_from_its_target_as_the_user(
    user_places: tuple[SlotUser, Path, Path, Path],
) -> None:
    """``executable = /bin/sh`` (a link on Debian) and a link in the Iwd to a program are read
    through as the job's user: the sandbox gets a regular file with the target's bytes, the
    user's, executable by it."""
    user, iwd, sandbox, _ = user_places
    (iwd / "prog").symlink_to("/bin/true")
    for executable, target in (("/bin/sh", "/bin/sh"), (str(iwd / "prog"), "/bin/true")):
        path = Path(executable_into(executable, str(sandbox), user.uid, user.gid))
        info = path.lstat()
        assert stat.S_ISREG(info.st_mode) and info.st_uid == user.uid
        assert info.st_mode & 0o700 == 0o700
        assert path.read_bytes() == Path(target).resolve().read_bytes()


@pytest.mark.system
def test_symlinked_inputs_are_read_as_the_user(
    user_places: tuple[SlotUser, Path, Path, Path],
) -> None:
    """An input link to a file the user may read is copied; one to root's private file is
    refused with Permission denied (read as the user, not as root), and nothing of it is
    copied."""
    user, iwd, sandbox, private = user_places
    (iwd / "readable").symlink_to("/etc/hostname")
    (iwd / "stolen").symlink_to(private / "secret.txt")
    made = transfer_in(
        parse_ad('[ TransferInput = "readable" ]'), str(iwd), str(sandbox), user.uid, user.gid
    )
    assert made == ("readable",)
    assert (sandbox / "readable").read_bytes() == Path("/etc/hostname").read_bytes()
    with pytest.raises(JobSetupError, match="stolen into the sandbox: Permission denied"):
        transfer_in(
            parse_ad('[ TransferInput = "stolen" ]'), str(iwd), str(sandbox), user.uid, user.gid
        )
    assert not (sandbox / "stolen").exists()


@pytest.mark.system
def test_a_symlink_planted_in_the_sandbox_is_refused(
    user_places: tuple[SlotUser, Path, Path, Path],
) -> None:
    """Links the job's user planted in the sandbox are never followed: not at the
    executable's name (hold 6), not at an input directory's name (hold 13), not as a
    directory on an output's path (the output is reported); root's files stay as they were."""
    user, iwd, sandbox, private = user_places
    (sandbox / "true").symlink_to(private / "secret.txt")
    with pytest.raises(JobSetupError, match="Too many levels of symbolic links") as caught:
        executable_into("/bin/true", str(sandbox), user.uid, user.gid)
    assert caught.value.hold_code == 6
    (iwd / "keep").mkdir()
    (iwd / "keep" / "new.txt").write_text("new")
    os.chown(iwd / "keep", user.uid, user.gid)
    (sandbox / "keep").symlink_to(private / "keep")
    with pytest.raises(JobSetupError) as caught:
        transfer_in(
            parse_ad('[ TransferInput = "keep" ]'), str(iwd), str(sandbox), user.uid, user.gid
        )
    assert caught.value.hold_code == HoldCode.UPLOAD_FILE_ERROR
    (sandbox / "out").symlink_to(private / "keep")
    job = parse_ad('[ TransferOutput = "out/kept.txt" ]')
    problem = transfer_out(job, str(sandbox), str(iwd), {}, user.uid, user.gid)
    assert problem is not None and "out/kept.txt" in problem
    assert not (iwd / "kept.txt").exists()
    assert (private / "secret.txt").read_text() == "root's"
    assert sorted(p.name for p in (private / "keep").iterdir()) == ["kept.txt"]
    assert stat.S_IMODE(private.stat().st_mode) == 0o700
