"""What a starter is given: the startd's order for one job, and what the process that forks
the starter adds to it (the configuration, the backends, the claim's prepared job); the names
its job's groups and sandbox get."""

from __future__ import annotations

from typing import TYPE_CHECKING

import attrs

from epcore.classad import ClassAd, parse_ad
from epcore.config import Config
from epcore.starter.launch import PreparedSupervisor
from epcore.types import (
    ContainerRuntime,
    IsolationBackend,
    JobTracking,
    ScratchFilesystem,
    TrackingRequest,
)

if TYPE_CHECKING:
    from epcore.starter.supervisor_server import SupervisorServer


@attrs.frozen(eq=False)
class PreparedJob:
    """What the startd made for a claim before its job is activated: one backend's tracking
    (named ``backend``, under ``job_key``) and a supervisor already inside it."""

    backend: str
    job_key: str
    tracking: JobTracking
    supervisor: PreparedSupervisor


def tracking_request(
    config: Config,
    job_key: str,
    slot_name: str,
    slot_id: int,
    cpus: float,
    memory_mb: int,
    startd_memory_mb: int,
) -> TrackingRequest:
    """What a job on this slot asks of the isolation backends (the memory policy from
    CGROUP_MEMORY_LIMIT_POLICY, DISABLE_SWAP_FOR_JOB)."""
    policy = (config.get("CGROUP_MEMORY_LIMIT_POLICY") or "none").strip().lower()
    return TrackingRequest(
        job_key=job_key,
        slot_name=slot_name,
        slot_id=slot_id,
        cpus=cpus,
        memory_mb=memory_mb,
        memory_policy=policy if policy in ("hard", "soft", "none") else "none",
        startd_memory_mb=startd_memory_mb,
        swap_limit_mb=None,
        disable_swap=config.get_bool("DISABLE_SWAP_FOR_JOB", False),
    )


@attrs.frozen(eq=False)
class StarterOrder:
    """What the startd decides per job for a starter: the claim, the job, the slot and where
    things are. It travels as data (to the startd's zygote, which forks the starter); a
    :class:`StarterRequest` adds what stays in the process that forks it."""

    slot_name: str
    slot_id: int
    claim_id: str
    job: ClassAd
    #: The slot's ad in the old ClassAd syntax, as the sandbox's ``.machine.ad`` holds it:
    #: most starters only write it out.
    machine_text: str
    execute_dir: str
    startd_socket: str
    startd_address: str
    cpus: float
    memory_mb: int
    startd_memory_mb: int
    starter_log: str
    #: The claim's lease in seconds (JobLeaseDuration, else ALIVE_INTERVAL x
    #: MAX_CLAIM_ALIVES_MISSED): how long the starter waits for a lost startd to come back
    #: before it ends the job and exits. 0: for ever.
    lease: int = 0

    #: The slot's ad itself, sent only for a job a container runtime runs (which reads it):
    #: the old syntax cannot hold every string (a newline in one is written as it is).
    machine_ad: ClassAd | None = None
    #: The starter runs the claim's next jobs the startd sends it (:mod:`epcore.starter.
    #: claim_loop`); False: it exits after this one (a backfill client, a container's job).
    keeps: bool = False

    def machine(self) -> ClassAd:
        """The slot's ad (:attr:`machine_ad`, else read from :attr:`machine_text`)."""
        return self.machine_ad if self.machine_ad is not None else parse_ad(self.machine_text)


@attrs.frozen(eq=False, kw_only=True)
class StarterRequest(StarterOrder):
    """Everything a starter is given: its order, the configuration, the backends, and the
    claim's prepared job.

    ``isolation`` holds the backends the startd enabled, process tracking first;
    ``containers`` the container runtimes it built (a job one of them ``runs`` goes there).
    """

    config: Config
    isolation: tuple[IsolationBackend, ...]
    prepared: PreparedJob | None = None
    containers: tuple[ContainerRuntime, ...] = ()
    #: The per-job scratch filesystem the startd started (None: a plain sandbox).
    scratch: ScratchFilesystem | None = None
    #: Where the claim's next jobs' supervisors come from, for a starter that runs them
    #: (:mod:`epcore.starter.claim_loop`); None: it makes none.
    supervisors: SupervisorServer | None = None


def job_id(job: ClassAd) -> str:
    """``cluster.proc`` of a job ad (0.0 for a fetched job without them)."""
    cluster = job.evaluate("ClusterId")
    proc = job.evaluate("ProcId")
    cluster = cluster if isinstance(cluster, int) and not isinstance(cluster, bool) else 0
    proc = proc if isinstance(proc, int) and not isinstance(proc, bool) else 0
    return f"{cluster}.{proc}"


def cgroup_prefix(execute_dir: str) -> str:
    """The start of the cgroup names of the jobs run under ``execute_dir``."""
    return f"condor_{execute_dir.strip('/').replace('/', '_')}_"


def cgroup_key(execute_dir: str, slot_name: str, starter_id: int | str) -> str:
    """HTCondor's cgroup name: the sandbox path with ``/`` made ``_``, then the slot name."""
    return f"{cgroup_prefix(execute_dir)}{slot_name}_{starter_id}"
