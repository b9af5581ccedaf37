"""The pool's plain-text tables, in the layouts of HTCondor's tools: ``condor_q -nobatch``,
``condor_q -hold``, ``condor_userprio`` and ``condor_status``.

Every renderer takes ClassAds and never fails on odd ones: a missing or wrongly typed text
attribute prints as ``undefined``, a number that is not one as ``?``, a date that is not one as
``???`` (as condor_history prints an unknown completion date), an unknown job status as ``?``.

Dates are printed in local time; being pure, the renderers take the local offset from UTC
(``utc_offset``, seconds east, as ``time.localtime(now).tm_gmtoff``) instead of reading it.
"""

from __future__ import annotations

import posixpath
from collections.abc import Sequence

from epcore.classad import ERROR, UNDEFINED, ClassAd
from epcore.classad.civil import civil_from_days
from epcore.views.ad_formats import literal_text

_UNDEFINED_TEXT = "undefined"
_UNKNOWN_NUMBER = "?"
_UNKNOWN_DATE = "???"

#: JobStatus codes as condor_q's ST column shows them.
_STATUS_LETTERS = {1: "I", 2: "R", 3: "X", 4: "C", 5: "H", 6: ">", 7: "S"}

#: JobStatus codes whose current run adds to RUN_TIME (running, transferring output).
_RUNNING_CODES = frozenset({2, 6})

#: The Total line's categories, in condor_q's order, and the JobStatus codes each counts
#: (a job transferring its output is still running).
_TOTALS = (
    ("completed", frozenset({4})),
    ("removed", frozenset({3})),
    ("idle", frozenset({1})),
    ("running", frozenset({2, 6})),
    ("held", frozenset({5})),
    ("suspended", frozenset({7})),
)


# -- reading attributes without failing --------------------------------------------------------


def _text(ad: ClassAd, name: str) -> str:
    value = ad.evaluate(name)
    if isinstance(value, str):
        return value
    if value is UNDEFINED or value is ERROR:
        return _UNDEFINED_TEXT
    return literal_text(value)


def _number(ad: ClassAd, name: str) -> float | None:
    value = ad.evaluate(name)
    if isinstance(value, bool) or not isinstance(value, int | float):
        return None
    if value != value or value in (float("inf"), float("-inf")):
        return None
    return float(value)


def _integer(ad: ClassAd, name: str) -> int | None:
    value = ad.evaluate(name)
    return value if type(value) is int else None


def _local_time(epoch: float | None, utc_offset: int) -> tuple[int, int, int, int, int] | None:
    """Year, month, day, hour and minute of ``epoch`` at ``utc_offset``; None when there is no
    time to show (unset, or too far out for a calendar date)."""
    if epoch is None or abs(epoch) > 1e15:
        return None
    days, seconds = divmod(int(epoch) + utc_offset, 86400)
    year, month, day = civil_from_days(days)
    hours, rest = divmod(seconds, 3600)
    return year, month, day, hours, rest // 60


def month_day_time(epoch: float | None, utc_offset: int = 0) -> str:
    """``11/22 03:10`` (month, day left-aligned in 2, hours and minutes), or ``???``."""
    local = _local_time(epoch, utc_offset)
    if local is None:
        return _UNKNOWN_DATE
    _, month, day, hours, minutes = local
    return f"{month}/{day:<2} {hours:02d}:{minutes:02d}"


def run_time(seconds: float) -> str:
    """``0+00:01:02``: days+hours:minutes:seconds (negative times count as 0)."""
    whole = max(int(seconds), 0)
    days, rest = divmod(whole, 86400)
    hours, rest = divmod(rest, 3600)
    minutes, secs = divmod(rest, 60)
    return f"{days}+{hours:02d}:{minutes:02d}:{secs:02d}"


# -- condor_q ----------------------------------------------------------------------------------


