"""The job's sandbox (scratch directory): ``<EXECUTE>/dir_<starter pid>``, owned by the job user.

As HTCondor, the sandbox holds the job ad and the machine ad in old ClassAd syntax
(``.job.ad``, ``.machine.ad``, their paths given to the job as _CONDOR_JOB_AD and
_CONDOR_MACHINE_AD) and is removed with everything in it when the job is done.
"""

from __future__ import annotations

import contextlib
import os
import stat
import time
from collections.abc import Callable

import attrs

from epcore.classad import ClassAd, format_old
from epcore.errors import JobSetupError
from epcore.jobs.codes import HoldCode
from epcore.starter.tree import DIR_FLAGS, NOT_A_DIRECTORY, TreeError, make_usable, walk

#: How many times removal goes through a sandbox whose user keeps changing it.
REMOVAL_PASSES = 3
#: The pause between two passes once those first passes have failed.
PASS_PAUSE_SECONDS = 0.2

JOB_AD_FILE = ".job.ad"
MACHINE_AD_FILE = ".machine.ad"


class SandboxError(TreeError):
    """A sandbox that could not be removed; names it and what is left."""


@attrs.frozen
class Sandbox:
    """A made sandbox: its path and the paths of the two ad files in it."""

    path: str

    @property
    def job_ad_path(self) -> str:
        return os.path.join(self.path, JOB_AD_FILE)

    @property
    def machine_ad_path(self) -> str:
        return os.path.join(self.path, MACHINE_AD_FILE)


def sandbox_path(execute_dir: str, starter_id: int) -> str:
    """Where the sandbox of starter ``starter_id`` lives."""
    return os.path.join(execute_dir, f"dir_{starter_id}")


def make_sandbox(
    execute_dir: str,
    starter_id: int,
    uid: int,
    gid: int,
    ads: tuple[ClassAd, ClassAd | str] | None = None,
    mount: Callable[[str], None] | None = None,
) -> Sandbox:
    """Make the sandbox, mode 0700 and owned by ``uid``:``gid``, holding the job and machine
    ``ads`` when given. The ads are written while the directory is still root's, so that no
    process of the job's user can plant a link where they go.

    ``mount`` (a per-job scratch filesystem's) is called with the empty directory before
    anything is written into it; a mount point that has lost its mode and owner gets them back.

    Raises JobSetupError (hold code 14) naming the directory when it cannot be made, and lets
    through the one ``mount`` raises (after removing the directory).
    """
    path = sandbox_path(execute_dir, starter_id)
    try:
        os.mkdir(path, 0o700)
        sandbox = Sandbox(path)
        if mount is not None:
            try:
                mount(path)
            except BaseException:
                with contextlib.suppress(OSError):
                    os.rmdir(path)
                raise
            os.chmod(path, 0o700)
        if ads is not None:
            write_ads(sandbox, ads[0], ads[1], uid, gid)
        if os.geteuid() == 0:
            os.chown(path, uid, gid)
    except OSError as error:
        raise JobSetupError(
            f"cannot make the job's sandbox {path}: {error.strerror}",
            HoldCode.IWD_ERROR,
            error.errno or 0,
        ) from error
    return sandbox


def write_ads(sandbox: Sandbox, job: ClassAd, machine: ClassAd | str, uid: int, gid: int) -> None:
    """Write (or rewrite) the job and machine ads into the sandbox, readable by the job
    (``machine`` may be the ad's text in the old syntax already)."""
    for path, ad in ((sandbox.job_ad_path, job), (sandbox.machine_ad_path, machine)):
        temporary = path + ".tmp"
        with contextlib.suppress(FileNotFoundError):
            os.unlink(temporary)
        # O_EXCL and O_NOFOLLOW: never through a link someone left in the sandbox.
        fd = os.open(temporary, os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW, 0o644)
        with open(fd, "w", encoding="utf-8") as handle:
            handle.write(ad if isinstance(ad, str) else format_old(ad))
            if os.geteuid() == 0:
                # Through the descriptor: the name may be a link by now, the file is not.
                os.fchown(handle.fileno(), uid, gid)
        os.replace(temporary, path)


