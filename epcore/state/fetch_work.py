"""What the startd decides about fetched work (seed 000, "Job Hooks That Fetch Work"); pure.

The startd pulls jobs through ``<Keyword>_HOOK_FETCH_WORK`` (or a Python
:class:`~epcore.types.FetchWorkSource` named like the keyword). This module holds every decision
of that system and no I/O: which keyword a slot uses (``SLOT<N>_JOB_HOOK_KEYWORD``, else
``STARTD_JOB_HOOK_KEYWORD``), when a slot may fetch again (``FetchWorkDelay``, evaluated with
the slot ad as MY and the running job as TARGET, 300 seconds when unset or not a number),
what a hook's output means (a job ad, no work, or garbage), whether a fetched job carries the
attributes it needs (``Cmd``; ``Owner`` when the startd is root; ``RequestCpus``,
``RequestMemory`` and ``RequestDisk`` on a partitionable slot), and whether a fetched job is
taken on a new claim (the slot is Unclaimed and START is TRUE), on the slot's idle fetched
claim (reuse), as a preempting claim (its RANK beats the running claim's) or rejected, always
with the reason. The text the advisory hooks read (the job ad, ``-----``, the slot ad) is
built here too. :mod:`epcore.startd.fetch_work` carries the decisions out.
"""

from __future__ import annotations

import math
import re
from typing import Final, Literal

import attrs

from epcore.classad import ClassAd, Expr, FunctionTable, format_old, parse_ad, parse_expr
from epcore.config import Config
from epcore.errors import ClassAdError, ConfigError, EpError
from epcore.state.policy import evaluate, number, truth

#: The startd's fetch-work hooks, as ``<Keyword>_HOOK_<name>`` knobs.
FETCH_WORK_HOOKS: Final = ("FETCH_WORK", "REPLY_FETCH", "EVICT_CLAIM")
#: FetchWorkDelay when it is not set or not a number (seed 000: "a five minute (300 second)
#: delay between all attempts to fetch work").
DEFAULT_FETCH_WORK_DELAY: Final = 300
#: The least time between a fetch attempt that brought no job and the slot's next one.
MIN_EMPTY_RETRY: Final = 1
#: The job attribute naming the keyword the job was fetched with.
HOOK_KEYWORD_ATTRIBUTE: Final = "HookKeyword"
#: The line between the job ad and the slot ad on REPLY_FETCH's and EVICT_CLAIM's stdin.
AD_SEPARATOR: Final = "-----"
#: The requests a job needs on a partitionable slot (the dynamic slot is carved from them).
PARTITIONABLE_REQUESTS: Final = ("RequestCpus", "RequestMemory", "RequestDisk")

_KEYWORD: Final = re.compile(r"[A-Za-z0-9_]+")
_SHOWN: Final = 200

DecisionKind = Literal["claim", "reuse", "preempt", "reject"]


class FetchWorkError(EpError):
    """A fetch-work knob that cannot be used; ``knob`` names it, the message says where."""

    def __init__(self, message: str, knob: str) -> None:
        self.reason = message
        self.knob = knob
        super().__init__(message)


def _where(config: Config, knob: str) -> str:
    origin = config.origin(knob)
    if origin is None or origin.source is None:
        return knob
    line = f", line {origin.line}" if origin.line is not None else ""
    return f"{origin.source}{line}: {knob}"


# -- keywords and hook knobs ----------------------------------------------------------------


def slot_hook_keyword(config: Config, slot_id: int) -> str | None:
    """The keyword of slot number ``slot_id``'s fetch-work hooks, or None when it has none.

    ``SLOT<N>_JOB_HOOK_KEYWORD`` wins over ``STARTD_JOB_HOOK_KEYWORD`` (a dynamic slot uses
    its partitionable slot's number). A keyword is letters, digits and ``_``; anything else
    is a FetchWorkError naming the knob.
    """
    for knob in (f"SLOT{slot_id}_JOB_HOOK_KEYWORD", "STARTD_JOB_HOOK_KEYWORD"):
        try:
            value = config.get(knob)
        except ConfigError as error:
            raise FetchWorkError(f"{knob} cannot be expanded: {error}", knob) from error
        if value is None or not value.strip():
            continue
        keyword = value.strip()
        if _KEYWORD.fullmatch(keyword) is None:
            message = f"{_where(config, knob)} = {keyword}: a hook keyword is letters, digits, _"
            raise FetchWorkError(message, knob)
        return keyword
    return None


