"""The startup probe: is there a runtime, which version, can it run a sandbox and a SIF, with
or without a PID namespace; the slot attributes that say so (HTCondor's starter ``-classad``).

A runtime that cannot be started because it is not there (ENOENT) turns the feature off
without a word and without attributes, as HTCondor does; one that is there but cannot run
either test container gives HasSingularity = false and SingularityOfflineReason.
"""

from __future__ import annotations

import errno
import logging
import os
import re
import subprocess
from collections.abc import Sequence
from pathlib import Path

import attrs

from epcore.types import MachineAttribute
from epcore_apptainer.settings import Settings
from epcore_apptainer.testimages import (
    EXPECTED_STATUS,
    PROGRAM,
    USER_NS_PROGRAM,
    make_sandbox,
)

_ANSI = re.compile(r"\x1b\[[0-9;?]*[A-Za-z]")
_USER_NS = re.compile(r"user:\[(\d+)\]")
#: The options the probe contains its test run with, with and without a PID namespace.
WITH_PID_NAMESPACE = ("-C",)
WITHOUT_PID_NAMESPACE = ("--contain", "--ipc", "--cleanenv")


def strip_ansi(text: str) -> str:
    """``text`` without terminal colour codes (apptainer colours its FATAL lines)."""
    return _ANSI.sub("", text)


def last_line(text: str) -> str:
    """The last non-empty line of a runtime's output, colour codes stripped."""
    lines = [line.strip() for line in strip_ansi(text).splitlines() if line.strip()]
    return lines[-1] if lines else ""


@attrs.frozen
class RunResult:
    """One run of the runtime: its status (None: it could not be started) and its output."""

    status: int | None
    output: str
    errno: int = 0


def run(argv: Sequence[str], timeout: float) -> RunResult:
    """Run ``argv`` with stdout and stderr together, stdin closed, within ``timeout``."""
    try:
        done = subprocess.run(
            list(argv),
            stdin=subprocess.DEVNULL,
            stdout=subprocess.PIPE,
            stderr=subprocess.STDOUT,
            timeout=timeout,
            check=False,
        )
    except OSError as error:
        return RunResult(None, error.strerror or str(error), error.errno or 0)
    except subprocess.TimeoutExpired:
        return RunResult(None, f"{argv[0]} did not finish within {timeout:.0f} s")
    return RunResult(done.returncode, done.stdout.decode(errors="replace"))


@attrs.frozen
class Probe:
    """What the probe found (``version`` None: no runtime, and no attributes at all)."""

    version: str | None
    sandbox: bool = False
    sif: bool = False
    pid_namespaces: bool = False
    #: Whether the runtime puts its jobs in a user namespace of their own (None: unknown).
    user_namespaces: bool | None = None
    #: The runtime's last words when both tests failed.
    failure: str = ""

    def attributes(self) -> list[MachineAttribute]:
        """The slot attributes (A.2): none without a runtime."""
        if self.version is None:
            return []
        found = [MachineAttribute("SingularityVersion", self.version)]
        if not (self.sandbox or self.sif):
            reason = "Both SIF and Sandbox tests on startup failed"
            if self.failure:
                reason += f" : {self.failure}"
            return [
                MachineAttribute("HasSingularity", False),
                MachineAttribute("SingularityOfflineReason", reason),
                *found,
            ]
        found += [
            MachineAttribute("HasSingularity", True),
            MachineAttribute("HasContainer", True),
            # A download cannot be tried at startup: it is assumed to work.
            MachineAttribute("HasDockerURL", True),
            MachineAttribute("HasPidNamespaces", self.pid_namespaces),
        ]
        if self.user_namespaces is not None:
            found.append(MachineAttribute("SingularityUserNamespaces", self.user_namespaces))
        if self.sandbox:
            found.append(MachineAttribute("HasSandboxImage", True))
        if self.sif:
            found.append(MachineAttribute("HasSIF", True))
        return found


