"""The starter's side of a job that runs in a container (docker universe and friends).

The startd hands its starters the container runtimes the plugins offer
(:class:`~epcore.types.ContainerRuntime`); a job that one of them ``runs`` (WantDocker for the
docker plugin) is started there instead of under a supervisor: its sandbox becomes its working
directory (its files travel as :mod:`epcore.starter.transfer` says), and the runtime's
:class:`~epcore.types.RunningContainer` is both the job's handle (:class:`ContainerLaunch`,
shaped like :class:`~epcore.starter.launch.LaunchedJob`) and its only tracking: the starter's
own process trackers cannot see inside a container the container daemon made.
"""

from __future__ import annotations

import logging
import signal

import attrs

from epcore.classad import ClassAd, parse_expr
from epcore.config import Config
from epcore.errors import ClassAdError, JobSetupError
from epcore.jobs.codes import HoldCode
from epcore.jobs.command import JobCommand
from epcore.starter.launch_child import ExitStatus
from epcore.starter.outcome import HELD, Ending, output_goes_back
from epcore.starter.starter import Starter
from epcore.starter.transfer import (
    FileStamp,
    executable_into,
    stamps,
    transfer_in,
    transfer_out,
)
from epcore.types import (
    ContainerJob,
    ContainerRuntime,
    RunningContainer,
    announce_removal,
    container_job_attributes,
    tracked_by_starter,
)

#: Job attributes by which a job asks for a container.
CONTAINER_WISHES = ("WantDocker", "WantContainer")
#: MachineMaxVacateTime's default (seed 000).
DEFAULT_VACATE_SECONDS = 600.0


def runtime_for(
    runtimes: tuple[ContainerRuntime, ...], job: ClassAd, machine: ClassAd | None = None
) -> ContainerRuntime | None:
    """The runtime that runs ``job`` on the slot ``machine`` (its ad); None for a job that
    wants no container.

    Raises JobSetupError (hold code 6) for a job that wants one that no runtime here runs: a
    docker job matched to a machine whose docker plugin is gone must not run on the host.
    """
    for runtime in runtimes:
        if runtime.runs(job, machine):
            return runtime
    for wish in CONTAINER_WISHES:
        if job.evaluate(wish) is True:
            offered = ", ".join(r.name for r in runtimes) or "none"
            message = (
                f"the job asks for a container ({wish} is true) but no container runtime of "
                f"this execution point runs it (runtimes: {offered})"
            )
            raise JobSetupError(message, HoldCode.FAILED_TO_CREATE_PROCESS)
    return None


def vacate_seconds(config: Config, machine: ClassAd, job: ClassAd, now: float) -> float:
    """How long a vacated job gets before it is killed: MachineMaxVacateTime (evaluated with
    the slot as MY and the job as TARGET), or the job's JobMaxVacateTime when smaller.

    The startd's policy decides when to hard-kill; this is the container daemon's own
    deadline, which holds even while the startd is away.
    """
    seconds = DEFAULT_VACATE_SECONDS
    text = config.get("MachineMaxVacateTime")
    if text:
        try:
            value = parse_expr(text).evaluate(machine, job, context=config.eval_context.at(now))
        except ClassAdError:
            value = None
        if isinstance(value, int | float) and not isinstance(value, bool):
            seconds = float(value)
    own = job.evaluate("JobMaxVacateTime")
    if isinstance(own, int | float) and not isinstance(own, bool):
        seconds = min(seconds, float(own))
    return max(seconds, 0.0)


@attrs.define(eq=False)
class ContainerLaunch:
    """A job running in a container, as the starter's supervision loop handles a launched
    job: a descriptor to wait on, its exit status, signals, and a soft kill that stops the
    container (the signal, then SIGKILL after the vacate time)."""

    container: RunningContainer
    vacate: float
    log: logging.Logger
    #: There is no supervisor process: the container daemon holds the job.
    supervisor_pid: int = 0
    _status: ExitStatus | None = None

    def fileno(self) -> int:
        return self.container.fileno()

    def poll(self) -> ExitStatus | None:
        """The container's exit status once it stopped, else None (never blocks)."""
        if self._status is None:
            ended = self.container.exit_status()
            if ended is not None:
                code, signum = ended
                self._status = ExitStatus(code, signum, 0.0, 0.0, 0)
        return self._status

    def signal(self, signum: int) -> None:
        """Send ``signum`` to every process in the container."""
        self.container.signal_all(signum)

    def soft_kill(self, signum: int) -> None:
        """Stop the container: ``signum`` now, SIGKILL when the vacate time is up."""
        name = signal.Signals(signum).name if signum in signal.valid_signals() else signum
        self.log.info(
            "stopping the container with %s, then SIGKILL after %.0f s", name, self.vacate
        )
        self.container.stop(signum, self.vacate)

    def removing(self) -> None:
        """The job is being removed, not vacated (the startd's kill says so): the runtime
        need keep nothing of it for a next run."""
        if announce_removal(self.container):
            self.log.info("the job is removed: the container keeps nothing for a next run")

    def close(self) -> None:
        """Nothing to reap: the container goes with its tracking (release)."""