@attrs.frozen
class HookKnobs:
    """The configured executables of one keyword's fetch-work hooks (None: not set).

    Only ``fetch_work`` is needed; the seed makes it "the only hook that must be defined for
    any of the other condor_startd hooks to operate".
    """

    keyword: str
    fetch_work: str | None
    reply_fetch: str | None
    evict_claim: str | None

    def knob(self, hook: str) -> str:
        """The configuration knob of ``hook`` (``FETCH_WORK``...) for this keyword."""
        return f"{self.keyword}_HOOK_{hook}"


def hook_knobs(config: Config, keyword: str) -> HookKnobs:
    """What ``<keyword>_HOOK_FETCH_WORK``, ``_REPLY_FETCH`` and ``_EVICT_CLAIM`` are set to."""
    values: list[str | None] = []
    for hook in FETCH_WORK_HOOKS:
        knob = f"{keyword}_HOOK_{hook}"
        try:
            value = config.get(knob)
        except ConfigError as error:
            raise FetchWorkError(f"{knob} cannot be expanded: {error}", knob) from error
        values.append(value.strip() if value is not None and value.strip() else None)
    if values[0] is None:
        values = [None, None, None]
    return HookKnobs(keyword, values[0], values[1], values[2])


# -- FetchWorkDelay --------------------------------------------------------------------------


def fetch_work_delay_expr(config: Config) -> Expr | None:
    """The parsed ``FetchWorkDelay`` expression, or None when it is not set.

    Raises FetchWorkError naming the file and line when the text is not a ClassAd expression.
    """
    try:
        text = config.get("FetchWorkDelay")
    except ConfigError as error:
        message = f"FetchWorkDelay cannot be expanded: {error}"
        raise FetchWorkError(message, "FetchWorkDelay") from error
    if text is None or not text.strip():
        return None
    try:
        return parse_expr(text)
    except ClassAdError as error:
        message = f"{_where(config, 'FetchWorkDelay')} = {text} is not an expression: {error}"
        raise FetchWorkError(message, "FetchWorkDelay") from error


@attrs.frozen
class FetchDelay:
    """Seconds a slot waits after its last fetch completed; ``problem`` says why the default
    was used instead of the expression's value."""

    seconds: int
    problem: str | None = None


def fetch_work_delay(
    expr: Expr | None,
    slot_ad: ClassAd,
    job_ad: ClassAd | None,
    now: float,
    functions: FunctionTable | None = None,
) -> FetchDelay:
    """``FetchWorkDelay`` for a slot (MY) and its running job (TARGET, None when none).

    A value that is not a finite number gives the default 300 with the reason; a negative
    one counts as 0; a real is truncated to whole seconds.
    """
    if expr is None:
        return FetchDelay(DEFAULT_FETCH_WORK_DELAY)
    value = evaluate(expr, slot_ad, job_ad, now, functions)
    if isinstance(value, bool) or not isinstance(value, int | float) or not math.isfinite(value):
        problem = f"FetchWorkDelay = {expr} is {value!s}, not a number of seconds"
        return FetchDelay(DEFAULT_FETCH_WORK_DELAY, problem)
    return FetchDelay(max(0, int(value)))


def fetch_due_at(last_done: float | None, delay: FetchDelay, *, brought_work: bool = True) -> float:
    """When a slot may fetch next: at once when it never fetched, else ``delay`` after its
    last fetch attempt completed. After an attempt that brought no job, at least
    :data:`MIN_EMPTY_RETRY` seconds pass (epcore's guard: a delay of 0 would otherwise ask an
    empty source again at every turn of the loop)."""
    if last_done is None:
        return -math.inf
    seconds = delay.seconds if brought_work else max(delay.seconds, MIN_EMPTY_RETRY)
    return last_done + seconds


