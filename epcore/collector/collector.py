"""The collector's store of daemon ads: updates, expiry, absent and offline ads, queries.

Pure: every call takes ``now`` and nothing here does I/O; the daemon around it writes
:meth:`Collector.persistent_ads` to COLLECTOR_PERSISTENT_AD_LOG (``epcore.collector.collector_log``)
and hands them back to :meth:`Collector.restore` when it starts.

Ads are stored by MyType (compared without regard to case) and the name HTCondor's collector
keys them by (``collector_policy.key_name``: the Name, a submitter's with its ScheddName ...;
never the daemon's address, as HTCondor since 10.8).
A live ad expires when ``LastHeardFrom + lifetime < now``, the lifetime being its own
``ClassAdLifetime`` or CLASSAD_LIFETIME. An expiring machine ad for which ABSENT_REQUIREMENTS
is true becomes *absent* instead (kept ABSENT_EXPIRE_ADS_AFTER seconds, 0 meaning forever); a
machine ad sent with ``Offline = true`` (a hibernating startd) is kept OFFLINE_EXPIRE_ADS_AFTER
seconds (0 or unset: forever). Either kind is replaced by the next real update of its Name.
"""

from __future__ import annotations

import enum
from collections.abc import Callable, Iterable, Sequence
from typing import TYPE_CHECKING

import attrs

from epcore.classad import ClassAd, EvalContext
from epcore.collector.collector_policy import MACHINE_TYPE, CollectorSettings, ad_key
from epcore.config import Config
from epcore.errors import PoolError
from epcore.interfaces.queries import (
    attribute_is_true,
    is_true,
    matches,
    names_attribute,
    number_attribute,
    parse_constraint,
    passes_everything,
    project,
)

if TYPE_CHECKING:
    from epcore.interfaces import AdSink

#: HTCondor's INT_MAX: "idle for ever", "kept for ever".
_INT_MAX = 2**31 - 1
#: Attributes every negotiation cycle's offline match record rewrites. The persistent log
#: needs only whether they are there (the rooster's Unhibernate asks if
#: MachineLastMatchTime is defined), not their latest values: a change of value alone does
#: not rewrite COLLECTOR_PERSISTENT_AD_LOG.
_MATCH_BOOKKEEPING = frozenset(
    {"machinelastmatchtime", "machinematchcount", "offlinematches", "mycurrenttime", "updatestotal"}
)


def _persisted_form(ad: ClassAd) -> dict[str, str | None]:
    """What of ``ad`` a restart needs: every attribute's text, the match bookkeeping's
    presence only."""
    form: dict[str, str | None] = {}
    for name in ad:
        lowered = name.lower()
        bookkeeping = lowered in _MATCH_BOOKKEEPING or lowered.endswith("_machinelastmatchtime")
        form[lowered] = None if bookkeeping else str(ad.lookup(name))
    return form


def _persisted_change(previous: _Entry | None, stored: ClassAd, state: AdState) -> bool:
    """Whether storing ``stored`` changes what COLLECTOR_PERSISTENT_AD_LOG must hold."""
    if previous is None or previous.state is not state:
        return True
    return _persisted_form(previous.ad) != _persisted_form(stored)


__all__ = [
    "AdState",
    "Collector",
    "CollectorSettings",
    "CollectorSink",
    "Departure",
    "DepartureKind",
]


class AdState(enum.Enum):
    """Why an ad is in the store."""

    LIVE = "live"  # sent by its daemon and not yet expired
    ABSENT = "absent"  # expired, kept because ABSENT_REQUIREMENTS was true for it
    OFFLINE = "offline"  # sent with Offline = true by a startd going to sleep


class DepartureKind(enum.Enum):
    """What expiry or invalidation did to an ad."""

    EXPIRED = "expired"  # dropped: its lifetime ran out
    INVALIDATED = "invalidated"  # dropped at its daemon's request
    MADE_ABSENT = "made absent"  # kept, now marked Absent = true
    ABSENT_EXPIRED = "absent expired"  # an absent ad outlived ABSENT_EXPIRE_ADS_AFTER
    OFFLINE_EXPIRED = "offline expired"  # an offline ad outlived OFFLINE_EXPIRE_ADS_AFTER


@attrs.frozen
class Departure:
    """One ad that expiry or invalidation removed or turned absent."""

    my_type: str
    name: str
    kind: DepartureKind


