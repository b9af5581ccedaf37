"""Differential tests: epcore.config against HTCondor's own reader (htcondor2.param).

Two sources of configurations, each read by both readers as the STARTD, the NEGOTIATOR and the
SCHEDD (one HTCondor load per configuration and subsystem):

- every configuration example of the seeds 000, 002 and 003, found at test time by the
  extractors of ``seed_blocks.py`` in the directory EPCORE_SEEDS_DIR names (without it these
  tests skip, see ``tests/seed_documents.py``; blocks that are not configuration are skipped,
  with the reason, and broken examples are compared as they are: both readers load or both
  fail);
- the cases of ``config_gen.py``: 40 locally, 240 when ``CI=true``.

What is compared, for every knob a configuration defines, every knob epcore's table holds from
the files, and the startd's policy knobs (:data:`POLICY_KNOBS`):

- the expanded text: ``Config.get(name)`` against what ``condor_config_val`` prints, with runs
  of whitespace collapsed (None and the empty string both mean "no value");
- the typed view, when HTCondor declares the knob an int, a double or a bool: ``get_int``,
  ``get_float`` or ``get_bool`` with the knob's default from ``KNOB_DEFAULTS``, against the
  value ``htcondor2.param`` returns (skipped when the default is not a plain literal);
- failure: a configuration HTCondor refuses must make epcore raise ConfigError, and the
  other way round.

HTCondor's expanded text is read through probe knobs set in the environment
(``_CONDOR_EPDIFF_P<i> = $(NAME)``, which HTCondor reads after every file) rather than from
``param.get(NAME)`` alone: the Python binding answers None for a name that only has prefixed
definitions (``NEGOTIATOR.Y = 1`` read as the NEGOTIATOR), where a daemon and
``condor_config_val`` see the value. When a macro function cannot produce a value
(``$INT(abc)``, ``$CHOICE(7, a, b)``), HTCondor's daemons stop with a fatal error but htcondor2
carries on with an empty substitution; epcore raising ConfigError there counts as agreeing.

A knob whose value, or a knob it refers to, calls ``$RANDOM_CHOICE`` or ``$RANDOM_INTEGER`` is
not compared as text (both readers draw again at every expansion); the generator's own random
knobs are checked for membership instead.

Every disagreement these tests found was fixed; its minimal configuration stays in
:data:`FIXED_DISAGREEMENTS` and must keep agreeing. Any mismatch fails.
"""

from __future__ import annotations

import os
import re
from collections.abc import Iterator, Mapping, Sequence
from pathlib import Path

import attrs
import pytest
from config_gen import ALL_FEATURES, GeneratedConfig, TemplateChoice, generate
from param_oracle import OracleAnswer, ParamOracle
from seed_blocks import SeedBlock, seed_blocks
from seed_documents import given_seeds_dir

from epcore.builtin.host import LocalHost
from epcore.config import KNOB_DEFAULTS, TEMPLATES, Config, ConfigError

CI = os.environ.get("CI") == "true"
#: How many generated configurations are compared.
GENERATED_CASES = 240 if CI else 40

SUBSYSTEMS = ("STARTD", "NEGOTIATOR", "SCHEDD")

#: The startd's policy and resource knobs, compared for every configuration.
POLICY_KNOBS = (
    "START",
    "IS_OWNER",
    "SUSPEND",
    "CONTINUE",
    "PREEMPT",
    "KILL",
    "WANT_SUSPEND",
    "WANT_VACATE",
    "RANK",
    "MAXJOBRETIREMENTTIME",
    "NUM_CPUS",
    "MEMORY",
    "NUM_SLOTS",
    "STARTD_ATTRS",
    "CLAIM_WORKLIFE",
    "MATCH_TIMEOUT",
    "KILLING_TIMEOUT",
    "UPDATE_INTERVAL",
    "POLLING_INTERVAL",
)

