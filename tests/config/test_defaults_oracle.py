"""epcore's default table (epcore.config.defaults) checked against HTCondor 25.14.1's own.

With an empty configuration file, every knob of KNOB_DEFAULTS must read the same through
``Config.get`` as through htcondor2.param, for the startd, the negotiator and the schedd. The
oracle is asked once per subsystem for every name; the table is also checked for completeness
against the knobs the seed documents name (tests/data/seed_knobs.toml). The numeric bounds the
table records are checked by setting knobs outside them: HTCondor's typed read and epcore's
``get_int`` / ``get_float`` must both give the bound.
"""

from __future__ import annotations

import re
import tomllib
from collections.abc import Mapping
from pathlib import Path

import pytest
from param_oracle import OracleValue, ParamOracle

from epcore.builtin.host import LocalHost
from epcore.config import Config
from epcore.config.defaults import DETECTED_KNOBS, KNOB_DEFAULTS, KnobDefault

SEED_KNOBS = Path(__file__).resolve().parents[1] / "data" / "seed_knobs.toml"

SUBSYSTEMS = ("STARTD", "NEGOTIATOR", "SCHEDD")

#: Names among the seeds' knobs that are debug categories (values of the *_DEBUG knobs), not
#: configuration variables.
NOT_KNOBS = frozenset({"D_FULLDEBUG", "D_LOAD"})

#: The Python type htcondor2.param.get returns for each declared kind.
PYTHON_KIND = {
    "string": "str",
    "path": "str",
    "int": "int",
    "long": "int",
    "double": "float",
    "bool": "bool",
}

_RANDOM_INTEGER = re.compile(r"\$RANDOM_INTEGER\(\s*(-?\d+)\s*,\s*(-?\d+)\s*(?:,\s*(\d+)\s*)?\)")
_MACRO_REF = re.compile(r"\$\(([A-Za-z0-9_.]+)")


def _normal(text: str | None) -> str | None:
    """Whitespace runs collapsed to one space and trimmed; empty text counts as no value."""
    if text is None:
        return None
    collapsed = " ".join(text.split())
    return collapsed or None


def _assert_random_expansion(raw: str, ours: str | None, theirs: str | None) -> None:
    """Both expansions have the raw text's shape, each $RANDOM_INTEGER drawn from its range."""
    pieces = _RANDOM_INTEGER.split(raw)
    ranges = []
    pattern = ""
    for index in range(0, len(pieces), 4):
        literal = _normal(pieces[index]) or ""
        assert "$" not in literal, f"{raw!r} mixes macros with $RANDOM_INTEGER"
        pattern += r"\s*".join(re.escape(part) for part in literal.split(" "))
        if index + 3 < len(pieces):
            low, high, step = pieces[index + 1 : index + 4]
            ranges.append((int(low), int(high), int(step or 1)))
            pattern += r"\s*(-?\d+)\s*"
    for text in (ours, theirs):
        assert text is not None
        found = re.fullmatch(pattern, _normal(text) or "")
        assert found is not None, f"{text!r} does not have the shape of {raw!r}"
        for drawn, (low, high, step) in zip(found.groups(), ranges, strict=True):
            assert low <= int(drawn) <= high and (int(drawn) - low) % step == 0


def _cases() -> list[tuple[KnobDefault, str, str]]:
    """(entry, subsystem, name to read): bare knobs in every subsystem of SUBSYSTEMS; a
    subsystem-specific entry ``SUBSYS.NAME`` as NAME read by that subsystem, which is how a
    daemon meets it."""
    cases = []
    for entry in KNOB_DEFAULTS:
        prefix, dot, bare = entry.name.partition(".")
        if dot:
            cases.append((entry, prefix.upper(), bare))
        else:
            cases.extend((entry, subsystem, entry.name) for subsystem in SUBSYSTEMS)
    return cases


CASES = _cases()
ALL_SUBSYSTEMS = sorted({case[1] for case in CASES})


@pytest.fixture(scope="module")
def oracle_defaults(param_oracle: ParamOracle) -> dict[str, Mapping[str, OracleValue]]:
    """HTCondor's view of every table name under an empty configuration, per subsystem."""
    names = sorted({case[2] for case in CASES} | {entry.name for entry in KNOB_DEFAULTS})
    views: dict[str, Mapping[str, OracleValue]] = {}
    for subsystem in ALL_SUBSYSTEMS:
        answer = param_oracle.load("", names, subsystem=subsystem)
        assert answer.error is None, answer.error
        views[subsystem] = answer.values
    return views


@pytest.fixture(scope="module")
def empty_configs(local_host: LocalHost) -> dict[str, Config]:
    """epcore's reading of an empty configuration, one per subsystem."""
    return {
        subsystem: Config.from_text("", host=local_host, subsystem=subsystem)
        for subsystem in ALL_SUBSYSTEMS
    }