@attrs.frozen
class _Entry:
    # The ad is never mutated once stored: updates build a new entry, queries hand out copies.
    ad: ClassAd
    state: AdState
    last_heard: float
    expires_at: float | None  # None: never


class Collector:
    """The collector's in-memory store of ads (see the module docstring)."""

    def __init__(self, config: Config) -> None:
        self._settings = CollectorSettings.from_config(config)
        self._entries: dict[tuple[str, str], _Entry] = {}
        self._persistent_generation = 0

    @classmethod
    def restore(cls, config: Config, ads: Iterable[ClassAd]) -> Collector:
        """A collector holding the absent and offline ads a previous run persisted."""
        collector = cls(config)
        collector.load_persistent(ads)
        return collector

    @property
    def settings(self) -> CollectorSettings:
        """The knob values in force."""
        return self._settings

    def reconfig(self, config: Config) -> None:
        """Read the knobs again; expiry times of stored ads follow the new values."""
        self._settings = CollectorSettings.from_config(config)
        self._entries = {key: self._refreshed(entry) for key, entry in self._entries.items()}

    def _refreshed(self, entry: _Entry) -> _Entry:
        return attrs.evolve(entry, expires_at=self._expiry(entry.ad, entry.state, entry.last_heard))

    @property
    def persistent_generation(self) -> int:
        """A number that changes whenever :meth:`persistent_ads` would give something else
        (beyond the values of the negotiator's match bookkeeping: ``_MATCH_BOOKKEEPING``), so
        that the daemon rewrites COLLECTOR_PERSISTENT_AD_LOG only then."""
        return self._persistent_generation

    def __len__(self) -> int:
        return len(self._entries)

    # -- updates -----------------------------------------------------------------------------
    def update(self, ads: Sequence[ClassAd], now: float) -> None:
        """Store these ads, replacing any ad (live, absent or offline) of the same MyType and
        key name (a machine ad's: its Name, whatever its MyAddress); stamps ``LastHeardFrom``.
        PoolError (storing none of them) when one lacks MyType or a name."""
        keyed = [(ad_key(ad, "collector update"), ad) for ad in ads]
        heard = int(now)
        for key, ad in keyed:
            stored = ad.copy()
            stored["LastHeardFrom"] = heard
            previous = self._entries.get(key)
            total = 1
            if previous is not None and previous.state is AdState.LIVE:
                total += int(number_attribute(previous.ad, "UpdatesTotal") or 0)
            stored["UpdatesTotal"] = total
            state = AdState.LIVE
            if key[0] == MACHINE_TYPE.lower() and attribute_is_true(stored, "Offline"):
                state = AdState.OFFLINE
                self._make_offline(stored, heard)
                if previous is not None and previous.state is AdState.OFFLINE:
                    # Another offline copy (the negotiator's match record merged in): the
                    # machine was last heard when it went to sleep, and expires from then.
                    heard = int(previous.last_heard)
                    stored["LastHeardFrom"] = heard
            if (state is not AdState.LIVE and _persisted_change(previous, stored, state)) or (
                previous is not None
                and previous.state is not AdState.LIVE
                and state is not previous.state
            ):
                self._persistent_generation += 1
            self._entries[key] = _Entry(stored, state, heard, self._expiry(stored, state, heard))

    def _make_offline(self, ad: ClassAd, heard: int) -> None:
        """What HTCondor's offline plugin does to the last ad of a machine going to sleep:
        Unclaimed and Idle, loads zeroed, never busy, idle for ever, and the ad's lifetime
        OFFLINE_EXPIRE_ADS_AFTER (a sleeping machine sends no updates)."""
        ad["Offline"] = True
        ad["State"] = "Unclaimed"
        ad["Activity"] = "Idle"
        ad["EnteredCurrentState"] = 0
        ad["EnteredCurrentActivity"] = 0
        ad["MyCurrentTime"] = heard
        for load in ("LoadAvg", "CondorLoadAvg", "TotalLoadAvg", "TotalCondorLoadAvg"):
            ad[load] = 0.0
        ad["CpuIsBusy"] = False
        ad["CpuBusyTime"] = 0
        ad["KeyboardIdle"] = _INT_MAX
        ad["ConsoleIdle"] = _INT_MAX
        lifetime = self._settings.offline_expire_after
        ad["ClassAdLifetime"] = int(lifetime) if lifetime is not None else _INT_MAX

    def invalidate(self, my_type: str, names: Sequence[str], now: float) -> list[Departure]:
        """Remove the live or offline ads of this MyType kept under these names (their Name,
        for every type whose key is its Name alone: see
        :func:`~epcore.collector.collector_policy.key_name`); absent ads stay: the machine
        is gone either way. With EXPIRE_INVALIDATED_ADS the ads are treated as expired
        instead, which may make them absent. Unknown names are ignored, as the collector does."""
        kind = my_type.lower()
        return self._invalidate([(kind, name) for name in names], now)

    def invalidate_ads(self, ads: Sequence[ClassAd], now: float) -> list[Departure]:
        """:meth:`invalidate` the ads kept under the keys of these ads (their MyType and key
        name: a submitter ad's includes its ScheddName); PoolError (removing none) when one
        has no key."""
        return self._invalidate([ad_key(ad, "collector invalidation") for ad in ads], now)

    def _invalidate(self, keys: Sequence[tuple[str, str]], now: float) -> list[Departure]:
        departures: list[Departure] = []
        for key in keys:
            entry = self._entries.get(key)
            if entry is None or entry.state is AdState.ABSENT:
                continue
            if self._settings.expire_invalidated and entry.state is AdState.LIVE:
                departures.append(self._expire_live(key, entry, now))
                continue
            del self._entries[key]
            if entry.state is AdState.OFFLINE:
                self._persistent_generation += 1
            departures.append(
                Departure(_type_of(entry), _name_of(entry), DepartureKind.INVALIDATED)
            )
        return departures

    def expire(self, now: float) -> list[Departure]:
        """Drop (or make absent) every ad whose time is up; what happened to each."""
        departures: list[Departure] = []
        for key, entry in list(self._entries.items()):
            if entry.expires_at is None or now <= entry.expires_at:
                continue
            if entry.state is AdState.LIVE:
                departures.append(self._expire_live(key, entry, now))
                continue
            del self._entries[key]
            self._persistent_generation += 1
            kind = (
                DepartureKind.ABSENT_EXPIRED
                if entry.state is AdState.ABSENT
                else DepartureKind.OFFLINE_EXPIRED
            )
            departures.append(Departure(_type_of(entry), _name_of(entry), kind))
        return departures

    def _expire_live(self, key: tuple[str, str], entry: _Entry, now: float) -> Departure:
        requirements = self._settings.absent_requirements
        if (
            requirements is not None
            and key[0] == MACHINE_TYPE.lower()
            and is_true(requirements.evaluate(entry.ad, context=EvalContext(now=now)))
        ):
            absent = entry.ad.copy()
            heard = int(now)
            absent["Absent"] = True
            absent["LastHeardFrom"] = heard
            absent["MyCurrentTime"] = heard
            lifetime = self._settings.absent_expire_after
            if lifetime is not None:
                absent["ClassAdLifetime"] = int(lifetime)
            self._entries[key] = _Entry(
                absent, AdState.ABSENT, heard, self._expiry(absent, AdState.ABSENT, heard)
            )
            self._persistent_generation += 1
            return Departure(_type_of(entry), _name_of(entry), DepartureKind.MADE_ABSENT)
        del self._entries[key]
        return Departure(_type_of(entry), _name_of(entry), DepartureKind.EXPIRED)

    def _expiry(self, ad: ClassAd, state: AdState, last_heard: float) -> float | None:
        settings = self._settings
        if state is AdState.ABSENT:
            lifetime = settings.absent_expire_after
        elif state is AdState.OFFLINE:
            lifetime = settings.offline_expire_after
        else:
            own = number_attribute(ad, "ClassAdLifetime")
            lifetime = own if own is not None and own >= 0 else settings.classad_lifetime
        return None if lifetime is None else last_heard + lifetime

    # -- queries -----------------------------------------------------------------------------
    def query(
        self,
        my_type: str | None,
        constraint: str | None = None,
        projection: Sequence[str] | None = None,
        *,
        now: float,
        absent: bool = False,
    ) -> list[ClassAd]:
        """Copies of the stored ads of this MyType (None: every type) passing the constraint,
        cut to the projection, in the order they first arrived.

        Absent ads are left out, unless ``absent`` is true, which returns only absent ads (as
        ``condor_status -absent``), or the constraint names the Absent attribute, which
        considers every ad. PoolError when the constraint does not parse.
        """
        columns = None if projection is None else tuple(projection)
        return [
            project(ad, columns)
            for ad in self.query_stored(my_type, constraint, now=now, absent=absent)
        ]

    def query_stored(
        self,
        my_type: str | None,
        constraint: str | None = None,
        *,
        now: float,
        absent: bool = False,
    ) -> list[ClassAd]:
        """The stored ads :meth:`query` would copy, themselves: for readers that only read
        them (the CEDAR answer, which keeps each ad's encoding until the ad is replaced).
        The caller must not change them."""
        expr = None if constraint is None else parse_constraint(constraint)
        if expr is not None and passes_everything(expr):
            expr = None
        wanted_type = None if my_type is None else my_type.lower()
        with_absent = expr is not None and names_attribute(expr.node, "Absent")
        found: list[ClassAd] = []
        for (kind, _name), entry in self._entries.items():
            if wanted_type is not None and kind != wanted_type:
                continue
            is_absent = entry.state is AdState.ABSENT
            if absent and not is_absent:
                continue
            if is_absent and not (absent or with_absent):
                continue
            if matches(expr, entry.ad, now):
                found.append(entry.ad)
        return found

    def state_of(self, my_type: str, name: str) -> AdState | None:
        """Whether the ad of this MyType kept under ``name`` (its key name) is live, absent or
        offline; None if unknown."""
        entry = self._entries.get((my_type.lower(), name))
        return None if entry is None else entry.state

    # -- persistence -------------------------------------------------------------------------
    def persistent_ads(self) -> list[ClassAd]:
        """Copies of the absent and offline ads: what COLLECTOR_PERSISTENT_AD_LOG must hold."""
        return [
            entry.ad.copy() for entry in self._entries.values() if entry.state is not AdState.LIVE
        ]

    def load_persistent(self, ads: Iterable[ClassAd]) -> None:
        """Take back absent and offline ads written by :meth:`persistent_ads`; a live ad of the
        same Name already here wins. PoolError (loading none) for an ad that is neither absent
        nor offline, or lacks MyType, Name or a numeric LastHeardFrom."""
        loaded: list[tuple[tuple[str, str], _Entry]] = []
        for ad in ads:
            key = ad_key(ad, "persistent collector ad")
            if attribute_is_true(ad, "Absent"):
                state = AdState.ABSENT
            elif attribute_is_true(ad, "Offline"):
                state = AdState.OFFLINE
            else:
                raise PoolError(f"persistent collector ad {key[1]!r} is neither absent nor offline")
            heard = number_attribute(ad, "LastHeardFrom")
            if heard is None:
                raise PoolError(f"persistent collector ad {key[1]!r} has no numeric LastHeardFrom")
            stored = ad.copy()
            loaded.append((key, _Entry(stored, state, heard, self._expiry(stored, state, heard))))
        for key, entry in loaded:
            current = self._entries.get(key)
            if current is None or current.state is not AdState.LIVE:
                self._entries[key] = entry
                self._persistent_generation += 1