def _id_widths(jobs: Sequence[ClassAd]) -> tuple[int, int]:
    """The cluster and proc widths: at least 4 and 3, wider when an id needs it."""
    clusters = [len(_id_part(job, "ClusterId")) for job in jobs]
    procs = [len(_id_part(job, "ProcId")) for job in jobs]
    return max([4, *clusters]), max([3, *procs])


def _id_part(job: ClassAd, name: str) -> str:
    value = _integer(job, name)
    return _UNKNOWN_NUMBER if value is None else str(value)


def _job_id(job: ClassAd, widths: tuple[int, int]) -> str:
    cluster, proc = widths
    return f"{_id_part(job, 'ClusterId'):>{cluster}}.{_id_part(job, 'ProcId'):<{proc}}"


def _status_letter(job: ClassAd) -> str:
    status = _integer(job, "JobStatus")
    return _STATUS_LETTERS.get(status, _UNKNOWN_NUMBER) if status is not None else "?"


def _job_run_time(job: ClassAd, now: float) -> float:
    """RemoteWallClockTime of the runs so far, plus the current run's for a running job."""
    total = _number(job, "RemoteWallClockTime") or 0.0
    if _integer(job, "JobStatus") in _RUNNING_CODES:
        started = _number(job, "ShadowBday") or _number(job, "JobCurrentStartDate")
        if started is not None:
            total += max(now - started, 0.0)
    return total


def _size_mb(job: ClassAd) -> str:
    size = _number(job, "ImageSize")
    return _UNKNOWN_NUMBER if size is None else f"{size / 1024.0:.1f}"


def _command(job: ClassAd) -> str:
    cmd = job.evaluate("Cmd")
    shown = posixpath.basename(cmd) if isinstance(cmd, str) else _UNDEFINED_TEXT
    for name in ("Arguments", "Args"):
        arguments = job.evaluate(name)
        if isinstance(arguments, str):
            return f"{shown} {arguments}" if arguments else shown
    return shown


def _priority(job: ClassAd) -> str:
    prio = _integer(job, "JobPrio")
    return _UNKNOWN_NUMBER if prio is None else str(prio)


def _id_heading(widths: tuple[int, int]) -> str:
    return f"{' ID':<{sum(widths) + 1}}"


def totals_line(jobs: Sequence[ClassAd]) -> str:
    """condor_q's ``Total for query: N jobs; C completed, ...`` line."""
    codes = [_integer(job, "JobStatus") for job in jobs]
    counts = ", ".join(
        f"{sum(1 for code in codes if code in wanted)} {label}" for label, wanted in _TOTALS
    )
    return f"Total for query: {len(jobs)} jobs; {counts}"


def render_queue(
    jobs: Sequence[ClassAd], *, now: float, totals: bool = True, utc_offset: int = 0
) -> str:
    """condor_q -nobatch: one line per job (ID, OWNER, SUBMITTED, RUN_TIME, ST, PRI, SIZE in
    MB, CMD with its arguments), then the Total line."""
    widths = _id_widths(jobs)
    lines = [_id_heading(widths) + " OWNER            SUBMITTED     RUN_TIME ST PRI SIZE CMD"]
    for job in jobs:
        lines.append(
            f"{_job_id(job, widths)} {_text(job, 'Owner'):<14} "
            f"{month_day_time(_number(job, 'QDate'), utc_offset):>12} "
            f"{run_time(_job_run_time(job, now)):>12} {_status_letter(job):<2} "
            f"{_priority(job):<3} {_size_mb(job):>4} {_command(job)}"
        )
    if totals:
        lines += ["", totals_line(jobs)]
    return "\n".join(lines) + "\n"


