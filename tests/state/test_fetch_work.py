"""The fetch-work decisions of seed 000 ("Job Hooks That Fetch Work"), without a daemon:
keywords per slot, FetchWorkDelay, hook output, required attributes, accept/preempt/reject."""

from __future__ import annotations

import math

import pytest
from hypothesis import given
from hypothesis import strategies as st

from epcore.classad import ClassAd, parse_ad, parse_expr
from epcore.config import Config
from epcore.state.fetch_work import (
    DEFAULT_FETCH_WORK_DELAY,
    FetchDelay,
    FetchWorkError,
    SlotSituation,
    advisory_input,
    decide,
    fetch_due_at,
    fetch_work_delay,
    fetch_work_delay_expr,
    fetched_from_output,
    hook_knobs,
    may_fetch,
    missing_attributes,
    slot_hook_keyword,
    with_keyword,
)

#: The seed's two-keyword example, verbatim.
SEED_CONFIG = """\
# Most slots fetch and run work from the database system.
STARTD_JOB_HOOK_KEYWORD = DATABASE

# Slot4 fetches and runs work from a web service.
SLOT4_JOB_HOOK_KEYWORD = WEB

# The database system needs to both provide work and know the reply
# for each attempted claim.
DATABASE_HOOK_DIR = /usr/local/condor/fetch/database
DATABASE_HOOK_FETCH_WORK = $(DATABASE_HOOK_DIR)/fetch_work.php
DATABASE_HOOK_REPLY_FETCH = $(DATABASE_HOOK_DIR)/reply_fetch.php

# The web system only needs to fetch work.
WEB_HOOK_DIR = /usr/local/condor/fetch/web
WEB_HOOK_FETCH_WORK = $(WEB_HOOK_DIR)/fetch_work.php
"""

SEED_DELAY = 'ifThenElse(State == "Claimed" && Activity == "Idle", 0, 300)'


@pytest.mark.parametrize(
    ("slot_id", "keyword"), [(1, "DATABASE"), (2, "DATABASE"), (3, "DATABASE"), (4, "WEB")]
)
def test_seed_keywords_per_slot(slot_id: int, keyword: str) -> None:
    """In the seed's example slots 1-3 use the global DATABASE keyword and slot 4 uses WEB."""
    assert slot_hook_keyword(Config.from_text(SEED_CONFIG), slot_id) == keyword


@pytest.mark.parametrize(
    ("keyword", "fetch", "reply", "evict"),
    [
        (
            "DATABASE",
            "/usr/local/condor/fetch/database/fetch_work.php",
            "/usr/local/condor/fetch/database/reply_fetch.php",
            None,
        ),
        ("WEB", "/usr/local/condor/fetch/web/fetch_work.php", None, None),
        ("NONE", None, None, None),
    ],
)
def test_seed_hook_knobs(
    keyword: str, fetch: str | None, reply: str | None, evict: str | None
) -> None:
    """Each keyword's hooks are its own <Keyword>_HOOK_* knobs, macros expanded."""
    knobs = hook_knobs(Config.from_text(SEED_CONFIG), keyword)
    assert (knobs.fetch_work, knobs.reply_fetch, knobs.evict_claim) == (fetch, reply, evict)
    assert knobs.knob("REPLY_FETCH") == f"{keyword}_HOOK_REPLY_FETCH"


def test_reply_and_evict_need_fetch_work() -> None:
    """Without FETCH_WORK the other startd hooks do not operate (seed: it "is the only hook
    that must be defined for any of the other condor_startd hooks to operate")."""
    config = Config.from_text("X_HOOK_REPLY_FETCH = /bin/true\nX_HOOK_EVICT_CLAIM = /bin/true\n")
    knobs = hook_knobs(config, "X")
    assert (knobs.fetch_work, knobs.reply_fetch, knobs.evict_claim) == (None, None, None)


@pytest.mark.parametrize(
    ("text", "slot_id", "expected"),
    [
        ("", 1, None),
        ("STARTD_JOB_HOOK_KEYWORD = A\n", 7, "A"),
        ("SLOT2_JOB_HOOK_KEYWORD = B\n", 1, None),
        ("SLOT2_JOB_HOOK_KEYWORD = B\n", 2, "B"),
        ("STARTD_JOB_HOOK_KEYWORD = A\nSLOT2_JOB_HOOK_KEYWORD = B\n", 2, "B"),
        ("STARTD_JOB_HOOK_KEYWORD =   \n", 1, None),
    ],
)
def test_slot_keyword_precedence(text: str, slot_id: int, expected: str | None) -> None:
    """SLOT<N>_JOB_HOOK_KEYWORD wins over STARTD_JOB_HOOK_KEYWORD; blank means none."""
    assert slot_hook_keyword(Config.from_text(text), slot_id) == expected


