"""The apptainer container runtime: what the startd advertises and how a starter runs a job.

Built by the startd from its configuration (and again on reconfiguration) and inherited by
every starter. :meth:`ApptainerRuntime.machine_attributes` runs the startup probe
(:mod:`epcore_apptainer.detect`); :meth:`ApptainerRuntime.start` decides the image, binds and
options for one job (:mod:`epcore_apptainer.settings`), runs the pre-job test when
SINGULARITY_RUN_TEST_BEFORE_JOB is true, and starts ``<runtime> exec ...`` as the job's user
with the job's files as its standard streams (:mod:`epcore_apptainer.command`).

The runtime's exit status is the job's: apptainer passes the payload's on, and a runtime that
fails after the start (a missing image without the pre-job test) exits 255 with its reason in
the job's stderr, as in HTCondor.
"""

from __future__ import annotations

import contextlib
import logging
import os
import subprocess
from collections.abc import Collection, Iterator, Sequence
from pathlib import Path

from epcore.api import HoldCode, as_user, open_user_file
from epcore.classad import ClassAd
from epcore.config import Config
from epcore.errors import JobSetupError
from epcore.types import ContainerJob, MachineAttribute, RunningContainer
from epcore_apptainer import settings as knobs
from epcore_apptainer.command import (
    ContainerPlan,
    command_line,
    job_environment,
    pre_job_test_line,
)
from epcore_apptainer.detect import last_line, probe
from epcore_apptainer.launcher import marker_path, write_launcher
from epcore_apptainer.process import ApptainerProcess

NAME = "apptainer"
#: HTCondor's pre-job test failure: code 45 with the subcode that makes the shadow requeue.
TEST_FAILED_SUBCODE = -1000
#: The runtime's own PATH when the job's environment has none (it is a program to be found,
#: and the stand-in is a script).
DEFAULT_PATH = "/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin"
#: The shell that holds the runtime back until it is in the job's cgroups: it reads a line
#: from the pipe whose descriptor is its first argument, closes it, and becomes the runtime.
GATE_SCRIPT = 'fd=$1; shift; read -r _ <&"$fd"; eval "exec $fd<&-"; exec "$@"'
#: Seconds the pre-job test may take.
TEST_TIMEOUT = 120.0


