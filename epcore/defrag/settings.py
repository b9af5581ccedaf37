"""condor_defrag's knobs, read once per configuration, with HTCondor's defaults and checks.

The per-interval arithmetic is HTCondor's: DEFRAG_DRAINING_MACHINES_PER_HOUR becomes a whole
number of machines per interval, the fraction left over a whole number per hour, and what is
left of that a number per day (rounded), so that a rate below one per interval still drains
about the right number of machines over an hour and a day.
"""

from __future__ import annotations

import math

import attrs

from epcore.classad import Expr, parse_expr
from epcore.config import Config
from epcore.errors import ClassAdSyntaxError, ConfigError

#: The draining schedules by name, with the numbers HTCondor's DRAIN_JOBS carries.
SCHEDULES = {"graceful": 0, "quick": 10, "fast": 20}
#: What every slot condor_defrag considers is (BASE_SLOT_CONSTRAINT in HTCondor).
BASE_SLOT = "PartitionableSlot && Offline=!=True"
# A tiny tolerance so that a rate that is a whole number per interval up to rounding (say
# 6/hour every 600 s) is read as that whole number, as HTCondor reads it.
_EPSILON = 0.00001


def _expression(knob: str, text: str) -> Expr:
    try:
        return parse_expr(text)
    except ClassAdSyntaxError as error:
        raise ConfigError(f"Invalid expression for {knob}: {text} ({error})") from error


def daemon_name(name: str | None, host: str) -> str:
    """The daemon's name as HTCondor builds it: the host when unset, ``name@host`` when the
    name has no ``@`` and is not the host itself."""
    if not name:
        return host
    if "@" in name or name == host:
        return name
    return f"{name}@{host}"


@attrs.frozen
class Rate:
    """Machines to drain: ``per_hour`` as configured (0 when it cannot apply), split into
    ``per_poll`` per interval, ``per_poll_hour`` extra each hour, ``per_poll_day`` each day."""

    per_hour: float
    per_poll: int
    per_poll_hour: int
    per_poll_day: int


def split_rate(per_hour: float, interval: int) -> Rate:
    """HTCondor's split of the hourly rate over polls of ``interval`` seconds (module
    docstring). An interval over an hour zeroes the hourly rate, which turns draining off
    (HTCondor's quirk, kept)."""
    if interval <= 0:
        return Rate(per_hour, 0, 0, 0)
    rate = per_hour / 3600.0 * interval
    per_poll = max(math.floor(rate + _EPSILON), 0)
    error_per_hour = (rate - per_poll) / interval * 3600.0
    per_poll_hour = math.floor(error_per_hour + _EPSILON)
    if per_hour < 0 or interval > 3600:
        per_hour = 0.0
    per_poll_day = math.floor((error_per_hour - per_poll_hour) * 24.0 + 0.5)
    if per_poll_day < 0 or interval > 3600 * 24:
        per_poll_day = 0
    return Rate(per_hour, per_poll, per_poll_hour, per_poll_day)