_PROBE = "EPDIFF_P"
_DETECTED = "<Detected>"
_DEFAULTS = {entry.name.upper(): entry for entry in KNOB_DEFAULTS}
#: epcore's message when a macro function cannot produce a value. HTCondor's daemons stop
#: there (its code raises a fatal error); htcondor2 carries on with an empty substitution, so
#: the text it answers cannot be compared.
_FUNCTION_ERROR = re.compile(r"\$[A-Z_]+\(\) error")
#: A knob named by ``$(NAME...)``, by the first argument of ``$FUNC(NAME...)``, or by the list
#: argument of ``$CHOICE(index, LIST)``.
_REFERENCE = re.compile(
    r"\$[A-Za-z_]*\(\s*([A-Za-z_][A-Za-z0-9_.]*)|\$CHOICE\([^,)]*,\s*([A-Za-z_][A-Za-z0-9_.]*)\s*\)"
)
_LHS = re.compile(r"^\s*([A-Za-z_][A-Za-z0-9_.]*)\s*(?:=|@=)(?![=?!])")


@attrs.frozen
class Mismatch:
    """One difference: the knob (or ``<load>``), and what each reader said."""

    knob: str
    epcore: object
    oracle: object
    view: str = "text"

    def __str__(self) -> str:
        return f"{self.knob} [{self.view}]: epcore {self.epcore!r}, HTCondor {self.oracle!r}"


#: Minimal cases of disagreements these tests found and epcore fixed; they must now agree.
#: (key, configuration, knob)
FIXED_DISAGREEMENTS: tuple[tuple[str, str, str], ...] = (
    ("filename-literal", "C = $Fn(/a/b/c.txt)\n", "C"),
    ("substr-dollar", "A = $(DOLLAR)xyz\nB = $SUBSTR(A,1)\n", "B"),
    ("default-spelling-redefined", "START = x\nSTART = true\n", "START"),
    ("default-spelling-prefixed", "STARTD.START = true\n", "START"),
    ("bool-leading-word", "STARTD_ENFORCE_DISK_LIMITS = truex\n", "STARTD_ENFORCE_DISK_LIMITS"),
    ("int-range", "KILLING_TIMEOUT = -1\n", "KILLING_TIMEOUT"),
    ("int-32-bit", "UPDATE_INTERVAL = 99999999999\n", "UPDATE_INTERVAL"),
)


# -- the comparison ------------------------------------------------------------------------


def _normal(text: str | None) -> str | None:
    """Runs of whitespace collapsed; None for no value or an empty one."""
    if text is None:
        return None
    collapsed = " ".join(text.split())
    return collapsed or None


def _literal(kind: str, text: str) -> int | float | bool | None:
    word = text.strip()
    if kind == "int" and re.fullmatch(r"[+-]?\d+", word):
        return int(word)
    if kind == "float":
        try:
            return float(word)
        except ValueError:
            return None
    if kind == "bool" and word.lower() in ("true", "false"):
        return word.lower() == "true"
    return None


def _typed_default(name: str, kind: str, subsystem: str) -> int | float | bool | None:
    """The knob's default from KNOB_DEFAULTS as a typed value, when it is a plain literal.

    A default written with macros (``NUM_CPUS``: ``$(DETECTED_CPUS_LIMIT)``) counts as unknown:
    htcondor2 then falls back to 0, not to the expanded default.
    """
    entry = _DEFAULTS.get(f"{subsystem}.{name}".upper()) or _DEFAULTS.get(name.upper())
    if entry is None or entry.default is None:
        return None
    return _literal(kind, entry.default)


def _oracle_typed(kind: str, typed: str) -> int | float | bool:
    if kind == "bool":
        return typed == "True"
    if kind == "int":
        return int(typed)
    return float(typed)


def _epcore_typed(cfg: Config, name: str, kind: str, default: int | float | bool) -> object:
    if kind == "bool":
        return cfg.get_bool(name, bool(default))
    if kind == "int":
        return cfg.get_int(name, int(default))
    return cfg.get_float(name, float(default))


@attrs.frozen
class Comparison:
    """The outcome of one configuration read as one subsystem."""

    mismatches: tuple[Mismatch, ...]
    both_failed: bool


def _defined_names(cfg: Config) -> list[str]:
    """Names epcore's table holds from files, templates and the environment."""
    names: list[str] = []
    for name in cfg.names():
        origin = cfg.origin(name)
        if origin is not None and origin.source != _DETECTED:
            names.append(name)
    return names


