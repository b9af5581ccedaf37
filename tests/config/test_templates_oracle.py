"""epcore's configuration templates (epcore.config.templates) checked against HTCondor 25.14.1.

Every template is used, with no arguments or with one or more plausible argument lists, in a
one-line configuration (after any definitions the case needs). The text is loaded by HTCondor's
reader and by ``Config.from_text``; every knob the template assigns (the left-hand sides of its
body and of the templates it uses in turn, after substituting the arguments) and a fixed list
of policy knobs must read the same, for the startd and for the schedd. A template used without
the arguments it requires, and a template HTCondor does not know, must fail in both.
"""

from __future__ import annotations

import re

import attrs
import pytest
from param_oracle import ParamOracle

from epcore.builtin.host import LocalHost
from epcore.config import Config
from epcore.config.templates import TEMPLATES, Template
from epcore.errors import ConfigError

SUBSYSTEMS = ("STARTD", "SCHEDD")

#: Knobs compared in every case, whatever the template assigns.
POLICY_KNOBS = (
    "START",
    "IS_OWNER",
    "SUSPEND",
    "CONTINUE",
    "PREEMPT",
    "KILL",
    "WANT_SUSPEND",
    "WANT_VACATE",
    "WANT_HOLD",
    "WANT_HOLD_REASON",
    "WANT_HOLD_SUBCODE",
    "MAXJOBRETIREMENTTIME",
    "RANK",
    "DAEMON_LIST",
    "STARTD_CRON_JOBLIST",
    "STARTD_ATTRS",
    "NUM_SLOTS_TYPE_1",
    "SLOT_TYPE_1",
    "SLOT_TYPE_1_PARTITIONABLE",
)

#: Templates the issue names, as (category, name). The issue's "Preempt_If_Runtime_Exceeded"
#: and "Hold_If_Runtime_Exceeded" are spelled ..._EXCEEDS in HTCondor 25.14.1 (the ..._EXCEEDED
#: spellings are unknown there; see test_unknown_template_fails).
REQUIRED_TEMPLATES = (
    *(
        ("POLICY", name)
        for name in (
            "Desktop",
            "UWCS_Desktop",
            "Always_Run_Jobs",
            "Limit_Job_Runtimes",
            "Preempt_If",
            "Want_Hold_If",
            "Preempt_If_Runtime_Exceeds",
            "Hold_If_Runtime_Exceeds",
            "Preempt_If_Cpus_Exceeded",
            "Hold_If_Cpus_Exceeded",
            "Preempt_If_Memory_Exceeded",
            "Hold_If_Memory_Exceeded",
            "Preempt_If_Disk_Exceeded",
            "Hold_If_Disk_Exceeded",
            "Startd_Publish_CpusUsage",
        )
    ),
    *(
        ("FEATURE", name)
        for name in (
            "PartitionableSlot",
            "StaticSlots",
            "GPUs",
            "GPUsMonitor",
            "Monitor",
            "OneShotCronHook",
            "PeriodicCronHook",
            "ContinuousCronHook",
            "StartdCronOneShot",
            "StartdCronPeriodic",
            "StartdCronContinuous",
            "ScheddCronOneShot",
            "ScheddCronPeriodic",
            "ScheddCronContinuous",
            "AssignAccountingGroup",
            "SetJobAttrFromUsermap",
            "ScheddUsermapFile",
            "REMOTE_CONFIG",
            "REMOTE_RUNTIME_CONFIG",
            "ChildCollector",
            "ganglia",
            "adstash",
        )
    ),
    *(("ROLE", name) for name in ("Personal", "Execute", "Submit", "CentralManager")),
    *(
        ("SECURITY", name)
        for name in (
            "HOST_BASED",
            "WITH_AUTHENTICATION",
            "STRONG",
            "USER_BASED",
            "get_htcondor_idtokens",
        )
    ),
)

_MEMORY = "MEMORY_EXCEEDED = (MemoryUsage > Memory)\n"
_EARLIER_POLICY = 'PREEMPT = (Owner == "bob")\nWANT_SUSPEND = True\nWANT_HOLD = (Cmd == "x")\n'