def render_hold_reasons(
    jobs: Sequence[ClassAd], *, totals: bool = True, utc_offset: int = 0
) -> str:
    """condor_q -hold: the held jobs with the time they were held (EnteredCurrentStatus) and
    their HoldReason, then the Total line of those jobs."""
    held = [job for job in jobs if _integer(job, "JobStatus") == 5]
    widths = _id_widths(held)
    lines = [_id_heading(widths) + f" {'OWNER':<14} {'HELD_SINCE':<11} HOLD_REASON"]
    for job in held:
        since = month_day_time(_number(job, "EnteredCurrentStatus"), utc_offset)
        lines.append(
            f"{_job_id(job, widths)} {_text(job, 'Owner'):<14} {since:>11} "
            f"{_text(job, 'HoldReason')}"
        )
    if totals:
        lines += ["", totals_line(held)]
    return "\n".join(lines) + "\n"


# -- condor_userprio ---------------------------------------------------------------------------

#: condor_userprio lists, by default, the users with usage in this window before ``now``.
ACTIVE_WINDOW = 86400

#: The lowest real priority there is: a user above it still has usage to decay.
_MINIMUM_REAL_PRIORITY = 0.5

#: condor_userprio's columns: the two heading lines (centred), the width, and whether only
#: -all shows it (Real Priority, Usage Start Time and Last Usage Time).
_USERPRIO_COLUMNS = (
    ("Effective", "Priority", 12, False),
    ("Real", "Priority", 8, True),
    ("Priority", "Factor", 9, False),
    ("Res", "In Use", 6, False),
    ("Total Usage", "(wghted-hrs)", 12, False),
    ("Usage", "Start Time", 16, True),
    ("Last", "Usage Time", 16, True),
    ("Time Since", "Last Usage", 10, False),
)


def _since(seconds: float) -> str:
    """``days+hh:mm``, as condor_userprio's Time Since Last Usage."""
    whole = max(int(seconds), 0)
    days, rest = divmod(whole, 86400)
    return f"{days}+{rest // 3600:02d}:{rest % 3600 // 60:02d}"


def _fixed(value: float | None, width: int) -> str:
    return f"{_UNKNOWN_NUMBER:>{width}}" if value is None else f"{value:{width}.2f}"


def _centred(text: str, width: int) -> str:
    left = (width - len(text)) // 2
    return " " * left + text + " " * (width - len(text) - left)


def date_with_year(epoch: float | None, utc_offset: int = 0) -> str:
    """``11/22/2026 03:10`` (month right-aligned in 2), as condor_userprio -all's times."""
    local = _local_time(epoch, utc_offset)
    if local is None:
        return _UNKNOWN_DATE
    year, month, day, hours, minutes = local
    return f"{month:2d}/{day:02d}/{year:<4d} {hours:02d}:{minutes:02d}"


def _user_cells(ad: ClassAd, now: float, utc_offset: int) -> dict[str, str]:
    """One user's cells, by the first heading of their column."""
    in_use = _number(ad, "ResourcesUsed")
    usage = _number(ad, "WeightedAccumulatedUsage")
    if usage is None:
        usage = _number(ad, "AccumulatedUsage")
    last = _number(ad, "LastUsageTime")
    begin = _number(ad, "BeginUsageTime")
    priority = _number(ad, "Priority")
    factor = _number(ad, "PriorityFactor")
    real = None if priority is None or not factor else priority / factor
    # condor_userprio prints "<now>" unpadded, unlike the times it right-aligns.
    since = "<now>" if in_use else f"{_UNKNOWN_NUMBER if not last else _since(now - last):>10}"
    return {
        "Effective": _fixed(priority, 12),
        "Real": _fixed(real, 8),
        "Priority": _fixed(factor, 9),
        "Res": f"{_UNKNOWN_NUMBER if in_use is None else str(int(in_use)):>6}",
        "Total Usage": _fixed(None if usage is None else usage / 3600.0, 12),
        # condor_userprio leaves a time that was never set (0) blank.
        "Usage": f"{date_with_year(begin, utc_offset) if begin else '':>16}",
        "Last": f"{date_with_year(last, utc_offset) if last else '':>16}",
        "Time Since": since,
    }


