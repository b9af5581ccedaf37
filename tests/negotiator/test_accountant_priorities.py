"""The accountant: RUP ageing, EUP, initial factors and condor_userprio's settings (seed 004)."""

from __future__ import annotations

import math
from collections.abc import Callable

import pytest
from negotiator_helpers import DOMAIN, NOW, config, slot

from epcore.classad import ClassAd
from epcore.errors import PoolError
from epcore.negotiator import Accountant

DAY = 86400.0
ALICE = f"alice@{DOMAIN}"


def busy(count: int, user: str = ALICE, **extra: object) -> list[ClassAd]:
    """``count`` claimed one-core slots running ``user``'s jobs."""
    return [slot(n, running=user, extra=extra or None) for n in range(1, count + 1)]


@pytest.mark.parametrize(
    ("days", "expected"),
    [(0, 10.0), (1, 5.0), (2, 2.5), (3, 1.25)],
)
def test_rup_halves_every_halflife_without_usage(days: int, expected: float) -> None:
    """A RUP of 10 with no running jobs is 5 one half-life later, 2.5 after two (seed 004)."""
    cfg = config()
    accountant = Accountant.empty(cfg).set_priority(ALICE, 10.0, NOW)
    accountant = accountant.update_usage([], NOW)
    accountant = accountant.update_usage([], NOW + days * DAY)
    assert accountant.record(ALICE).rup == pytest.approx(expected)


def test_rup_never_falls_below_one_half() -> None:
    """RUP starts at 0.5 and decays no lower however long a user is idle."""
    cfg = config()
    accountant = Accountant.empty(cfg).set_priority(ALICE, 2.0, NOW).update_usage([], NOW)
    accountant = accountant.update_usage([], NOW + 30 * DAY)
    assert accountant.record(ALICE).rup == 0.5
    assert Accountant.empty(cfg).record("new@example.org").rup == 0.5


@pytest.mark.parametrize(
    "steps",
    [
        [3600.0] * 48,
        [60.0, 7200.0, 17.0, 86400.0 - 7277.0, 43200.0, 43200.0],
        [48 * 3600.0],
    ],
)
def test_worked_example_rup_is_near_75_after_48_hours(steps: list[float]) -> None:
    """A user on 100 cores for 48 hours reaches RUP ~75 whatever the update intervals."""
    cfg = config("DEFAULT_PRIO_FACTOR = 1.0")
    slots = busy(100)
    accountant = Accountant.empty(cfg).update_usage(slots, NOW)
    now = NOW
    for step in steps:
        now += step
        accountant = accountant.update_usage(slots, now)
    assert now == NOW + 48 * 3600.0
    assert accountant.record(ALICE).rup == pytest.approx(75.125)
    assert accountant.eup(ALICE) == pytest.approx(75.125)


def test_usage_counts_slot_weight_unless_weights_are_off() -> None:
    """Usage is the SlotWeight of the claimed slots, or one per slot without slot weights."""
    slots = [slot(1, cpus=4, running=ALICE), slot(2, cpus=2, running=ALICE), slot(3)]
    weighted = Accountant.empty(config()).update_usage(slots, NOW).record(ALICE)
    assert (weighted.resources_used, weighted.weighted_resources_used) == (2, 6.0)
    plain_cfg = config("NEGOTIATOR_USE_SLOT_WEIGHTS = false")
    plain = Accountant.empty(plain_cfg).update_usage(slots, NOW).record(ALICE)
    assert (plain.resources_used, plain.weighted_resources_used) == (2, 2.0)


@pytest.mark.parametrize(
    ("group", "principal"),
    [
        ("group_physics.alice", f"group_physics.alice@{DOMAIN}"),
        ("group_x@elsewhere.org", "group_x@elsewhere.org"),
    ],
)
def test_usage_is_charged_to_the_accounting_group(group: str, principal: str) -> None:
    """A slot whose job has an AccountingGroup charges that principal, not RemoteUser."""
    slots = busy(3, AccountingGroup=group)
    accountant = Accountant.empty(config()).update_usage(slots, NOW)
    assert accountant.record(principal).resources_used == 3
    assert ALICE not in accountant.records