@pytest.mark.parametrize("bad", ["two words", "DATA-BASE", "a/b"])
def test_bad_keyword_names_the_knob(bad: str) -> None:
    """A keyword that is not letters, digits and _ is an error naming the knob and file."""
    config = Config.from_text(f"SLOT3_JOB_HOOK_KEYWORD = {bad}\n", source="site.conf")
    with pytest.raises(FetchWorkError) as caught:
        slot_hook_keyword(config, 3)
    assert caught.value.knob == "SLOT3_JOB_HOOK_KEYWORD"
    assert "site.conf, line 1" in str(caught.value)


# -- FetchWorkDelay ------------------------------------------------------------------------


def _slot(state: str, activity: str, **extra: object) -> ClassAd:
    ad = ClassAd()
    ad["Name"] = "slot1@ep"
    ad["State"] = state
    ad["Activity"] = activity
    for name, value in extra.items():
        ad[name] = value
    return ad


@pytest.mark.parametrize(
    ("expression", "state", "activity", "job", "seconds", "problem"),
    [
        (None, "Unclaimed", "Idle", None, DEFAULT_FETCH_WORK_DELAY, False),
        (SEED_DELAY, "Claimed", "Idle", None, 0, False),
        (SEED_DELAY, "Claimed", "Busy", None, 300, False),
        (SEED_DELAY, "Unclaimed", "Idle", None, 300, False),
        ("TARGET.Quick =?= True ? 5 : 60", "Claimed", "Busy", "[Quick = true]", 5, False),
        ("TARGET.Quick =?= True ? 5 : 60", "Claimed", "Busy", None, 60, False),
        ("12.9", "Unclaimed", "Idle", None, 12, False),
        ("-4", "Unclaimed", "Idle", None, 0, False),
        ('"soon"', "Unclaimed", "Idle", None, DEFAULT_FETCH_WORK_DELAY, True),
        ("NoSuchAttribute", "Unclaimed", "Idle", None, DEFAULT_FETCH_WORK_DELAY, True),
        ("true", "Unclaimed", "Idle", None, DEFAULT_FETCH_WORK_DELAY, True),
        ("1 / 0", "Unclaimed", "Idle", None, DEFAULT_FETCH_WORK_DELAY, True),
    ],
)
def test_fetch_work_delay(
    expression: str | None,
    state: str,
    activity: str,
    job: str | None,
    seconds: int,
    problem: bool,
) -> None:
    """FetchWorkDelay is evaluated with the slot as MY and the running job as TARGET; a value
    that is not a number falls back to 300 seconds with a reason; negatives count as 0."""
    expr = parse_expr(expression) if expression is not None else None
    job_ad = parse_ad(job) if job is not None else None
    delay = fetch_work_delay(expr, _slot(state, activity), job_ad, now=1_700_000_000)
    assert delay.seconds == seconds
    assert (delay.problem is not None) == problem


def test_delay_expression_from_config() -> None:
    """FetchWorkDelay is read from the configuration (any case); unset gives None; text that
    does not parse is an error naming the knob and where it was set."""
    assert fetch_work_delay_expr(Config.from_text("")) is None
    expr = fetch_work_delay_expr(Config.from_text(f"fetchworkdelay = {SEED_DELAY}\n"))
    assert expr is not None and str(expr) == str(parse_expr(SEED_DELAY))
    with pytest.raises(FetchWorkError) as caught:
        fetch_work_delay_expr(Config.from_text("FetchWorkDelay = 3 +* 4\n", source="d.conf"))
    assert caught.value.knob == "FetchWorkDelay"
    assert "d.conf, line 1" in str(caught.value)


@pytest.mark.parametrize(
    ("last_done", "seconds", "brought_work", "due"),
    [
        (None, 300, True, -math.inf),
        (None, 0, False, -math.inf),
        (100.0, 0, True, 100.0),
        (100.0, 300, True, 400.0),
        (100.0, 0, False, 101.0),
        (100.0, 300, False, 400.0),
    ],
)
def test_fetch_due_at(
    last_done: float | None, seconds: int, brought_work: bool, due: float
) -> None:
    """A slot that never fetched may fetch at once; otherwise the delay counts from the end
    of its last attempt, and an attempt that brought nothing waits at least a second."""
    assert fetch_due_at(last_done, FetchDelay(seconds), brought_work=brought_work) == due


