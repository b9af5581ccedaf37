"""Offline ads as HTCondor's offline plugin keeps them."""

from __future__ import annotations

from epcore.classad import ClassAd
from epcore.collector.collector import AdState, Collector
from epcore.config import Config

T0 = 1_700_000_000
INT_MAX = 2**31 - 1


def _collector(text: str = "") -> Collector:
    return Collector(Config.from_text(text, subsystem="COLLECTOR"))


def _going_to_sleep(name: str = "slot1@a") -> ClassAd:
    return ClassAd(
        {
            "MyType": "Machine",
            "Name": name,
            "Offline": True,
            "State": "Claimed",
            "Activity": "Busy",
            "EnteredCurrentState": T0 - 50,
            "EnteredCurrentActivity": T0 - 40,
            "LoadAvg": 1.5,
            "CondorLoadAvg": 1.0,
            "TotalLoadAvg": 2.0,
            "TotalCondorLoadAvg": 1.0,
            "CpuIsBusy": True,
            "CpuBusyTime": 30,
            "KeyboardIdle": 5,
            "ConsoleIdle": 5,
            "HibernationLevel": 3,
        }
    )


def test_an_offline_update_is_reset_as_htcondor_does() -> None:
    """State Unclaimed/Idle, entry times 0, loads zeroed, never busy, idle for ever."""
    store = _collector()
    store.update([_going_to_sleep()], T0)
    [ad] = store.query("Machine", "Offline", now=T0)
    assert store.state_of("Machine", "slot1@a") is AdState.OFFLINE
    assert (ad.evaluate("State"), ad.evaluate("Activity")) == ("Unclaimed", "Idle")
    assert ad.evaluate("EnteredCurrentState") == ad.evaluate("EnteredCurrentActivity") == 0
    for load in ("LoadAvg", "CondorLoadAvg", "TotalLoadAvg", "TotalCondorLoadAvg"):
        assert ad.evaluate(load) == 0.0
    assert ad.evaluate("CpuIsBusy") is False
    assert ad.evaluate("CpuBusyTime") == 0
    assert ad.evaluate("KeyboardIdle") == ad.evaluate("ConsoleIdle") == INT_MAX
    assert ad.evaluate("MyCurrentTime") == T0
    assert ad.evaluate("HibernationLevel") == 3


def test_class_ad_lifetime_is_offline_expire_ads_after() -> None:
    """ClassAdLifetime is OFFLINE_EXPIRE_ADS_AFTER, or INT_MAX when it is unset."""
    store = _collector("OFFLINE_EXPIRE_ADS_AFTER = 3600\n")
    store.update([_going_to_sleep()], T0)
    assert store.query("Machine", now=T0)[0].evaluate("ClassAdLifetime") == 3600
    forever = _collector()
    forever.update([_going_to_sleep()], T0)
    assert forever.query("Machine", now=T0)[0].evaluate("ClassAdLifetime") == INT_MAX


def test_a_match_record_keeps_the_time_the_machine_was_last_heard() -> None:
    """The negotiator's copy of an offline ad does not restart its OFFLINE_EXPIRE_ADS_AFTER."""
    store = _collector("OFFLINE_EXPIRE_ADS_AFTER = 100\n")
    store.update([_going_to_sleep()], T0)
    [stored] = store.query("Machine", now=T0 + 60)
    slot = stored.copy()
    slot["MachineLastMatchTime"] = T0 + 60
    store.update([slot], T0 + 60)
    [ad] = store.query("Machine", now=T0 + 60)
    assert ad.evaluate("LastHeardFrom") == T0
    assert ad.evaluate("MachineLastMatchTime") == T0 + 60
    store.expire(T0 + 101)
    assert store.query("Machine", now=T0 + 101) == []
