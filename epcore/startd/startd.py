"""The startd: the policy engine driven by a real clock, with starters running real jobs.

:class:`Startd` holds everything one startd has (configuration, plugins, the slot ads builder,
the engine and its state, the starters) and offers the control requests
(:class:`~epcore.runtime.control.StartdControl`) as methods, so a program that embeds epcore
calls them directly and ``ep`` calls them over the control socket. Every event goes through
:meth:`Startd.take`, which keeps the engine's new state, logs and announces each transition
and carries out the engine's actions (spawn a starter, soft- or hard-kill, suspend...).
:mod:`epcore.startd.loop` runs it: the clock, the timers, the sockets and the signals.
"""

from __future__ import annotations

import logging
import random
from collections import deque
from collections.abc import Callable

from epcore.classad import ClassAd, parse_expr
from epcore.config import Config
from epcore.interfaces import AdSink, JobResults
from epcore.plugins import Plugins
from epcore.runtime import persist
from epcore.runtime.control import ControlError
from epcore.runtime.forkserver import ChildExited
from epcore.slots.ads import SlotAdBuilder
from epcore.slots.config_attrs import slot_prefix
from epcore.slots.inventory import build_inventory, execute_disks_kb
from epcore.slots.layout import plan_slots
from epcore.startd import admission, backends, kept_starters, namespaces, recovery, starter_events
from epcore.startd.backfill import Backfill
from epcore.startd.cleanup import Cleanup
from epcore.startd.condor_load import CondorLoad, sample_startd
from epcore.startd.cron import StartdCron
from epcore.startd.fetch_work import FetchWork
from epcore.startd.hibernation import Hibernation
from epcore.startd.offline import OfflineUniverses
from epcore.startd.prepare import Preparations
from epcore.startd.publish import MemorySink
from epcore.startd.setup import StartdPaths, make_state_private, restart_changes
from epcore.startd.starters import StarterHandle, StarterPool
from epcore.startd.zygote import PrepareFailed, Zygote, ZygoteWork
from epcore.state.claims import public_part
from epcore.state.engine import Engine, EngineError
from epcore.state.records import Action, EngineState, StatusMemo, VacateReason
from epcore.state.states import CLAIMED_IDLE
from epcore.state.work import Outcome
from epcore.types import (
    HostReadings,
    MachineAttribute,
    MachineHost,
    SlotStateChange,
)

Clock = Callable[[], float]


