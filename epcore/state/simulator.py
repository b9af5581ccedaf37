"""The policy simulator: a scenario's events fed to the engine on a simulated clock.

The machine is a fake host with the scenario's ``[machine]`` values (Cpus, Memory, Disk, Swap
size the host; KeyboardIdle, ConsoleIdle, LoadAvg, CondorLoadAvg, CpuBusyTime are the
readings; anything else becomes a machine attribute of every slot ad). KeyboardIdle and
ConsoleIdle grow with the simulated clock from the moment they are set, as idle times do. The
configuration is the defaults plus the scenario's text (every slot is connected to the
keyboard and console unless the scenario says otherwise). Between events the simulator fires
the engine's timers at their own times and re-evaluates policy every POLLING_INTERVAL, as the
daemon does, and the schedds send keep-alives every ALIVE_INTERVAL (except for a claim made
with ``keepalive = false``). A hard kill takes the job away at once; an eviction of the
backfill client too. The slot ads come from one :class:`~epcore.slots.ads.SlotAdBuilder` kept
for the whole run, as the daemon keeps one.
"""

from __future__ import annotations

import random
from collections.abc import Mapping
from typing import Any

import attrs

from epcore.classad import ClassAd, EvalContext
from epcore.config import Config
from epcore.config.memory_host import FakeMachineHost
from epcore.slots.ads import SlotAdBuilder
from epcore.slots.config_attrs import slot_prefix
from epcore.slots.inventory import build_inventory
from epcore.slots.layout import plan_slots
from epcore.slots.slot_status import Benchmarks
from epcore.state.engine import Engine, EngineError
from epcore.state.records import ActionKind, EngineState, StatusMemo, TransitionRecord
from epcore.state.scenario import Event, Scenario, ScenarioError, job_ad
from epcore.state.work import Outcome
from epcore.types import DetectedResource, HostReadings, MachineAttribute

_HOST_KEYS = {"cpus", "memory", "disk", "swap"}
_READING_KEYS = {"keyboardidle", "consoleidle", "loadavg", "condorloadavg", "cpubusytime"}
_PRELUDE = "SLOTS_CONNECTED_TO_KEYBOARD = 1000000\nSLOTS_CONNECTED_TO_CONSOLE = 1000000\n"
_HOST_NAME = "sim.example.org"


@attrs.frozen
class Failure:
    """An expectation that was not met after event ``index``."""

    index: int
    time: float
    slot: str
    what: str
    expected: object
    actual: object

    def __str__(self) -> str:
        return (
            f"event {self.index} (t={self.time:g}): {self.slot} {self.what}: expected "
            f"{self.expected!r}, got {self.actual!r}"
        )


@attrs.frozen
class SimulationResult:
    """Every transition, the notes (refusals, problems) and the failed expectations."""

    origin: float
    transitions: tuple[TransitionRecord, ...]
    notes: tuple[str, ...]
    failures: tuple[Failure, ...]
    problems: tuple[str, ...]


def _lower(values: Mapping[str, Any]) -> dict[str, Any]:
    return {k.lower(): v for k, v in values.items()}


