"""The startd pulls work: fetch-work hooks and Python sources, run beside the startd's loop.

:class:`FetchWork` is a :class:`~epcore.startd.loop.LoopCompanion`. Once per turn it asks every
slot whose keyword (``SLOT<N>_JOB_HOOK_KEYWORD``, else ``STARTD_JOB_HOOK_KEYWORD``) names a
Python :class:`~epcore.types.FetchWorkSource` (by its ``name``) or a
``<Keyword>_HOOK_FETCH_WORK`` executable for work, when ``FetchWorkDelay`` says the slot may.
A hook gets the slot ad on stdin and prints a job ad, or nothing when there is no work; it runs
while the startd keeps serving (:mod:`epcore.startd.hook_process`) and is killed past
``STARTD_JOB_HOOK_TIMEOUT`` (epcore's knob, 300 seconds). A source's ``fetch`` is called
directly.

What happens to a fetched job is decided by :mod:`epcore.state.fetch_work` and carried out
with the startd's own requests, so the claim, its state machine and its starter are the real
ones: a new claim (:meth:`Startd.claim`, then :meth:`Startd.activate`), the slot's idle
fetched claim reused for it (``activate`` with the job), or a preempting claim activated once
the preempted job has gone. ``<Keyword>_HOOK_REPLY_FETCH`` (or the source's ``reply``) hears
``accept`` or ``reject``. A fetched claim that has no more work, that is vacated, preempted or
lost is evicted, and ``<Keyword>_HOOK_EVICT_CLAIM`` (or ``evict_claim``) hears of it; the
advisory hooks get the job ad, ``-----`` and the slot ad. Nobody else sends a fetched claim
keep-alives, so this companion does. Every failure (a hook that cannot run, hangs, prints
garbage or a job without Cmd; a source that raises) is logged with its reason and the startd
goes on serving.
"""

from __future__ import annotations

import logging
import os
import selectors
from collections.abc import Sequence
from typing import TYPE_CHECKING, Final

import attrs

from epcore.classad import ClassAd, format_old
from epcore.runtime.control import ControlError
from epcore.startd.fetch_hooks import WorkSources
from epcore.startd.hook_process import LoopHook
from epcore.state.fetch_work import (
    Decision,
    FetchDelay,
    Fetched,
    SlotSituation,
    decide,
    fetch_due_at,
    fetch_work_delay,
    may_fetch,
    missing_attributes,
    with_keyword,
)
from epcore.state.records import SlotRecord
from epcore.state.states import CLAIMED_IDLE
from epcore.types import FetchWorkSource

if TYPE_CHECKING:
    from epcore.startd.startd import Startd

#: How long the loop may sleep while a hook runs (its end also wakes the loop by SIGCHLD).
_HOOK_POLL: Final = 0.1
_IDLE_WAIT: Final = 60.0


@attrs.define
class _SlotFetch:
    """One slot's fetching: when its last attempt completed and the hook now running."""

    keyword: str
    last_done: float | None = None
    brought_work: bool = True
    process: LoopHook | None = None
    due_at: float | None = None


@attrs.define
class _FetchedClaim:
    """A claim this startd made for fetched work, and what its hooks need to know."""

    claim_id: str
    keyword: str
    job: ClassAd
    slot: str
    #: The slot's ad when the claim took its job (EVICT_CLAIM gets it when the slot is gone).
    slot_ad: ClassAd = attrs.field(factory=ClassAd)
    waiting: bool = False  # a preempting claim, activated once the slot is Claimed/Idle
    evicted: bool = False