# -- what a hook printed ---------------------------------------------------------------------


@attrs.frozen
class Fetched:
    """What one fetch attempt brought: a job ad, nothing (``job`` None, ``problem`` None: no
    work) or output that cannot be used (``problem`` says why)."""

    job: ClassAd | None = None
    problem: str | None = None

    @property
    def no_work(self) -> bool:
        """True when the source said there is no work (not when it failed)."""
        return self.job is None and self.problem is None


def fetched_from_output(stdout: str) -> Fetched:
    """FETCH_WORK's stdout read as the seed says: a job ad (old or new syntax), or no output
    at all for "no work"; anything else is garbage with the reason."""
    if not stdout.strip():
        return Fetched()
    try:
        job = parse_ad(stdout)
    except (ClassAdError, RecursionError) as error:
        shown = stdout.strip().splitlines()[0]
        shown = shown if len(shown) <= _SHOWN else shown[:_SHOWN] + "..."
        return Fetched(problem=f"the output is not a job ClassAd ({error}; first line {shown!r})")
    if len(job) == 0:
        return Fetched(problem="the output is an empty ClassAd")
    return Fetched(job)


def with_keyword(job: ClassAd, keyword: str) -> ClassAd:
    """A copy of ``job`` with ``HookKeyword`` set to the keyword it was fetched with, so the
    starter's hooks use the same keyword (seed 000)."""
    tagged = job.copy()
    tagged[HOOK_KEYWORD_ATTRIBUTE] = keyword
    return tagged


def advisory_input(job: ClassAd, slot_ad: ClassAd) -> str:
    """The stdin of REPLY_FETCH and EVICT_CLAIM: the job ad, ``-----`` and a new line, the
    slot ad (both in old ClassAd syntax)."""
    job_text = format_old(job)
    if not job_text.endswith("\n"):
        job_text += "\n"
    return f"{job_text}{AD_SEPARATOR}\n{format_old(slot_ad)}"


def _is_text(job: ClassAd, name: str) -> bool:
    value = job.evaluate(name) if name in job else None
    return isinstance(value, str) and bool(value.strip())


def _is_amount(job: ClassAd, name: str) -> bool:
    value = job.evaluate(name) if name in job else None
    return isinstance(value, int | float) and not isinstance(value, bool) and value >= 0


def missing_attributes(job: ClassAd, *, as_root: bool, partitionable: bool) -> str | None:
    """Why ``job`` lacks what a fetched job must carry, or None when it has it all.

    ``Cmd`` is a non-empty string; ``Owner`` too when the startd runs as root (the job runs as
    that user); on a partitionable slot ``RequestCpus``, ``RequestMemory`` and ``RequestDisk``
    are non-negative numbers (seed 000's required attributes).
    """
    missing: list[str] = []
    if not _is_text(job, "Cmd"):
        missing.append("Cmd (a string naming the executable)")
    if as_root and not _is_text(job, "Owner"):
        missing.append("Owner (the startd runs as root)")
    if partitionable:
        missing.extend(
            f"{name} (the slot is partitionable)"
            for name in PARTITIONABLE_REQUESTS
            if not _is_amount(job, name)
        )
    if not missing:
        return None
    return "the job ad lacks " + ", ".join(missing)


# -- accept, preempt or reject -----------------------------------------------------------------

#: A dynamic slot's resources and the job attributes that request them.
_REQUESTED: Final = (("RequestCpus", "Cpus"), ("RequestMemory", "Memory"), ("RequestDisk", "Disk"))


def _exceeds(job: ClassAd, slot_ad: ClassAd) -> str | None:
    """Why ``job`` does not fit the dynamic slot of ``slot_ad`` (carved for an earlier job),
    or None when every request it makes is within the slot's resources."""
    for request, resource in _REQUESTED:
        wanted = job.evaluate(request, target=slot_ad) if request in job else None
        has = slot_ad.evaluate(resource) if resource in slot_ad else None
        numbers = all(isinstance(v, int | float) and not isinstance(v, bool) for v in (wanted, has))
        if numbers and wanted > has:  # type: ignore[operator]
            return f"the job's {request} {wanted} exceeds the slot's {resource} {has}"
    return None