@attrs.frozen
class Case:
    """``use category : name(args)`` after ``prelude``; ``args`` None writes no parentheses."""

    category: str
    name: str
    args: str | None = None
    prelude: str = ""

    @property
    def use_line(self) -> str:
        """The ``use`` line of the case."""
        args = "" if self.args is None else f"({self.args})"
        return f"use {self.category} : {self.name}{args}"

    @property
    def text(self) -> str:
        """The whole configuration text of the case."""
        return f"{self.prelude}{self.use_line}\n"

    @property
    def id(self) -> str:
        """The test id: CATEGORY:NAME, then the arguments and a mark for a prelude."""
        args = "" if self.args is None else f"({self.args})"
        return f"{self.category}:{self.name}{args}{'+prelude' if self.prelude else ''}"


def _no_args(category: str, *names: str) -> list[Case]:
    return [Case(category, name) for name in names]


CASES: list[Case] = [
    # -- POLICY
    *_no_args(
        "POLICY",
        "ALWAYS_RUN_JOBS",
        "DESKTOP",
        "DESKTOP_HOURS",
        "DESKTOP_IDLE",
        "HOLD_IF_CPUS_EXCEEDED",
        "HOLD_IF_DISK_EXCEEDED",
        "HOLD_IF_MEMORY_EXCEEDED",
        "HOLD_IF_RUNTIME_EXCEEDS",
        "LIMIT_JOB_RUNTIMES",
        "OnlyRegisteredCheckpointDestinations",
        "PREEMPT_IF_CPUS_EXCEEDED",
        "PREEMPT_IF_DISK_EXCEEDED",
        "PREEMPT_IF_MEMORY_EXCEEDED",
        "PREEMPT_IF_RUNTIME_EXCEEDS",
        "STARTD_PUBLISH_CpusUsage",
        "UWCS_DESKTOP",
    ),
    Case("POLICY", "DESKTOP_HOURS", "7, 18"),
    Case("POLICY", "DESKTOP_HOURS", "7, 18, 1, 5"),
    Case("POLICY", "DESKTOP_IDLE", "8, 17"),
    Case("POLICY", "DESKTOP_IDLE", "8, 17, 2, 6"),
    Case("POLICY", "HOLD_IF_RUNTIME_EXCEEDS", "3600"),
    Case("POLICY", "LIMIT_JOB_RUNTIMES", "7200"),
    Case("POLICY", "PREEMPT_IF_RUNTIME_EXCEEDS", "600"),
    Case("POLICY", "PREEMPT_IF", "MEMORY_EXCEEDED", _MEMORY),
    Case("POLICY", "PREEMPT_IF", "MEMORY_EXCEEDED", _EARLIER_POLICY + _MEMORY),
    Case("POLICY", "WANT_HOLD_IF", "MEMORY_EXCEEDED, 102, memory usage exceeded", _MEMORY),
    Case(
        "POLICY",
        "WANT_HOLD_IF",
        "MEMORY_EXCEEDED, 102, over, by far",
        _EARLIER_POLICY + _MEMORY,
    ),
    Case("POLICY", "PREEMPT_IF_MEMORY_EXCEEDED", None, _EARLIER_POLICY),
    # -- FEATURE
    *_no_args(
        "FEATURE",
        "ADSTASH",
        "CommonCloudAttributesAWS",
        "CommonCloudAttributesGoogle",
        "DefaultCheckpointDestination",
        "GANGLIA",
        "GPUs",
        "GPUsMonitor",
        "HPC_ANNEX",
        "JobsHaveInstanceIDs",
        "KRB",
        "LIBRARIAN",
        "METRICD",
        "OAUTH",
        "PartitionableSlot",
        "PelicanCache",
        "PelicanRetryPolicy",
        "POLICY_EXPR_FRAGMENTS",
        "POLICY_HOURS_TO_START",
        "REMOTE_CONFIG",
        "REMOTE_RUNTIME_CONFIG",
        "StaticSlots",
        "TESTINGMODE_POLICY_VALUES",
        "UWCS_DESKTOP_POLICY_VALUES",
    ),
    Case("FEATURE", "AssignAccountingGroup", "/etc/condor/accounting.map"),
    Case("FEATURE", "AssignAccountingGroup", "/etc/condor/accounting.map, false"),
    Case("FEATURE", "AssignProjectName", "Projects"),
    Case("FEATURE", "AssignProjectName", "Projects, /etc/condor/projects.map"),
    Case("FEATURE", "ChildCollector", "1"),
    Case("FEATURE", "ChildCollector", "2, 9620"),
    Case("FEATURE", "CommonCloudAttributesAWS", "--verbose"),
    Case("FEATURE", "ContinuousCronHook", "STARTD_CRON, WATCH, /usr/bin/watcher"),
    Case("FEATURE", "ContinuousCronHook", "SCHEDD_CRON, WATCH, /usr/bin/watcher, -q"),
    Case(
        "FEATURE",
        "DefaultCheckpointDestination",
        None,
        "DEFAULT_CHECKPOINT_DESTINATION_PREFIX = https://example.org/ckpt\n",
    ),
    Case("FEATURE", "GPUs", "-extra -nvcuda"),
    Case("FEATURE", "LIBRARIAN", "2GB, /var/lib/condor/librarian.db"),
    Case("FEATURE", "Monitor", "GPUs, WaitForExit, 300, /bin/x, SUM:GPUs, PEAK:GPUsMemory"),
    Case("FEATURE", "Monitor", "NET, Periodic, 60, /usr/bin/netmon, SUM:NetBytes"),
    Case("FEATURE", "OneShotCronHook", "STARTD_CRON, INIT, /usr/bin/init-hook"),
    Case("FEATURE", "OneShotCronHook", "SCHEDD_CRON, INIT, /usr/bin/init-hook, --once"),
    Case("FEATURE", "PartitionableSlot", "2"),
    Case("FEATURE", "PartitionableSlot", "1, cpus=50%, memory=50%"),
    Case("FEATURE", "PartitionableSlot", "2, cpus=4"),
    Case("FEATURE", "PartitionableSlot", "2,"),
    Case("FEATURE", "PartitionableSlot", "2, "),
    Case("FEATURE", "PelicanCache", "10GB, /scratch/cache, example.org"),
    Case("FEATURE", "PeriodicCronHook", "STARTD_CRON, DATE, 15s, /bin/date"),
    Case("FEATURE", "PeriodicCronHook", "SCHEDD_CRON, DATE, 60, /bin/date, -u"),
    Case("FEATURE", "POLICY_HOURS_TO_START", "7, 19"),
    Case("FEATURE", "POLICY_HOURS_TO_START", "7, 19, 1, 5"),
    Case("FEATURE", "REMOTE_CONFIG", "START, PREEMPT"),
    Case("FEATURE", "REMOTE_RUNTIME_CONFIG", "START", "SETTABLE_ATTRS_CONFIG = RANK\n"),
    Case("FEATURE", "REMOTE_RUNTIME_CONFIG", "x,,y"),
    Case("FEATURE", "REMOTE_RUNTIME_CONFIG", ","),
    Case("FEATURE", "ScheddCronContinuous", "WATCH, /usr/bin/watcher"),
    Case("FEATURE", "ScheddCronOneShot", "DATE, /bin/date"),
    Case("FEATURE", "ScheddCronPeriodic", "DATE, 15s, /bin/date"),
    Case("FEATURE", "ScheddCronPeriodic", "DATE, 15s, /bin/date, -u"),
    Case("FEATURE", "ScheddUsermapFile", "Groups, /etc/condor/groups.map"),
    Case("FEATURE", "SetJobAttrFromUsermap", "ProjectName, Owner, Projects"),
    Case("FEATURE", "SetJobAttrFromUsermap", "ProjectName, Owner, Projects, /etc/p.map"),
    Case("FEATURE", "StartdCronContinuous", "WATCH, /usr/bin/watcher"),
    Case("FEATURE", "StartdCronOneShot", "DATE, /bin/date"),
    Case("FEATURE", "StartdCronOneShot", "DATE, /bin/date, -u"),
    Case("FEATURE", "StartdCronPeriodic", "DATE, 15s, /bin/date"),
    Case("FEATURE", "StartdCronPeriodic", "DATE, 15s, /bin/date, -u +%s"),
    Case("FEATURE", "StaticSlots", "1"),
    Case("FEATURE", "StaticSlots", "2, 3"),
    Case("FEATURE", "StaticSlots", "2, 3, cpus=1"),
    Case("FEATURE", "StaticSlots", "1, 4, cpus=1, memory=25%"),
    # -- ROLE
    *_no_args(
        "ROLE",
        "CentralManager",
        "Execute",
        "get_htcondor_central_manager",
        "get_htcondor_execute",
        "get_htcondor_submit",
        "Personal",
        "Submit",
    ),
    Case("ROLE", "Submit", None, "DAEMON_LIST = MASTER SHARED_PORT\n"),
    # -- SECURITY
    *_no_args(
        "SECURITY",
        "FIPS",
        "get_htcondor_idtokens",
        "HOST_BASED",
        "recommended",
        "recommended_v24_0",
        "recommended_v9_0",
        "STRONG",
        "USER_BASED",
        "WITH_AUTHENTICATION",
    ),
    Case("SECURITY", "recommended", "service"),
    Case("SECURITY", "recommended", "service, admin@example.org"),
    Case("SECURITY", "recommended_v24_0", "svc, boss@*, a@*, b@*"),
    # The argument splitter: blank pieces are dropped, $(N+) keeps the raw rest.
    Case("SECURITY", "recommended_v24_0", "a, ,c,d"),
    Case("SECURITY", "recommended_v24_0", "a,b,,d"),
    Case("SECURITY", "recommended_v24_0", " , ,z"),
    Case("SECURITY", "recommended_v24_0", "x, y ,z"),
    Case("SECURITY", "recommended_v24_0", "a,b,c(x,y),d"),
    Case("SECURITY", "recommended_v24_0", "a $(2), b"),
    Case("SECURITY", "recommended_v9_0", "svc"),
    Case("SECURITY", "recommended_v9_0", "svc, boss@*, other@*"),
]

