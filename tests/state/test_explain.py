"""Policy explanations: which sub-expressions decided a value, where names came from, the
slot's policy expressions by state, and a job's Requirements, START and ranks."""

from __future__ import annotations

import classad2
import pytest

from epcore.classad import ERROR, UNDEFINED, ClassAd, Value, parse_ad, parse_expr
from epcore.config import Config
from epcore.config.memory_host import MemoryHost
from epcore.state.explain import (
    Explanation,
    explain_expression,
    explain_job,
    explain_slot,
    policy_names,
    value_text,
)

NOW = 1_700_000_000.0

SLOT = parse_ad(
    """[ Name = "slot1@ep"; SlotID = 1; State = "Owner"; Activity = "Idle";
         KeyboardIdle = 34; Memory = 2048; Cpus = 4; LoadAvg = 0.1; CondorLoadAvg = 0.0;
         Start = KeyboardIdle > 15 * 60; Requirements = START; Rank = 0.0;
         Big = Memory * 2; Loop = Loop + 1 ]"""
)
JOB = parse_ad('[ RequestMemory = 4096; Owner = "alice"; Requirements = true; Rank = Cpus ]')


def tree(expression: str, my: ClassAd | None = SLOT, target: ClassAd | None = JOB) -> Explanation:
    return explain_expression(expression, my, target, now=NOW, my_name="slot", target_name="job")


def summary(node: Explanation) -> tuple[object, ...]:
    """(text, value text, children summaries): the shape a case states."""
    return (node.text, value_text(node.value), tuple(summary(c) for c in node.children))


# (expression, expected (text, value, children) tree)
CASES: list[tuple[str, tuple[object, ...]]] = [
    (
        "KeyboardIdle > 100 && Memory > 1000",
        (
            "KeyboardIdle > 100 && Memory > 1000",
            "FALSE",
            (("KeyboardIdle > 100", "FALSE", (("KeyboardIdle", "34", ()),)),),
        ),
    ),
    (
        "Memory > 1000 && KeyboardIdle > 10",
        (
            "Memory > 1000 && KeyboardIdle > 10",
            "TRUE",
            (
                ("Memory > 1000", "TRUE", (("Memory", "2048", ()),)),
                ("KeyboardIdle > 10", "TRUE", (("KeyboardIdle", "34", ()),)),
            ),
        ),
    ),
    (
        "Cpus < 2 || KeyboardIdle > 10 || Memory > 1",
        (
            "Cpus < 2 || KeyboardIdle > 10 || Memory > 1",
            "TRUE",
            (("KeyboardIdle > 10", "TRUE", (("KeyboardIdle", "34", ()),)),),
        ),
    ),
    (
        "Cpus < 2 || Memory < 1",
        (
            "Cpus < 2 || Memory < 1",
            "FALSE",
            (
                ("Cpus < 2", "FALSE", (("Cpus", "4", ()),)),
                ("Memory < 1", "FALSE", (("Memory", "2048", ()),)),
            ),
        ),
    ),
    (
        "!(Cpus > 2)",
        ("!(Cpus > 2)", "FALSE", (("Cpus > 2", "TRUE", (("Cpus", "4", ()),)),)),
    ),
    (
        "Cpus > 2 ? Owner : 0",
        (
            "Cpus > 2 ? Owner : 0",
            '"alice"',
            (("Cpus > 2", "TRUE", (("Cpus", "4", ()),)), ("Owner", '"alice"', ())),
        ),
    ),
    (
        "Nothing ?: Cpus",
        ("Nothing ?: Cpus", "4", (("Nothing", "UNDEFINED", ()), ("Cpus", "4", ()))),
    ),
    (
        'strcat(Owner, "-x")',
        ('strcat(Owner,"-x")', '"alice-x"', (("Owner", '"alice"', ()),)),
    ),
    (
        "Nothing =?= undefined",
        ("Nothing =?= undefined", "TRUE", (("Nothing", "UNDEFINED", ()),)),
    ),
    (
        "LoadAvg <= 0.3 =!= false",
        (
            "LoadAvg <= 0.3 =!= false",
            "TRUE",
            (("LoadAvg <= 0.3", "TRUE", (("LoadAvg", "0.1", ()),)),),
        ),
    ),
    (
        "Nothing && true",
        ("Nothing && true", "UNDEFINED", (("Nothing", "UNDEFINED", ()),)),
    ),
    (
        'Cpus > "x" || false',
        ('Cpus > "x" || false', "ERROR", (('Cpus > "x"', "ERROR", (("Cpus", "4", ()),)),)),
    ),
    (
        "Big > 1",
        (
            "Big > 1",
            "TRUE",
            (("Big", "4096", (("Memory * 2", "4096", (("Memory", "2048", ()),)),)),),
        ),
    ),
    (
        "TARGET.RequestMemory <= MY.Memory",
        (
            "TARGET.RequestMemory <= MY.Memory",
            "FALSE",
            (("TARGET.RequestMemory", "4096", ()), ("MY.Memory", "2048", ())),
        ),
    ),
]


