"""The startd's power management with a fake power backend: HIBERNATE, its preconditions,
the offline ads, the sleep and the waking, and the power attributes of every slot ad."""

from __future__ import annotations

import threading
import time
from collections.abc import Callable, Iterator, Sequence
from pathlib import Path

import pytest

from epcore import hookimpl
from epcore.classad import ClassAd
from epcore.errors import PowerError
from epcore.plugins import load_plugins
from epcore.runtime.control import ControlError
from epcore.startd import starter_events
from epcore.startd.hibernation import hibernate_level, power_attributes
from epcore.startd.main import build_startd
from epcore.startd.publish import MemorySink
from epcore.startd.startd import Startd
from epcore.types import PowerBackendSpec, WakeOnLanFacts

WAKEABLE = WakeOnLanFacts("eth7", "00:1a:2b:3c:4d:5e", "255.255.255.0", "10.0.0.7", 0x20, 0x20)
DEAF = WakeOnLanFacts("eth7", "00:1a:2b:3c:4d:5e", "255.255.255.0", "10.0.0.7", 0, 0)


class FakePower:
    """A power backend whose sleep lasts until ``wake`` is set (or fails with ``failure``)."""

    name = "fake"

    def __init__(
        self,
        states: tuple[str, ...] = ("S3", "S4"),
        facts: WakeOnLanFacts | None = WAKEABLE,
        failure: str | None = None,
        detect_failure: str | None = None,
    ) -> None:
        self.states = states
        self.facts = facts
        self.failure = failure
        self.detect_failure = detect_failure
        self.entered: list[str] = []
        self.wake = threading.Event()

    def supported_states(self) -> tuple[str, ...]:
        if self.detect_failure is not None:
            raise PowerError(self.detect_failure)
        return self.states

    def enter(self, state: str) -> None:
        self.entered.append(state)
        if self.failure is not None:
            raise PowerError(self.failure)
        self.wake.wait(10)

    def wake_on_lan(self) -> WakeOnLanFacts | None:
        return self.facts


class FakePowerPlugin:
    """Offers one FakePower, built once."""

    def __init__(self, backend: FakePower) -> None:
        self.backend = backend

    @hookimpl
    def ep_power_backends(self) -> Sequence[PowerBackendSpec]:
        return (PowerBackendSpec("fake", lambda config: self.backend),)


class FailingSink(MemorySink):
    """A collector that does not take the ads (no acknowledgement)."""

    def advertise(self, ads: Sequence[ClassAd], now: float) -> None:
        raise OSError("connection refused")


Make = Callable[..., Startd]


@pytest.fixture
def make_startd(tmp_path: Path) -> Iterator[Make]:
    """``make_startd(config_text, backend=FakePower(), sink=None)``: a two-slot startd built
    in this process with the fake power backend, its slots Unclaimed."""
    made: list[Startd] = []

    def make(text: str, backend: FakePower | None = None, sink: MemorySink | None = None) -> Startd:
        local = tmp_path / f"local{len(made)}"
        local.mkdir()
        config = tmp_path / f"condor_config{len(made)}"
        config.write_text(
            f"LOCAL_DIR = {local}\nRUNBENCHMARKS = False\nIS_OWNER = False\nNUM_CPUS = 2\n"
            "MEMORY = 512\nNUM_SLOTS = 2\nSTART = True\nHIBERNATE_CHECK_INTERVAL = 5\n" + text
        )
        plugin = FakePowerPlugin(backend if backend is not None else FakePower())
        plugins = load_plugins(entry_points_group=None, extra=[("fakepower", plugin)])
        startd = build_startd(str(config), plugins=plugins, sink=sink or MemorySink())
        made.append(startd)
        now = startd.clock()
        startd.take(startd.engine.poll(startd.state, now), now)
        return startd

    yield make
    for startd in made:
        backend = startd.hibernation.backend
        if isinstance(backend, FakePower):
            backend.wake.set()
        startd.close()


def _log(startd: Startd) -> str:
    return Path(startd.paths.startd_log).read_text()