#: Knobs whose value holds a $RANDOM_INTEGER draw; they are compared with numbers masked.
_RANDOM_KNOBS = frozenset({"UWCS_PERIODIC_CHECKPOINT", "PERIODIC_CHECKPOINT"})

#: Cases of templates used without the arguments they require.
MISSING_ARGS: list[Case] = [
    Case("POLICY", "PREEMPT_IF"),
    Case("POLICY", "PREEMPT_IF", ""),
    Case("POLICY", "WANT_HOLD_IF", "MEMORY_EXCEEDED", _MEMORY),
    Case("POLICY", "WANT_HOLD_IF", "MEMORY_EXCEEDED, 102", _MEMORY),
    Case("FEATURE", "AssignAccountingGroup"),
    Case("FEATURE", "AssignProjectName"),
    Case("FEATURE", "ContinuousCronHook", "STARTD_CRON, WATCH"),
    Case("FEATURE", "Monitor"),
    Case("FEATURE", "Monitor", "GPUs, WaitForExit, 300, /bin/x"),
    Case("FEATURE", "OneShotCronHook", "STARTD_CRON, INIT"),
    Case("FEATURE", "PeriodicCronHook", "STARTD_CRON, DATE, 15s"),
    Case("FEATURE", "ScheddCronContinuous", "WATCH"),
    Case("FEATURE", "ScheddCronOneShot"),
    Case("FEATURE", "ScheddCronPeriodic", "DATE, 15s"),
    Case("FEATURE", "ScheddUsermapFile", "Groups"),
    Case("FEATURE", "SetJobAttrFromUsermap", "ProjectName, Owner"),
    Case("FEATURE", "StartdCronContinuous"),
    Case("FEATURE", "StartdCronOneShot", "DATE"),
    Case("FEATURE", "StartdCronPeriodic", "DATE, 15s"),
    Case("FEATURE", "StartdCronPeriodic", " , ,"),
]