@pytest.mark.parametrize(("expression", "expected"), CASES)
def test_explanation_tree(expression: str, expected: tuple[object, ...]) -> None:
    """Each operator keeps exactly the sub-expressions that decided its value."""
    assert summary(tree(expression)) == expected


@pytest.mark.parametrize(
    ("expression", "origin", "ad"),
    [
        ("KeyboardIdle", "MY", "slot"),
        ("RequestMemory", "TARGET", "job"),
        ("MY.Memory", "MY", "slot"),
        ("TARGET.Owner", "TARGET", "job"),
        ("TARGET.Memory", "undefined", None),
        ("NoSuchThing", "undefined", None),
        ("CurrentTime", "built-in", None),
    ],
)
def test_reference_origin(expression: str, origin: str, ad: str | None) -> None:
    """A name says which ad the engine found it in, or that neither ad has it."""
    node = tree(expression)
    assert (node.origin, node.ad) == (origin, ad)


def test_reduced_form_names_the_folded_threshold() -> None:
    """The seed's Owner-state START reads as KeyboardIdle > 900 with KeyboardIdle = 34."""
    node = tree("KeyboardIdle > 15 * 60")
    assert node.value is False
    assert node.reduced == "KeyboardIdle > 900"
    assert [(c.text, c.value, c.origin, c.ad) for c in node.children] == [
        ("KeyboardIdle", 34, "MY", "slot")
    ]


def test_cycle_is_not_followed_forever() -> None:
    """A self-referencing attribute is expanded once and then left as a name."""
    node = tree("Loop")
    assert node.value is UNDEFINED
    assert len(node.children) == 1
    assert all(not child.children or child.origin is None for child in node.children[0].children)


@pytest.mark.parametrize(
    ("value", "text"),
    [(True, "TRUE"), (False, "FALSE"), (UNDEFINED, "UNDEFINED"), (ERROR, "ERROR"), (2.5, "2.5")],
)
def test_value_text(value: Value, text: str) -> None:
    """Booleans, UNDEFINED and ERROR are capitalised for people; others are ClassAd syntax."""
    assert value_text(value) == text


def config(text: str) -> Config:
    return Config.from_text(text, host=MemoryHost(), source="/etc/condor/condor_config")


def test_owner_state_start_from_the_seed() -> None:
    """START = KeyboardIdle > 15 * $(MINUTE): the slot explanation names the knob, its file
    and line, KeyboardIdle > 900 and KeyboardIdle = 34."""
    explained = explain_slot(config("START = KeyboardIdle > 15 * $(MINUTE)\n"), SLOT, now=NOW)
    assert (explained.slot, explained.state, explained.activity) == ("slot1@ep", "Owner", "Idle")
    start = next(p for p in explained.policies if p.name == "START")
    assert start.value is False
    assert start.source == "KeyboardIdle > 15 * $(MINUTE)"
    assert start.origin == "/etc/condor/condor_config, line 1"
    assert start.explanation.reduced == "KeyboardIdle > 900"
    assert [(c.text, c.value) for c in start.explanation.children] == [("KeyboardIdle", 34)]