def _unique(names: Iterator[str] | Sequence[str]) -> list[str]:
    seen: dict[str, str] = {}
    for name in names:
        if "$" not in name:
            seen.setdefault(name.upper(), name)
    return list(seen.values())


def _raw_closure(cfg: Config, name: str) -> str:
    """The raw text of ``name`` and of every knob it refers to, for matching known issues."""
    texts: list[str] = []
    pending: list[str] = [name]
    seen: set[str] = set()
    while pending and len(seen) < 200:
        current = pending.pop()
        if current.upper() in seen:
            continue
        seen.add(current.upper())
        raw = cfg.raw(current)
        if raw:
            texts.append(raw)
            pending += [plain or listed for plain, listed in _REFERENCE.findall(raw)]
    return "\n".join(texts)


def compare(
    oracle: ParamOracle,
    host: LocalHost,
    path: Path,
    names: Sequence[str],
    subsystem: str,
    env: Mapping[str, str] | None = None,
    random_knobs: Mapping[str, frozenset[str]] | None = None,
) -> Comparison:
    """Read ``path`` with both readers as ``subsystem`` and list every difference."""
    random_knobs = random_knobs or {}
    cfg: Config | None = None
    load_error: ConfigError | None = None
    try:
        cfg = Config.load(str(path), host=host, subsystem=subsystem)
    except ConfigError as exc:
        load_error = exc
    wanted = _unique([*names, *POLICY_KNOBS, *(_defined_names(cfg) if cfg else [])])
    probes = {f"_CONDOR_{_PROBE}{i}": f"$({name})" for i, name in enumerate(wanted)}
    answer: OracleAnswer = oracle.load(
        path,
        [*wanted, *(f"{_PROBE}{i}" for i in range(len(wanted)))],
        subsystem=subsystem,
        env={**(env or {}), **probes},
    )
    if cfg is None:
        if answer.error is None:
            return Comparison((Mismatch("<load>", str(load_error), "loads", "error"),), False)
        return Comparison((), True)
    ours: dict[str, str | None] = {}
    failed: dict[str, str] = {}
    for name in wanted:
        try:
            ours[name] = cfg.get(name)
        except ConfigError as exc:
            failed[name] = str(exc)
    if answer.error is not None:
        if failed:
            return Comparison((), True)
        lines = answer.error.strip().splitlines() or ["error"]
        said = next((line for line in lines if "rror" in line), lines[0])
        return Comparison((Mismatch("<load>", "loads", said, "error"),), False)
    mismatches: list[Mismatch] = []
    for i, name in enumerate(wanted):
        theirs = _normal(answer.values[f"{_PROBE}{i}"].text)
        if name in failed:
            if theirs is not None and not _FUNCTION_ERROR.search(failed[name]):
                mismatches.append(Mismatch(name, f"ConfigError: {failed[name]}", theirs))
            continue
        mine = _normal(ours[name])
        allowed = random_knobs.get(name)
        if allowed is not None:
            for who, value in (("epcore", mine), ("HTCondor", theirs)):
                if value not in allowed:
                    mismatches.append(Mismatch(name, value, sorted(allowed), f"random ({who})"))
            continue
        if mine != theirs:
            if "$RANDOM_" not in _raw_closure(cfg, name):
                mismatches.append(Mismatch(name, mine, theirs))
            continue
        oracle_value = answer.values[name]
        kind = oracle_value.kind
        if kind in ("int", "float", "bool") and oracle_value.typed is not None:
            default = _typed_default(name, kind, subsystem)
            if default is None:
                continue
            typed = _epcore_typed(cfg, name, kind, default)
            expected = _oracle_typed(kind, oracle_value.typed)
            if typed != expected or type(typed) is not type(expected):
                mismatches.append(Mismatch(name, typed, expected, f"typed {kind}"))
    return Comparison(tuple(mismatches), False)


def _report(what: str, listing: str, subsystem: str, comparison: Comparison) -> str:
    lines = "\n".join(f"  {m}" for m in comparison.mismatches)
    return f"{what} read as {subsystem} differs from HTCondor:\n{lines}\n{listing}"


@pytest.fixture(autouse=True)
def _no_condor_overrides(monkeypatch: pytest.MonkeyPatch) -> None:
    """Keep ``_CONDOR_*`` variables of the calling shell away from epcore (HTCondor's child
    drops them too)."""
    for key in list(os.environ):
        if key.upper().startswith("_CONDOR_"):
            monkeypatch.delenv(key)