@pytest.mark.oracle
@pytest.mark.parametrize(
    ("entry", "subsystem", "name"), CASES, ids=[f"{c[0].name}-{c[1]}" for c in CASES]
)
def test_default_expands_as_htcondor_does(
    entry: KnobDefault,
    subsystem: str,
    name: str,
    oracle_defaults: dict[str, Mapping[str, OracleValue]],
    empty_configs: dict[str, Config],
) -> None:
    """With no configuration, epcore's value of the knob equals condor_config_val's."""
    theirs = oracle_defaults[subsystem][name].text
    ours = empty_configs[subsystem].get(name)
    if entry.default is not None and _RANDOM_INTEGER.search(entry.default):
        _assert_random_expansion(entry.default, ours, theirs)
    else:
        assert _normal(ours) == _normal(theirs)


@pytest.mark.oracle
@pytest.mark.parametrize("entry", KNOB_DEFAULTS, ids=lambda entry: entry.name)
def test_declared_kind_matches_htcondor(
    entry: KnobDefault, oracle_defaults: dict[str, Mapping[str, OracleValue]]
) -> None:
    """Where HTCondor has a value, param.get returns the Python type of the declared kind."""
    for subsystem in SUBSYSTEMS:
        value = oracle_defaults[subsystem][entry.name.partition(".")[2] or entry.name]
        if value.kind != "none":
            assert value.kind == PYTHON_KIND[entry.kind], subsystem


def test_no_knob_is_listed_twice() -> None:
    """Table names, compared without regard to case as HTCondor does, are unique."""
    seen: dict[str, str] = {}
    for entry in KNOB_DEFAULTS:
        key = entry.name.upper()
        assert key not in seen, f"{entry.name} repeats {seen[key]}"
        seen[key] = entry.name
    detected = {name.upper() for name in DETECTED_KNOBS}
    assert len(detected) == len(DETECTED_KNOBS)
    assert not detected & set(seen)


def test_every_macro_reference_has_an_entry() -> None:
    """Each $(NAME) in a default names a table knob or a detected one."""
    known = {entry.name.upper() for entry in KNOB_DEFAULTS}
    known |= {name.upper() for name in DETECTED_KNOBS}
    missing = {
        f"{entry.name} -> {name}"
        for entry in KNOB_DEFAULTS
        for name in _MACRO_REF.findall(entry.default or "")
        if name.upper() not in known
    }
    assert not missing


def _seed_knob_names() -> list[str]:
    """The concrete knob names the seed documents name (families and reconstructed names are
    not in the list)."""
    data = tomllib.loads(SEED_KNOBS.read_text(encoding="utf-8"))
    return [knob["name"] for knob in data["knob"]]


def test_every_inventory_knob_is_in_the_table() -> None:
    """Every concrete knob the seeds name is a table entry or a detected knob."""
    names = _seed_knob_names()
    assert len(names) > 200, f"{SEED_KNOBS} lists too few knobs"
    known = {entry.name.upper() for entry in KNOB_DEFAULTS}
    known |= {name.upper() for name in DETECTED_KNOBS}
    missing = [name for name in names if name not in NOT_KNOBS and name.upper() not in known]
    assert not missing


def _typed_default(entry: KnobDefault) -> int | float:
    """The table default as a number for get_int/get_float (0 when it is not a plain number)."""
    convert = float if entry.kind == "double" else int
    try:
        return convert(entry.default or "")
    except ValueError:
        return 0


def _typed_read(config: Config, entry: KnobDefault, name: str) -> int | float:
    """epcore's typed read of ``name`` with the kind and default of ``entry``."""
    if entry.kind == "double":
        return config.get_float(name, float(_typed_default(entry)))
    return config.get_int(name, int(_typed_default(entry)))


def _oracle_number(value: OracleValue) -> int | float:
    """htcondor2's typed value as a Python number."""
    assert value.typed is not None and value.kind in ("int", "float"), value
    return float(value.typed) if value.kind == "float" else int(value.typed)


def _bound_cases() -> list[tuple[KnobDefault, str, str]]:
    """(entry, subsystem, "below" or "above") for every bound the table records."""
    cases: list[tuple[KnobDefault, str, str]] = []
    for entry in KNOB_DEFAULTS:
        for side, bound in (("below", entry.minimum), ("above", entry.maximum)):
            if bound is not None:
                cases.extend((entry, subsystem, side) for subsystem in SUBSYSTEMS)
    return cases


BOUND_CASES = _bound_cases()


def _out_of_range_text(side: str) -> str:
    """A configuration setting every bounded knob one step past its bound on ``side``."""
    lines = []
    for entry in KNOB_DEFAULTS:
        bound = entry.minimum if side == "below" else entry.maximum
        if bound is None:
            continue
        step = -1 if side == "below" else 1
        value = bound + step if entry.kind == "double" else int(bound) + step
        lines.append(f"{entry.name} = {value!r}\n")
    return "".join(lines)