def _active(ad: ClassAd, now: float) -> bool:
    """Whether condor_userprio lists the user by default: usage in the last day, or a real
    priority still above the minimum."""
    if _number(ad, "ResourcesUsed"):
        return True
    last = _number(ad, "LastUsageTime")
    if last and now - last < ACTIVE_WINDOW:
        return True
    priority = _number(ad, "Priority")
    factor = _number(ad, "PriorityFactor")
    return bool(priority and factor and priority / factor > _MINIMUM_REAL_PRIORITY + 1e-9)


def _effective(ad: ClassAd) -> float:
    value = _number(ad, "Priority")
    return float("inf") if value is None else value


def render_userprio(
    ads: Sequence[ClassAd],
    *,
    now: float,
    all_users: bool = False,
    all_fields: bool = False,
    utc_offset: int = 0,
    groups: bool = False,
) -> str:
    """condor_userprio: the users by increasing effective priority (the accounting ads'
    Priority), their factor, slots in use, weighted usage in hours and time since last usage,
    then the number of users and the sums. ``all_users`` (-allusers) lists every user;
    otherwise only those with usage in the last day or a real priority above the minimum, as
    condor_userprio does. ``all_fields`` (-all) adds the real priority and the usage start and
    last usage times.
    """
    columns = [c for c in _USERPRIO_COLUMNS if all_fields or not c[3]]
    # Accounting groups are listed only when asked for (-grouprollup), as condor_userprio
    # lists them; the accountant's summary ad (MyType Accountant) is no user.
    ads = [
        ad
        for ad in ads
        if ("MyType" not in ad or ad.evaluate("MyType") == "Accounting")
        and (groups or ad.evaluate("IsAccountingGroup") is not True)
    ]
    shown = [ad for ad in ads if all_users or _active(ad, now)]
    shown.sort(key=lambda ad: (_effective(ad), _text(ad, "Name")))
    width = max([22, *(len(_text(ad, "Name")) + 2 for ad in shown)])
    updates = [_number(ad, "LastUpdateTime") for ad in ads]
    updated = max((u for u in updates if u is not None), default=now)
    rule = "-" * width + "".join(" " + "-" * column[2] for column in columns)
    lines = [
        f"Last Priority Update: {month_day_time(updated, utc_offset):>11}",
        (" " * width + "".join(" " + _centred(c[0], c[2]) for c in columns)).rstrip(),
        (f"{'User Name':<{width}}" + "".join(" " + _centred(c[1], c[2]) for c in columns)).rstrip(),
        rule,
    ]
    for ad in shown:
        cells = _user_cells(ad, now, utc_offset)
        lines.append(f"{_text(ad, 'Name'):<{width}} " + " ".join(cells[c[0]] for c in columns))
    in_use = sum(_number(ad, "ResourcesUsed") or 0.0 for ad in shown)
    usage = sum(
        (_number(ad, "WeightedAccumulatedUsage") or _number(ad, "AccumulatedUsage") or 0.0)
        for ad in shown
    )
    lasts = [_number(ad, "LastUsageTime") for ad in shown]
    oldest = min((last for last in lasts if last), default=None)
    window = ACTIVE_WINDOW - 60 if not all_users else (None if oldest is None else now - oldest)
    label = f"Number of users: {len(shown)}"
    total_cells: dict[str, str] = {
        "Res": f"{int(in_use):>6}",
        "Total Usage": f"{usage / 3600.0:12.2f}",
        "Time Since": f"{'' if window is None else _since(window):>10}",
    }
    totals = " ".join(total_cells.get(c[0], " " * c[2]) for c in columns)
    lines += [rule, f"{label:<{width}} {totals}".rstrip()]
    return "\n".join(lines) + "\n"


# -- condor_status -----------------------------------------------------------------------------

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


def _slot_text(ad: ClassAd, name: str) -> str:
    value = ad.evaluate(name)
    if isinstance(value, str):
        return value
    if value is UNDEFINED or value is ERROR:
        return _MISSING
    return literal_text(value)