class ApptainerRuntime:
    """The apptainer runtime of one startd (see the module docstring)."""

    name = NAME
    #: The runtime is the starter's child: the job is tracked and limited as a vanilla job.
    tracked_by_starter = True

    def __init__(self, config: Config, log: logging.Logger | None = None) -> None:
        self.config = config
        self.log = log or logging.getLogger("epcore.apptainer")
        self.settings = knobs.read_settings(config)
        self.probe_dir = Path(config.get("SPOOL") or "/tmp") / "apptainer_test"
        self._apptainer = True

    # -- what the startd advertises -------------------------------------------------------

    def machine_attributes(self) -> Sequence[MachineAttribute]:
        """HasSingularity, SingularityVersion, HasSIF, HasSandboxImage...; nothing when no
        runtime is installed; HasSingularity = false with SingularityOfflineReason when it is
        but cannot run the test containers."""
        found = probe(self.settings, self.probe_dir, self.log)
        if found.version is not None:
            self._apptainer = "apptainer" in found.version.lower()
            if not (found.sandbox or found.sif):
                self.log.warning("apptainer jobs cannot run here: %s", found.failure)
        return found.attributes()

    def runs(self, job: ClassAd, machine: ClassAd | None = None) -> bool:
        """Jobs that want an image (WantSIF, WantSandboxImage, WantDockerImage) and those
        SINGULARITY_JOB selects, evaluated with the slot as MY and the job as TARGET as
        HTCondor's starter does (an empty slot ad when the caller has none)."""
        slot = machine if machine is not None else ClassAd()
        return knobs.selected(self.config, self.settings, slot, job)

    # -- running a job --------------------------------------------------------------------

    def plan(self, request: ContainerJob) -> tuple[ContainerPlan, list[str]]:
        """The job's container plan, and the binds skipped (with why)."""
        settings, machine, job = self.settings, request.machine, request.job
        if settings.runtime is None:
            raise knobs.setup_failure(f"Singularity enabled but setup failed: {settings.missing}")
        image = knobs.image_for(self.config, settings, machine, job, request.sandbox)
        binds, skipped = knobs.binds_for(self.config, settings, machine, job, image)
        nvidia, rocm = knobs.gpu_flags(settings, machine)
        target = settings.target_dir
        if target is None:
            own = job.evaluate("ContainerTargetDir")
            target = own if isinstance(own, str) and own.strip() else None
        plan = ContainerPlan(
            runtime=settings.runtime,
            image=image,
            argv=request.argv,
            scratch=request.sandbox,
            verbosity=settings.verbosity,
            apptainer=self._apptainer_mode(),
            target_dir=target,
            mount_under_scratch=knobs.mount_under_scratch(self.config, settings, job),
            binds=tuple(binds),
            nvidia=nvidia,
            rocm=rocm,
            pid_namespaces=knobs.use_pid_namespaces(settings, machine),
            extra_arguments=knobs.extra_arguments(self.config, settings, machine, job),
            launcher=str(write_launcher(self.probe_dir)) if settings.use_launcher else None,
        )
        return plan, skipped

    def _apptainer_mode(self) -> bool:
        """Apptainer or Singularity (the environment prefix): from the version line the
        startd saw, else from the program's name."""
        runtime = self.settings.runtime or ""
        if "singularity" in os.path.basename(runtime) and self._apptainer:
            return False
        return self._apptainer

    def environment(self, plan: ContainerPlan, request: ContainerJob) -> dict[str, str]:
        variables = job_environment(
            plan, request.environment, request.slot_name, self.settings.allowed_env
        )
        environment = dict(variables)
        environment.setdefault("PATH", DEFAULT_PATH)
        return environment

    def start(self, request: ContainerJob, log: logging.Logger) -> RunningContainer:
        """Test the image (unless turned off), then start the job in it."""
        plan, skipped = self.plan(request)
        for reason in skipped:
            log.info("Skipping invalid singularity bind %s", reason)
        environment = self.environment(plan, request)
        if self.settings.run_test:
            self._test(plan, request, environment, log)
        argv = command_line(plan)
        log.debug("Arguments updated for executing with singularity: %s", argv)
        setup = request.child_setup
        marker = marker_path(request.sandbox) if plan.launches else None
        if not setup.join_files:
            return self._spawn(argv, request, environment, (), marker)
        # The runtime must be in the job's groups before it starts anything: a shell waits on
        # a pipe while its PID is written into them, then becomes the runtime.
        gate, opener = os.pipe()
        try:
            os.set_inheritable(gate, True)
            wrapped = ["/bin/sh", "-c", GATE_SCRIPT, "sh", str(gate), *argv]
            process = self._spawn(wrapped, request, environment, (gate,), marker)
            try:
                for path in setup.join_files:
                    with open(path, "w", encoding="ascii") as handle:
                        handle.write(str(process.pid))
            except OSError as error:
                process.release()
                raise knobs.setup_failure(
                    f"the job's runtime cannot join its cgroup {path}: {error.strerror}"
                ) from error
            os.write(opener, b"go\n")
        finally:
            os.close(gate)
            os.close(opener)
        return process

    def _spawn(
        self,
        argv: list[str],
        request: ContainerJob,
        environment: dict[str, str],
        pass_fds: tuple[int, ...],
        marker: str | None,
    ) -> ApptainerProcess:
        """Start ``argv`` as the job's user in its own session, its files as its streams
        (``marker``: where the launcher says it reached the job's command)."""
        with self._streams(request) as (stdin, stdout, stderr):
            try:
                process = subprocess.Popen(
                    argv,
                    stdin=stdin,
                    stdout=stdout,
                    stderr=stderr,
                    cwd=request.sandbox,
                    env=environment,
                    user=request.uid,
                    group=request.gid,
                    extra_groups=[*request.extra_gids, *request.child_setup.extra_groups],
                    start_new_session=True,
                    close_fds=True,
                    pass_fds=pass_fds,
                )
            except OSError as error:
                raise knobs.setup_failure(
                    f"Singularity enabled but setup failed: {argv[0]} cannot be started: "
                    f"{error.strerror or error}"
                ) from error
        return ApptainerProcess(process, marker)

    def _test(
        self,
        plan: ContainerPlan,
        request: ContainerJob,
        environment: dict[str, str],
        log: logging.Logger,
    ) -> None:
        """Run ``<runtime> test`` on the image as the job's user; a failure sends the job
        back to idle (code 45, subcode -1000, as HTCondor 25.x; 23.9 did the same by an
        exception of the starter)."""
        argv = pre_job_test_line(plan)
        try:
            done = subprocess.run(
                argv,
                stdin=subprocess.DEVNULL,
                stdout=subprocess.PIPE,
                stderr=subprocess.STDOUT,
                cwd=request.sandbox,
                env=environment,
                user=request.uid,
                group=request.gid,
                extra_groups=list(request.extra_gids),
                timeout=TEST_TIMEOUT,
                check=False,
            )
        except (OSError, subprocess.TimeoutExpired) as error:
            message = f"Singularity test failed:{error}"
        else:
            if done.returncode == 0:
                return
            output = done.stdout.decode(errors="replace")
            first = next((line for line in output.splitlines() if line.strip()), "")
            message = f"Singularity test failed:{last_line(first)}"
        log.error("%s", message)
        raise JobSetupError(message, HoldCode.SINGULARITY_TEST_FAILED, TEST_FAILED_SUBCODE)

    @contextlib.contextmanager
    def _streams(self, request: ContainerJob) -> Iterator[tuple[int, int, int]]:
        """The job's stdin, stdout and stderr, opened as the job's user."""
        opened: list[int] = []
        try:
            with as_user(request.uid, request.gid, request.extra_gids):
                for path, flags, code in (
                    (request.stdin, os.O_RDONLY, HoldCode.UNABLE_TO_OPEN_INPUT),
                    (
                        request.stdout,
                        os.O_WRONLY | os.O_CREAT | os.O_TRUNC,
                        HoldCode.UNABLE_TO_OPEN_OUTPUT,
                    ),
                    (
                        request.stderr,
                        os.O_WRONLY | os.O_CREAT | os.O_TRUNC,
                        HoldCode.UNABLE_TO_OPEN_OUTPUT,
                    ),
                ):
                    try:
                        opened.append(open_user_file(path, flags, 0o644))
                    except OSError as error:
                        message = f"cannot open {path} for the job: {error.strerror or error}"
                        raise JobSetupError(message, code, error.errno or 0) from error
            yield opened[0], opened[1], opened[2]
        finally:
            for fd in opened:
                os.close(fd)

    # -- after a starter died -------------------------------------------------------------

    def sweep(self, keep: Collection[str], prefixes: Collection[str]) -> tuple[str, ...]:
        """Nothing to sweep: a job's processes live in its starter's session and its
        isolation backend's tracking, and die with them (no daemon keeps containers)."""
        return ()

    def reclaim(self, job_key: str) -> bool:
        """Nothing of the job's is kept outside its processes (see :meth:`sweep`)."""
        return False
