"""Power management: the startd puts the machine to sleep when HIBERNATE says so.

HIBERNATE_CHECK_INTERVAL > 0 turns it on, if the power backend (``ep_power_backends``; the
last one offered) finds a sleep state. Every interval HIBERNATE is evaluated in each slot's
ad: a slot where it is not a string (ERROR, UNDEFINED) stops this round, a slot at NONE
vetoes, and otherwise the deepest state asked for wins. The machine must support that state
and, unless HIBERNATION_OVERRIDE_WOL, be wake-able through its public network interface;
each refusal is logged with its reason. Then HTCondor's sequence: the slots' ads go to the
collector once more with ``Offline = True`` and the target state (the collector keeps them
as offline ads, which the negotiator matches and the rooster wakes the machine for; a sink
that raises is the missing acknowledgement: the target is reset and tried again next time),
the claims are ended (vacate code 1016, StartdHibernate) and the backend enters the state.

The backend's ``enter`` returns when the machine wakes (on real hardware the process is
frozen meanwhile). It runs in a thread so that the other daemons of an ``ep run`` process keep
working; while it runs the startd is asleep: it neither evaluates its policy nor publishes,
and refuses claims. When it returns (or fails: the reason is logged), the target is reset to
NONE and the slots are published live again, which replaces the offline ads.
"""

from __future__ import annotations

import selectors
import threading
import time
from collections.abc import Callable, Mapping
from typing import TYPE_CHECKING

from epcore.builtin.wol import wol_flags
from epcore.classad import ClassAd, parse_expr
from epcore.errors import ClassAdSyntaxError, EpError
from epcore.jobs.codes import VacateCode
from epcore.state.records import VacateReason
from epcore.types import WAKE_MAGIC, MachineAttribute, PowerBackend, WakeOnLanFacts

if TYPE_CHECKING:
    from epcore.startd.startd import Startd

#: HIBERNATE's values (compared without regard to case) by the level they ask for.
_LEVEL_WORDS: Mapping[str, int] = {
    **dict.fromkeys(("none", "0"), 0),
    **dict.fromkeys(("s1", "1", "standby", "sleep"), 1),
    **dict.fromkeys(("s2", "2"), 2),
    **dict.fromkeys(("s3", "3", "ram", "mem", "suspend"), 3),
    **dict.fromkeys(("s4", "4", "disk", "hibernate"), 4),
    **dict.fromkeys(("s5", "5", "shutdown", "off"), 5),
}
#: What a job whose claim hibernation ended records (HTCondor's ResMgr::disableResources).
HIBERNATE_VACATE = VacateReason("Startd hibernated", int(VacateCode.STARTD_HIBERNATE))
#: The UNHIBERNATE knob's default: wake a machine once a job matched its offline ad.
DEFAULT_UNHIBERNATE = "MY.MachineLastMatchTime =!= UNDEFINED"


def hibernate_level(value: str) -> int:
    """The level (0..5) a HIBERNATE value asks for; an unknown word is NONE (0)."""
    return _LEVEL_WORDS.get(value.strip().lower(), 0)


def state_name(level: int) -> str:
    """``S<level>``, or ``NONE`` for 0."""
    return f"S{level}" if level else "NONE"


def power_attributes(
    states: tuple[str, ...],
    level: int,
    facts: WakeOnLanFacts | None,
    unhibernate: str,
) -> tuple[MachineAttribute, ...]:
    """The slot attributes of power management in HTCondor's formats."""
    supported = facts.supported if facts is not None else 0
    enabled = facts.enabled if facts is not None else 0
    attributes = [
        MachineAttribute("HibernationLevel", level),
        MachineAttribute("HibernationState", state_name(level)),
        MachineAttribute("HibernationSupportedStates", ",".join(states)),
        MachineAttribute("CanHibernate", bool(states)),
        MachineAttribute("IsWakeOnLanSupported", bool(supported & WAKE_MAGIC)),
        MachineAttribute("IsWakeOnLanEnabled", bool(enabled & WAKE_MAGIC)),
        MachineAttribute("IsWakeAble", facts is not None and bool(supported & enabled)),
        MachineAttribute("WakeOnLanSupportedFlags", wol_flags(supported)),
        MachineAttribute("WakeOnLanEnabledFlags", wol_flags(enabled)),
        MachineAttribute("Unhibernate", unhibernate, expression=True),
    ]
    if facts is not None:
        attributes += [
            MachineAttribute("HardwareAddress", facts.hardware_address),
            MachineAttribute("SubnetMask", facts.subnet_mask),
        ]
    return tuple(attributes)