def activity_time(seconds: int) -> str:
    """``days+hh:mm:ss``, days right-aligned in 3 columns (``  0+00:14:35``)."""
    return f"{run_time(seconds):>12}"


def _slot_row(ad: ClassAd, now: float) -> tuple[str, ...]:
    load = _number(ad, "LoadAvg")
    memory = _number(ad, "Memory")
    entered = _number(ad, "EnteredCurrentActivity")
    current = _number(ad, "MyCurrentTime")
    moment = now if current is None else current
    return (
        _slot_text(ad, "Name"),
        _slot_text(ad, "OpSys")[:10],
        _slot_text(ad, "Arch")[:6],
        _slot_text(ad, "State")[:9],
        _slot_text(ad, "Activity")[:8],
        _MISSING if load is None else f"{load:.3f}",
        _MISSING if memory is None else str(int(memory)),
        "   [Unknown]" if entered is None else activity_time(int(moment - entered)),
    )


def render_slots(ads: Sequence[ClassAd], *, now: float) -> str:
    """condor_status's default view: Name (as wide as the longest), OpSys (10), Arch (6),
    State (9), Activity (8), LoadAv (``%.3f`` in 6), Mem (at least 4) and ActvtyTime (time
    since EnteredCurrentActivity), then the totals per Arch/OpSys (Total, Owner, Claimed,
    Unclaimed, Matched, Preempting, Drain, Backfill, BkIdle). Text columns are cut to their
    width; a missing attribute shows as ``[???]``. No ads print nothing."""
    if not ads:
        return ""
    rows = [_slot_row(ad, now) for ad in ads]
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
    lines.extend(_slot_summary(ads))
    return "\n".join(lines) + "\n"


def _slot_summary(ads: Sequence[ClassAd]) -> list[str]:
    groups: dict[str, list[ClassAd]] = {}
    for ad in ads:
        groups.setdefault(f"{_slot_text(ad, 'Arch')}/{_slot_text(ad, 'OpSys')}", []).append(ad)
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


#: The columns ``ep status`` shows for the daemons' ads, as condor_status -schedd,
#: -submitters, -negotiator and -defrag show theirs (-defrag: HTCondor's Draining, Peak and
#: TotalDrained, then the whole machines and the drains sent).
AD_COLUMNS: dict[str | None, tuple[str, ...]] = {
    "Scheduler": ("Name", "Machine", "TotalRunningJobs", "TotalIdleJobs", "TotalHeldJobs"),
    "Submitter": ("Name", "ScheddName", "RunningJobs", "IdleJobs", "HeldJobs"),
    "Negotiator": (
        "Name",
        "LastNegotiationCycleTotalSlots0",
        "LastNegotiationCycleNumIdleJobs0",
        "LastNegotiationCycleMatches0",
        "LastNegotiationCycleDuration0",
    ),
    "Defrag": (
        "Name",
        "MachinesDraining",
        "MachinesDrainingPeak",
        "DrainedMachines",
        "WholeMachines",
        "DrainSuccesses",
        "DrainFailures",
    ),
    None: ("MyType", "Name"),
}


def render_ads(ads: Sequence[ClassAd], columns: Sequence[str]) -> str:
    """A plain table of ``columns`` of ``ads`` (sorted by Name), headed by the attribute
    names; a missing attribute shows as ``undefined``."""
    rows = [[_text(ad, name) for name in columns] for ad in ads]
    rows.sort(key=lambda row: row[columns.index("Name")] if "Name" in columns else "")
    widths = [max([len(name), *(len(row[i]) for row in rows)]) for i, name in enumerate(columns)]
    lines = [" ".join(name.ljust(w) for name, w in zip(columns, widths, strict=True)).rstrip()]
    lines += [
        " ".join(value.ljust(w) for value, w in zip(row, widths, strict=True)).rstrip()
        for row in rows
    ]
    return "\n".join(lines) + "\n"
