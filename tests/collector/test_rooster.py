"""The rooster: which offline machines it wakes, in which order, how many, and how."""

from __future__ import annotations

import logging
from collections.abc import Sequence

import pytest

from epcore.classad import ClassAd, parse_ad
from epcore.collector.collector import Collector
from epcore.collector.rooster import Rooster, wakeup_command
from epcore.config import Config
from epcore.errors import PoolError

T0 = 1_700_000_000


class Commands:
    """A fake runner: records each command and the ad it got; fails for ``failing`` machines."""

    def __init__(self, failing: Sequence[str] = ()) -> None:
        self.calls: list[tuple[list[str], ClassAd]] = []
        self.failing = set(failing)

    def __call__(self, argv: Sequence[str], stdin: str) -> tuple[int, str]:
        ad = parse_ad(stdin)
        self.calls.append((list(argv), ad))
        return (1 if ad.evaluate("Machine") in self.failing else 0), "Packet sent."


def _machine(name: str, machine: str, **extra: object) -> ClassAd:
    ad = ClassAd({"MyType": "Machine", "Name": name, "Machine": machine, "Offline": True})
    ad["Unhibernate"] = parse_ad("X = MY.MachineLastMatchTime =!= UNDEFINED").lookup("X")
    for key, value in extra.items():
        ad[key] = value
    return ad


def _rooster(text: str, ads: Sequence[ClassAd], runner: Commands) -> Rooster:
    config = Config.from_text(text, subsystem="ROOSTER")
    store = Collector(config)
    store.update(list(ads), T0)
    return Rooster(
        store,
        config=lambda: config,
        log=logging.getLogger("test.rooster"),
        clock=lambda: T0,
        monotonic=lambda: 0.0,
        run=runner,
    )


def test_only_offline_machines_a_job_matched_are_woken() -> None:
    """The default ROOSTER_UNHIBERNATE: Offline && Unhibernate (a match time is set)."""
    runner = Commands()
    ads = [
        _machine("slot1@a", "a", MachineLastMatchTime=T0),
        _machine("slot1@b", "b"),
        ClassAd({"MyType": "Machine", "Name": "slot1@c", "Machine": "c", "Offline": False}),
    ]
    rooster = _rooster('ROOSTER_WAKEUP_CMD = "/bin/waker -i"\n', ads, runner)
    assert rooster.poll(T0) == ["a"]
    [(argv, ad)] = runner.calls
    assert argv == ["/bin/waker", "-i"]
    assert ad.evaluate("Name") == "slot1@a"


def test_each_machine_is_woken_once_per_cycle() -> None:
    """Two slots of one machine: one command (keyed by Machine)."""
    runner = Commands()
    ads = [_machine(f"slot{n}@a", "a", MachineLastMatchTime=T0) for n in (1, 2)]
    assert _rooster("ROOSTER_WAKEUP_CMD = w\n", ads, runner).poll(T0) == ["a"]
    assert len(runner.calls) == 1


def test_rank_orders_and_max_unhibernate_limits() -> None:
    """Higher ROOSTER_UNHIBERNATE_RANK first; ROOSTER_MAX_UNHIBERNATE successful wakes."""
    runner = Commands()
    mips = {"a": 1, "b": 3, "c": 2}
    ads = [_machine(f"slot1@{m}", m, MachineLastMatchTime=T0, Mips=n) for m, n in mips.items()]
    text = "ROOSTER_WAKEUP_CMD = w\nROOSTER_UNHIBERNATE_RANK = TARGET.Mips\n"
    assert _rooster(text, ads, runner).poll(T0) == ["b", "c", "a"]
    limited = Commands()
    text += "ROOSTER_MAX_UNHIBERNATE = 2\n"
    assert _rooster(text, ads, limited).poll(T0) == ["b", "c"]


def test_a_failed_command_does_not_count_against_the_limit() -> None:
    """A command that exits non-zero is logged and the next machine is tried."""
    runner = Commands(failing=["a"])
    ads = [_machine(f"slot1@{m}", m, MachineLastMatchTime=T0) for m in "ab"]
    text = "ROOSTER_WAKEUP_CMD = w\nROOSTER_MAX_UNHIBERNATE = 1\n"
    assert _rooster(text, ads, runner).poll(T0) == ["b"]


def test_rooster_unhibernate_selects_the_machines() -> None:
    """ROOSTER_UNHIBERNATE replaces the default constraint (a pool split among roosters)."""
    runner = Commands()
    ads = [_machine("slot1@a", "a"), _machine("slot1@b", "b", Site="east")]
    text = 'ROOSTER_WAKEUP_CMD = w\nROOSTER_UNHIBERNATE = Offline && Site == "east"\n'
    assert _rooster(text, ads, runner).poll(T0) == ["b"]


def test_an_invalid_rooster_unhibernate_is_an_error() -> None:
    """A constraint that does not parse is a PoolError naming the knob."""
    rooster = _rooster("ROOSTER_UNHIBERNATE = Offline &&\n", [], Commands())
    with pytest.raises(PoolError, match="ROOSTER_UNHIBERNATE"):
        rooster.poll(T0)


@pytest.mark.parametrize(
    ("text", "words"),
    [
        ('"$(BIN)/condor_power -d -i"', ["$(BIN)/condor_power", "-d", "-i"]),
        (
            "ep power wake -i -a '127.255.255.255'",
            ["ep", "power", "wake", "-i", "-a", "127.255.255.255"],
        ),
    ],
)
def test_the_wakeup_command_is_split_as_htcondor_v2_arguments(text: str, words: list[str]) -> None:
    """The outer double quotes of V2 syntax go; words split as a shell splits them."""
    assert wakeup_command(text) == words


@pytest.mark.parametrize("text", ["", '"unbalanced \'quote"'])
def test_an_empty_or_broken_wakeup_command_is_an_error(text: str) -> None:
    """ROOSTER_WAKEUP_CMD that is empty or unbalanced is a PoolError."""
    with pytest.raises(PoolError, match="ROOSTER_WAKEUP_CMD"):
        wakeup_command(text)


def test_the_rooster_polls_every_rooster_interval() -> None:
    """tick() polls once ROOSTER_INTERVAL passed; a negative interval never polls."""
    clock = [0.0]
    runner = Commands()
    ads = [_machine("slot1@a", "a", MachineLastMatchTime=T0)]
    rooster = _rooster("ROOSTER_WAKEUP_CMD = w\nROOSTER_INTERVAL = 10\n", ads, runner)
    rooster.monotonic = lambda: clock[0]
    rooster.open(loop=None)  # type: ignore[arg-type]
    rooster.tick()
    assert runner.calls == []
    clock[0] = 10.0
    rooster.tick()
    assert len(runner.calls) == 1
    never = _rooster("ROOSTER_WAKEUP_CMD = w\nROOSTER_INTERVAL = -1\n", ads, Commands())
    never.tick()
    assert never.woken == []