def test_desktop_policy_start() -> None:
    """The Desktop policy's START is false on a slot whose keyboard was touched 34 s ago, and
    the keyboard comparison is what decided it."""
    conf = config("use POLICY : Desktop\n")
    slot = SLOT.copy()
    start_text = conf.get("START")
    assert start_text is not None
    slot["Start"] = parse_expr(start_text)
    start = next(p for p in explain_slot(conf, slot, now=NOW).policies if p.name == "START")
    assert start.value is False
    assert start.origin is not None and "use POLICY:DESKTOP" in start.origin
    assert [c.reduced for c in start.explanation.children] == ["KeyboardIdle > 900"]


@pytest.mark.parametrize(
    ("state", "activity", "backfill", "names"),
    [
        ("Owner", "Idle", False, ("IS_OWNER", "START")),
        ("Unclaimed", "Idle", True, ("IS_OWNER", "START", "RUNBENCHMARKS", "START_BACKFILL")),
        ("Matched", "Idle", False, ("START",)),
        ("Claimed", "Busy", False, ("START", "PREEMPT", "WANT_SUSPEND", "SUSPEND", "RANK")),
        ("Claimed", "Suspended", False, ("CONTINUE", "PREEMPT")),
        ("Preempting", "Vacating", False, ("WANT_VACATE", "KILL")),
    ],
)
def test_policy_names_by_state(
    state: str, activity: str, backfill: bool, names: tuple[str, ...]
) -> None:
    """Each state explains the policy expressions that decide its next transition."""
    assert policy_names(state, activity, backfill=backfill) == names


def test_claimed_policies_see_the_job() -> None:
    """A claimed slot's PREEMPT is evaluated against the job it runs."""
    slot = SLOT.copy()
    slot["State"] = "Claimed"
    slot["Activity"] = "Busy"
    conf = config('PREEMPT = TARGET.Owner == "alice"\n')
    explained = explain_slot(conf, slot, JOB, now=NOW)
    preempt = next(p for p in explained.policies if p.name == "PREEMPT")
    assert preempt.value is True
    assert [p.name for p in explained.policies] == [
        "START",
        "PREEMPT",
        "WANT_SUSPEND",
        "SUSPEND",
        "RANK",
    ]


def test_job_fails_the_slot_requirements_on_memory() -> None:
    """A job asking for more memory than the slot has fails the slot's Requirements, and
    the explanation shows both memory values."""
    slot = SLOT.copy()
    slot["KeyboardIdle"] = 5000
    slot["Start"] = parse_expr("TARGET.RequestMemory <= Memory")
    slot["Requirements"] = parse_expr("START")
    job = explain_job(config(""), slot, JOB, now=NOW)
    assert not job.matches and not job.would_start
    assert job.slot_requirements.value is False
    assert job.job_requirements.value is True
    comparison = job.slot_requirements.explanation.children[0]
    assert comparison.text == "TARGET.RequestMemory <= Memory"
    assert [(c.text, c.value, c.ad) for c in comparison.children] == [
        ("TARGET.RequestMemory", 4096, "job"),
        ("Memory", 2048, "slot"),
    ]
    assert (
        job.verdict == "the job would not start because slot Requirements is FALSE; START is FALSE"
    )


def test_job_would_start_and_ranks() -> None:
    """A job both sides accept would start; the slot's RANK and the job's Rank are their values
    against each other."""
    slot = SLOT.copy()
    slot["KeyboardIdle"] = 5000
    slot["Rank"] = parse_expr("TARGET.RequestMemory / 1024")
    slot["Requirements"] = True
    job = explain_job(config(""), slot, JOB, now=NOW)
    assert job.matches and job.would_start
    assert job.verdict == "the job would start: both Requirements and START are TRUE"
    assert job.slot_rank.value == 4.0
    assert job.job_rank.value == 4
    assert job.job_rank.explanation.ad == "slot"


