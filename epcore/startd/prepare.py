"""Jobs made ready before activation: cgroups and a supervisor inside them, per claim.

Moving a process into a cgroup makes the kernel wait for an RCU grace period (7 to 15 ms on
cgroup v1 here, see benchmarks/README.md). Paying it when the job is activated would put it
between activation and the job's first instruction, so the startd pays it earlier: for every
claim whose slot is Claimed/Idle, or Claimed/Busy (for the claim's next job), it makes the
job's cgroups and forks a supervisor that joins them and waits
(:func:`epcore.starter.launch.prepare_supervisor`). At activation the starter gets both, and
the job it starts is born inside its cgroups. A claim that goes away takes its
preparation with it; a supervisor the startd forked is reaped by the startd.
"""

from __future__ import annotations

import contextlib
import logging
import os
import time
from pathlib import Path

from epcore.config import Config
from epcore.errors import EpError
from epcore.starter.cgroups.mountinfo import read_layout
from epcore.starter.launch import prepare_supervisor
from epcore.starter.starter import PreparedJob, cgroup_key, tracking_request
from epcore.state.records import EngineState
from epcore.state.rules import BUSY, CLAIMED_IDLE
from epcore.types import ContainerRuntime, IsolationBackend

#: The isolation backends whose groups a supervisor can join ahead of its job.
PREPARED_BACKENDS = ("cgroup",)


#: One cgroup hierarchy: where it is mounted, and this process's group in it (None: unknown).
OwnGroup = tuple[Path, str | None]


def own_groups() -> tuple[OwnGroup, ...]:
    """Every mounted cgroup hierarchy with this process's own group in it."""
    own_v1: dict[frozenset[str], str] = {}
    own_v2 = None
    with open("/proc/self/cgroup", encoding="ascii") as handle:
        for line in handle:
            _, controllers, path = line.rstrip("\n").split(":", 2)
            if controllers:
                own_v1[frozenset(controllers.split(","))] = path
            else:
                own_v2 = path
    layout = read_layout()
    mounts: list[OwnGroup] = [(h.path, own_v1.get(h.controllers)) for h in layout.v1.values()]
    if layout.v2 is not None:
        mounts.append((layout.v2, own_v2))
    return tuple(mounts)


def home_files(join_files: tuple[str, ...], groups: tuple[OwnGroup, ...]) -> tuple[str, ...]:
    """For each ``cgroup.procs`` file of a job's group, the same file of this process's own
    group in that hierarchy (where a prepared supervisor goes back once its job runs)."""
    homes = []
    for join in join_files:
        for mount, own in groups:
            if own is not None and Path(join).is_relative_to(mount):
                homes.append(str(mount / own.lstrip("/") / "cgroup.procs"))
                break
    return tuple(dict.fromkeys(homes))


class Preparations:
    """The prepared jobs of one startd, by ClaimId."""

    def __init__(self, log: logging.Logger) -> None:
        self.log = log
        self.ready: dict[str, PreparedJob] = {}
        self.to_reap: set[int] = set()
        self._made = 0
        # The startd's own groups, read once: a daemon is not moved between groups while it
        # runs, and reading the mount table for every job cost more than the job's own joins.
        self._own_groups: tuple[OwnGroup, ...] | None = None
        # Keys stay unique across restarts even when the startd gets the same PID again.
        self._started = int(time.time())

    def sync(
        self,
        state: EngineState,
        config: Config,
        isolation: tuple[IsolationBackend, ...],
        execute_dir: str,
        startd_memory_mb: int,
        containers: tuple[ContainerRuntime, ...] = (),
    ) -> None:
        """Prepare the next job of every claim that has nothing prepared yet, Claimed/Idle or
        Claimed/Busy; drop what no claim needs now. A claim whose job runs in a container
        (one of ``containers`` runs it) gets nothing: its container daemon makes its groups.

        A busy claim is prepared for its next job while its job runs: a schedd that reuses the
        claim at once when the job ends finds that job's cgroups made and joined, instead of
        paying the joins (a few milliseconds each) between one job and the next. The cost is
        one waiting supervisor and one set of job groups per claim.
        """
        backend = next((b for b in isolation if b.name in PREPARED_BACKENDS), None)
        claimed = {
            r.claim.claim_id: r
            for r in state.slots
            if r.claim is not None and r.place in (CLAIMED_IDLE, BUSY) and not state.shutting_down
        }
        for claim_id in [c for c in self.ready if c not in claimed]:
            self.discard(claim_id)
        if backend is None:
            return
        for claim_id, record in claimed.items():
            if claim_id in self.ready:
                continue
            job = record.claim.job if record.claim is not None else None
            if job is not None and any(runtime.runs(job) for runtime in containers):
                continue
            slot = state.layout.find(record.slot_id, record.sub_id)
            if slot is None:
                continue
            self._made += 1
            key = cgroup_key(execute_dir, record.name, f"c{self._started}_{self._made}")
            request = tracking_request(
                config,
                key,
                record.name,
                record.slot_id,
                float(slot.resources.cpus),
                int(slot.resources.memory_mb),
                startd_memory_mb,
            )
            try:
                tracking = backend.track(request)
            except (EpError, OSError) as error:
                self.log.warning("%s: cannot prepare the next job: %s", record.name, error)
                continue
            try:
                joins = tracking.child_setup().join_files
                if self._own_groups is None:
                    self._own_groups = own_groups()
                supervisor = prepare_supervisor(joins, home_files(joins, self._own_groups))
            except (EpError, OSError) as error:
                self.log.warning("%s: cannot prepare the next job: %s", record.name, error)
                with contextlib.suppress(EpError):
                    tracking.release()
                continue
            self.ready[claim_id] = PreparedJob(backend.name, key, tracking, supervisor)

    def take(self, claim_id: str) -> PreparedJob | None:
        """The preparation of ``claim_id`` for its starter (the startd keeps reaping it)."""
        prepared = self.ready.pop(claim_id, None)
        if prepared is not None:
            self.to_reap.add(prepared.supervisor.pid)
        return prepared

    def handed_over(self, prepared: PreparedJob) -> None:
        """The starter owns ``prepared`` now: close the startd's copies of its pipes."""
        prepared.supervisor.forget()

    def discard(self, claim_id: str) -> None:
        """Give up the preparation of ``claim_id``: kill its supervisor, remove its groups."""
        prepared = self.ready.pop(claim_id, None)
        if prepared is None:
            return
        prepared.supervisor.abandon()
        with contextlib.suppress(ChildProcessError):
            os.waitpid(prepared.supervisor.pid, 0)
        try:
            prepared.tracking.release()
        except EpError as error:
            self.log.error("cannot remove a prepared job's groups: %s", error)

    def close_in_child(self) -> None:
        """In a forked starter: the other claims' supervisors are not its business."""
        for prepared in self.ready.values():
            prepared.supervisor.forget()

    def reap(self) -> None:
        """Reap the supervisors handed to starters once they have exited."""
        for pid in list(self.to_reap):
            try:
                done, _ = os.waitpid(pid, os.WNOHANG)
            except ChildProcessError:
                done = pid
            if done == pid:
                self.to_reap.discard(pid)

    def close(self) -> None:
        """Discard every preparation (the startd is exiting)."""
        for claim_id in list(self.ready):
            self.discard(claim_id)
