"""Views of slot ads as condor_status prints them: the default table, -l, -af and JSON.

Pure functions over finished ads; ``ep status`` (epcore.cli.status_cmd) gathers the ads.

The default table has condor_status's columns and widths: Name (as wide as the longest name),
OpSys (10), Arch (6), State (9), Activity (8), LoadAv (``%.3f`` right-aligned in 6), Mem (at
least 4, right-aligned) and ActvtyTime (time since EnteredCurrentActivity, as
``days+hh:mm:ss`` with the days right-aligned in 3), followed by the totals per Arch/OpSys:
Total, Owner, Claimed, Unclaimed, Matched, Preempting, Drain (the Drained state), Backfill
and BkIdle (Backfill slots that are idle). Text columns are cut to their width; a missing
attribute shows as ``[???]``.
"""

from __future__ import annotations

import json
from collections.abc import Sequence

from epcore.classad import (
    ERROR,
    UNDEFINED,
    ClassAd,
    EvalContext,
    Value,
    format_old,
    parse_expr,
    to_json,
)

_MISSING = "[???]"

#: Summary columns: heading, width, and the State (and Activity) each counts; None counts all.
_SUMMARY: tuple[tuple[str, int, str | None, str | None], ...] = (
    ("Total", 5, None, None),
    ("Owner", 5, "Owner", None),
    ("Claimed", 7, "Claimed", None),
    ("Unclaimed", 9, "Unclaimed", None),
    ("Matched", 7, "Matched", None),
    ("Preempting", 10, "Preempting", None),
    ("Drain", 6, "Drained", None),
    ("Backfill", 8, "Backfill", None),
    ("BkIdle", 6, "Backfill", "Idle"),
)
_SUMMARY_LABEL_WIDTH = 14


def select(ads: Sequence[ClassAd], constraint: str | None, now: float) -> list[ClassAd]:
    """The ads for which ``constraint`` evaluates to True (all of them without one).

    Raises ClassAdSyntaxError when the constraint does not parse.
    """
    if constraint is None:
        return list(ads)
    expr = parse_expr(constraint)
    context = EvalContext(now=now)
    return [ad for ad in ads if expr.evaluate(ad, context=context) is True]


def _string(ad: ClassAd, name: str) -> str:
    value = ad.evaluate(name)
    if isinstance(value, str):
        return value
    if value is UNDEFINED or value is ERROR:
        return _MISSING
    return literal_text(value)


def literal_text(value: Value) -> str:
    """A value as condor_status prints it: strings bare, everything else in old syntax."""
    if isinstance(value, str):
        return value
    return format_old(ClassAd({"v": value}))[len("v = ") : -1]


def activity_time(seconds: int) -> str:
    """``days+hh:mm:ss``, days right-aligned in 3 columns (``  0+00:14:35``)."""
    seconds = max(seconds, 0)
    days, rest = divmod(seconds, 86400)
    hours, rest = divmod(rest, 3600)
    minutes, secs = divmod(rest, 60)
    return f"{days:3d}+{hours:02d}:{minutes:02d}:{secs:02d}"


def _number(ad: ClassAd, name: str) -> int | float | None:
    value = ad.evaluate(name)
    if isinstance(value, bool) or not isinstance(value, int | float):
        return None
    return value


def _row(ad: ClassAd, now: float) -> tuple[str, ...]:
    load = _number(ad, "LoadAvg")
    memory = _number(ad, "Memory")
    entered = _number(ad, "EnteredCurrentActivity")
    current = _number(ad, "MyCurrentTime")
    moment = now if current is None else current
    return (
        _string(ad, "Name"),
        _string(ad, "OpSys")[:10],
        _string(ad, "Arch")[:6],
        _string(ad, "State")[:9],
        _string(ad, "Activity")[:8],
        _MISSING if load is None else f"{load:.3f}",
        _MISSING if memory is None else str(int(memory)),
        "   [Unknown]" if entered is None else activity_time(int(moment - entered)),
    )


def format_table(ads: Sequence[ClassAd], now: float) -> str:
    """condor_status's default view: one line per slot, then the totals."""
    if not ads:
        return ""
    rows = [_row(ad, now) for ad in ads]
    name_width = max(len("Name"), *(len(row[0]) for row in rows))
    mem_width = max(4, *(len(row[6]) for row in rows))
    header = (
        f"{'Name':<{name_width}} {'OpSys':<10} {'Arch':<6} {'State':<9} {'Activity':<8} "
        f"LoadAv {'Mem':<{mem_width}}  ActvtyTime"
    )
    lines = [header, ""]
    for name, opsys, arch, state, activity, load, memory, since in rows:
        lines.append(
            f"{name:<{name_width}} {opsys:<10} {arch:<6} {state:<9} {activity:<8} "
            f"{load:>6} {memory:>{mem_width}}{since:>12}"
        )
    lines.append("")
    lines.extend(_summary(ads))
    return "\n".join(lines) + "\n"


def _summary(ads: Sequence[ClassAd]) -> list[str]:
    groups: dict[str, list[ClassAd]] = {}
    for ad in ads:
        groups.setdefault(f"{_string(ad, 'Arch')}/{_string(ad, 'OpSys')}", []).append(ad)
    width = max(_SUMMARY_LABEL_WIDTH, *(len(label) for label in groups))

    def line(label: str, members: Sequence[ClassAd]) -> str:
        cells = []
        for _, cell_width, state, activity in _SUMMARY:
            count = sum(
                1
                for ad in members
                if (state is None or ad.evaluate("State") == state)
                and (activity is None or ad.evaluate("Activity") == activity)
            )
            cells.append(f"{count:>{cell_width}}")
        return f"{label:>{width}} " + " ".join(cells)

    heading = " " * (width + 1) + " ".join(
        f"{title:>{cell_width}}" for title, cell_width, _, _ in _SUMMARY
    )
    lines = [heading, ""]
    for label in sorted(groups):
        lines.append(line(label, groups[label]))
    lines.extend(["", line("Total", ads)])
    return lines


def format_long(ads: Sequence[ClassAd]) -> str:
    """condor_status -l: every attribute in old ClassAd syntax, sorted by name, one blank line
    after each ad."""
    chunks = []
    for ad in ads:
        ordered = ClassAd()
        for name in sorted(ad, key=str.lower):
            ordered[name] = ad[name]
        chunks.append(format_old(ordered) + "\n")
    return "".join(chunks)


def format_autoformat(ads: Sequence[ClassAd], expressions: Sequence[str], now: float) -> str:
    """condor_status -af: each expression's value against each ad, separated by spaces, one
    line per ad; strings unquoted, other values in old syntax, ``undefined`` when missing.

    Raises ClassAdSyntaxError when an expression does not parse.
    """
    parsed = [parse_expr(text) for text in expressions]
    context = EvalContext(now=now)
    lines = [
        " ".join(literal_text(expr.evaluate(ad, context=context)) for expr in parsed) for ad in ads
    ]
    return "".join(line + "\n" for line in lines)


def format_json(ads: Sequence[ClassAd]) -> str:
    """The ads as a JSON list (condor_status -json): literals as JSON values, expressions as
    ``"/Expr(...)/"`` strings, as classad2's printJson writes them."""
    documents = [json.loads(to_json(ad)) for ad in ads]
    return json.dumps(documents, indent=2, ensure_ascii=False) + "\n"