@attrs.frozen
class SlotSituation:
    """What the decision needs to know about the slot a job was fetched for.

    ``claim_rank`` is the RANK of the slot's current claim (None: no claim); ``fetched_claim``
    says that claim was made for fetched work by this startd; ``preempting`` that another
    claim already waits for the slot.
    """

    name: str
    state: str
    activity: str
    kind: str
    claim_rank: float | None = None
    fetched_claim: bool = False
    preempting: bool = False
    shutting_down: bool = False


@attrs.frozen
class Decision:
    """What to do with a fetched job and why: ``claim`` (a new claim), ``reuse`` (the slot's
    idle fetched claim), ``preempt`` (a preempting claim) or ``reject``; ``rank`` is the job's
    RANK on the slot."""

    kind: DecisionKind
    reason: str
    rank: float = 0.0

    @property
    def accepted(self) -> bool:
        """Whether the startd takes the job (what REPLY_FETCH is told)."""
        return self.kind != "reject"


#: Where a slot may look for work: free, claimed (for reuse or a preempting job) or running
#: backfill (a claim evicts it). A slot in Owner, Matched, Preempting or Drained cannot take
#: a job, so it does not ask for one.
FETCHING_STATES: Final = frozenset({"Unclaimed", "Claimed", "Backfill"})


def may_fetch(situation: SlotSituation) -> bool:
    """Whether the slot asks for work at all (FetchWorkDelay then says when)."""
    if situation.shutting_down or situation.state not in FETCHING_STATES:
        return False
    if situation.kind == "partitionable":
        # A partitionable slot only hands out dynamic slots; it is never claimed itself.
        return situation.state == "Unclaimed"
    return not situation.preempting


def decide(
    situation: SlotSituation,
    job: ClassAd,
    *,
    start: Expr,
    rank: Expr,
    slot_ad: ClassAd,
    now: float,
    functions: FunctionTable | None = None,
) -> Decision:
    """Accept, preempt or reject ``job`` fetched for the slot of ``situation`` (seed 000).

    An Unclaimed (or Backfill) slot takes it on a new claim when START is TRUE for it. A
    Claimed/Idle slot holding a claim made for fetched work reuses that claim, again when START
    is TRUE (and, on a dynamic slot, when the job's requests fit the slot). Any other claimed
    slot takes it only as a preempting claim, when START is TRUE and the job's RANK is above
    the running claim's. A slot in any other state, or a startd that is shutting down, rejects
    it.
    """
    name = situation.name
    place = f"{situation.state}/{situation.activity}"
    if situation.shutting_down:
        return Decision("reject", f"{name}: the startd is shutting down")
    if situation.state not in FETCHING_STATES:
        return Decision("reject", f"{name} is {place}: it cannot take a job")
    start_value = truth(evaluate(start, slot_ad, job, now, functions))
    job_rank = number(evaluate(rank, slot_ad, job, now, functions))
    if start_value is not True:
        return Decision("reject", f"{name}: START is not TRUE for the job", job_rank)
    if situation.state in ("Unclaimed", "Backfill"):
        return Decision("claim", f"{name} is {place} and START is TRUE for the job", job_rank)
    if situation.fetched_claim and situation.activity == "Idle":
        too_big = _exceeds(job, slot_ad) if situation.kind == "dynamic" else None
        if too_big is not None:
            return Decision("reject", f"{name}: {too_big}", job_rank)
        return Decision("reuse", f"{name} reuses its idle claim for the job", job_rank)
    if situation.preempting:
        return Decision("reject", f"{name}: a preempting claim already waits", job_rank)
    current = situation.claim_rank if situation.claim_rank is not None else 0.0
    if job_rank > current:
        why = f"{name}: the job's RANK {job_rank:g} is above the claim's {current:g}"
        return Decision("preempt", why, job_rank)
    why = f"{name} is {place}: the job's RANK {job_rank:g} is not above the claim's {current:g}"
    return Decision("reject", why, job_rank)
