"""The job's sandbox (scratch directory): ``<EXECUTE>/dir_<starter pid>``, owned by the job user.

As HTCondor, the sandbox holds the job ad and the machine ad in old ClassAd syntax
(``.job.ad``, ``.machine.ad``, their paths given to the job as _CONDOR_JOB_AD and
_CONDOR_MACHINE_AD) and is removed with everything in it when the job is done.
"""

from __future__ import annotations

import contextlib
import os
import shutil
import stat

import attrs

from epcore.classad import ClassAd, format_old
from epcore.errors import JobSetupError

#: HoldReasonCode 14: the job's working directory could not be made or used.
HOLD_IWD = 14

JOB_AD_FILE = ".job.ad"
MACHINE_AD_FILE = ".machine.ad"


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
    ads: tuple[ClassAd, ClassAd] | None = None,
) -> Sandbox:
    """Make the sandbox, mode 0700 and owned by ``uid``:``gid``, holding the job and machine
    ``ads`` when given. The ads are written while the directory is still root's, so that no
    process of the job's user can plant a link where they go.

    Raises JobSetupError (hold code 14) naming the directory when it cannot be made.
    """
    path = sandbox_path(execute_dir, starter_id)
    try:
        os.mkdir(path, 0o700)
        sandbox = Sandbox(path)
        if ads is not None:
            write_ads(sandbox, ads[0], ads[1], uid, gid)
        if os.geteuid() == 0:
            os.chown(path, uid, gid)
    except OSError as error:
        raise JobSetupError(
            f"cannot make the job's sandbox {path}: {error.strerror}", HOLD_IWD, error.errno or 0
        ) from error
    return sandbox


def write_ads(sandbox: Sandbox, job: ClassAd, machine: ClassAd, uid: int, gid: int) -> None:
    """Write (or rewrite) the job and machine ads into the sandbox, readable by the job."""
    for path, ad in ((sandbox.job_ad_path, job), (sandbox.machine_ad_path, machine)):
        temporary = path + ".tmp"
        with contextlib.suppress(FileNotFoundError):
            os.unlink(temporary)
        # O_EXCL and O_NOFOLLOW: never through a link someone left in the sandbox.
        fd = os.open(temporary, os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW, 0o644)
        with open(fd, "w", encoding="utf-8") as handle:
            handle.write(format_old(ad))
        if os.geteuid() == 0:
            os.chown(temporary, uid, gid)
        os.replace(temporary, path)


def disk_usage_kb(path: str) -> int:
    """Disk space used under ``path`` in KB (allocated blocks, as ``du``), 0 when it is gone."""
    total = 0
    stack = [path]
    while stack:
        current = stack.pop()
        try:
            entries = list(os.scandir(current))
        except OSError:
            continue
        for entry in entries:
            try:
                info = entry.stat(follow_symlinks=False)
            except OSError:
                continue
            total += info.st_blocks * 512
            if stat.S_ISDIR(info.st_mode):
                stack.append(entry.path)
    return (total + 1023) // 1024


def remove_sandbox(sandbox: Sandbox) -> None:
    """Remove the sandbox and everything in it (files the job made unwritable included)."""

    def writable_again(function: object, path: str, excinfo: object) -> None:
        # A job may leave read-only directories behind; root can still change their mode.
        parent = os.path.dirname(path)
        try:
            os.chmod(parent, 0o700)
            if os.path.isdir(path) and not os.path.islink(path):
                os.chmod(path, 0o700)
                shutil.rmtree(path, ignore_errors=True)
            else:
                os.unlink(path)
        except OSError:
            pass

    shutil.rmtree(sandbox.path, onerror=writable_again)