#: Templates HTCondor 25.14.1 does not know (and categories it does not have).
UNKNOWN: list[Case] = [
    Case("POLICY", "NoSuchPolicy"),
    Case("POLICY", "Preempt_If_Runtime_Exceeded"),
    Case("POLICY", "Hold_If_Runtime_Exceeded"),
    Case("FEATURE", "NoSuchFeature", "1, 2"),
    Case("ROLE", "Worker"),
    Case("SECURITY", "recommended_v8_0"),
    Case("NOSUCHCATEGORY", "Desktop"),
    Case("ROLE", "Execute, Sbumit"),
]


def _find(category: str, name: str) -> Template | None:
    for template in TEMPLATES:
        if template.category.lower() == category.lower() and template.name.lower() == name.lower():
            return template
    return None


# -- collecting the knobs a template assigns --------------------------------------------------

_ARG_REF = re.compile(r"\$\((\d+)([?#+]?)(?::([^()]*(?:\([^()]*\)[^()]*)*))?\)")
_ASSIGN = re.compile(r"^([^\s=:+@]+)\s*(?:\+=|@=|=)")
_BLOCK = re.compile(r"^\S+\s*@=\s*(\S+)\s*$")
_USE = re.compile(r"^use\s+(\w+)\s*:\s*(.*)$", re.IGNORECASE)
_ITEM = re.compile(r"\s*,?\s*([^\s,(]+)\s*(?:\(((?:[^()]|\([^()]*\))*)\))?")