def _exits_37(settings: Settings, image: str, pid_namespaces: bool) -> RunResult:
    assert settings.runtime is not None
    contain = WITH_PID_NAMESPACE if pid_namespaces else WITHOUT_PID_NAMESPACE
    argv = [settings.runtime, "exec", *contain, image, PROGRAM]
    return run(argv, settings.probe_timeout)


def user_namespace_of(settings: Settings, sandbox: str, pid_namespaces: bool) -> bool | None:
    """Whether a job of the runtime is in a user namespace other than this process's: the
    sandbox's /get_user_ns prints the link of its own (HTCondor 24.x+); equal means the
    setuid flow, no answer means unknown."""
    assert settings.runtime is not None
    contain = WITH_PID_NAMESPACE if pid_namespaces else WITHOUT_PID_NAMESPACE
    argv = [settings.runtime, "exec", *contain, sandbox, USER_NS_PROGRAM]
    inside = run(argv, settings.probe_timeout)
    found = _USER_NS.search(inside.output) if inside.status == 0 else None
    try:
        ours = _USER_NS.search(os.readlink("/proc/self/ns/user"))
    except OSError:
        ours = None
    if found is None or ours is None:
        return None
    return found.group(1) != ours.group(1)


def probe_images(settings: Settings, directory: Path, log: logging.Logger) -> tuple[str, str]:
    """The sandbox (SINGULARITY_TEST_SANDBOX when it exists, else made in ``directory``) and
    the SIF built from it by the runtime (again when the sandbox is newer)."""
    assert settings.runtime is not None
    configured = settings.test_sandbox
    if configured and os.path.isdir(configured):
        sandbox = Path(configured)
    else:
        sandbox = make_sandbox(directory / "sandbox")
    sif = directory / "exit_37.sif"
    program = sandbox / PROGRAM.lstrip("/")
    if not sif.exists() or sif.stat().st_mtime < program.stat().st_mtime:
        built = run(
            [settings.runtime, "build", "--force", str(sif), str(sandbox)], settings.probe_timeout
        )
        if built.status != 0:
            log.warning("the runtime could not build the test SIF: %s", last_line(built.output))
    return str(sandbox), str(sif)


def probe(settings: Settings, directory: Path, log: logging.Logger) -> Probe:
    """Run the probe, its test images in ``directory`` (made when missing)."""
    if settings.runtime is None:
        log.info("apptainer jobs are off: %s", settings.missing)
        return Probe(None)
    version = run([settings.runtime, "--version"], settings.probe_timeout)
    if version.status is None and version.errno == errno.ENOENT:
        return Probe(None)
    lines = version.output.strip().splitlines()
    if version.status != 0 or not lines:
        log.error("%s --version failed: %s", settings.runtime, last_line(version.output))
        return Probe(None)
    directory.mkdir(parents=True, exist_ok=True)
    sandbox, sif = probe_images(settings, directory, log)
    pid_namespaces = settings.pid_namespaces != "false"
    tried = _exits_37(settings, sandbox, pid_namespaces)
    if tried.status != EXPECTED_STATUS and settings.pid_namespaces == "auto":
        # HTCondor retries once without a PID namespace; the outcome is HasPidNamespaces.
        pid_namespaces = False
        tried = _exits_37(settings, sandbox, pid_namespaces)
    failure = "" if tried.status == EXPECTED_STATUS else last_line(tried.output)
    with_sif = _exits_37(settings, sif, pid_namespaces)
    if with_sif.status != EXPECTED_STATUS:
        failure = last_line(with_sif.output) or failure
    sandbox_works = tried.status == EXPECTED_STATUS
    return Probe(
        version=lines[0].strip(),
        sandbox=sandbox_works,
        sif=with_sif.status == EXPECTED_STATUS,
        pid_namespaces=pid_namespaces,
        user_namespaces=user_namespace_of(settings, sandbox, pid_namespaces)
        if sandbox_works
        else None,
        failure=failure,
    )