def _sink(startd: Startd) -> MemorySink:
    assert isinstance(startd.sink, MemorySink)
    return startd.sink


def _wait_awake(startd: Startd) -> None:
    deadline = time.monotonic() + 10
    while startd.hibernation.asleep:
        assert time.monotonic() < deadline, "the startd did not wake"
        startd.hibernation.tick()
        time.sleep(0.01)


@pytest.mark.parametrize(
    ("word", "level"),
    [
        ("NONE", 0),
        ("0", 0),
        ("S1", 1),
        ("standby", 1),
        ("sleep", 1),
        ("2", 2),
        ("RAM", 3),
        ("mem", 3),
        ("Suspend", 3),
        ("S4", 4),
        ("disk", 4),
        ("hibernate", 4),
        ("5", 5),
        ("shutdown", 5),
        ("OFF", 5),
        ("nap", 0),
    ],
)
def test_hibernate_words_map_to_levels(word: str, level: int) -> None:
    """HIBERNATE's values (any case) are HTCondor's levels; an unknown word is NONE."""
    assert hibernate_level(word) == level


def test_power_attributes_use_htcondors_formats() -> None:
    """Levels, state names, the comma list of states, MAC, mask and the WOL flag strings."""
    facts = WakeOnLanFacts("eth7", "00:1a:2b:3c:4d:5e", "255.255.255.0", "10.0.0.7", 0x21, 0x20)
    attributes = {a.name: a.value for a in power_attributes(("S3", "S4"), 3, facts, "X")}
    assert attributes == {
        "HibernationLevel": 3,
        "HibernationState": "S3",
        "HibernationSupportedStates": "S3,S4",
        "CanHibernate": True,
        "IsWakeOnLanSupported": True,
        "IsWakeOnLanEnabled": True,
        "IsWakeAble": True,
        "WakeOnLanSupportedFlags": "Physical Packet,Magic Packet",
        "WakeOnLanEnabledFlags": "Magic Packet",
        "Unhibernate": "X",
        "HardwareAddress": "00:1a:2b:3c:4d:5e",
        "SubnetMask": "255.255.255.0",
    }


def test_every_slot_ad_carries_the_power_attributes(make_startd: Make) -> None:
    """Awake, each slot publishes level 0, NONE, the states and the default Unhibernate."""
    startd = make_startd("")
    for ad in startd.query():
        assert ad.evaluate("HibernationLevel") == 0
        assert ad.evaluate("HibernationState") == "NONE"
        assert ad.evaluate("HibernationSupportedStates") == "S3,S4"
        assert ad.evaluate("CanHibernate") is True
        assert ad.evaluate("IsWakeAble") is True
        assert ad.evaluate("Unhibernate") is False  # no MachineLastMatchTime yet
    assert "Detected hibernation states: S3,S4" in _log(startd)


def test_unhibernate_is_published_from_its_knob(make_startd: Make) -> None:
    """UNHIBERNATE becomes the slots' Unhibernate expression."""
    startd = make_startd("UNHIBERNATE = SlotID == 1\n")
    values = sorted(bool(ad.evaluate("Unhibernate")) for ad in startd.query())
    assert values == [False, True]


def test_without_a_check_interval_there_is_no_power_management(make_startd: Make) -> None:
    """HIBERNATE_CHECK_INTERVAL = 0: no backend is built and no power attribute published."""
    startd = make_startd('HIBERNATE_CHECK_INTERVAL = 0\nHIBERNATE = "RAM"\n')
    assert startd.hibernation.backend is None
    assert "HibernationState" not in startd.query()[0]
    assert startd.hibernation.check(startd.clock()) is False


