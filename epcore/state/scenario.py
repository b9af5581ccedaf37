"""Policy-simulator scenarios: the TOML format of ``ep simulate`` (DESIGN.md), parsed, checked.

Parsing is pure (text in, :class:`Scenario` out); the command reads the file. A malformed
scenario raises :class:`ScenarioError` naming the file and the event index and key at fault.

Besides DESIGN.md's keys, a ``claim`` may say ``keepalive = false`` (the schedd sends no
keep-alives, so the lease runs out), ``client = "host"`` (the schedd's host, ClientMachine)
and ``priority = true`` (the negotiator preempts the current job for a user with a better
priority, so the claim is accepted whatever RANK says).
"""

from __future__ import annotations

import datetime
import tomllib
from collections.abc import Mapping
from typing import Any

import attrs

from epcore.classad import ClassAd
from epcore.errors import EpError

#: Event kinds and the keys each takes (required keys first, then optional ones).
EVENT_KINDS: Mapping[str, tuple[tuple[str, ...], tuple[str, ...]]] = {
    "set": ((), ()),
    "match": (("slot", "job"), ()),
    "claim": (("slot", "job"), ("id", "keepalive", "client", "priority")),
    "activate": (("id",), ()),
    "alive": (("id",), ()),
    "job_exit": (("id",), ("code",)),
    "release": (("id",), ()),
    "vacate": (("slot",), ("fast",)),
    "drain": ((), ("how", "check", "start", "finalize")),
    "cancel_drain": ((), ()),
    "shutdown": ((), ("fast",)),
    "backfill_exit": (("slot",), ()),
    "advance": ((), ()),
}

_EVENT_KEYS = frozenset({"at", "expect", "expect_attrs", *EVENT_KINDS})
_TOP_KEYS = frozenset({"config", "machine", "event", "start"})


class ScenarioError(EpError):
    """A scenario file that is not a valid scenario (the message names file, event and key)."""


@attrs.frozen
class Event:
    """One ``[[event]]``: its index (from 0), time, kind and arguments, and expectations."""

    index: int
    at: float
    kind: str
    args: Mapping[str, Any]
    expect: Mapping[str, str] = attrs.field(factory=dict)
    expect_attrs: Mapping[str, Mapping[str, Any]] = attrs.field(factory=dict)


@attrs.frozen
class Scenario:
    """A whole scenario: configuration text, machine values, start time and events."""

    source: str
    config: str
    machine: Mapping[str, Any]
    events: tuple[Event, ...]
    start: float | None = None


def job_ad(values: Mapping[str, Any]) -> ClassAd:
    """A job ad from a TOML inline table of plain values."""
    ad = ClassAd()
    for name, value in values.items():
        ad[name] = value
    return ad


def _fail(source: str, where: str, message: str) -> ScenarioError:
    return ScenarioError(f"{source}: {where}: {message}")


def _start(source: str, value: Any) -> float:
    if isinstance(value, datetime.datetime):
        moment = value
    elif isinstance(value, str):
        try:
            moment = datetime.datetime.fromisoformat(value.replace("Z", "+00:00"))
        except ValueError as error:
            raise _fail(source, "start", f"{value!r} is not an ISO 8601 time") from error
    else:
        raise _fail(source, "start", 'expected a time such as "2026-11-23T09:00:00Z"')
    if moment.tzinfo is None:
        moment = moment.replace(tzinfo=datetime.UTC)
    return moment.timestamp()


def _event(source: str, index: int, raw: Any, previous: float) -> Event:
    where = f"event {index}"
    if not isinstance(raw, dict):
        raise _fail(source, where, "expected a table")
    unknown = sorted(set(raw) - _EVENT_KEYS)
    if unknown:
        raise _fail(source, f"{where}, key {unknown[0]!r}", "unknown key")
    at = raw.get("at", previous)
    if isinstance(at, bool) or not isinstance(at, int | float):
        raise _fail(source, f"{where}, key 'at'", "expected a number of seconds")
    if at < previous:
        raise _fail(source, f"{where}, key 'at'", f"{at} is earlier than the event before")
    kinds = [k for k in raw if k in EVENT_KINDS]
    if len(kinds) > 1:
        raise _fail(source, where, f"more than one event kind: {', '.join(kinds)}")
    kind = kinds[0] if kinds else "advance"
    args = raw.get(kind, {})
    if not isinstance(args, dict):
        raise _fail(source, f"{where}, key {kind!r}", "expected a table")
    required, optional = EVENT_KINDS[kind]
    if kind != "set":
        for key in required:
            if key not in args:
                raise _fail(source, f"{where}, key {kind!r}", f"missing {key!r}")
        extra = sorted(set(args) - set(required) - set(optional))
        if extra:
            raise _fail(source, f"{where}, key {kind!r}", f"unknown argument {extra[0]!r}")
    if "job" in args and not isinstance(args["job"], dict):
        raise _fail(source, f"{where}, key {kind!r}", "job must be a table of attributes")
    expect = raw.get("expect", {})
    if not isinstance(expect, dict) or not all(isinstance(v, str) for v in expect.values()):
        raise _fail(source, f"{where}, key 'expect'", 'expected { slot1 = "State/Activity" }')
    attrs_ = raw.get("expect_attrs", {})
    if not isinstance(attrs_, dict) or not all(isinstance(v, dict) for v in attrs_.values()):
        raise _fail(source, f"{where}, key 'expect_attrs'", "expected { slot1 = { Attr = v } }")
    return Event(index, float(at), kind, args, expect, attrs_)


def parse_scenario(text: str, source: str = "<scenario>") -> Scenario:
    """Parse scenario TOML ``text`` (``source`` names it in errors)."""
    try:
        data = tomllib.loads(text)
    except tomllib.TOMLDecodeError as error:
        raise ScenarioError(f"{source}: not valid TOML: {error}") from error
    unknown = sorted(set(data) - _TOP_KEYS)
    if unknown:
        raise _fail(source, f"key {unknown[0]!r}", "unknown top-level key")
    config = data.get("config", "")
    if not isinstance(config, str):
        raise _fail(source, "key 'config'", "expected configuration text")
    machine = data.get("machine", {})
    if not isinstance(machine, dict):
        raise _fail(source, "key 'machine'", "expected a table")
    raw_events = data.get("event", [])
    if not isinstance(raw_events, list):
        raise _fail(source, "key 'event'", "expected [[event]] tables")
    events: list[Event] = []
    previous = 0.0
    for index, raw in enumerate(raw_events):
        event = _event(source, index, raw, previous)
        previous = event.at
        events.append(event)
    start = _start(source, data["start"]) if "start" in data else None
    return Scenario(source, config, machine, tuple(events), start)