def disk_usage_kb(path: str) -> int:
    """Disk space used under ``path`` in KB (allocated blocks, as ``du``), 0 when it is gone.

    The walk never follows a link nor leaves the tree (:mod:`epcore.starter.tree`); a part
    of the tree the job moves while it is measured is left out of the count.
    """
    total = 0

    def visit(fd: int, where: str) -> list[str]:
        nonlocal total
        subdirs = []
        for entry in _entries(fd):
            try:
                info = entry.stat(follow_symlinks=False)
            except OSError:
                continue
            total += info.st_blocks * 512
            if stat.S_ISDIR(info.st_mode):
                subdirs.append(entry.name)
        return subdirs

    parent, name = _split(path)
    try:
        parent_fd = os.open(parent, DIR_FLAGS & ~os.O_NOFOLLOW)
    except OSError:
        return 0
    try:
        walk(parent_fd, name, visit, lambda fd, name, where: None)
    except (OSError, TreeError):
        pass
    finally:
        os.close(parent_fd)
    return (total + 1023) // 1024


def remove_sandbox(sandbox: Sandbox, patience: float = 0.0) -> None:
    """Remove the sandbox and everything in it (files the job made unwritable included),
    never following a link and never acting outside it (:mod:`epcore.starter.tree`).

    The sandbox is opened from EXECUTE without following a link; as root nothing's mode is
    changed (root needs no permission to remove); run as the sandbox's owner, directories the
    job left read-only are made writable through descriptors of their own. What the job's
    user adds or moves while the tree is removed is tried again: at least REMOVAL_PASSES
    times, and for up to ``patience`` seconds.

    Raises SandboxError naming the sandbox and what could not be removed.
    """
    parent, name = _split(sandbox.path)
    try:
        parent_fd = os.open(parent, DIR_FLAGS & ~os.O_NOFOLLOW)
    except FileNotFoundError:
        return
    except OSError as error:
        raise SandboxError(f"cannot remove the sandbox {sandbox.path}: {error.strerror}") from error
    try:
        deadline = time.monotonic() + patience
        passes = 0
        while True:
            problems = _remove_pass(parent_fd, name)
            passes += 1
            if not problems:
                return
            if passes >= REMOVAL_PASSES and time.monotonic() >= deadline:
                break
            if passes >= REMOVAL_PASSES:
                time.sleep(PASS_PAUSE_SECONDS)
    finally:
        os.close(parent_fd)
    more = f" (and {len(problems) - 1} more)" if len(problems) > 1 else ""
    raise SandboxError(f"cannot remove the sandbox {sandbox.path}: {problems[0]}{more}")


def _remove_pass(parent_fd: int, name: str) -> list[str]:
    """Remove directory ``name`` of ``parent_fd`` once through; what could not be removed."""
    problems: list[str] = []

    def visit(fd: int, where: str) -> list[str]:
        subdirs = []
        try:
            make_usable(fd)
        except OSError as error:
            problems.append(f"{where}: {error.strerror}")
        for entry in _entries(fd):
            try:
                if entry.is_dir(follow_symlinks=False):
                    subdirs.append(entry.name)
                    continue
                os.unlink(entry.name, dir_fd=fd)
            except IsADirectoryError:
                subdirs.append(entry.name)
            except FileNotFoundError:
                pass
            except OSError as error:
                problems.append(f"{where}/{entry.name}: {error.strerror}")
        return subdirs

    def leave(fd: int, child: str, where: str) -> None:
        try:
            os.rmdir(child, dir_fd=fd)
        except FileNotFoundError:
            pass
        except NotADirectoryError:
            # Swapped for a link or a file after it was listed: the name goes, not its target.
            try:
                os.unlink(child, dir_fd=fd)
            except OSError as error:
                problems.append(f"{where}: {error.strerror}")
        except OSError as error:
            problems.append(f"{where}: {error.strerror}")

    try:
        walk(parent_fd, name, visit, leave)
    except FileNotFoundError:
        pass
    except OSError as error:
        if error.errno not in NOT_A_DIRECTORY:
            return [f"{name}: {error.strerror}"]
        # The sandbox's own name is a link or a file: that name is removed, nothing it names.
        try:
            os.unlink(name, dir_fd=parent_fd)
        except FileNotFoundError:
            pass
        except OSError as failure:
            return [f"{name}: {failure.strerror}"]
    except TreeError as error:
        problems.append(str(error))
    return problems


def _entries(fd: int) -> list[os.DirEntry[str]]:
    """The entries of the open directory ``fd`` (none when it cannot be read)."""
    try:
        with os.scandir(fd) as listing:
            return list(listing)
    except OSError:
        return []


def _split(path: str) -> tuple[str, str]:
    """The directory holding ``path`` and its last name."""
    parent, name = os.path.split(os.path.normpath(path))
    return parent or ".", name