class Simulation:
    """One run of a scenario."""

    def __init__(
        self, scenario: Scenario, seed: int = 0, context: EvalContext | None = None
    ) -> None:
        self.scenario = scenario
        machine = _lower(scenario.machine)
        self.host = FakeMachineHost(
            logical_cpus=int(machine.get("cpus", 4)),
            physical_cpus=int(machine.get("cpus", 4)),
            physical_memory_mb=int(machine.get("memory", 8192)),
        )
        self.config = Config.from_text(
            _PRELUDE + scenario.config, host=self.host, source=scenario.source, eval_context=context
        )
        detected = [
            DetectedResource("Cpus", float(machine.get("cpus", 4))),
            DetectedResource("Memory", float(machine.get("memory", 8192))),
            DetectedResource("Disk", float(machine.get("disk", 100 * 1024 * 1024))),
            DetectedResource("Swap", float(machine.get("swap", 2 * 1024 * 1024))),
        ]
        self.inventory = build_inventory(self.config, detected)
        self.origin = scenario.start if scenario.start is not None else 0.0
        self.values: dict[str, tuple[Any, float]] = {}
        self._set(scenario.machine, self.origin)
        self.engine = Engine(
            self.config, self.policy_ads, random.Random(seed), inventory=self.inventory
        )
        self.statuses = StatusMemo()
        self.builder = SlotAdBuilder(
            self.config,
            self.inventory,
            host_name=_HOST_NAME,
            started_at=self.origin,
            policy_attributes=self.engine.published_attributes,
        )
        self.aliases: dict[str, str] = {}
        self.silent: set[str] = set()
        self.transitions: list[TransitionRecord] = []
        self.notes: list[str] = []

    def _set(self, values: Mapping[str, Any], now: float) -> None:
        for name, value in values.items():
            if name.lower() not in _HOST_KEYS:
                self.values[name] = (value, now)

    def _reading(self, name: str, now: float, default: float) -> float:
        for key, (value, since) in self.values.items():
            if key.lower() == name.lower() and isinstance(value, int | float):
                grows = name.lower() in ("keyboardidle", "consoleidle", "cpubusytime")
                return float(value) + (now - since if grows else 0.0)
        return default

    def ads(self, state: EngineState, now: float, *, published: bool = True) -> dict[str, ClassAd]:
        """Every slot's ad, by short name, as the startd would advertise it at ``now``
        (``published`` False: as the policy is evaluated against, Requirements unfolded)."""
        readings = HostReadings(
            load_avg=self._reading("LoadAvg", now, 0.0),
            condor_load_avg=self._reading("CondorLoadAvg", now, 0.0),
            keyboard_idle=int(self._reading("KeyboardIdle", now, 1_000_000)),
            console_idle=int(self._reading("ConsoleIdle", now, 1_000_000)),
            cpu_busy_time=int(self._reading("CpuBusyTime", now, 0)),
        )
        extras = [
            MachineAttribute(name, value)
            for name, (value, _) in self.values.items()
            if name.lower() not in _READING_KEYS
        ]
        built = self.builder.build(
            state.layout,
            readings,
            self.statuses.statuses(state),
            now,
            extra_attributes=extras,
            benchmarks=Benchmarks(last_run=state.last_benchmark),
            draining=state.draining_totals(now),
            fold_requirements=published,
        )
        return {slot_prefix(slot): ad for slot, ad in zip(state.layout.slots, built, strict=True)}

    def policy_ads(self, state: EngineState, now: float) -> dict[str, ClassAd]:
        """The engine's ad source: the ads of :meth:`ads`, Requirements left unfolded."""
        return self.ads(state, now, published=False)

    # -- running ----------------------------------------------------------------------------

    def _take(self, outcome: Outcome, now: float) -> EngineState:
        self.transitions.extend(outcome.transitions)
        self.notes.extend(f"t={now - self.origin:g}: {note}" for note in outcome.notes)
        state = outcome.state
        for action in outcome.actions:
            if action.kind == ActionKind.HARD_KILL:
                state = self._take(self.engine.job_gone(state, action.slot, now), now)
            elif action.kind == ActionKind.EVICT_BACKFILL:
                state = self._take(self.engine.backfill_exit(state, action.slot, now), now)
        return state

    def _run_until(self, state: EngineState, until: float, last_poll: float) -> EngineState:
        interval = max(self.engine.policy(1).number("POLLING_INTERVAL"), 1)
        now = last_poll
        while True:
            timer = self.engine.next_timer(state, now)
            poll = now + interval
            moment = timer if timer is not None and now < timer < poll else poll
            if moment > until:
                return state
            now = moment
            state = self._keep_alive(state, now)
            state = self._take(self.engine.poll(state, now), now)

    def _keep_alive(self, state: EngineState, now: float) -> EngineState:
        """The simulated schedds send keep-alives every ALIVE_INTERVAL, except for claims
        made with ``keepalive = false``."""
        interval = self.engine.policy(1).number("ALIVE_INTERVAL")
        for record in state.slots:
            claim = record.claim
            if claim is None or claim.claim_id in self.silent:
                continue
            if now - claim.last_alive >= interval:
                state = self._take(self.engine.alive(state, claim.claim_id, now), now)
        return state

    def _claim_id(self, args: Mapping[str, Any]) -> str:
        alias = str(args["id"])
        return self.aliases.get(alias, alias)

    def _apply(self, state: EngineState, event: Event, now: float) -> EngineState:
        e, a = self.engine, event.args
        kind = event.kind
        if kind == "set":
            self._set(a, now)
            return self._take(e.set_attributes(state, now), now)
        if kind == "advance":
            return self._take(e.poll(state, now), now)
        if kind == "match":
            return self._take(e.match(state, str(a["slot"]), job_ad(a["job"]), now), now)
        if kind == "claim":
            outcome = e.claim(
                state,
                str(a["slot"]),
                job_ad(a["job"]),
                now,
                client=str(a.get("client", "")),
                by_priority=bool(a.get("priority", False)),
            )
            if outcome.claim_id is not None:
                self.aliases[str(a.get("id", a["slot"]))] = outcome.claim_id
                if a.get("keepalive", True) is False:
                    self.silent.add(outcome.claim_id)
            return self._take(outcome, now)
        if kind in ("activate", "alive", "release"):
            method = {"activate": e.activate, "alive": e.alive, "release": e.release}[kind]
            return self._take(method(state, self._claim_id(a), now), now)
        if kind == "job_exit":
            outcome = e.job_exit(state, self._claim_id(a), int(a.get("code", 0)), now)
            return self._take(outcome, now)
        if kind == "vacate":
            return self._take(e.vacate(state, str(a["slot"]), bool(a.get("fast")), now), now)
        if kind == "drain":
            outcome = e.drain(
                state,
                str(a.get("how", "graceful")),
                now,
                check=a.get("check"),
                start=a.get("start"),
                finalize=bool(a.get("finalize", False)),
            )
            return self._take(outcome, now)
        if kind == "cancel_drain":
            return self._take(e.cancel_drain(state, now), now)
        if kind == "shutdown":
            return self._take(e.shutdown(state, bool(a.get("fast")), now), now)
        return self._take(e.backfill_exit(state, str(a["slot"]), now), now)

    def _check(self, state: EngineState, event: Event, now: float) -> list[Failure]:
        failures: list[Failure] = []
        t = now - self.origin
        for slot, wanted in event.expect.items():
            record = state.slot(slot)
            actual = str(record.place) if record is not None else "absent"
            if actual.lower() != wanted.replace(" ", "").lower():
                failures.append(Failure(event.index, t, slot, "State/Activity", wanted, actual))
        if event.expect_attrs:
            ads = self.ads(state, now)
            for slot, wanted_attrs in event.expect_attrs.items():
                ad = ads.get(slot)
                for name, wanted_value in wanted_attrs.items():
                    context = self.config.eval_context.at(now)
                    value = ad.evaluate(name, context=context) if ad else "absent"
                    same_kind = isinstance(value, bool) == isinstance(wanted_value, bool)
                    if value != wanted_value or not same_kind:
                        failures.append(Failure(event.index, t, slot, name, wanted_value, value))
        return failures

    def run(self) -> SimulationResult:
        """Run every event; raises ScenarioError for an event the engine cannot take."""
        now = self.origin
        state = self.engine.start(plan_slots(self.config, self.inventory), now)
        problems = tuple(self.engine.problems(state))
        state = self._take(self.engine.poll(state, now), now)
        last_poll = now
        failures: list[Failure] = []
        for event in self.scenario.events:
            moment = self.origin + event.at
            state = self._run_until(state, moment, last_poll)
            last_poll = max(last_poll, moment)
            try:
                state = self._apply(state, event, moment)
            except (EngineError, KeyError) as error:
                where = f"{self.scenario.source}: event {event.index}, key {event.kind!r}"
                raise ScenarioError(f"{where}: {error}") from error
            failures.extend(self._check(state, event, moment))
        return SimulationResult(
            self.origin,
            tuple(self.transitions),
            tuple(self.notes),
            tuple(failures),
            problems,
        )


def simulate(
    scenario: Scenario, seed: int = 0, context: EvalContext | None = None
) -> SimulationResult:
    """Run ``scenario`` (ClaimIds from a ``random.Random(seed)``), its expressions evaluated
    with ``context``'s functions (the plugins' ClassAd functions, for ``ep simulate``)."""
    return Simulation(scenario, seed, context).run()