@pytest.fixture(scope="module")
def out_of_range(
    param_oracle: ParamOracle, local_host: LocalHost
) -> dict[tuple[str, str], tuple[Mapping[str, OracleValue], Config]]:
    """HTCondor's and epcore's reading of the out-of-range configurations, keyed by
    (subsystem, side); one oracle load covers every bounded knob."""
    names = sorted({entry.name for entry, _, _ in BOUND_CASES})
    views = {}
    for side in ("below", "above"):
        text = _out_of_range_text(side)
        for subsystem in SUBSYSTEMS:
            answer = param_oracle.load(text, names, subsystem=subsystem)
            assert answer.error is None, answer.error
            config = Config.from_text(text, host=local_host, subsystem=subsystem)
            views[subsystem, side] = (answer.values, config)
    return views


def test_bounds_are_only_on_numeric_knobs() -> None:
    """Only int knobs carry bounds, and a minimum never exceeds its maximum."""
    for entry in KNOB_DEFAULTS:
        if entry.minimum is None and entry.maximum is None:
            continue
        assert entry.kind == "int", entry.name
        if entry.minimum is not None and entry.maximum is not None:
            assert entry.minimum <= entry.maximum, entry.name


@pytest.mark.oracle
@pytest.mark.parametrize(
    ("entry", "subsystem", "side"),
    BOUND_CASES,
    ids=[f"{entry.name}-{subsystem}-{side}" for entry, subsystem, side in BOUND_CASES],
)
def test_value_past_a_bound_reads_as_the_bound(
    entry: KnobDefault,
    subsystem: str,
    side: str,
    out_of_range: dict[tuple[str, str], tuple[Mapping[str, OracleValue], Config]],
) -> None:
    """A knob set just past its table bound reads as that bound in HTCondor and in epcore."""
    bound = entry.minimum if side == "below" else entry.maximum
    theirs, config = out_of_range[subsystem, side]
    assert _oracle_number(theirs[entry.name]) == bound
    assert _typed_read(config, entry, entry.name) == bound


#: Knobs HTCondor 25.14.1 declares a range for although its typed read does not apply it
#: (doubles), with a value outside that range: the value reads back unchanged.
UNCLAMPED_DOUBLES = {
    "GROUP_QUOTA_ROUND_ROBIN_RATE": -0.5,  # declared range 1.0 to 1e100
    "LVM_THICK_LV_MARGIN": 1.5,  # declared range 0.0 to 1.0
    "PRIORITY_HALFLIFE": -0.5,  # declared range 1e-05 upward
}


@pytest.mark.oracle
@pytest.mark.parametrize("subsystem", SUBSYSTEMS)
def test_double_ranges_are_not_applied(
    subsystem: str, param_oracle: ParamOracle, local_host: LocalHost
) -> None:
    """A double knob outside the range HTCondor declares for it reads back unchanged."""
    text = "".join(f"{name} = {value!r}\n" for name, value in UNCLAMPED_DOUBLES.items())
    answer = param_oracle.load(text, list(UNCLAMPED_DOUBLES), subsystem=subsystem)
    assert answer.error is None, answer.error
    config = Config.from_text(text, host=local_host, subsystem=subsystem)
    entries = {entry.name: entry for entry in KNOB_DEFAULTS}
    for name, value in UNCLAMPED_DOUBLES.items():
        entry = entries[name]
        assert entry.kind == "double" and entry.minimum is None and entry.maximum is None
        assert _oracle_number(answer.values[name]) == value, name
        assert _typed_read(config, entry, name) == value, name


#: Bare int knobs (a subsystem-prefixed entry is met through its bare name).
INT_ENTRIES = [e for e in KNOB_DEFAULTS if e.kind == "int" and "." not in e.name]

#: Values beyond 32 bits and what an int knob reads as; the range of a bounded knob does not
#: apply to them (COLLECTOR_PORT = 99999999999 reads as 2147483647, not 65535).
WIDE_VALUES = {"99999999999": 2147483647, "-99999999999": -2147483648}

WIDE_CASES = [
    (subsystem, text, expected)
    for subsystem in SUBSYSTEMS
    for text, expected in WIDE_VALUES.items()
]


@pytest.mark.oracle
@pytest.mark.parametrize(
    ("subsystem", "text", "expected"),
    WIDE_CASES,
    ids=[f"{subsystem}-{text}" for subsystem, text, _ in WIDE_CASES],
)
def test_int_knob_beyond_32_bits_saturates(
    subsystem: str,
    text: str,
    expected: int,
    param_oracle: ParamOracle,
    local_host: LocalHost,
) -> None:
    """Every int knob set to a number beyond 32 bits reads as the nearest 32-bit limit."""
    config_text = "".join(f"{entry.name} = {text}\n" for entry in INT_ENTRIES)
    names = [entry.name for entry in INT_ENTRIES]
    answer = param_oracle.load(config_text, names, subsystem=subsystem)
    assert answer.error is None, answer.error
    config = Config.from_text(config_text, host=local_host, subsystem=subsystem)
    theirs = {name: _oracle_number(answer.values[name]) for name in names}
    ours = {entry.name: _typed_read(config, entry, entry.name) for entry in INT_ENTRIES}
    assert {name: value for name, value in theirs.items() if value != expected} == {}
    assert {name: value for name, value in ours.items() if value != theirs[name]} == {}