def test_the_machine_sleeps_offline_and_wakes_live(make_startd: Make) -> None:
    """HIBERNATE = RAM everywhere: offline ads at level 3 reach the collector, the backend
    enters S3, claims are refused while asleep, and on waking the level is back to 0."""
    backend = FakePower()
    startd = make_startd('HIBERNATE = "RAM"\n', backend)
    assert startd.hibernation.check(startd.clock()) is True
    ads = list(_sink(startd).ads.values())
    assert ads and all(ad.evaluate("Offline") is True for ad in ads)
    assert {ad.evaluate("HibernationState") for ad in ads} == {"S3"}
    assert {ad.evaluate("HibernationLevel") for ad in ads} == {3}
    assert startd.hibernation.asleep
    with pytest.raises(ControlError, match="asleep"):
        startd.claim("slot1", ClassAd())
    backend.wake.set()
    _wait_awake(startd)
    assert backend.entered == ["S3"]
    assert startd.query()[0].evaluate("HibernationLevel") == 0
    assert startd.publish_wanted
    assert "woke up from S3" in _log(startd)


def test_one_slot_at_none_vetoes(make_startd: Make) -> None:
    """A slot whose HIBERNATE is NONE keeps the machine awake."""
    startd = make_startd('HIBERNATE = ifThenElse(SlotID == 1, "RAM", "NONE")\n')
    assert startd.hibernation.check(startd.clock()) is False
    assert not startd.hibernation.asleep


def test_the_deepest_state_wins(make_startd: Make) -> None:
    """Slots asking RAM and DISK put the machine into S4."""
    backend = FakePower()
    startd = make_startd('HIBERNATE = ifThenElse(SlotID == 1, "RAM", "DISK")\n', backend)
    assert startd.hibernation.check(startd.clock()) is True
    backend.wake.set()
    _wait_awake(startd)
    assert backend.entered == ["S4"]


def test_hibernate_evaluating_to_error_keeps_the_machine_awake(make_startd: Make) -> None:
    """HIBERNATE that is ERROR in a slot is no hibernation this round, logged."""
    backend = FakePower()
    startd = make_startd("HIBERNATE = error\n", backend)
    assert startd.hibernation.check(startd.clock()) is False
    assert backend.entered == []
    assert "HIBERNATE evaluated to ERROR in slot1, not a string" in _log(startd)


def test_a_machine_without_sleep_states_stays_awake(make_startd: Make) -> None:
    """No supported state: HTCondor's "does not support any sleep states" error."""
    startd = make_startd('HIBERNATE = "RAM"\n', FakePower(states=()))
    assert startd.hibernation.check(startd.clock()) is False
    assert "Machine does not support any sleep states" in _log(startd)
    assert startd.query()[0].evaluate("CanHibernate") is False


def test_a_state_the_machine_lacks_keeps_it_awake(make_startd: Make) -> None:
    """HIBERNATE asking S5 of a machine offering S3 and S4 is refused, logged."""
    backend = FakePower()
    startd = make_startd('HIBERNATE = "off"\n', backend)
    assert startd.hibernation.check(startd.clock()) is False
    assert "Machine does not support S5" in _log(startd)
    assert backend.entered == []


def test_a_machine_that_cannot_be_woken_stays_awake(make_startd: Make) -> None:
    """No Wake-on-LAN on the public interface: refused, naming the interface."""
    startd = make_startd('HIBERNATE = "RAM"\n', FakePower(facts=DEAF))
    assert startd.hibernation.check(startd.clock()) is False
    assert "cannot be woken by its public network adapter (eth7)" in _log(startd)
    ad = startd.query()[0]
    assert ad.evaluate("IsWakeAble") is False
    assert ad.evaluate("WakeOnLanEnabledFlags") == "NONE"


def test_hibernation_override_wol_sleeps_anyway(make_startd: Make) -> None:
    """HIBERNATION_OVERRIDE_WOL: the machine sleeps although it cannot be woken."""
    backend = FakePower(facts=DEAF)
    startd = make_startd('HIBERNATE = "RAM"\nHIBERNATION_OVERRIDE_WOL = true\n', backend)
    assert startd.hibernation.check(startd.clock()) is True
    assert "hibernating anyway" in _log(startd)


def test_a_failing_backend_leaves_the_machine_awake_with_the_reason(make_startd: Make) -> None:
    """The backend failing to enter the state: awake again, level 0, the reason logged."""
    backend = FakePower(failure="write error: /sys/power/state")
    startd = make_startd('HIBERNATE = "RAM"\n', backend)
    startd.hibernation.check(startd.clock())
    _wait_awake(startd)
    assert "cannot enter S3 (PowerError: write error: /sys/power/state): staying awake" in (
        _log(startd)
    )
    assert startd.query()[0].evaluate("HibernationLevel") == 0


