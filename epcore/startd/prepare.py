"""Jobs made ready before activation: cgroups and a supervisor inside them, per claim.

Moving a process into a cgroup makes the kernel wait for an RCU grace period (7 to 15 ms on
cgroup v1 here, see benchmarks/README.md). Paying it when the job is activated would put it
between activation and the job's first instruction, so the startd pays it earlier: for every
claim whose slot is Claimed/Idle, or Claimed/Busy (for the claim's next job), it has its
zygote (:mod:`epcore.startd.zygote`) make the job's cgroups and fork a supervisor that joins
them and waits (:mod:`epcore.starter.supervisor_server`). The starter the zygote
forks at activation inherits both, and the job it starts is born inside its cgroups. A claim
that goes away takes its preparation with it. :class:`Preparations` is the startd's record of
what it asked for; the zygote holds the preparations themselves.
"""

from __future__ import annotations

import logging
import time
from collections.abc import Collection

import attrs

from epcore.config import Config
from epcore.errors import EpError
from epcore.startd.zygote import PrepareFailed, PrepareOrder, Zygote
from epcore.starter.claim_loop import PREPARED_BACKENDS
from epcore.starter.starter import cgroup_key, tracking_request
from epcore.state.records import EngineState
from epcore.state.states import BUSY, CLAIMED_IDLE
from epcore.types import ContainerRuntime, IsolationBackend, tracked_by_starter


@attrs.frozen
class Prepared:
    """A preparation the startd asked for: ``backend``'s groups under ``job_key``, held by
    the zygote of ``generation``."""

    backend: str
    job_key: str
    generation: int


class Preparations:
    """The prepared jobs of one startd, by ClaimId, as asked of ``zygote``."""

    def __init__(self, log: logging.Logger, zygote: Zygote) -> None:
        self.log = log
        self.zygote = zygote
        self.ready: dict[str, Prepared] = {}
        self._made = 0
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
        own_next: Collection[str] = frozenset(),
    ) -> None:
        """Prepare the next job of every claim that has nothing prepared yet, Claimed/Idle or
        Claimed/Busy; drop what no claim needs now. A claim whose job runs in a container
        (one of ``containers`` runs it) gets nothing, its container daemon makes its groups,
        unless the runtime's job is the starter's child (``tracked_by_starter``).

        A busy claim is prepared for its next job while its job runs: a schedd that reuses the
        claim at once when the job ends finds that job's cgroups made and joined, instead of
        paying the joins (a few milliseconds each) between one job and the next. The cost is
        one waiting supervisor and one set of job groups per claim. The claims in
        ``own_next`` get nothing: their starters make their next jobs ready themselves
        (:mod:`epcore.starter.claim_loop`).
        """
        self._forget_lost(isolation)
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
            if claim_id in self.ready or claim_id in own_next:
                continue
            job = record.claim.job if record.claim is not None else None
            # No slot ad is at hand here: only runtimes whose jobs skip preparation are
            # asked, and those decide by the job alone (see ContainerRuntime.runs).
            if job is not None and any(
                not tracked_by_starter(runtime) and runtime.runs(job) for runtime in containers
            ):
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
            self.zygote.post("prepare", PrepareOrder(claim_id, backend.name, request))
            self.ready[claim_id] = Prepared(backend.name, key, self.zygote.generation)

    def _forget_lost(self, isolation: tuple[IsolationBackend, ...]) -> None:
        """Clean up after the preparations a dead zygote held (their supervisors died with
        it; their groups are left)."""
        for claim_id, prepared in list(self.ready.items()):
            if prepared.generation == self.zygote.generation:
                continue
            del self.ready[claim_id]
            for backend in isolation:
                if backend.name != prepared.backend:
                    continue
                try:
                    backend.reclaim(prepared.job_key)
                except EpError as error:
                    self.log.error("cannot remove a prepared job's groups: %s", error)

    def failed(self, note: PrepareFailed) -> None:
        """The zygote could not prepare (or give back) the job of a claim."""
        self.log.warning("%s: cannot prepare the next job: %s", note.job_key, note.why)
        prepared = self.ready.get(note.claim_id)
        if prepared is not None and prepared.job_key == note.job_key:
            del self.ready[note.claim_id]

    def take(self, claim_id: str) -> None:
        """The starter of ``claim_id`` is being forked: it takes the claim's preparation."""
        self.ready.pop(claim_id, None)

    def discard(self, claim_id: str) -> None:
        """Give up the preparation of ``claim_id``: the zygote kills its supervisor and
        removes its groups."""
        if self.ready.pop(claim_id, None) is not None:
            self.zygote.post("discard", claim_id)
