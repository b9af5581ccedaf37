"""Container runtimes (``ep_container_runtimes``): the job a starter asks one to run, the
running container and the runtime's Protocol.
"""

from __future__ import annotations

from collections.abc import Callable, Collection, Sequence
from typing import TYPE_CHECKING, Protocol, runtime_checkable

import attrs

from epcore.types.isolation import ChildSetup, JobTracking
from epcore.types.machine import MachineAttribute

if TYPE_CHECKING:
    import logging

    from epcore.classad import ClassAd
    from epcore.config import Config


@attrs.frozen(eq=False)
class ContainerJob:
    """What the starter asks a container runtime to run: one job, ready to start.

    ``argv`` is the command inside the container (empty: the image's own entry point and
    command); ``sandbox`` is the job's scratch directory on the host, mounted at the same path
    inside and used as the working directory; ``stdin``, ``stdout`` and ``stderr`` are host
    paths (``/dev/null`` when the job has none). The container runs as ``uid``:``gid`` and
    ``extra_gids``, limited to the slot's ``cpus`` and ``memory_mb``. ``job_key`` is the job's
    tracking key (its cgroup name): runtimes label their containers with it so that
    :meth:`ContainerRuntime.sweep` and :meth:`ContainerRuntime.reclaim` find them after the
    starter is gone. ``kill_signal`` is the job's KillSig; ``vacate_seconds`` how long a
    vacated job has after it before it is killed. ``job`` and ``machine`` are copies.
    ``child_setup`` is what a process must do to join the job's tracking (its cgroups, for a
    runtime that is ``tracked_by_starter``): such a runtime applies it before the job's
    program runs, so that the job is tracked, limited and frozen like any other; a runtime
    whose job a daemon starts (docker) gets an empty one.
    """

    job_key: str
    slot_name: str
    job: ClassAd
    machine: ClassAd
    argv: tuple[str, ...]
    environment: tuple[tuple[str, str], ...]
    sandbox: str
    stdin: str
    stdout: str
    stderr: str
    uid: int
    gid: int
    cpus: float
    memory_mb: int
    kill_signal: int
    vacate_seconds: float
    extra_gids: tuple[int, ...] = ()
    # ChildSetup is a frozen record, so every job may share the empty one; ruff cannot see
    # that across modules.
    child_setup: ChildSetup = ChildSetup()  # noqa: RUF009


class RunningContainer(JobTracking, Protocol):
    """One job's container, from its start until :meth:`release` removed it.

    It is the job's tracking as well (:class:`JobTracking`: its processes, freeze for suspend,
    usage, the out-of-memory verdict), and :meth:`fileno` lets the starter wait for it with
    its other descriptors. Methods never raise for a container that vanished meanwhile.
    """

    def fileno(self) -> int:
        """A descriptor that becomes readable once the container has stopped."""
        ...

    def exit_status(self) -> tuple[int | None, int | None] | None:
        """``(exit_code, signal)`` once the container stopped (one of them None), else None."""
        ...

    def stop(self, signum: int, grace_seconds: float) -> None:
        """Send ``signum`` to the job now and SIGKILL after ``grace_seconds`` (returns at once)."""
        ...

    def collect_output(self) -> str | None:
        """Write what the container printed to the job's stdout and stderr files; None when
        done, else why it could not be (the job is then held with code 12).

        It may raise JobSetupError when the container ended without running the job (a
        runtime that failed before the job's command): the job is then held or requeued by
        the error's codes, as for a job that could not be started."""
        ...


