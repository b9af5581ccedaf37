"""The commands the LVM scratch filesystems run (lvm, losetup, mke2fs, mount), each with the
VOLUME_MANAGER_TIMEOUT, and the reading of their reports.

:class:`Commands` is the one place a process is started, so that the tests on a machine
without device-mapper hand the backend a fake one that records the command lines."""

from __future__ import annotations

import os
import shutil
import subprocess
from collections.abc import Sequence

from epcore.errors import EpError

#: The tag every job volume carries: a startd's start removes the tagged volumes no job holds.
TAG = "htcondor_lv"
#: The second tag of an encrypted job volume (HTCondor's).
ENCRYPTED_TAG = "lv_is_encrypted"


def load_module(module: str, node: str) -> None:
    """Load the kernel ``module`` when its device ``node`` is missing, as lvm and losetup
    would on a machine whose udev loads nothing (no modprobe, or no module: nothing)."""
    if os.path.exists(node) or shutil.which("modprobe") is None:
        return
    subprocess.run(["modprobe", "-q", module], capture_output=True, timeout=30, check=False)


class LvmError(EpError):
    """A command that failed: its command line and what it said."""


class Commands:
    """Runs commands with a time limit; ``lvm_config`` goes to every lvm command's --config."""

    def __init__(self, timeout: float, lvm_config: str = "") -> None:
        self.timeout = timeout
        self.lvm_config = lvm_config

    def run(self, argv: Sequence[str], stdin: str | None = None) -> str:
        """The standard output of ``argv`` given ``stdin``; LvmError when it fails or times
        out."""
        environment = dict(os.environ, LVM_SUPPRESS_FD_WARNINGS="1", LC_ALL="C")
        try:
            done = subprocess.run(
                list(argv),
                capture_output=True,
                text=True,
                timeout=self.timeout,
                env=environment,
                input=stdin if stdin is not None else "",
            )
        except subprocess.TimeoutExpired as error:
            raise LvmError(f"{' '.join(argv)}: no answer in {self.timeout:.0f} s") from error
        except OSError as error:
            raise LvmError(f"{' '.join(argv)}: {error.strerror}") from error
        if done.returncode != 0:
            said = (done.stderr.strip() or done.stdout.strip()).splitlines()
            raise LvmError(f"{' '.join(argv)}: {said[-1] if said else done.returncode}")
        return done.stdout

    def lvm(self, command: str, *args: str) -> str:
        """``lvm COMMAND [--config ...] ARGS``."""
        extra = ["--config", self.lvm_config] if self.lvm_config else []
        return self.run(["lvm", command, *extra, *args])

    def report(self, command: str, fields: str, *args: str) -> list[list[str]]:
        """The rows of an lvm report (``lvs``, ``vgs``, ``pvs``) with ``fields``."""
        text = self.lvm(
            command, "--noheadings", "--nosuffix", "--units", "b", "--separator", "|",
            "-o", fields, *args,
        )  # fmt: skip
        return [[cell.strip() for cell in line.split("|")] for line in text.splitlines() if line]