def test_a_backend_failing_to_detect_disables_hibernation(make_startd: Make) -> None:
    """A plugin failing when asked for the states: hibernation disabled, the reason logged."""
    startd = make_startd('HIBERNATE = "RAM"\n', FakePower(detect_failure="script exited 2"))
    assert startd.hibernation.backend is None
    assert startd.hibernation.check(startd.clock()) is False
    assert "hibernation disabled: script exited 2" in _log(startd)


def test_no_usable_interface_disables_hibernation(make_startd: Make) -> None:
    """A backend without network facts: "No usable network interface"."""
    startd = make_startd('HIBERNATE = "RAM"\n', FakePower(facts=None))
    assert startd.hibernation.backend is None
    assert "No usable network interface: hibernation disabled" in _log(startd)


def test_a_collector_that_does_not_take_the_ads_keeps_the_machine_awake(
    make_startd: Make,
) -> None:
    """Without the acknowledgement of the offline ads the target is reset and no sleep."""
    backend = FakePower()
    startd = make_startd('HIBERNATE = "RAM"\n', backend, sink=FailingSink())
    assert startd.hibernation.check(startd.clock()) is False
    assert backend.entered == []
    assert startd.hibernation.level == 0
    assert "did not take the offline ads" in _log(startd)


def test_claims_are_ended_with_the_hibernate_vacate_code(make_startd: Make) -> None:
    """A claimed slot's claim is ended before the machine sleeps (vacate code 1016)."""
    backend = FakePower()
    startd = make_startd('HIBERNATE = "RAM"\n', backend)
    startd.claim("slot1", ClassAd())
    assert startd.hibernation.check(startd.clock()) is True
    assert "slot1: Startd hibernated: ending its claim (vacate code 1016)" in _log(startd)
    assert all(r.claim is None for r in startd.state.slots)


def test_hibernate_is_checked_every_hibernate_check_interval(make_startd: Make) -> None:
    """The loop's tick checks HIBERNATE only once HIBERNATE_CHECK_INTERVAL seconds passed."""
    startd = make_startd('HIBERNATE = "RAM"\nHIBERNATE_CHECK_INTERVAL = 5\n')
    clock = [100.0]
    hibernation = startd.hibernation
    hibernation.monotonic = lambda: clock[0]
    hibernation.open(selector=None)  # type: ignore[arg-type]
    assert hibernation.timeout() == 5.0
    clock[0] = 104.9
    hibernation.tick()
    assert not hibernation.asleep
    clock[0] = 105.0
    hibernation.tick()
    assert hibernation.asleep


def test_a_running_job_is_killed_with_the_hibernate_vacate_reason(
    make_startd: Make, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The kill the starter of a running job gets carries VacateReasonCode 1016 and
    "Startd hibernated", which the starter reports with the job's end."""
    startd = make_startd('HIBERNATE = "RAM"\n', FakePower())
    claim_id = startd.claim("slot1", ClassAd())
    startd.state = startd.engine.activate(startd.state, claim_id, startd.clock()).state
    sent: list[tuple[str, ClassAd]] = []
    monkeypatch.setattr(
        starter_events, "handle_of", lambda startd, slot: StarterHandleStub(claim_id)
    )
    monkeypatch.setattr(
        startd.starters, "send", lambda cid, command, ad: sent.append((command, ad)) or True
    )
    assert startd.hibernation.check(startd.clock()) is True
    assert sent, "no kill reached the starter"
    _command, payload = sent[0]
    assert payload.evaluate("VacateReasonCode") == 1016
    assert payload.evaluate("VacateReasonSubCode") == 0
    assert payload.evaluate("VacateReason") == "Startd hibernated"


class StarterHandleStub:
    """Stands in for the starter running a job: only its claim id is read."""

    def __init__(self, claim_id: str) -> None:
        self.claim_id = claim_id