@attrs.frozen
class DefragSettings:
    """What one poll needs. The constraints are whole expressions, built as HTCondor builds
    them (the whole-machine expression is appended to without parentheses, as HTCondor does,
    so a top-level ``||`` in it changes meaning there too)."""

    name: str
    interval: int
    rate: Rate
    max_draining: int
    max_whole_machines: int
    #: ``BASE_SLOT && Draining =!= true && (DEFRAG_REQUIREMENTS)``: the candidates.
    candidates: Expr
    #: DEFRAG_WHOLE_MACHINE_EXPR with the base constraint and "drained by me" appended.
    whole_machine: Expr
    #: Machines this daemon (or nobody known) is draining.
    draining: Expr
    #: Draining-by-me machines matching DEFRAG_CANCEL_REQUIREMENTS; None: never cancel.
    cancel: Expr | None
    #: DEFRAG_RANK (None: every machine ranks 0).
    rank: Expr | None
    schedule: str
    start_expr: str | None
    update_interval: int
    state_file: str

    @property
    def drain_reason(self) -> str:
        """DrainReason of the drains this daemon starts."""
        return f"Defrag {self.name}"

    @property
    def schedule_number(self) -> int:
        return SCHEDULES[self.schedule.lower()]

    @classmethod
    def from_config(cls, config: Config) -> DefragSettings:
        """The settings ``config`` gives; ConfigError naming the knob for an expression that
        does not parse or an unknown schedule (HTCondor's daemon exits on both)."""
        host = config.get("FULL_HOSTNAME") or "localhost"
        # HTCondor's daemon reads LOCALNAME, which is its local name or else its subsystem's
        # name: DEFRAG, whatever subsystem this configuration was read for.
        local_name = config.local_name or "DEFRAG"
        name = daemon_name(config.get("DEFRAG_NAME") or local_name, host)
        interval = config.get_int("DEFRAG_INTERVAL", 600)
        # HTCondor raises a negative rate to its minimum, 0.
        per_hour = config.get_float("DEFRAG_DRAINING_MACHINES_PER_HOUR", 0.0, minimum=0.0)
        by_me = f'(DrainReason is undefined || DrainReason == "Defrag {name}")'
        requirements = (config.get("DEFRAG_REQUIREMENTS") or "").strip()
        if requirements:
            _expression("DEFRAG_REQUIREMENTS", requirements)
            candidates = f"{BASE_SLOT} && Draining =!= true && ({requirements})"
        else:
            candidates = f"{BASE_SLOT} && Draining =!= true"
        whole = config.get("DEFRAG_WHOLE_MACHINE_EXPR") or "Cpus == TotalSlotCpus"
        _expression("DEFRAG_WHOLE_MACHINE_EXPR", whole)
        cancel_text = (config.get("DEFRAG_CANCEL_REQUIREMENTS") or "").strip()
        cancel = None
        if cancel_text:
            _expression("DEFRAG_CANCEL_REQUIREMENTS", cancel_text)
            cancel = _expression(
                "DEFRAG_CANCEL_REQUIREMENTS",
                f"{BASE_SLOT} && Draining && {by_me} && ({cancel_text})",
            )
        rank_text = (config.get("DEFRAG_RANK") or "").strip()
        schedule = (config.get("DEFRAG_DRAINING_SCHEDULE") or "").strip() or "graceful"
        if schedule.lower() not in SCHEDULES:
            raise ConfigError(f"Invalid draining schedule: {schedule}")
        start_expr = (config.get("DEFRAG_DRAINING_START_EXPR") or "").strip() or None
        if start_expr is not None:
            _expression("DEFRAG_DRAINING_START_EXPR", start_expr)
        state_file = config.get("DEFRAG_STATE_FILE") or (
            f"{config.get('LOCK') or '.'}/{local_name}_state"
        )
        return cls(
            name=name,
            interval=interval,
            rate=split_rate(per_hour, interval),
            max_draining=max(config.get_int("DEFRAG_MAX_CONCURRENT_DRAINING", -1), -1),
            max_whole_machines=max(config.get_int("DEFRAG_MAX_WHOLE_MACHINES", -1), -1),
            candidates=_expression("DEFRAG_REQUIREMENTS", candidates),
            whole_machine=_expression(
                "DEFRAG_WHOLE_MACHINE_EXPR", f"{whole} && {BASE_SLOT} && {by_me}"
            ),
            draining=_expression("DEFRAG_NAME", f"{BASE_SLOT} && Draining && {by_me}"),
            cancel=cancel,
            rank=_expression("DEFRAG_RANK", rank_text) if rank_text else None,
            schedule=schedule,
            start_expr=start_expr,
            update_interval=config.get_int("DEFRAG_UPDATE_INTERVAL", 300),
            state_file=state_file,
        )
