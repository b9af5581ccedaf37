"""Files travelling between a job's Iwd and its sandbox (epcore.starter.transfer)."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from epcore.classad import parse_ad
from epcore.errors import JobSetupError
from epcore.starter.transfer import (
    HOLD_TRANSFER_INPUT,
    executable_into,
    stamps,
    transfer_in,
    transfer_out,
)

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
    assert caught.value.hold_code == HOLD_TRANSFER_INPUT
    assert "missing" in str(caught.value) or "/no/such" in str(caught.value)


def test_input_links_are_not_followed(places: tuple[Path, Path], tmp_path: Path) -> None:
    """A link among the inputs is refused rather than read through (it may point anywhere)."""
    iwd, sandbox = places
    secret = tmp_path / "secret"
    secret.write_text("not yours")
    (iwd / "link").symlink_to(secret)
    job = parse_ad('[ TransferInput = "link" ]')
    with pytest.raises(JobSetupError):
        transfer_in(job, str(iwd), str(sandbox), *ME)
    assert not (sandbox / "link").exists()


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