def test_job_without_requirements_never_matches() -> None:
    """A job ad without Requirements matches nothing, and the explanation says it is missing."""
    slot = SLOT.copy()
    slot["Requirements"] = True
    slot["KeyboardIdle"] = 5000
    job = explain_job(config(""), slot, parse_ad("[ RequestMemory = 1 ]"), now=NOW)
    assert not job.matches
    assert job.job_requirements.explanation.note == "the job ad has no Requirements"


def test_unparsable_knob_is_reported_as_error() -> None:
    """A policy knob that does not parse is explained as ERROR with the parse message."""
    explained = explain_slot(config("IS_OWNER = (\n"), SLOT, now=NOW)
    is_owner = next(p for p in explained.policies if p.name == "IS_OWNER")
    assert is_owner.value is ERROR
    assert is_owner.explanation.note is not None
    assert is_owner.explanation.note.startswith("does not parse")


# -- the oracle: classad2 gives every printed sub-expression the printed value ----------

ORACLE_SLOT = (
    '[ KeyboardIdle = 34; Memory = 2048; Cpus = 4; State = "Unclaimed"; LoadAvg = 0.1;'
    " Big = Memory * 2; Start = KeyboardIdle > 15 * 60 && Cpus >= 1 ]"
)
ORACLE_JOB = '[ RequestMemory = 4096; Owner = "alice"; Want = RequestMemory > 1000 ]'

ORACLE_EXPRESSIONS = [
    "KeyboardIdle > 15 * 60",
    'KeyboardIdle > 15 * 60 && (LoadAvg < 0.3 || State != "Unclaimed")',
    "Start || Big > 1000",
    'TARGET.RequestMemory <= MY.Memory && TARGET.Owner == "alice"',
    '!(Cpus > 2) ? Nothing : strcat(TARGET.Owner, "-", Cpus)',
    "Nothing && true",
    "Nothing ?: TARGET.Want",
    "LoadAvg <= 0.3 =!= false && Nothing =?= undefined",
    "(LoadAvg - 0.05) * 2.5 > 0.1",
    "TARGET.Want && Big > 1000",
    'Cpus > "x" || false',
]


def oracle_value(value: object) -> Value:
    """A classad2 result as an epcore value."""
    # classad2.Value is an IntEnum: True == Value.Error, so test the type first.
    if isinstance(value, classad2.Value):
        return UNDEFINED if value == classad2.Value.Undefined else ERROR
    return value  # type: ignore[return-value]


def walk(node: Explanation, my: str, target: str) -> list[tuple[str, str, str, Value]]:
    """(text, MY ad, TARGET ad, value) for every node, following the scope swap of a name
    found in TARGET."""
    found = [(node.text, my, target, node.value)]
    inner = (target, my) if node.origin == "TARGET" else (my, target)
    for child in node.children:
        found.extend(walk(child, *inner) if node.origin else walk(child, my, target))
    return found


@pytest.mark.oracle
@pytest.mark.parametrize("expression", ORACLE_EXPRESSIONS)
def test_every_printed_value_matches_the_oracle(expression: str) -> None:
    """classad2 evaluates each printed sub-expression to the printed value."""
    tree = explain_expression(expression, parse_ad(ORACLE_SLOT), parse_ad(ORACLE_JOB), now=0.0)
    for text, my, target, value in walk(tree, ORACLE_SLOT, ORACLE_JOB):
        # The holder ad owns the tree (a bare classad2.ExprTree would dangle).
        holder = classad2.ClassAd(f"[__e = {text}\n]")
        expected = holder.lookup("__e").eval(classad2.ClassAd(my), classad2.ClassAd(target))
        got = oracle_value(expected)
        assert type(got) is type(value) and got == value, (text, got, value)