# -- seed blocks ---------------------------------------------------------------------------


def _seed_params() -> list[object]:
    # Blocks that are not configuration (submit files, ads, shell sessions) are not compared;
    # test_seed_blocks_are_all_accounted_for checks that each of them says why. Without the
    # seeds one placeholder stands for the blocks: its seeds_dir fixture skips it with the
    # reason (or fails it under CI when the variable names nothing).
    directory = given_seeds_dir()
    if directory is None or not directory.is_dir():
        return [pytest.param(None, id="seeds")]
    return [pytest.param(b, id=b.id) for b in seed_blocks(directory) if b.skip is None]


def test_seed_blocks_are_all_accounted_for(seeds_dir: Path) -> None:
    """Every code example of the seeds is either compared or set aside with a stated reason."""
    blocks = seed_blocks(seeds_dir)
    compared = [b for b in blocks if b.skip is None]
    set_aside = [b for b in blocks if b.skip is not None]
    assert len(compared) >= 150
    assert all(b.skip.strip() for b in set_aside if b.skip is not None)
    assert {b.seed for b in compared} == {"000", "002", "003"}


def _block_names(text: str) -> list[str]:
    names: list[str] = []
    continued = False
    for line in text.splitlines():
        match = None if continued else _LHS.match(line)
        if match:
            names.append(match.group(1))
        continued = line.rstrip().endswith("\\")
    return names


@pytest.mark.oracle
@pytest.mark.parametrize("subsystem", SUBSYSTEMS)
@pytest.mark.parametrize("block", _seed_params())
def test_seed_block_matches_htcondor(
    seeds_dir: Path,
    block: SeedBlock,
    subsystem: str,
    param_oracle: ParamOracle,
    local_host: LocalHost,
    tmp_path: Path,
) -> None:
    """A seed's configuration example reads the same in epcore as in HTCondor."""
    path = tmp_path / "condor_config"
    path.write_text(block.text)
    comparison = compare(param_oracle, local_host, path, _block_names(block.text), subsystem)
    listing = f"--- {block.id} ({block.language})\n{block.text}"
    assert not comparison.mismatches, _report(block.id, listing, subsystem, comparison)


# -- generated configurations --------------------------------------------------------------


def available_templates() -> list[TemplateChoice]:
    """The templates epcore knows now, with the number of arguments each body reads.

    A body that passes its whole argument list on (``$(0)``) gets three arguments.
    """
    choices = []
    for template in TEMPLATES:
        numbers = [int(n) for n in re.findall(r"\$\((\d)", template.body)]
        count = max((n for n in numbers if n), default=3 if 0 in numbers else 0)
        choices.append(TemplateChoice(template.category, template.name, min(count, 5)))
    return sorted(choices, key=lambda t: (t.category.lower(), t.name.lower()))


def _case(number: int) -> GeneratedConfig:
    return generate(number, available_templates())