def _type_of(entry: _Entry) -> str:
    my_type = entry.ad.evaluate("MyType")
    return my_type if isinstance(my_type, str) else ""


def _name_of(entry: _Entry) -> str:
    """The ad's Name for a departure's log line (its key may hold more, or its Machine)."""
    name = entry.ad.evaluate("Name")
    if isinstance(name, str):
        return name
    machine = entry.ad.evaluate("Machine")
    return machine if isinstance(machine, str) else ""


class CollectorSink:
    """An :class:`epcore.startd.publish.AdSink` that publishes a startd's slot ads straight
    into an in-process collector.

    The collector stamps ads with its own ``clock`` rather than the startd's ``now``, as a
    real collector records when *it* heard from a daemon.
    """

    def __init__(self, collector: Collector, clock: Callable[[], float]) -> None:
        self.collector = collector
        self.clock = clock

    def advertise(self, ads: Sequence[ClassAd], now: float) -> None:
        """Store the slots' current ads (an ad without MyType is taken as a Machine ad)."""
        typed: list[ClassAd] = []
        for ad in ads:
            if "MyType" not in ad:
                ad = ad.copy()
                ad["MyType"] = MACHINE_TYPE
            typed.append(ad)
        self.collector.update(typed, self.clock())

    def invalidate(self, names: Sequence[str], now: float) -> None:
        """These slots are gone."""
        self.collector.invalidate(MACHINE_TYPE, names, self.clock())


if TYPE_CHECKING:

    def _is_an_ad_sink(sink: CollectorSink) -> AdSink:
        # mypy checks here that CollectorSink keeps the startd's AdSink protocol.
        return sink