class Startd:
    """One startd (see the module docstring); ``clock`` gives epoch seconds."""

    def __init__(
        self,
        config: Config,
        plugins: Plugins,
        host: MachineHost,
        *,
        log: logging.Logger,
        sink: AdSink | None = None,
        clock: Clock,
        reload_config: Callable[[], Config] | None = None,
    ) -> None:
        self.config = config
        self.plugins = plugins
        self.host = host
        self.log = log
        self.sink: AdSink = sink if sink is not None else MemorySink()
        self.clock = clock
        self.reload_config = reload_config
        self.paths = StartdPaths.from_config(config)
        self.paths.make_directories()
        make_state_private(self.paths, log)
        now = clock()
        self.started_at = now
        detected = plugins.detect_resources(config, host)
        self.inventory = build_inventory(
            config, detected, execute_disks_kb=execute_disks_kb(config, host)
        )
        self.host_name = config.get("FULL_HOSTNAME") or host.facts().full_hostname
        self.address = f"<unix:{self.paths.control_socket}>"
        #: What claim ids begin with: the TCP address peers reach once one claimed over
        #: CEDAR (:meth:`reached_at`), else the Unix socket.
        self.claim_address = self.address
        self.extra_attributes: list[MachineAttribute] = []
        self.containers = backends.container_runtimes(plugins, config, log)
        #: The per-job scratch filesystem (STARTD_ENFORCE_DISK_LIMITS), built once: HTCondor
        #: too needs a restart, not a reconfiguration, to turn it on or off.
        self.scratch = backends.scratch_filesystem(plugins, config, log)
        #: The plugins' host reading of the last second, and that reading with the slots'
        #: condor load folded in (folded again after each load sample, read once).
        self._last_raw: tuple[int, HostReadings] | None = None
        self._last_readings: tuple[int, HostReadings] | None = None
        #: Each slot's CondorLoadAvg, sampled at every poll (:meth:`sample_load`).
        self.condor_load = CondorLoad(config, float(self.inventory.detected_cpus))
        self._ads_memo: tuple[EngineState, float, bool, dict[str, ClassAd]] | None = None
        #: Power management (a companion of the startd's loop).
        self.hibernation = Hibernation(self)
        #: Universes a starter reported the machine failed (offline.py).
        self.offline = OfflineUniverses()
        #: The cron jobs and benchmarks (a companion of the startd's loop).
        self.cron = StartdCron(self)
        #: The fetch-work hooks and Python sources (a companion of the startd's loop).
        self.fetch_work = FetchWork(self)
        #: The backfill client (a companion of the startd's loop); before the policy, which
        #: knows from it whether any slot may enter Backfill.
        self.backfill = Backfill(self)
        #: Broken slots and clean-up reminders (a companion of the startd's loop).
        self.cleanup = Cleanup(self)
        self.engine, self.builder = self._policy(config)
        self.statuses = StatusMemo()
        self.state: EngineState = self.engine.start(plan_slots(config, self.inventory), now)
        self.isolation = backends.isolation_backends(plugins, config, log)
        self.starters = StarterPool(self.paths.starter_socket, log)
        #: What a child the startd forks must close (its loop's sockets, set by the loop).
        self.close_in_child: Callable[[], None] = lambda: None
        # Forked now, before the loop, the cron threads or (in ep run) the rest of the pool.
        self.zygote = Zygote(self._zygote_work, log=log, threads_busy=self.cron.python_busy)
        self.preparations = Preparations(log, self.zygote)
        self.publish_wanted = True
        self.saved: dict[str, persist.SavedStarter] = {}
        self.claims_file = persist.ClaimsFile(self.paths.claims_file)
        #: The latest results, for an embedding program or a benchmark to look at.
        self.results: deque[ClassAd] = deque(maxlen=1000)
        #: Where every recorded result goes: the link to the schedd that runs the jobs.
        self.job_results: JobResults | None = None
        #: The schedds of claims whose jobs were lost at a restart (recovery.client_of).
        self.lost_clients: dict[str, str] = {}
        for problem in self.engine.problems(self.state):
            log.error("policy problem: %s", problem)

    def _zygote_work(self) -> ZygoteWork:
        return ZygoteWork(
            self.config,
            self.plugins,
            self.isolation,
            self.containers,
            scratch=self.scratch,
            close_in_zygote=lambda: self.close_in_child(),
        )

    # -- building -------------------------------------------------------------------------

    def _policy(self, config: Config) -> tuple[Engine, SlotAdBuilder]:
        # The runtimes' attributes first: a site plugin's ep_machine_attributes may replace them.
        self.extra_attributes = [*namespaces.host_attributes(self.log)]
        self.extra_attributes += backends.runtime_attributes(self.containers, self.log)
        self.extra_attributes += self.plugins.machine_attributes(config, self.inventory)
        if self.scratch is not None:
            # Last: a hidden scratch mount prohibits docker and VM jobs whatever their
            # runtimes say (HasDocker = false with the reason).
            self.extra_attributes += self.scratch.machine_attributes()
        # The plugins have just tested their universes again.
        self.offline.clear()
        engine = Engine(
            config,
            self.policy_ads,
            random.SystemRandom(),
            inventory=self.inventory,
            address=self.claim_address,
            benchmarks_reported=True,
            backfill=self.backfill.configure(config),
        )
        builder = SlotAdBuilder(
            config,
            self.inventory,
            host_name=self.host_name,
            started_at=self.started_at,
            address=self.address,
            policy_attributes=engine.published_attributes,
        )
        return engine, builder

    # -- ads ------------------------------------------------------------------------------

    def ads(self, state: EngineState, now: float, *, published: bool = True) -> dict[str, ClassAd]:
        """Every slot's ad by short name (``published``: as advertised, Requirements folded).

        The engine asks many times during one event for the same state; the last answer is
        kept for that (state, now, published), and an equal state at the same ``now`` in the
        other flavour only folds Requirements again. Only the last: the builder updates its
        ads in place, so an answer for the other ``published`` is no longer what it was.
        """
        memo = self._ads_memo
        if memo is not None and memo[1] == now and (memo[0] is state or memo[0] == state):
            if memo[2] == published:
                return memo[3]
            # Starting a job asks for the published ads of the state the policy has just
            # been evaluated in (an equal state, not the same object): only Requirements
            # differs between the two.
            built = self.builder.refold(state.layout, now, fold_requirements=published)
            ads = {
                slot_prefix(slot): ad for slot, ad in zip(state.layout.slots, built, strict=True)
            }
            self._ads_memo = (state, now, published, ads)
            return ads
        readings = self._readings(now)
        ads = self._build_ads(state, now, readings, published)
        if self.cron.remerge(ads, state, now):
            ads = self._build_ads(state, now, readings, published)
        self._ads_memo = (state, now, published, ads)
        return ads

    def _build_ads(
        self, state: EngineState, now: float, readings: HostReadings, published: bool
    ) -> dict[str, ClassAd]:
        built = self.builder.build(
            state.layout,
            readings,
            self.condor_load.statuses(self.statuses.statuses(state)),
            now,
            extra_attributes=(
                *self.extra_attributes,
                *self.hibernation.attributes(),
                *self.offline.attributes(),
            ),
            benchmarks=self.cron.benchmarks.published(state.last_benchmark),
            draining=state.draining_totals(now),
            fold_requirements=published,
            cron=self.cron.layers,
        )
        return {slot_prefix(slot): ad for slot, ad in zip(state.layout.slots, built, strict=True)}

    def attributes_changed(self, now: float, publish: bool) -> None:
        """Cron attributes changed: build the ads again, let the policy see them, and publish
        now when ``publish``."""
        self._ads_memo = None
        self.take(self.engine.set_attributes(self.state, now), now)
        if publish:
            self.publish(now)

    def benchmarks_finished(self, now: float) -> None:
        """The benchmarks ran (their results are in ``cron.benchmarks``): tell the engine."""
        self._ads_memo = None
        self.publish_wanted = True
        self.take(self.engine.benchmarks_finished(self.state, now), now)

    def _readings(self, now: float) -> HostReadings:
        """The host readings at ``now``, taken at most once per second: the engine asks for
        ads many times in one event, and each reading scans the terminal devices."""
        second = int(now)
        if self._last_readings is None or self._last_readings[0] != second:
            raw = self._raw_readings(now)
            self._last_readings = (second, self.condor_load.readings(raw))
        return self._last_readings[1]

    def _raw_readings(self, now: float) -> HostReadings:
        second = int(now)
        if self._last_raw is None or self._last_raw[0] != second:
            self._last_raw = (second, self.plugins.host_readings(self.config, self.host, now))
        return self._last_raw[1]

    def sample_load(self, now: float) -> None:
        """Sample the CPU of the slots' jobs (at each poll, as HTCondor does): the ads are
        built again with the new CondorLoadAvg, from the same second's host reading."""
        sample_startd(self, now, self._readings(now).load_avg)
        self._last_readings = None
        self._ads_memo = None

    def power_changed(self) -> None:
        """The power attributes changed (the target state, a reconfiguration): the ads are
        built again."""
        self._ads_memo = None

    def policy_ads(self, state: EngineState, now: float) -> dict[str, ClassAd]:
        """The engine's ad source."""
        return self.ads(state, now, published=False)

    def publish(self, now: float) -> None:
        """Send every slot's ad to the sink."""
        self.sink.advertise(list(self.ads(self.state, now).values()), now)
        self.publish_wanted = False

    # -- events ---------------------------------------------------------------------------

    def take(self, outcome: Outcome, now: float) -> Outcome:
        """Keep ``outcome``'s state, announce its transitions, carry out its actions."""
        self.state = outcome.state
        for move in outcome.transitions:
            self.log.info(
                "%s: Changing state and activity: %s -> %s (%s)",
                move.slot,
                move.old,
                move.new,
                move.cause,
            )
            old_state, old_activity = move.old.names
            new_state, new_activity = move.new.names
            self.plugins.slot_state_changed(
                SlotStateChange(
                    move.slot, old_state, old_activity, new_state, new_activity, now, move.cause
                )
            )
            self.publish_wanted = True
        for note in outcome.notes:
            self.log.info("%s", note)
        for action in outcome.actions:
            self.act(action, now)
        self.sync_preparations()
        return outcome

    def sync_preparations(self) -> None:
        """Prepare the next job of every claim whose starter does not; drop what no claim
        needs any more; retire the kept starters of claims that are over."""
        kept_starters.retire_idle(self)
        self.preparations.sync(
            self.state,
            self.config,
            self.isolation,
            self.paths.execute,
            int(self.inventory.memory_mb),
            self.containers,
            kept_starters.keeping(self),
        )

    def reached_at(self, sinful: str) -> None:
        """A schedd reached this startd at ``sinful``: the claims made from now on name it."""
        if sinful != self.claim_address:
            self.log.info("claims are made at %s", sinful)
            self.claim_address = self.engine.address = sinful

    def _run(self, outcome: Outcome, now: float) -> Outcome:
        taken = self.take(outcome, now)
        if taken.refused is not None:
            raise ControlError(taken.refused)
        return taken

    def act(self, action: Action, now: float) -> None:
        """Carry out one of the engine's actions (:func:`starter_events.act`)."""
        starter_events.act(self, action, now)

    # -- starters -------------------------------------------------------------------------

    def zygote_notes(self, now: float) -> None:
        """Take the zygote's notes: starters that exited, preparations that failed; start a
        new zygote when it is gone."""
        for note in self.zygote.notes():
            if isinstance(note, ChildExited):
                self.starters.child_exited(note.pid, note.status)
            elif isinstance(note, PrepareFailed):
                self.preparations.failed(note)
        if not self.zygote.alive and not self.state.shutting_down:
            self.zygote_gone()
            self.sync_preparations()

    def zygote_gone(self) -> None:
        """The zygote died: its starters are watched by their PIDs; a new one is forked."""
        self.log.error("the zygote %d died", self.zygote.pid)
        self.starters.orphan(self.zygote.pid)
        self.zygote.restart()

    def save_claims(self) -> None:
        """Rewrite the claims file with every saved claim (after a restart)."""
        self.claims_file.rewrite(list(self.saved.values()))

    def restore(self, now: float) -> None:
        """Take back the claims whose starters outlived the previous startd
        (:func:`epcore.startd.recovery.restore`)."""
        recovery.restore(self, now)

    def reclaim(self, entry: persist.SavedStarter) -> None:
        """Clean up after a starter that died (:func:`epcore.startd.recovery.reclaim`)."""
        recovery.reclaim(self, entry)

    def record_result(self, result: ClassAd, now: float) -> None:
        """Write a finished job's result to the history and tell the plugins."""
        starter_events.record_result(self, result, now)

    def starter_message(self, handle: StarterHandle, message: ClassAd, now: float) -> None:
        """A message from a known starter (:func:`starter_events.starter_message`)."""
        starter_events.starter_message(self, handle, message, now)

    def announce(self, result: ClassAd, now: float) -> None:
        """Send a recorded result to the schedd's link (:func:`starter_events.announce`)."""
        starter_events.announce(self, result, now)

    def starter_exited(self, handle: StarterHandle, now: float) -> None:
        """A starter process is gone (:func:`starter_events.starter_exited`)."""
        starter_events.starter_exited(self, handle, now)

    # -- the control requests (StartdControl) ----------------------------------------------

    def claim(self, slot: str, job: ClassAd, client: str = "", by_priority: bool = False) -> str:
        if self.hibernation.asleep:
            raise ControlError("the machine is asleep (hibernating)")
        now = self.clock()
        try:
            outcome = self._run(
                self.engine.claim(
                    self.state, slot, job, now, client=client, by_priority=by_priority
                ),
                now,
            )
        except EngineError as error:
            raise ControlError(str(error)) from error
        assert outcome.claim_id is not None
        return outcome.claim_id

    def _claim_event(
        self, method: Callable[[EngineState, str, float], Outcome], claim_id: str
    ) -> None:
        now = self.clock()
        try:
            self._run(method(self.state, claim_id, now), now)
        except EngineError as error:
            raise ControlError(str(error)) from error

    def activate(self, claim_id: str, job: ClassAd | None = None) -> None:
        now = self.clock()
        refused = admission.refusal(self, claim_id, job, now)
        if refused is not None:
            self.log.warning("activation of claim %s refused: %s", public_part(claim_id), refused)
            raise ControlError(refused)
        try:
            self._run(self.engine.activate(self.state, claim_id, now, job), now)
        except EngineError as error:
            raise ControlError(str(error)) from error

    def claim_ready(self, claim_id: str) -> bool:
        """Whether ``claim_id`` is its slot's claim and the slot is Claimed/Idle (a preempting
        claim becomes ready once the preempted job is gone)."""
        for record in self.state.slots:
            if record.claim is not None and record.claim.claim_id == claim_id:
                return record.place == CLAIMED_IDLE
        return False

    def claims(self) -> list[tuple[str, ClassAd]]:
        """Every current claim with the job it was last given (a schedd adopts these after a
        restart)."""
        return [
            (record.claim.claim_id, record.claim.job)
            for record in self.state.slots
            if record.claim is not None
        ]

    def slot_of(self, claim_id: str) -> str | None:
        """The short name of the slot ``claim_id`` holds (a preempting claim: the slot it
        waits for), or None when no slot has it."""
        for record in self.state.slots:
            for claim in (record.claim, record.preempting):
                if claim is not None and claim.claim_id == claim_id:
                    return record.name
        return None

    def release(self, claim_id: str, *, removed: bool = False) -> None:
        now = self.clock()
        try:
            self._run(self.engine.release(self.state, claim_id, now, removed=removed), now)
        except EngineError as error:
            raise ControlError(str(error)) from error

    def alive(self, claim_id: str) -> None:
        self._claim_event(self.engine.alive, claim_id)

    def vacate(self, slot: str, fast: bool = False, *, reason: VacateReason | None = None) -> None:
        now = self.clock()
        try:
            self._run(self.engine.vacate(self.state, slot, fast, now, reason), now)
        except EngineError as error:
            raise ControlError(str(error)) from error

    def drain(
        self,
        how: str,
        check: str | None = None,
        start: str | None = None,
        *,
        reason: str | None = None,
        resume: bool = False,
    ) -> None:
        now = self.clock()
        try:
            outcome = self.engine.drain(
                self.state, how, now, check=check, start=start, finalize=resume, reason=reason
            )
            self._run(outcome, now)
        except EngineError as error:
            raise ControlError(str(error)) from error

    def cancel_drain(self) -> None:
        now = self.clock()
        self._run(self.engine.cancel_drain(self.state, now), now)

    def query(self, constraint: str | None = None) -> list[ClassAd]:
        now = self.clock()
        ads = list(self.ads(self.state, now).values())
        if constraint is None:
            return ads
        expr = parse_expr(constraint)
        context = self.config.eval_context.at(now)
        return [ad for ad in ads if expr.evaluate(ad, context=context) is True]

    def reconfig(self) -> None:
        """Read the configuration again: policy, attributes and intervals change now; the
        slot layout, resources and process tracking wait for a restart (logged)."""
        if self.reload_config is None:
            raise ControlError("this startd was given no way to read its configuration again")
        new = self.reload_config()
        for name in restart_changes(self.config, new):
            self.log.warning("reconfig: %s changed; it takes effect at the next restart", name)
        self.config = new
        self.containers = backends.container_runtimes(self.plugins, new, self.log)
        self.zygote.reconfig(new)
        kept_starters.reconfigured(self)
        self.engine, self.builder = self._policy(new)
        self.backfill.reconfigured(self.clock())
        self.cron.reconfig(new)
        self.hibernation.configure()
        self.condor_load.configure(new)
        self._ads_memo = None
        self.publish_wanted = True
        self.log.info("reconfigured")

    def shutdown(self, fast: bool = False) -> None:
        now = self.clock()
        self.take(self.engine.shutdown(self.state, fast, now), now)

    def close(self) -> None:
        """End the startd's zygote (it gives up the jobs it prepared; starters live on)."""
        self.zygote.close()

    @property
    def shutting_down(self) -> bool:
        return self.state.shutting_down

    def idle(self) -> bool:
        """True when no job runs and no starter is left (a shut-down startd may exit)."""
        return not self.starters.handles and all(r.job_start is None for r in self.state.slots)