# -- what a hook printed ---------------------------------------------------------------------


@pytest.mark.parametrize(
    ("stdout", "kind"),
    [
        ("", "no work"),
        ("  \n\n", "no work"),
        ('Cmd = "/bin/true"\nOwner = "nobody"\n', "job"),
        ('[ Cmd = "/bin/true"; Owner = "nobody" ]', "job"),
        ("this is not a ClassAd at all", "garbage"),
        ('Cmd = "/bin/true"\nOwner = \n', "garbage"),
        ("[]", "garbage"),
        ("\x00\x01\x02 binary", "garbage"),
    ],
)
def test_fetched_from_output(stdout: str, kind: str) -> None:
    """No output is "no work"; a ClassAd in old or new syntax is a job; anything else is
    garbage with a reason."""
    fetched = fetched_from_output(stdout)
    if kind == "no work":
        assert fetched.no_work
    elif kind == "job":
        assert fetched.job is not None and fetched.job.evaluate("Cmd") == "/bin/true"
    else:
        assert fetched.job is None and fetched.problem
        assert not fetched.no_work


@given(st.text(max_size=200))
def test_hook_output_fuzz(text: str) -> None:
    """Any text is a job, no work or garbage with a reason; reading it never raises."""
    fetched = fetched_from_output(text)
    assert (fetched.job is not None) + (fetched.problem is not None) + fetched.no_work == 1


def test_keyword_and_advisory_input() -> None:
    """HookKeyword is inserted in a copy of the job; REPLY_FETCH and EVICT_CLAIM read the job
    ad, a line "-----", then the slot ad."""
    job = parse_ad('[ Cmd = "/bin/true"; ProcId = 3 ]')
    tagged = with_keyword(job, "DATABASE")
    assert tagged.evaluate("HookKeyword") == "DATABASE"
    assert "HookKeyword" not in job
    text = advisory_input(tagged, _slot("Claimed", "Busy"))
    job_text, separator, slot_text = text.partition("\n-----\n")
    assert separator
    assert parse_ad(job_text).evaluate("ProcId") == 3
    assert parse_ad(slot_text).evaluate("State") == "Claimed"


# -- required attributes ---------------------------------------------------------------------


@pytest.mark.parametrize(
    ("job", "as_root", "partitionable", "missing"),
    [
        ('[ Cmd = "/bin/true" ]', False, False, []),
        ('[ Owner = "nobody" ]', False, False, ["Cmd"]),
        ('[ Cmd = ""; Owner = "nobody" ]', True, False, ["Cmd"]),
        ("[ Cmd = 17 ]", False, False, ["Cmd"]),
        ('[ Cmd = "/bin/true" ]', True, False, ["Owner"]),
        ('[ Cmd = "/bin/true"; Owner = "nobody" ]', True, False, []),
        (
            '[ Cmd = "/bin/true"; Owner = "nobody" ]',
            True,
            True,
            ["RequestCpus", "RequestMemory", "RequestDisk"],
        ),
        (
            '[ Cmd = "/bin/true"; RequestCpus = 1; RequestMemory = 64; RequestDisk = 1024 ]',
            False,
            True,
            [],
        ),
        (
            '[ Cmd = "/bin/true"; RequestCpus = 1; RequestMemory = "lots"; RequestDisk = 1 ]',
            False,
            True,
            ["RequestMemory"],
        ),
    ],
)
def test_missing_attributes(
    job: str, as_root: bool, partitionable: bool, missing: list[str]
) -> None:
    """Cmd always, Owner when the startd is root, the three requests on a partitionable slot;
    the reason names every attribute that is missing or unusable."""
    reason = missing_attributes(parse_ad(job), as_root=as_root, partitionable=partitionable)
    if not missing:
        assert reason is None
    else:
        assert reason is not None
        for name in missing:
            assert name in reason
        for name in {"Cmd", "Owner", "RequestCpus", "RequestMemory", "RequestDisk"} - set(missing):
            assert f"{name} (" not in reason


# -- accept, preempt, reject -----------------------------------------------------------------

JOB = parse_ad('[ Cmd = "/bin/true"; Owner = "nobody"; Priority = 5 ]')


def _situation(
    place: str,
    kind: str = "static",
    *,
    claim_rank: float | None = None,
    fetched: bool = False,
    preempting: bool = False,
    shutting_down: bool = False,
) -> SlotSituation:
    state, activity = place.split("/")
    return SlotSituation(
        "slot1", state, activity, kind, claim_rank, fetched, preempting, shutting_down
    )