def _substitute(body: str, args: str) -> str:
    """Substitute the argument references of ``body`` (enough of the rules to name knobs)."""
    pieces = [piece.strip() for piece in args.split(",") if piece.strip()]

    def one(match: re.Match[str]) -> str:
        index, mark, default = int(match.group(1)), match.group(2), match.group(3)
        if index == 0:
            value = str(len(pieces)) if mark in ("#", "+") else args.strip()
        elif mark in ("#", "+"):
            value = ", ".join(pieces[index - 1 :]) or (default or "")
        elif index <= len(pieces):
            value = pieces[index - 1]
        else:
            value = default or ""
        if mark == "?":
            return "1" if value.strip() else "0"
        return value.strip()

    for _ in range(50):
        replaced = _ARG_REF.sub(one, body)
        if replaced == body:
            break
        body = replaced
    return body


def assigned_knobs(category: str, name: str, args: str | None, depth: int = 0) -> list[str]:
    """Knob names the template assigns, including those of the templates it uses."""
    template = _find(category, name)
    if template is None or depth > 10:
        return []
    body = _substitute(template.body, args or "")
    names: list[str] = []
    block: str | None = None
    for raw in body.splitlines():
        line = raw.strip()
        if block is not None:
            if line == "@" + block:
                block = None
            continue
        use = _USE.match(line)
        if use:
            for item in _ITEM.finditer(use.group(2)):
                names += assigned_knobs(use.group(1), item.group(1), item.group(2), depth + 1)
            continue
        opened = _BLOCK.match(line)
        if opened:
            block = opened.group(1)
        assigned = _ASSIGN.match(line)
        if assigned and "$" not in assigned.group(1):
            names.append(assigned.group(1))
    return names


# -- comparing -----------------------------------------------------------------------------


def _normal(text: str | None) -> str | None:
    """Whitespace runs collapsed to one space and trimmed; empty text counts as no value."""
    if text is None:
        return None
    return " ".join(text.split()) or None


def _masked(text: str | None) -> str | None:
    return None if text is None else re.sub(r"-?\d+", "N", text)