@pytest.mark.oracle
@pytest.mark.parametrize("number", range(GENERATED_CASES), ids=lambda n: f"gen-{n:03d}")
def test_generated_config_matches_htcondor(
    number: int,
    param_oracle: ParamOracle,
    local_host: LocalHost,
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """A generated configuration reads the same in epcore as in HTCondor, as every subsystem."""
    case = _case(number)
    for key, value in case.env.items():
        monkeypatch.setenv(key, value)
    path = case.write(tmp_path)
    failures: list[str] = []
    for subsystem in SUBSYSTEMS:
        comparison = compare(
            param_oracle,
            local_host,
            path,
            case.names_to_check,
            subsystem,
            env=case.env,
            random_knobs=case.random_knobs,
        )
        if not comparison.mismatches:
            continue
        failures.append(_report(f"case {number}", case.listing(), subsystem, comparison))
    assert not failures, "\n".join(failures)


def test_generator_uses_every_construct() -> None:
    """Together the generated cases use every construct the generator knows."""
    used: set[str] = set()
    for number in range(GENERATED_CASES):
        used |= _case(number).features
    missing = ALL_FEATURES - used
    if not TEMPLATES:
        missing -= {"use", "use-args"}
    assert not missing, f"no generated case uses {sorted(missing)}"


def test_generator_is_reproducible() -> None:
    """The same case number gives the same files, environment and knobs."""
    assert _case(7) == _case(7)
    assert _case(7).files != _case(8).files


# -- the comparison itself -----------------------------------------------------------------


@pytest.mark.oracle
def test_comparison_catches_a_difference(
    param_oracle: ParamOracle,
    local_host: LocalHost,
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """A text or typed value epcore gets wrong is reported, and nothing else is."""
    path = tmp_path / "condor_config"
    path.write_text("A = 1\nB = $(A) 2\nCLAIM_WORKLIFE = 60\n")
    get, get_int = Config.get, Config.get_int

    def skewed_get(
        self: Config, name: str, subsystem: str | None = None, local_name: str | None = None
    ) -> str | None:
        value = get(self, name, subsystem, local_name)
        return f"{value} skew" if name == "B" else value

    def skewed_get_int(self: Config, name: str, default: int, **who: str | None) -> int:
        return get_int(self, name, default, **who) + (name == "CLAIM_WORKLIFE")

    monkeypatch.setattr(Config, "get", skewed_get)
    monkeypatch.setattr(Config, "get_int", skewed_get_int)
    comparison = compare(param_oracle, local_host, path, ["A", "B"], "STARTD")
    assert {(m.knob, m.view) for m in comparison.mismatches} == {
        ("B", "text"),
        ("CLAIM_WORKLIFE", "typed int"),
    }


@pytest.mark.oracle
def test_comparison_accepts_a_configuration_both_refuse(
    param_oracle: ParamOracle, local_host: LocalHost, tmp_path: Path
) -> None:
    """An ``endif`` without ``if`` makes both readers fail, which counts as agreement."""
    path = tmp_path / "condor_config"
    path.write_text("A = 1\nendif\n")
    comparison = compare(param_oracle, local_host, path, ["A"], "STARTD")
    assert comparison.both_failed
    assert not comparison.mismatches


# -- include command -----------------------------------------------------------------------


@pytest.mark.oracle
@pytest.mark.parametrize("subsystem", SUBSYSTEMS)
def test_include_command_matches_htcondor(
    subsystem: str, param_oracle: ParamOracle, local_host: LocalHost, tmp_path: Path
) -> None:
    """``include command : /bin/echo ...`` reads the command's output as configuration."""
    path = tmp_path / "condor_config"
    path.write_text(
        "A = before\n"
        "include command : /bin/echo X = 1\n"
        "include : /bin/echo Y = $(A) piped |\n"
        "Z = $(X) $(Y)\n"
    )
    comparison = compare(param_oracle, local_host, path, ["A", "X", "Y", "Z"], subsystem)
    assert not comparison.mismatches, _report(
        "include command", path.read_text(), subsystem, comparison
    )


@pytest.mark.oracle
def test_include_command_into_matches_htcondor(
    param_oracle: ParamOracle, local_host: LocalHost, tmp_path: Path
) -> None:
    """``include command into FILE : ...`` reads the command's output, as HTCondor does."""
    path = tmp_path / "condor_config"
    path.write_text(f"include command into {tmp_path}/cache.conf : /bin/echo X = 3\nY = 2\n")
    comparison = compare(param_oracle, local_host, path, ["X", "Y"], "STARTD")
    assert not comparison.mismatches, _report(
        "include command into", path.read_text(), "STARTD", comparison
    )


# -- known disagreements, minimised --------------------------------------------------------


@pytest.mark.oracle
@pytest.mark.parametrize(
    ("text", "knob"),
    [row[1:] for row in FIXED_DISAGREEMENTS],
    ids=[row[0] for row in FIXED_DISAGREEMENTS],
)
def test_fixed_disagreement_agrees(
    text: str, knob: str, param_oracle: ParamOracle, local_host: LocalHost, tmp_path: Path
) -> None:
    """A disagreement these tests once found stays fixed: both readers give the same answer."""
    path = tmp_path / "condor_config"
    path.write_text(text)
    comparison = compare(param_oracle, local_host, path, [knob], "STARTD")
    assert not comparison.mismatches, _report("fixed", text, "STARTD", comparison)