@pytest.mark.parametrize(
    ("situation", "start", "rank", "kind", "words"),
    [
        (_situation("Unclaimed/Idle"), "True", "0", "claim", "START is TRUE"),
        (_situation("Unclaimed/Idle", "partitionable"), "True", "0", "claim", "START is TRUE"),
        (_situation("Unclaimed/Benchmarking"), "True", "0", "claim", "START is TRUE"),
        (_situation("Backfill/Busy"), "True", "0", "claim", "START is TRUE"),
        (_situation("Unclaimed/Idle"), "TARGET.Priority > 9", "0", "reject", "START is not TRUE"),
        (_situation("Unclaimed/Idle"), "TARGET.Missing", "0", "reject", "START is not TRUE"),
        (_situation("Claimed/Idle", fetched=True, claim_rank=0), "True", "0", "reuse", "reuses"),
        (_situation("Claimed/Idle", fetched=True), "False", "0", "reject", "START is not TRUE"),
        (_situation("Claimed/Idle", "dynamic", fetched=True), "True", "0", "reuse", "reuses"),
        (
            _situation("Claimed/Idle", "dynamic", fetched=True),
            "True",
            "0",
            "reject",
            "RequestMemory 4096 exceeds the slot's Memory 1024",
        ),
        (_situation("Claimed/Busy", claim_rank=0), "True", "0", "reject", "is not above"),
        (_situation("Claimed/Busy", claim_rank=1), "True", "TARGET.Priority", "preempt", "above"),
        (
            _situation("Claimed/Busy", claim_rank=5),
            "True",
            "TARGET.Priority",
            "reject",
            "not above",
        ),
        (
            _situation("Claimed/Busy", fetched=True, claim_rank=0),
            "True",
            "TARGET.Priority",
            "preempt",
            "RANK 5 is above the claim's 0",
        ),
        (_situation("Claimed/Idle", claim_rank=0), "True", "TARGET.Priority", "preempt", "above"),
        (
            _situation("Claimed/Busy", claim_rank=0, preempting=True),
            "True",
            "TARGET.Priority",
            "reject",
            "already waits",
        ),
        (_situation("Owner/Idle"), "True", "0", "reject", "Owner/Idle"),
        (_situation("Matched/Idle"), "True", "0", "reject", "cannot take a job"),
        (_situation("Preempting/Vacating"), "True", "99", "reject", "cannot take a job"),
        (_situation("Drained/Idle"), "True", "0", "reject", "cannot take a job"),
        (_situation("Unclaimed/Idle", shutting_down=True), "True", "0", "reject", "shutting down"),
    ],
)
def test_decide(situation: SlotSituation, start: str, rank: str, kind: str, words: str) -> None:
    """Unclaimed + START: a new claim; an idle fetched claim: reuse; a claimed slot: preempt
    only for a higher RANK; an unavailable slot: reject; every decision says why."""
    slot_ad = _slot(situation.state, situation.activity, Cpus=1, Memory=1024, Disk=10_000)
    job = JOB.copy()
    if "exceeds" in words:
        job["RequestMemory"] = parse_expr("2 * 2048")
    else:
        job["RequestMemory"] = 512
    decision = decide(
        situation, job, start=parse_expr(start), rank=parse_expr(rank), slot_ad=slot_ad, now=0
    )
    assert decision.kind == kind
    assert words in decision.reason
    assert decision.accepted == (kind != "reject")


@pytest.mark.parametrize(
    ("situation", "fetches"),
    [
        (_situation("Unclaimed/Idle"), True),
        (_situation("Unclaimed/Idle", "partitionable"), True),
        (_situation("Claimed/Idle", fetched=True), True),
        (_situation("Claimed/Busy"), True),
        (_situation("Claimed/Busy", preempting=True), False),
        (_situation("Backfill/Idle"), True),
        (_situation("Owner/Idle"), False),
        (_situation("Matched/Idle"), False),
        (_situation("Preempting/Vacating"), False),
        (_situation("Drained/Retiring"), False),
        (_situation("Unclaimed/Idle", shutting_down=True), False),
    ],
)
def test_may_fetch(situation: SlotSituation, fetches: bool) -> None:
    """A slot asks for work when it could take a job: free, claimed (reuse or a preempting
    job) or running backfill; never while a preempting claim waits or the startd stops."""
    assert may_fetch(situation) is fetches