def test_accumulated_usage_and_usage_times() -> None:
    """Accumulated usage integrates slot-seconds; begin and last usage times follow it."""
    accountant = Accountant.empty(config()).update_usage(busy(2), NOW)
    accountant = accountant.update_usage(busy(2), NOW + 100)
    accountant = accountant.update_usage([], NOW + 300)
    record = accountant.record(ALICE)
    assert record.accumulated_usage == 2 * 300
    assert record.weighted_accumulated_usage == 2 * 300
    assert record.begin_usage_time == NOW
    assert record.last_usage_time == NOW + 300
    assert record.resources_used == 0


@pytest.mark.parametrize(
    ("text", "name", "factor"),
    [
        ("", ALICE, 1000.0),
        ("DEFAULT_PRIO_FACTOR = 7", ALICE, 7.0),
        ("", f"nice-user.alice@{DOMAIN}", 1e10),
        ("NICE_USER_PRIO_FACTOR = 5e6", f"nice-user.alice@{DOMAIN}", 5e6),
        ("", "bob@remote.org", 1000.0),
        (f"ACCOUNTANT_LOCAL_DOMAIN = {DOMAIN}", "bob@remote.org", 1e7),
        (f"ACCOUNTANT_LOCAL_DOMAIN = {DOMAIN}", ALICE, 1000.0),
        (f"ACCOUNTANT_LOCAL_DOMAIN = {DOMAIN}\nREMOTE_PRIO_FACTOR = 3", "b@x.org", 3.0),
    ],
)
def test_new_submitters_start_with_the_configured_factor(
    text: str, name: str, factor: float
) -> None:
    """New submitters get DEFAULT_PRIO_FACTOR, NICE_USER_PRIO_FACTOR or REMOTE_PRIO_FACTOR."""
    accountant = Accountant.empty(config(text))
    assert accountant.record(name).factor == factor
    assert accountant.eup(name) == 0.5 * factor


def test_userprio_settings() -> None:
    """set_factor, set_ceiling, set_floor, reset_usage and delete change one record each."""
    accountant = Accountant.empty(config()).set_priority(ALICE, 40.0, NOW)
    accountant = accountant.set_factor(ALICE, 10.0, NOW).set_ceiling(ALICE, 4, NOW)
    accountant = accountant.set_floor(ALICE, 2, NOW)
    record = accountant.record(ALICE)
    assert (record.factor, record.ceiling, record.floor, record.eup) == (10.0, 4, 2, 400.0)
    reset = accountant.reset_usage(ALICE, NOW + 5).record(ALICE)
    assert (reset.rup, reset.accumulated_usage, reset.begin_usage_time) == (0.5, 0.0, NOW + 5)
    assert ALICE not in accountant.delete(ALICE).records
    cleared = accountant.set_ceiling(ALICE, None, NOW).set_floor(ALICE, None, NOW)
    assert (cleared.record(ALICE).ceiling, cleared.record(ALICE).floor) == (None, None)


@pytest.mark.parametrize(
    ("change", "message"),
    [
        (lambda a: a.set_factor(ALICE, 0, NOW), "priority factor of alice"),
        (lambda a: a.set_factor(ALICE, math.nan, NOW), "priority factor of alice"),
        (lambda a: a.set_ceiling(ALICE, -1, NOW), "ceiling of alice"),
        (lambda a: a.set_ceiling(ALICE, math.nan, NOW), "ceiling of alice"),
        (lambda a: a.set_priority(ALICE, math.inf, NOW), "priority of alice"),
        (lambda a: a.set_floor(ALICE, -2, NOW), "floor of alice"),
        (lambda a: a.delete("nobody@x"), "no record of submitter nobody@x"),
    ],
)
def test_invalid_userprio_settings_are_pool_errors(
    change: Callable[[Accountant], Accountant], message: str
) -> None:
    """Settings condor_userprio would refuse raise a PoolError naming the submitter."""
    with pytest.raises(PoolError, match=message):
        change(Accountant.empty(config()))


def test_bad_halflife_is_a_pool_error() -> None:
    """A PRIORITY_HALFLIFE that is not positive is refused, naming the knob."""
    with pytest.raises(PoolError, match="PRIORITY_HALFLIFE"):
        Accountant.empty(config("PRIORITY_HALFLIFE = 0"))