class FetchWork:
    """Fetches work for the slots of ``startd`` (see the module docstring).

    ``sources`` are the Python sources (default: the plugins' ``ep_fetch_work_sources``);
    ``as_root`` says whether jobs must name their Owner (default: whether the startd is root).
    """

    def __init__(
        self,
        startd: Startd,
        sources: Sequence[FetchWorkSource] | None = None,
        *,
        as_root: bool | None = None,
    ) -> None:
        self.startd = startd
        found = startd.plugins.fetch_work_sources(startd.config) if sources is None else sources
        self.log: logging.Logger = startd.log
        self.work = WorkSources(found, self.log, self)
        self.as_root = os.geteuid() == 0 if as_root is None else as_root
        self.slots: dict[str, _SlotFetch] = {}
        self.claims: dict[str, _FetchedClaim] = {}
        self._seen_state: object = None

    # -- LoopCompanion ---------------------------------------------------------------------

    def open(self, selector: selectors.BaseSelector) -> None:
        """Remember the loop's selector (hooks' pipes go there) and read the configuration."""
        self.work.selector = selector
        self.work.configure(self.startd.config)

    def ready(self, fileobj: object) -> None:
        """A hook's pipe can be read or written."""
        self.work.ready(fileobj)

    def timeout(self) -> float:
        """Short while a hook runs; else until the earliest slot may fetch again."""
        if self.work.busy or any(s.process is not None for s in self.slots.values()):
            return _HOOK_POLL
        now = self.startd.clock()
        due = [s.due_at for s in self.slots.values() if s.due_at is not None]
        return max(0.0, min(due) - now) if due else _IDLE_WAIT

    def tick(self) -> None:
        """Reap hooks, follow the fetched claims, and start the fetches that are due."""
        now = self.startd.clock()
        if self.work.configure(self.startd.config):
            for fetching in self.slots.values():
                fetching.due_at = None
        self.work.reap_advisory()
        for name, fetching in list(self.slots.items()):
            if fetching.process is not None:
                self._check_fetch(name, fetching, now)
        self._follow_claims(now)
        if not self.startd.shutting_down:
            self._start_fetches(now)

    def close(self) -> None:
        """Kill every hook still running."""
        running = [f.process for f in self.slots.values() if f.process is not None]
        for fetching in self.slots.values():
            fetching.process = None
        self.work.kill_all(running)

    # -- starting fetches ------------------------------------------------------------------

    def _situation(self, record: SlotRecord) -> SlotSituation:
        state, activity = record.place.names
        claim = record.claim
        return SlotSituation(
            name=record.name,
            state=state,
            activity=activity,
            kind=record.kind,
            claim_rank=claim.rank if claim is not None else None,
            fetched_claim=claim is not None and claim.claim_id in self.claims,
            preempting=record.preempting is not None,
            shutting_down=self.startd.shutting_down,
        )

    def _start_fetches(self, now: float) -> None:
        startd = self.startd
        if startd.state is not self._seen_state:
            # Something moved: a slot's delay may differ now (Busy -> Claimed/Idle: at once).
            self._seen_state = startd.state
            for fetching in self.slots.values():
                fetching.due_at = None
        state = startd.state
        for listed in state.slots:
            keyword = self.work.keyword(listed.slot_id)
            if keyword is None:
                if listed.name in self.slots and self.slots[listed.name].process is None:
                    del self.slots[listed.name]
                continue
            # A fetch answered at once (a Python source) changes the state: read it again.
            record = listed if startd.state is state else startd.state.slot(listed.name)
            if record is None:
                continue
            fetching = self.slots.setdefault(record.name, _SlotFetch(keyword))
            fetching.keyword = keyword
            if fetching.process is not None or not may_fetch(self._situation(record)):
                fetching.due_at = None
                continue
            if fetching.due_at is not None and now < fetching.due_at:
                continue
            slot_ad = startd.ads(startd.state, now)[record.name]
            delay = self._delay_of(record, slot_ad, now)
            fetching.due_at = fetch_due_at(
                fetching.last_done, delay, brought_work=fetching.brought_work
            )
            if now >= fetching.due_at:
                self._fetch(record, fetching, slot_ad, now)
        if self.slots:
            live = {record.name for record in startd.state.slots}
            for name in [n for n, f in self.slots.items() if n not in live and f.process is None]:
                del self.slots[name]

    def _delay_of(self, record: SlotRecord, slot_ad: ClassAd, now: float) -> FetchDelay:
        job = record.claim.job if record.claim is not None else None
        functions = self.startd.config.eval_context.functions
        delay = fetch_work_delay(self.work.delay, slot_ad, job, now, functions)
        if delay.problem is not None:
            self.work.report(
                f"{record.name}: {delay.problem}; the delay is {delay.seconds} seconds"
            )
        return delay

    def _fetch(
        self, record: SlotRecord, fetching: _SlotFetch, slot_ad: ClassAd, now: float
    ) -> None:
        keyword = fetching.keyword
        source = self.work.source(keyword)
        if source is None:
            fetching.process = self.work.start_fetch(keyword, record.name, format_old(slot_ad))
            if fetching.process is not None:
                return
            fetched = Fetched(problem=f"{keyword}_HOOK_FETCH_WORK could not be started")
        else:
            fetched = self.work.fetch_from(source, slot_ad)
        self._done(fetching, fetched, now)
        self._handle(record.name, keyword, fetched, now)

    @staticmethod
    def _done(fetching: _SlotFetch, fetched: Fetched, now: float) -> None:
        """The slot's fetch attempt has completed (FetchWorkDelay counts from now)."""
        fetching.last_done = now
        fetching.brought_work = fetched.job is not None
        fetching.due_at = None

    # -- fetch results -----------------------------------------------------------------------

    def _check_fetch(self, name: str, fetching: _SlotFetch, now: float) -> None:
        hook = fetching.process
        assert hook is not None
        result = hook.check()
        if result is None:
            return
        fetching.process = None
        fetched = self.work.fetched(hook, result)
        self._done(fetching, fetched, now)
        self._handle(name, fetching.keyword, fetched, now)

    def _handle(self, slot: str, keyword: str, fetched: Fetched, now: float) -> None:
        """What one fetch brought for ``slot``: a job to decide on, no work, or a failure."""
        if fetched.problem is not None:
            self.log.warning("fetched work rejected: %s: %s", slot, fetched.problem)
            return
        record = self.startd.state.slot(slot)
        if fetched.job is None:
            if record is not None and record.claim is not None:
                claim = self.claims.get(record.claim.claim_id)
                if claim is not None and record.place == CLAIMED_IDLE:
                    self.log.info("%s: no more fetched work: evicting the claim", slot)
                    self._evict(claim, release=True)
            return
        job = with_keyword(fetched.job, keyword)
        ads = self.startd.ads(self.startd.state, now)
        slot_ad = ads[slot].copy() if slot in ads else ClassAd()
        if record is None:
            self._reply(keyword, False, job, slot_ad, f"{slot} is gone")
            return
        problem = missing_attributes(
            job, as_root=self.as_root, partitionable=record.kind == "partitionable"
        )
        if problem is not None:
            self._reply(keyword, False, job, slot_ad, f"{slot}: {problem}")
            return
        layout_slot = self.startd.state.layout.find(record.slot_id, record.sub_id)
        policy = self.startd.engine.policy(
            record.slot_id, layout_slot.type_id if layout_slot is not None else 0
        )
        decision = decide(
            self._situation(record),
            job,
            start=policy.knob("START").expr,
            rank=policy.knob("RANK").expr,
            slot_ad=slot_ad,
            now=now,
            functions=policy.functions,
        )
        why = self._carry_out(record, keyword, job, decision)
        self._reply(keyword, why is None, job, slot_ad, why or decision.reason)

    def _carry_out(
        self, record: SlotRecord, keyword: str, job: ClassAd, decision: Decision
    ) -> str | None:
        """Do what ``decision`` says with the startd's own requests; None when the job was
        taken, else why not (the decision's reason, or the startd's refusal)."""
        startd = self.startd
        if decision.kind == "reject":
            return decision.reason
        if decision.kind == "reuse":
            assert record.claim is not None
            claim_id = record.claim.claim_id
            try:
                startd.activate(claim_id, job)
            except ControlError as error:
                return f"{record.name}: {error}"
            self._keep(claim_id, keyword, job, record.name)
            return None
        try:
            claim_id = startd.claim(record.name, job)
        except ControlError as error:
            return f"{record.name}: {error}"
        slot = startd.slot_of(claim_id) or record.name
        if decision.kind == "preempt" or not startd.claim_ready(claim_id):
            # The slot first lets its job (or backfill client) go; the claim waits for it.
            self._keep(claim_id, keyword, job, slot, waiting=True)
            return None
        try:
            startd.activate(claim_id)
        except ControlError as error:
            startd.release(claim_id)
            return f"{slot}: {error}"
        self._keep(claim_id, keyword, job, slot)
        return None

    def _keep(
        self, claim_id: str, keyword: str, job: ClassAd, slot: str, *, waiting: bool = False
    ) -> None:
        """Remember a claim that runs (or will run) fetched work."""
        startd = self.startd
        ads = startd.ads(startd.state, startd.clock())
        slot_ad = ads[slot].copy() if slot in ads else ClassAd()
        self.claims[claim_id] = _FetchedClaim(claim_id, keyword, job, slot, slot_ad, waiting)
        if slot not in self.slots:
            # A dynamic slot carved for the job: the fetch that made it has just completed.
            self.slots[slot] = _SlotFetch(keyword, last_done=startd.clock())

    # -- fetched claims --------------------------------------------------------------------

    def _follow_claims(self, now: float) -> None:
        """Activate preempting claims that got their slot, keep fetched claims alive, and
        evict (run EVICT_CLAIM for) those the startd is taking away."""
        startd = self.startd
        mapped: object = None
        holders: dict[str, SlotRecord] = {}
        for claim_id, claim in list(self.claims.items()):
            if startd.state is not mapped:  # built again only after a claim's event
                mapped, holders = startd.state, _holders(startd.state.slots)
            record = holders.get(claim_id)
            if record is None:
                if not claim.evicted:
                    self._evict(claim, release=False)
                del self.claims[claim_id]
                continue
            claim.slot = record.name
            holds = record.claim is not None and record.claim.claim_id == claim_id
            if not holds:
                continue  # a preempting claim still waiting for the slot
            state = record.place.names[0]
            if not claim.evicted and (state == "Preempting" or record.preempting is not None):
                self._evict(claim, release=False)
            elif claim.waiting and record.place == CLAIMED_IDLE:
                claim.waiting = False
                try:
                    startd.activate(claim_id)
                except ControlError as error:
                    self.log.warning("%s: cannot start the preempting job: %s", record.name, error)
                    self._evict(claim, release=True)
                    continue
            lease = record.claim.lease if record.claim is not None else 0
            last = record.claim.last_alive if record.claim is not None else now
            if not claim.evicted and lease > 0 and now - last >= lease / 3:
                startd.alive(claim_id)

    def _evict(self, claim: _FetchedClaim, *, release: bool) -> None:
        """Tell the claim's source it is evicted; with ``release``, give it up too."""
        claim.evicted = True
        startd = self.startd
        now = startd.clock()
        ads = startd.ads(startd.state, now)
        slot_ad = ads[claim.slot].copy() if claim.slot in ads else claim.slot_ad
        self.work.evict(claim.keyword, claim.job, slot_ad)
        if release:
            try:
                startd.release(claim.claim_id)
            except ControlError as error:
                self.log.warning("%s: cannot release the fetched claim: %s", claim.slot, error)

    def _reply(
        self,
        keyword: str,
        accepted: bool,
        job: ClassAd,
        slot_ad: ClassAd,
        reason: str,
    ) -> None:
        """Log the decision and tell REPLY_FETCH (or the source's ``reply``)."""
        # Every reason names the slot already.
        if accepted:
            self.log.info("fetched work accepted: %s", reason)
        else:
            self.log.warning("fetched work rejected: %s", reason)
        self.work.reply(keyword, accepted, job, slot_ad)


def _holders(records: Sequence[SlotRecord]) -> dict[str, SlotRecord]:
    """The slot of every claim, by ClaimId (a preempting claim: the slot it waits for)."""
    found: dict[str, SlotRecord] = {}
    for record in records:
        for claim in (record.claim, record.preempting):
            if claim is not None:
                found[claim.claim_id] = record
    return found