def _compare(case: Case, subsystem: str, oracle: ParamOracle, host: LocalHost) -> None:
    names = list(
        dict.fromkeys([*assigned_knobs(case.category, case.name, case.args), *POLICY_KNOBS])
    )
    answer = oracle.load(case.text, names, subsystem=subsystem)
    assert answer.error is None, f"HTCondor refused {case.text!r}: {answer.error}"
    config = Config.from_text(case.text, host=host, subsystem=subsystem)
    wrong = []
    for name in names:
        ours = _normal(config.get(name))
        theirs = _normal(answer.values[name].text)
        if name.upper() in _RANDOM_KNOBS:
            ours, theirs = _masked(ours), _masked(theirs)
        if ours != theirs:
            wrong.append(f"  {name}: epcore {ours!r}, HTCondor {theirs!r}")
    assert not wrong, f"{case.text!r} as {subsystem}:\n" + "\n".join(wrong)


@pytest.mark.oracle
@pytest.mark.parametrize("subsystem", SUBSYSTEMS)
@pytest.mark.parametrize("case", CASES, ids=[case.id for case in CASES])
def test_template_matches_htcondor(
    case: Case, subsystem: str, param_oracle: ParamOracle, local_host: LocalHost
) -> None:
    """Every knob the template assigns, and every policy knob, reads as in HTCondor."""
    _compare(case, subsystem, param_oracle, local_host)


@pytest.mark.oracle
@pytest.mark.parametrize("case", MISSING_ARGS, ids=[case.id for case in MISSING_ARGS])
def test_missing_required_arguments_fail(
    case: Case, param_oracle: ParamOracle, local_host: LocalHost
) -> None:
    """A template used without its required arguments stops the load at the use line."""
    answer = param_oracle.load(case.text, ["START"], subsystem="STARTD")
    assert answer.error is not None, f"HTCondor accepted {case.text!r}"
    line = case.text.count("\n")
    with pytest.raises(ConfigError) as raised:
        Config.from_text(case.text, host=local_host, subsystem="STARTD", source="case.conf")
    assert raised.value.source == "case.conf"
    assert raised.value.line == line
    assert "case.conf" in str(raised.value) and str(line) in str(raised.value)


@pytest.mark.oracle
@pytest.mark.parametrize("case", UNKNOWN, ids=[case.id for case in UNKNOWN])
def test_unknown_template_fails(
    case: Case, param_oracle: ParamOracle, local_host: LocalHost
) -> None:
    """A template (or category) HTCondor does not know stops the load at the use line."""
    answer = param_oracle.load(case.text, ["START"], subsystem="STARTD")
    assert answer.error is not None, f"HTCondor accepted {case.text!r}"
    with pytest.raises(ConfigError) as raised:
        Config.from_text(case.text, host=local_host, subsystem="STARTD", source="case.conf")
    assert raised.value.source == "case.conf"
    assert raised.value.line == case.text.count("\n")


@pytest.mark.parametrize(
    ("category", "name"), REQUIRED_TEMPLATES, ids=[f"{c}:{n}" for c, n in REQUIRED_TEMPLATES]
)
def test_required_template_present(category: str, name: str) -> None:
    """Every template the issue names is in TEMPLATES (looked up without regard to case)."""
    assert _find(category, name) is not None


def test_every_template_has_a_case() -> None:
    """Each template of the table is exercised by at least one oracle case."""
    covered = {(case.category.lower(), case.name.lower()) for case in CASES}
    missing = [
        f"{t.category}:{t.name}"
        for t in TEMPLATES
        if (t.category.lower(), t.name.lower()) not in covered
    ]
    assert not missing


def test_template_names_are_unique() -> None:
    """No two templates share a category and name, ignoring case."""
    keys = [(t.category.lower(), t.name.lower()) for t in TEMPLATES]
    assert len(keys) == len(set(keys))


def test_templates_cover_the_four_categories() -> None:
    """The table holds POLICY, FEATURE, ROLE and SECURITY templates and nothing else."""
    assert {t.category for t in TEMPLATES} == {"POLICY", "FEATURE", "ROLE", "SECURITY"}