class Hibernation:
    """The startd's power management (module docstring), a part of its loop's service.

    ``monotonic`` times the checks.
    """

    def __init__(
        self,
        startd: Startd,
        *,
        monotonic: Callable[[], float] = time.monotonic,
    ) -> None:
        self.startd = startd
        self.monotonic = monotonic
        self.backend: PowerBackend | None = None
        self.states: tuple[str, ...] = ()
        self.facts: WakeOnLanFacts | None = None
        self.level = 0
        self.interval = 0.0
        self.next_check = 0.0
        self._sleeper: threading.Thread | None = None
        self._woke: list[str | None] = []
        self._attributes: tuple[MachineAttribute, ...] = ()
        self.configure()

    # -- configuration --------------------------------------------------------------------

    def configure(self) -> None:
        """Read HIBERNATE_CHECK_INTERVAL; build the backend and ask it what the machine has."""
        startd = self.startd
        config, log = startd.config, startd.log
        self.interval = max(config.get_float("HIBERNATE_CHECK_INTERVAL", 0.0), 0.0)
        self.next_check = self.monotonic() + self.interval
        self.backend, self.states, self.facts = None, (), None
        if self.interval > 0:
            self._detect()
        unhibernate = config.get("UNHIBERNATE") or DEFAULT_UNHIBERNATE
        try:
            parse_expr(unhibernate, source="UNHIBERNATE")
        except ClassAdSyntaxError as error:
            log.error("UNHIBERNATE does not parse (%s): publishing the default", error)
            unhibernate = DEFAULT_UNHIBERNATE
        self._unhibernate = unhibernate
        self._refresh()

    def _detect(self) -> None:
        startd = self.startd
        log = startd.log
        specs = startd.plugins.power_backends()
        if not specs:
            log.error("no power backend is offered: hibernation disabled")
            return
        try:
            backend = startd.plugins.build_power_backend(specs[-1], startd.config)
            states = backend.supported_states()
            facts = backend.wake_on_lan()
        except (EpError, OSError) as error:
            # A PluginError (a backend breaking its contract) too: the machine stays awake.
            log.error("hibernation disabled: %s", error)
            return
        self.backend, self.states, self.facts = backend, states, facts
        if facts is None:
            log.error("No usable network interface: hibernation disabled")
            self.backend = None
            return
        log.info("Detected hibernation states: %s", ",".join(states) or "NONE")

    def _refresh(self) -> None:
        self._attributes = (
            power_attributes(self.states, self.level, self.facts, self._unhibernate)
            if self.interval > 0
            else ()
        )
        self.startd.power_changed()

    def attributes(self) -> tuple[MachineAttribute, ...]:
        """The power attributes every slot ad carries (none while power management is off)."""
        return self._attributes

    @property
    def asleep(self) -> bool:
        """True from the moment the slots went offline until the machine woke up."""
        return self._sleeper is not None

    # -- the loop's part ------------------------------------------------------------------

    def open(self, selector: selectors.BaseSelector) -> None:
        self.next_check = self.monotonic() + self.interval

    def ready(self, fileobj: object) -> None:
        pass

    def timeout(self) -> float:
        if self._sleeper is not None:
            return 0.2
        if self.interval <= 0:
            return 3600.0
        return max(self.next_check - self.monotonic(), 0.0)

    def tick(self) -> None:
        if self._sleeper is not None:
            if self._woke:
                self._wake(self._woke[0])
            return
        if self.interval <= 0 or self.monotonic() < self.next_check:
            return
        self.next_check = self.monotonic() + self.interval
        if self.startd.shutting_down:
            return
        self.check(self.startd.clock())

    def close(self) -> None:
        # A sleeper still blocked in the backend is a daemon thread: it dies with us.
        self._sleeper = None

    # -- the work -------------------------------------------------------------------------

    def wanted_level(self, ads: Mapping[str, ClassAd], now: float) -> int:
        """The level HIBERNATE asks for over every slot: 0 when one slot says NONE or does
        not evaluate to a string (that one logged), else the deepest."""
        text = self.startd.config.get("HIBERNATE")
        if not text or not text.strip():
            return 0
        log = self.startd.log
        try:
            expr = parse_expr(text, source="HIBERNATE")
        except ClassAdSyntaxError as error:
            log.error("HIBERNATE does not parse: %s; no hibernation", error)
            return 0
        context = self.startd.config.eval_context.at(now)
        deepest = 0
        for slot, ad in ads.items():
            value = expr.evaluate(ad, context=context)
            if not isinstance(value, str):
                log.error(
                    "HIBERNATE evaluated to %s in %s, not a string: no hibernation", value, slot
                )
                return 0
            level = hibernate_level(value)
            if level == 0:
                return 0
            deepest = max(deepest, level)
        return deepest

    def check(self, now: float) -> bool:
        """One HIBERNATE check; True when the machine went to sleep."""
        startd, log = self.startd, self.startd.log
        level = self.wanted_level(startd.ads(startd.state, now, published=False), now)
        if level == 0:
            return False
        state = state_name(level)
        if not self.states:
            log.error("ERROR: Ignoring HIBERNATE: Machine does not support any sleep states.")
            return False
        if state not in self.states:
            log.error(
                "ERROR: Ignoring HIBERNATE: Machine does not support %s (it offers %s).",
                state,
                ",".join(self.states),
            )
            return False
        facts = self.facts
        wakeable = facts is not None and bool(facts.supported & facts.enabled)
        if not wakeable:
            interface = facts.interface if facts is not None else "none"
            if not startd.config.get_bool("HIBERNATION_OVERRIDE_WOL", False):
                log.error(
                    "ERROR: Ignoring HIBERNATE: Machine cannot be woken by its public network "
                    "adapter (%s).",
                    interface,
                )
                return False
            log.warning("machine cannot be woken by %s: hibernating anyway", interface)
        if not self._go_offline(level, now):
            return False
        self._sleep(state)
        return True

    def _go_offline(self, level: int, now: float) -> bool:
        """Publish the slots offline at ``level`` and end the claims; False (target reset)
        when the collector did not take the ads."""
        startd, log = self.startd, self.startd.log
        self.level = level
        self._refresh()
        ads = []
        for ad in startd.ads(startd.state, now).values():
            offline = ad.copy()
            offline["Offline"] = True
            ads.append(offline)
        try:
            startd.sink.advertise(ads, now)
        except (EpError, OSError) as error:
            log.error("the collector did not take the offline ads (%s): staying awake", error)
            self.level = 0
            self._refresh()
            return False
        for slot in [r.name for r in startd.state.slots if r.claim is not None]:
            log.info(
                "%s: Startd hibernated: ending its claim (vacate code %d)",
                slot,
                VacateCode.STARTD_HIBERNATE,
            )
            try:
                startd.vacate(slot, fast=True, reason=HIBERNATE_VACATE)
            except EpError as error:
                log.error("%s: cannot end its claim: %s", slot, error)
        return True

    def _sleep(self, state: str) -> None:
        backend = self.backend
        assert backend is not None
        self.startd.log.info("entering sleep state %s", state)
        woke: list[str | None] = []

        def enter() -> None:
            try:
                backend.enter(state)
            except Exception as error:  # a plugin's failure must not be lost in a thread
                woke.append(f"{type(error).__name__}: {error}")
                return
            woke.append(None)

        self._woke = woke
        self._sleeper = threading.Thread(target=enter, name="hibernation", daemon=True)
        self._sleeper.start()

    def _wake(self, failure: str | None) -> None:
        log = self.startd.log
        if failure is not None:
            log.error("cannot enter %s (%s): staying awake", state_name(self.level), failure)
        else:
            log.info("woke up from %s", state_name(self.level))
        self._sleeper = None
        self._woke = []
        self.level = 0
        self._refresh()
        self.next_check = self.monotonic() + self.interval
        self.startd.publish_wanted = True