@runtime_checkable
class ContainerRuntime(Protocol):
    """Runs jobs in containers (docker, apptainer); advertises what it can run.

    Built once by the startd from its :class:`ContainerRuntimeSpec` factory, then inherited by every
    starter it forks (an object holding a connection must open its own in each process).

    A runtime whose job is the starter's own child (apptainer, not a daemon's like docker's)
    sets the class attribute ``tracked_by_starter = True`` (read with
    :func:`tracked_by_starter`; absent means False): its jobs get their cgroups prepared and
    are tracked by the starter's isolation backends as a vanilla job, and the runtime joins
    them through :attr:`ContainerJob.child_setup`.
    """

    name: str

    def machine_attributes(self) -> Sequence[MachineAttribute]:
        """HasDocker, DockerVersion and friends, read when the startd starts or reconfigures;
        a runtime that does not work says so here (HasDocker = false and why), never raises."""
        ...

    def runs(self, job: ClassAd, machine: ClassAd | None = None) -> bool:
        """True when ``job`` asks for this runtime (WantDocker for docker).

        ``machine`` is the slot's ad where the job is placed (the startd starting its
        starter, the starter choosing the runtime), so that a knob like SINGULARITY_JOB can
        be evaluated with the slot as MY and the job as TARGET, as HTCondor's starter does.
        It is None only where no slot ad is at hand (the startd preparing cgroups asks only
        runtimes that are not :func:`tracked_by_starter`).
        """
        ...

    def start(self, request: ContainerJob, log: logging.Logger) -> RunningContainer:
        """Create and start the job's container; raises JobSetupError (the job is held with
        its code) when it cannot, after removing whatever it made."""
        ...

    def sweep(self, keep: Collection[str], prefixes: Collection[str]) -> tuple[str, ...]:
        """At startd start: remove every container of a job whose key starts with one of
        ``prefixes`` and is not in ``keep``; the keys removed."""
        ...

    def reclaim(self, job_key: str) -> bool:
        """Remove the container of ``job_key`` after its starter died; False when none."""
        ...


class AdmitsActivation(Protocol):
    """The optional part of a :class:`ContainerRuntime` that may refuse a claim's activation
    for a machine-wide limit the slot ads cannot enforce at once (the VM universe's
    VM_MAX_NUMBER and VM_MEMORY: HTCondor's startd asks its VMUniverseMgr, ``canCreateVM``,
    at every VM job's activation). A runtime without it admits every job it runs."""

    def refuse_activation(self, job: ClassAd, running: Sequence[ClassAd]) -> str | None:
        """Why ``job`` may not start now, or None when it may; ``running`` holds the ads of
        the jobs this runtime runs on the machine's other slots (started, not yet gone).
        Called in the startd's loop: it must answer at once, without asking a daemon."""
        ...


def activation_refusal(
    runtime: ContainerRuntime, job: ClassAd, running: Sequence[ClassAd]
) -> str | None:
    """Why ``runtime`` refuses to start ``job`` beside ``running`` (its other jobs), or None
    (also for a runtime that offers no :class:`AdmitsActivation` check: an optional method,
    so that runtimes written before it still conform)."""
    check = getattr(runtime, "refuse_activation", None)
    if check is None:
        return None
    refusal = check(job, running)
    return refusal if isinstance(refusal, str) and refusal else None


class KnowsRemoval(Protocol):
    """The optional part of a :class:`RunningContainer` that hears that its job is being
    removed (condor_rm), not vacated, just before the starter stops it: whatever the runtime
    would keep of a vacated job for its next run (a VM's checkpoint) is not worth keeping."""

    def removing(self) -> None:
        """The job is removed: keep nothing of it for a next run."""
        ...


def announce_removal(container: RunningContainer) -> bool:
    """Tell ``container`` that its job is being removed; False when it does not listen (an
    optional method, so that containers written before it still conform)."""
    removing = getattr(container, "removing", None)
    if removing is None:
        return False
    removing()
    return True


def tracked_by_starter(runtime: ContainerRuntime) -> bool:
    """True when ``runtime``'s jobs are the starter's children, tracked like vanilla jobs
    (an optional attribute, so that a runtime written before it still conforms)."""
    return getattr(runtime, "tracked_by_starter", False) is True


def container_job_attributes(container: RunningContainer) -> ClassAd | None:
    """What a running container asks to be written into its job's ad when the job ends (the
    optional method ``job_attributes()``, like the attributes HTCondor's starter puts in its
    update ad for the job: the VM universe's VM_CkptMac); None when it has none."""
    method = getattr(container, "job_attributes", None)
    if method is None:
        return None
    found = method()
    return found if found is not None and len(found) > 0 else None


@attrs.frozen
class ContainerRuntimeSpec:
    """A container runtime a plugin offers (``ep_container_runtimes``): its ``name`` and the
    ``factory`` that builds it for a configuration without starting anything.

    ``starter_modules`` names the modules a starter needs to run a container that the startd
    itself does not import (a client library): the startd's zygote imports them once, when
    it first forks a starter of a job this runtime runs, so that no starter pays for them."""

    name: str
    factory: Callable[[Config], ContainerRuntime]
    starter_modules: tuple[str, ...] = ()