def launch_container(
    starter: Starter, runtime: ContainerRuntime, command: JobCommand
) -> tuple[ContainerLaunch, dict[str, FileStamp]]:
    """Start the job in ``runtime``'s container, its sandbox as its working directory (its
    input copied in first); also what the sandbox held before it ran."""
    request, sandbox, user = starter.request, starter.sandbox, starter.user
    assert sandbox is not None and user is not None
    job = starter.job
    transfer_in(job, command.iwd, sandbox.path, user.uid, user.gid, user.groups)
    cmd = job.evaluate("Cmd")
    if not isinstance(cmd, str) or not cmd:
        argv: tuple[str, ...] = ()  # the image's own entry point and command
    elif job.evaluate("TransferExecutable") is False:
        argv = (cmd, *command.arguments)  # a program inside the image
    else:
        argv = (executable_into(command.executable, sandbox.path, user.uid, user.gid, user.groups),)
        argv += command.arguments
    before = stamps(sandbox.path)
    environment = starter.environment(attrs.evolve(command, iwd=sandbox.path))
    setup = starter.scratch_setup()
    if tracked_by_starter(runtime):
        # The job is the starter's child: tracked by the isolation backends as a vanilla job
        # (its prepared groups when the startd made them), which the runtime's process joins.
        starter.start_tracking()
        for tracking in starter.trackings:
            setup = setup.merged(tracking.child_setup())
        if request.prepared is not None:
            request.prepared.supervisor.abandon()
    elif request.prepared is not None:
        # The container daemon makes the job's groups: the prepared ones are not used.
        request.prepared.supervisor.abandon()
        starter.trackings.append(request.prepared.tracking)
    machine = request.machine()
    vacate = vacate_seconds(request.config, machine, job, starter.clock())
    container = runtime.start(
        ContainerJob(
            job_key=starter.tracking_key(),
            slot_name=request.slot_name,
            job=job.copy(),
            machine=machine.copy(),
            argv=argv,
            environment=environment,
            sandbox=sandbox.path,
            stdin=command.stdin,
            stdout=command.stdout,
            stderr=command.stderr,
            uid=user.uid,
            gid=user.gid,
            cpus=request.cpus,
            memory_mb=request.memory_mb,
            kill_signal=command.kill_signal,
            vacate_seconds=vacate,
            child_setup=setup,
        ),
        starter.log,
    )
    starter.trackings.append(container)
    starter.log.info("the job runs in a %s container", runtime.name)
    return ContainerLaunch(container, vacate, starter.log), before


def finish_container(
    starter: Starter, launched: ContainerLaunch, before: dict[str, FileStamp], ending: Ending
) -> Ending:
    """After a container job: its output into its files and back to its Iwd (after an
    eviction too when it asks for ON_EXIT_OR_EVICT, as a remote job's output goes back); a
    job whose output could not go back is held (code 12)."""
    problem = launched.container.collect_output()
    updates = container_job_attributes(launched.container)
    if updates is not None:
        starter.job_updates = updates
    sandbox, user = starter.sandbox, starter.user
    iwd = starter.job.evaluate("Iwd")
    if sandbox is None or user is None or not isinstance(iwd, str):
        return ending
    if not output_goes_back(starter.job, ending):
        return ending
    if problem is None:
        problem = transfer_out(
            starter.job, sandbox.path, iwd, before, user.uid, user.gid, user.groups
        )
    if problem is None:
        return ending
    starter.log.error("%s", problem)
    return Ending(HELD, problem, ending.exit_code, ending.exit_signal, HoldCode.DOWNLOAD_FILE_ERROR)
