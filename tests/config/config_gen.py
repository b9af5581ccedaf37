"""A seeded generator of HTCondor configuration files for the differential tests.

``generate(number, templates)`` builds case ``number``: a main configuration file, the files it
includes, the ``LOCAL_CONFIG_FILE`` list and ``LOCAL_CONFIG_DIR`` files it names, and the
environment it reads. The same number always gives the same case (for the same template list),
so a failing case is named by its number and can be regenerated and minimised by hand.

Why a plain ``random.Random(number)`` and not hypothesis: every case costs an HTCondor load per
subsystem, the cases are compared with an external program rather than with a property that
hypothesis could shrink cheaply, and a failure should be reproducible from its test id alone
(``gen-042``) without a hypothesis database or a printed blob. Explicit case numbers give that
and make the CI run identical on every machine.

The cases are built so that HTCondor cannot fail for reasons the tests do not mean to test:

- no macro cycle: every knob has a rank (the order in which the generator first wrote it), and
  a value only refers to knobs of a lower rank, to itself (which takes the previous value at
  once), to knobs no case defines, or to built-in knobs no case redefines;
- no include loop: included files form a tree;
- no ``include command`` (see the explicit test in test_differential.py);
- ``$RANDOM_CHOICE`` and ``$RANDOM_INTEGER`` only define dedicated knobs that nothing refers
  to, listed in ``random_knobs`` with every value they may take.

A few cases (about one in twelve) are broken on purpose (an unterminated ``@=`` block, ``endif``
without ``if``, a missing required include, an unknown template, ...): for those, both readers
must fail. Which constructs a case used is recorded in ``features``, so that a known
disagreement can be told apart from a new one, and so that a test can check that the cases
together use every construct.
"""

from __future__ import annotations

import random
from collections.abc import Mapping, Sequence
from pathlib import Path

import attrs

#: Written in place of the directory the case's files are written to (include targets and
#: LOCAL_CONFIG_* values need absolute paths: HTCondor resolves relative ones against the
#: working directory).
ROOT = "@@ROOT@@"

#: Prefix of every environment variable a case sets (unique per case number).
ENV_PREFIX = "EPCORE_GEN"

#: Every construct the generator can emit; ``features`` holds a subset of these.
ALL_FEATURES: frozenset[str] = frozenset(
    {
        "assign",
        "mixed-case",
        "colon-assign",
        "empty-value",
        "comment",
        "blank",
        "continuation",
        "continuation-trailing-space",
        "continuation-comment",
        "at-block",
        "at-block-tabs",
        "if",
        "elif",
        "else",
        "nested-if",
        "if-version",
        "if-defined",
        "if-not",
        "if-defined-use",
        "if-bool",
        "if-macro",
        "bool",
        "number",
        "float",
        "string",
        "not",
        "ref",
        "ref-default",
        "ref-builtin",
        "ref-undefined",
        "self-ref",
        "self-ref-policy",
        "env",
        "env-default",
        "env-unset",
        "int",
        "int-format",
        "real",
        "real-format",
        "filename-macro",
        "filename-literal",
        "choice",
        "choice-list",
        "substr",
        "dollar",
        "dollar-dollar",
        "random-choice",
        "random-integer",
        "prefix-startd",
        "prefix-negotiator",
        "prefix-schedd",
        "prefix-local",
        "lhs-expansion",
        "use",
        "use-args",
        "include",
        "include-nested",
        "include-ifexist",
        "local-config-file",
        "local-config-file-changed",
        "local-config-dir",
        "local-config-dir-exclude",
        "condor-env-override",
        "policy",
        "typed-int",
        "typed-float",
        "typed-bool",
        "error",
    }
)


@attrs.frozen
class TemplateChoice:
    """A template the generator may ``use``: its category, name, and how many arguments."""

    category: str
    name: str
    args: int


@attrs.frozen
class GeneratedConfig:
    """One generated case.

    ``files`` maps a path relative to the case directory to the file's text, in which
    :data:`ROOT` stands for that directory; ``main`` is the root file. ``names_to_check`` are
    the knobs the case defines (as first spelled, prefixed names included); ``random_knobs``
    maps a knob set by ``$RANDOM_*`` to the values it may take. ``error`` names the deliberate
    breakage, if any (the readers must then both fail; HTCondor may also fail on its own).
    """

    number: int
    files: Mapping[str, str]
    main: str
    env: Mapping[str, str]
    names_to_check: tuple[str, ...]
    random_knobs: Mapping[str, frozenset[str]]
    features: frozenset[str]
    error: str | None

    def write(self, directory: Path) -> Path:
        """Write the files under ``directory`` and return the main file's path."""
        for relative, text in self.files.items():
            path = directory / relative
            path.parent.mkdir(parents=True, exist_ok=True)
            path.write_text(text.replace(ROOT, str(directory)))
        return directory / self.main

    def listing(self) -> str:
        """All files, each under a header line, for failure messages."""
        parts = [f"--- {name}\n{text}" for name, text in sorted(self.files.items())]
        env = "".join(f"{key}={value}\n" for key, value in sorted(self.env.items()))
        return "".join(parts) + (f"--- environment\n{env}" if env else "")


# -- name pools ----------------------------------------------------------------------------

_USER = (
    "GenAlpha",
    "gen_beta",
    "GEN_GAMMA",
    "GenDelta2",
    "genEpsilon",
    "Gen_Zeta",
    "GENeta",
    "gen_Theta_9",
    "GenIota",
    "GenKappa",
)
_POLICY = (
    "START",
    "SUSPEND",
    "CONTINUE",
    "PREEMPT",
    "KILL",
    "WANT_SUSPEND",
    "WANT_VACATE",
    "RANK",
    "IS_OWNER",
    "MAXJOBRETIREMENTTIME",
    "STARTD_ATTRS",
)
_TYPED_INT = (
    "NUM_CPUS",
    "UPDATE_INTERVAL",
    "POLLING_INTERVAL",
    "CLAIM_WORKLIFE",
    "MATCH_TIMEOUT",
    "KILLING_TIMEOUT",
)
_TYPED_FLOAT = ("PRIORITY_HALFLIFE", "DEFAULT_PRIO_FACTOR")
_TYPED_BOOL = (
    "STARTD_ENFORCE_DISK_LIMITS",
    "NEGOTIATOR_CONSIDER_PREEMPTION",
    "NEGOTIATOR_DEPTH_FIRST",
    "SCHEDD_USE_SLOT_WEIGHT",
)
#: Names no case defines (a reference to one expands to nothing).
_UNDEFINED = ("GenUnset", "gen_never_defined", "GEN_MISSING_KNOB")
#: Built-in knobs no case redefines.
_BUILTIN = (
    "DETECTED_CORES",
    "DETECTED_MEMORY",
    "OPSYS",
    "ARCH",
    "FULL_HOSTNAME",
    "SUBSYSTEM",
    "LOG",
    "SPOOL",
    "RELEASE_DIR",
    "STARTD_LOG",
    "MAX_CLAIM_ALIVES_MISSED",
)
_PREFIXES = (
    ("STARTD", "prefix-startd"),
    ("NEGOTIATOR", "prefix-negotiator"),
    ("SCHEDD", "prefix-schedd"),
    ("MyLocalName", "prefix-local"),
)
_WORDS = ("alpha", "Beta", "gamma", "delta_2", "/opt/site/bin", "x86", "LINUX", "on", "slot1")
_ATTRS = ("KeyboardIdle", "LoadAvg", "Owner", "ImageSize", "TotalCpus", "Memory", "JobUniverse")
_PATHS = ("/usr/local/lib/file.tar.gz", "/etc/condor/condor_config", "relative/dir/name.ext")
_INT_FORMATS = ("%d", "%05d", "%x", "%o", "%-4d|", "%+d")
_REAL_FORMATS = ("%.2f", "%g", "%e", "%.1f", "%8.3f")
_F_LETTERS = ("p", "n", "x", "d", "q", "b", "f", "a", "w", "u", "nx", "pn", "dd", "qa", "px")
#: Numeric helper knobs every case defines first, with plain values.
_NUMBERS = ("GenNum1", "GenNum2")
_PATH_KNOBS = ("GenPath1", "GenPath2")
_LIST_KNOB = "GenList"
_EXPR_KNOB = "GenExpr"
_RANDOM_PREFIX = "GenRandom"


def _respell(rng: random.Random, name: str) -> str:
    """The name as written at one place: mostly as given, sometimes in another case."""
    roll = rng.random()
    if roll < 0.7:
        return name
    if roll < 0.8:
        return name.upper()
    if roll < 0.9:
        return name.lower()
    return name.swapcase()


class _Builder:
    """Holds the state of one case while its files are written."""

    def __init__(self, number: int, templates: Sequence[TemplateChoice]) -> None:
        self.number = number
        self.rng = random.Random(f"epcore-config-gen/{number}")
        self.templates = list(templates)
        self.ranks: dict[str, int] = {}
        self.spelling: dict[str, str] = {}
        self.checked: dict[str, str] = {}
        self.features: set[str] = set()
        self.files: dict[str, str] = {}
        self.env: dict[str, str] = {}
        self.random_knobs: dict[str, frozenset[str]] = {}
        self.error: str | None = None
        self.file_count = 0

    # -- names and ranks -------------------------------------------------------------------

    def _define(self, name: str) -> int:
        key = name.upper()
        if key not in self.ranks:
            self.ranks[key] = len(self.ranks)
            self.spelling[key] = name
        return self.ranks[key]

    def _check(self, name: str) -> None:
        self.checked.setdefault(name.upper(), name)

    def _spell(self, name: str) -> str:
        spelled = _respell(self.rng, name)
        if spelled != name:
            self.features.add("mixed-case")
        return spelled

    def _lower_user(self, rank: int) -> list[str]:
        """User and helper knobs a value of a knob of ``rank`` may refer to."""
        pool = [*_USER, *_NUMBERS, *_PATH_KNOBS, _LIST_KNOB, _EXPR_KNOB]
        return [n for n in pool if self.ranks.get(n.upper(), rank) < rank]

    # -- values ----------------------------------------------------------------------------

    def _literal(self) -> str:
        rng = self.rng
        kind = rng.randrange(6)
        if kind == 0:
            self.features.add("number")
            return str(rng.choice((0, 1, 7, 42, -3, 1200, 86400)))
        if kind == 1:
            self.features.add("float")
            return rng.choice(("2.5", "0.3", "1e3", "-0.75", "10.0"))
        if kind == 2:
            self.features.add("bool")
            return rng.choice(("True", "false", "TRUE", "False", "true"))
        if kind == 3:
            self.features.add("string")
            return rng.choice(('"coltrane"', '"a b c"', '""', '"x,y"'))
        if kind == 4:
            attr = rng.choice(_ATTRS)
            return rng.choice(
                (f"{attr} > 15", f"({attr} =?= UNDEFINED)", f'{attr} == "tyner"', f"{attr} * 2")
            )
        return rng.choice(_WORDS)

    def _reference(self, rank: int) -> str:
        rng = self.rng
        lower = self._lower_user(rank)
        roll = rng.random()
        if lower and roll < 0.55:
            self.features.add("ref")
            name = self._spell(rng.choice(lower))
            if rng.random() < 0.25:
                self.features.add("ref-default")
                return f"$({name}:{rng.choice(('fallback', '0', 'a b', ''))})"
            return f"$({name})"
        if roll < 0.75:
            self.features.add("ref-builtin")
            return f"$({self._spell(rng.choice(_BUILTIN))})"
        self.features.add("ref-undefined")
        name = self._spell(rng.choice(_UNDEFINED))
        if rng.random() < 0.5:
            self.features.add("ref-default")
            return f"$({name}:{rng.choice(('dflt', '$(DETECTED_CORES)', '12'))})"
        return f"$({name})"

    def _env_var(self, suffix: str) -> str:
        return f"{ENV_PREFIX}_{self.number}_{suffix}"

    def _function(self, rank: int) -> str:
        rng = self.rng
        kind = rng.randrange(9)
        numbers = [n for n in _NUMBERS if self.ranks.get(n.upper(), rank) < rank]
        paths = [n for n in _PATH_KNOBS if self.ranks.get(n.upper(), rank) < rank]
        if kind == 0:
            var = self._env_var(rng.choice(("A", "B")))
            self.env.setdefault(var, rng.choice(("from env", "42", "/env/path")))
            if rng.random() < 0.4:
                self.features.add("env-default")
                return f"$ENV({var}:env default)"
            self.features.add("env")
            return f"$ENV({var})"
        if kind == 1:
            self.features.add("env-unset")
            var = self._env_var("UNSET")
            return f"$ENV({var})" if rng.random() < 0.5 else f"$ENV({var}:unset default)"
        if kind in (2, 3):
            func, formats = ("INT", _INT_FORMATS) if kind == 2 else ("REAL", _REAL_FORMATS)
            self.features.add(func.lower())
            arg = (
                self._spell(rng.choice(numbers))
                if numbers and rng.random() < 0.7
                else rng.choice(("3*4", "7", "2.5", "10/4"))
            )
            if rng.random() < 0.5:
                self.features.add(f"{func.lower()}-format")
                return f"${func}({arg},{rng.choice(formats)})"
            return f"${func}({arg})"
        if kind == 4:
            letters = rng.choice(_F_LETTERS)
            if paths and rng.random() < 0.6:
                self.features.add("filename-macro")
                return f"$F{letters}({self._spell(rng.choice(paths))})"
            self.features.add("filename-literal")
            return f"$F{letters}({rng.choice(_PATHS)})"
        if kind == 5:
            if self.ranks.get(_LIST_KNOB.upper(), rank) < rank and rng.random() < 0.5:
                self.features.add("choice-list")
                return f"$CHOICE({rng.randrange(3)},{self._spell(_LIST_KNOB)})"
            self.features.add("choice")
            index = self._spell(rng.choice(numbers)) if numbers else str(rng.randrange(3))
            if numbers and rng.random() < 0.5:
                # The numeric helpers hold 0..2, within the four items.
                return f"$CHOICE({index}, red, green, blue, cyan)"
            return f"$CHOICE({rng.randrange(4)}, red, green,blue ,cyan)"
        if kind == 6:
            self.features.add("substr")
            lower = self._lower_user(rank) or ["FULL_HOSTNAME"]
            name = self._spell(rng.choice(lower))
            start = rng.choice(("0", "2", "-3", "1"))
            if rng.random() < 0.5:
                return f"$SUBSTR({name},{start},{rng.choice(('1', '3', '-1'))})"
            return f"$SUBSTR({name},{start})"
        if kind == 7:
            self.features.add("dollar")
            return rng.choice(("$(DOLLAR)", "$(DOLLAR)(NotAMacro)", "cost$(DOLLAR)5"))
        self.features.add("dollar-dollar")
        return rng.choice(("$$(OpSys)", "$$(Memory:1024)", "$$([TotalCpus * 2])"))

    def _value(self, rank: int, pieces: int | None = None) -> str:
        rng = self.rng
        count = pieces if pieces is not None else rng.randrange(1, 4)
        parts: list[str] = []
        for _ in range(count):
            roll = rng.random()
            if roll < 0.35:
                part = self._literal()
            elif roll < 0.7:
                part = self._reference(rank)
            else:
                part = self._function(rank)
            if rng.random() < 0.1:
                self.features.add("not")
                part = f"!{part}" if rng.random() < 0.5 else f"! ({part})"
            parts.append(part)
        joiners = (" ", " && ", " || ", " + ", ", ", " ")
        text = parts[0]
        for part in parts[1:]:
            text += rng.choice(joiners) + part
        return text

    # -- statements ------------------------------------------------------------------------

    def _assign(self, name: str, value: str) -> list[str]:
        """One assignment, written in one of the layouts HTCondor reads."""
        rng = self.rng
        self.features.add("assign")
        written = self._spell(name)
        roll = rng.random()
        if not value.strip():
            self.features.add("empty-value")
        if roll < 0.1 and "\n" not in value:
            self.features.add("colon-assign")
            return [f"{written} : {value}"]
        if roll < 0.3 and " " in value.strip():
            return self._continued(written, value)
        if roll < 0.4:
            return self._at_block(written, value)
        spacing = rng.choice((" = ", "=", "   =   ", "\t= ", " =\t"))
        return [f"{written}{spacing}{value}"]

    def _continued(self, written: str, value: str) -> list[str]:
        rng = self.rng
        self.features.add("continuation")
        words = value.split(" ")
        cut = sorted(rng.sample(range(1, len(words)), k=min(len(words) - 1, rng.randrange(1, 3))))
        chunks = [" ".join(words[a:b]) for a, b in zip([0, *cut], [*cut, len(words)], strict=True)]
        lines = [f"{written} = {chunks[0]}"]
        for chunk in chunks[1:]:
            trailing = ""
            if rng.random() < 0.3:
                self.features.add("continuation-trailing-space")
                trailing = rng.choice((" ", "   ", "\t"))
            lines[-1] += " \\" + trailing
            if rng.random() < 0.2:
                self.features.add("continuation-comment")
                lines.append(rng.choice(("# a comment inside \\", "   # indented comment \\")))
            lines.append(rng.choice(("  ", "\t", "        ", "")) + chunk)
        return lines

    def _at_block(self, written: str, value: str) -> list[str]:
        rng = self.rng
        self.features.add("at-block")
        tag = rng.choice(("end", "slot", "EOF", "x1"))
        body = [value, *(self._literal() for _ in range(rng.randrange(0, 3)))]
        lines = [f"{written} @={tag}"]
        for line in body:
            indent = rng.choice(("", "  ", "\t", " \t "))
            if "\t" in indent:
                self.features.add("at-block-tabs")
            lines.append(indent + line)
        lines.append(f"@{tag}")
        return lines

    def _user_statement(self) -> list[str]:
        rng = self.rng
        name = rng.choice(_USER)
        key = name.upper()
        if key in self.ranks and rng.random() < 0.3:
            self.features.add("self-ref")
            written = self._spell(name)
            rank = self.ranks[key]
            extra = self._value(rank, 1)
            form = rng.choice((f"$({written}) {extra}", f"{extra} $({written})", f"($({written}))"))
            self._check(name)
            return self._assign(name, form)
        rank = self._define(name)
        self._check(name)
        if rng.random() < 0.05:
            return self._assign(name, "")
        return self._assign(name, self._value(rank))

    def _policy_statement(self) -> list[str]:
        rng = self.rng
        self.features.add("policy")
        name = rng.choice(_POLICY)
        rank = self._define(name)
        self._check(name)
        if rng.random() < 0.35:
            self.features.add("self-ref-policy")
            written = self._spell(name)
            tail = self._value(rank, 1)
            if name == "STARTD_ATTRS":
                return self._assign(name, f"$({written}) {rng.choice(_USER)}")
            return self._assign(name, f"($({written})) {rng.choice(('||', '&&'))} {tail}")
        return self._assign(name, self._value(rank))

    def _typed_statement(self) -> list[str]:
        rng = self.rng
        kind = rng.randrange(3)
        if kind == 0:
            self.features.add("typed-int")
            name = rng.choice(_TYPED_INT)
            rank = self._define(name)
            options = ["42", "3*4", "2.7", "abc", "-1", '"5"', "$(DETECTED_CORES)*2", "true"]
            numbers = self._lower_user(rank)
            nums = [n for n in numbers if n in _NUMBERS]
            if nums:
                options.append(f"$({self._spell(rng.choice(nums))}) + 1")
            value = rng.choice(options)
        elif kind == 1:
            self.features.add("typed-float")
            name = rng.choice(_TYPED_FLOAT)
            rank = self._define(name)
            value = rng.choice(("2.5", "1e3", "2*3.5", "abc", "7", "-0.5", "1/4"))
        else:
            self.features.add("typed-bool")
            name = rng.choice(_TYPED_BOOL)
            rank = self._define(name)
            value = rng.choice(("true", "FALSE", "1", "0", "yes", "2 > 1", "junk", "t", "!false"))
        self._check(name)
        return self._assign(name, value)

    def _prefixed_statement(self) -> list[str]:
        rng = self.rng
        prefix, feature = rng.choice(_PREFIXES)
        self.features.add(feature)
        name = rng.choice((*_USER, *_POLICY[:4]))
        rank = self._define(name)
        self._check(name)
        self._check(f"{prefix}.{name}")
        written = f"{self._spell(prefix)}.{self._spell(name)}"
        if rng.random() < 0.3:
            self.features.add("self-ref")
            value = f"$({self._spell(name)}) {self._literal()}"
        else:
            value = self._value(rank)
        return self._assign_raw(written, value)

    def _assign_raw(self, written: str, value: str) -> list[str]:
        self.features.add("assign")
        return [f"{written} = {value}"]

    def _random_statement(self) -> list[str]:
        rng = self.rng
        name = f"{_RANDOM_PREFIX}{len(self.random_knobs) + 1}"
        self._define(name)
        if rng.random() < 0.5:
            self.features.add("random-choice")
            items = rng.sample(("red", "green", "blue", "7", "x y"), k=rng.randrange(1, 4))
            self.random_knobs[name] = frozenset(items)
            return [f"{name} = $RANDOM_CHOICE({','.join(items)})"]
        self.features.add("random-integer")
        low = rng.randrange(-5, 5)
        high = low + rng.randrange(0, 20)
        step = rng.choice((1, 1, 2, 5))
        self.random_knobs[name] = frozenset(str(v) for v in range(low, high + 1, step))
        if step == 1 and rng.random() < 0.5:
            return [f"{name} = $RANDOM_INTEGER({low},{high})"]
        return [f"{name} = $RANDOM_INTEGER({low}, {high}, {step})"]

    def _lhs_statement(self) -> list[str]:
        rng = self.rng
        self.features.add("lhs-expansion")
        head = rng.choice(("GenPrefix", "GenHead"))
        word = rng.choice(("Site", "pool", "AREA"))
        self._define(head)
        full = f"{word}_{rng.choice(('Knob', 'VALUE'))}"
        rank = self._define(full)
        self._check(head)
        self._check(full)
        tail = full[len(word) :]
        return [f"{head} = {word}", f"$({self._spell(head)}){tail} = {self._value(rank, 1)}"]

    def _use_statement(self) -> list[str]:
        rng = self.rng
        roll = rng.random()
        pick = rng.randrange(10_000)
        first = rng.choice(("GenAlpha", "STARTD_CRON", "2"))
        rest = [rng.choice(("gentag", "60", "/bin/true", "50%", "3600")) for _ in range(4)]
        spacing = rng.choice((" : ", ":", " :", ": "))
        keyword = rng.choice(("use", "USE", "Use"))
        if not self.templates or roll < 0.1:
            return [f"# no template to use here ({pick})"]
        template = self.templates[pick % len(self.templates)]
        self.features.add("use")
        category = self._spell(template.category)
        if template.args:
            self.features.add("use-args")
            args = ", ".join([first, *rest][: template.args])
            return [f"{keyword} {category}{spacing}{template.name}({args})"]
        return [f"{keyword} {category}{spacing}{template.name}"]

    def _condition(self) -> str:
        rng = self.rng
        kind = rng.randrange(7)
        negate = rng.random() < 0.2
        if kind == 0:
            self.features.add("if-version")
            op = rng.choice((">=", ">", "<", "<=", "=="))
            version = rng.choice(("8.0.0", "9.0", "25.14.1", "30.0.0", "23.9.0", "25.14"))
            text = f"version {op} {version}"
        elif kind == 1:
            self.features.add("if-defined")
            pool = [*self.spelling.values(), *_UNDEFINED, "DETECTED_CORES", "START"]
            text = f"defined {self._spell(rng.choice(pool))}"
        elif kind == 2:
            self.features.add("if-defined-use")
            if self.templates and rng.random() < 0.7:
                template = self.templates[rng.randrange(len(self.templates))]
                text = f"defined use {template.category}:{template.name}"
            else:
                text = rng.choice(("defined use POLICY:NoSuchTemplate", "defined use NOCAT:X"))
        elif kind == 3:
            self.features.add("if-bool")
            text = rng.choice(("true", "false", "1", "0", "TRUE", "False"))
        elif kind == 4:
            numbers = [n for n in _NUMBERS if n.upper() in self.ranks]
            if numbers:
                self.features.add("if-macro")
                text = f"$({self._spell(rng.choice(numbers))})"
            else:
                text = "true"
        else:
            self.features.add("if-defined")
            text = f"defined {self._spell(rng.choice(_USER))}"
        if negate:
            self.features.add("if-not")
            return f"! {text}" if rng.random() < 0.5 else f"!{text}"
        return text

    def _if_block(self, depth: int, in_main: bool) -> list[str]:
        rng = self.rng
        self.features.add("if")
        if depth > 0:
            self.features.add("nested-if")
        lines = [f"{rng.choice(('if', 'IF', 'If'))} {self._condition()}"]
        lines += self._indent(self._statements(rng.randrange(1, 4), depth + 1, in_main))
        for _ in range(rng.randrange(0, 3)):
            self.features.add("elif")
            lines.append(f"elif {self._condition()}")
            lines += self._indent(self._statements(rng.randrange(1, 3), depth + 1, in_main))
        if rng.random() < 0.5:
            self.features.add("else")
            lines.append("else")
            lines += self._indent(self._statements(rng.randrange(1, 3), depth + 1, in_main))
        lines.append(rng.choice(("endif", "ENDIF", "endif  ")))
        return lines

    def _indent(self, lines: list[str]) -> list[str]:
        indent = self.rng.choice(("", "  ", "\t"))
        return [indent + line if line else line for line in lines]

    def _include(self, depth: int) -> list[str]:
        rng = self.rng
        if rng.random() < 0.3:
            self.features.add("include-ifexist")
            return [f"include ifexist : {ROOT}/missing-{rng.randrange(100)}.conf"]
        self.features.add("include")
        if depth > 0:
            self.features.add("include-nested")
        relative = self._new_file("inc")
        body = self._statements(rng.randrange(1, 5), depth + 1, False)
        self.files[relative] = "\n".join(body) + "\n"
        return [
            f"{rng.choice(('include', 'INCLUDE'))}{rng.choice((' : ', ':', ' :'))}{ROOT}/{relative}"
        ]

    def _new_file(self, stem: str) -> str:
        self.file_count += 1
        return f"{stem}-{self.file_count}.conf"

    def _statement(self, depth: int, in_main: bool) -> list[str]:
        rng = self.rng
        roll = rng.random()
        if roll < 0.30:
            return self._user_statement()
        if roll < 0.42:
            return self._policy_statement()
        if roll < 0.52:
            return self._typed_statement()
        if roll < 0.60:
            return self._prefixed_statement()
        if roll < 0.66:
            self.features.add("comment")
            return [rng.choice(("# a comment", "#", "   # indented comment", "## START = 1"))]
        if roll < 0.70:
            self.features.add("blank")
            return [rng.choice(("", "   ", "\t"))]
        if roll < 0.78 and depth < 2:
            return self._if_block(depth, in_main)
        if roll < 0.83 and depth < 2:
            return self._include(depth)
        if roll < 0.88:
            return self._use_statement()
        if roll < 0.92:
            return self._random_statement()
        if roll < 0.95 and in_main and depth == 0:
            return self._lhs_statement()
        return self._user_statement()

    def _statements(self, count: int, depth: int, in_main: bool) -> list[str]:
        lines: list[str] = []
        for _ in range(count):
            lines += self._statement(depth, in_main)
        return lines

    # -- the case --------------------------------------------------------------------------

    def _helpers(self) -> list[str]:
        rng = self.rng
        lines: list[str] = []
        for name in _NUMBERS:
            self._define(name)
            self._check(name)
            lines.append(f"{name} = {rng.randrange(3)}")
        for name in _PATH_KNOBS:
            self._define(name)
            self._check(name)
            lines.append(f"{name} = {rng.choice(_PATHS)}")
        self._define(_LIST_KNOB)
        self._check(_LIST_KNOB)
        lines.append(f"{_LIST_KNOB} = {rng.choice(('a, b, c', 'one,two ,three', 'x,  y,z'))}")
        self._define(_EXPR_KNOB)
        self._check(_EXPR_KNOB)
        lines.append(f"{_EXPR_KNOB} = {rng.choice(('3*4', '(1 + 2) * 5', '10/4'))}")
        return lines

    def _local_config(self, main: list[str]) -> None:
        rng = self.rng
        if rng.random() < 0.25:
            self.features.add("local-config-dir")
            directory = f"config-{self.number}.d"
            names = sorted(rng.sample(("00-first", "10-second.conf", "50_third", "zz-last~"), 2))
            for name in names:
                self.files[f"{directory}/{name}"] = (
                    "\n".join(self._statements(rng.randrange(1, 4), 1, False)) + "\n"
                )
            main.append(f"LOCAL_CONFIG_DIR = {ROOT}/{directory}")
            if rng.random() < 0.4:
                self.features.add("local-config-dir-exclude")
                main.append(
                    f"LOCAL_CONFIG_DIR_EXCLUDE_REGEXP = {rng.choice(('~$', '^00', 'conf$'))}"
                )
        if rng.random() < 0.25:
            self.features.add("local-config-file")
            files = [self._new_file("local") for _ in range(rng.randrange(1, 3))]
            for relative in files:
                self.files[relative] = (
                    "\n".join(self._statements(rng.randrange(1, 4), 1, False)) + "\n"
                )
            if rng.random() < 0.3:
                self.features.add("local-config-file-changed")
                extra = self._new_file("local")
                self.files[extra] = "\n".join(self._statements(2, 1, False)) + "\n"
                self.files[files[-1]] += (
                    f"LOCAL_CONFIG_FILE = $(LOCAL_CONFIG_FILE), {ROOT}/{extra}\n"
                )
            separator = rng.choice((", ", " ", " ,  "))
            main.append("LOCAL_CONFIG_FILE = " + separator.join(f"{ROOT}/{f}" for f in files))

    def _env_override(self) -> None:
        rng = self.rng
        if rng.random() < 0.15:
            self.features.add("condor-env-override")
            name = rng.choice(("GenEnvKnob", "GenAlpha", "START"))
            rank = self._define(name)
            self._check(name)
            self.env[f"_CONDOR_{name}"] = self._value(rank, 1)

    def _break(self, main: list[str]) -> None:
        rng = self.rng
        if rng.random() >= 0.08:
            return
        self.features.add("error")
        kind = rng.randrange(8)
        position = rng.randrange(len(main) + 1)
        broken: list[str]
        if kind == 0:
            self.error, broken = "unterminated @= block", ["GenBroken @=tag", "  value"]
            position = len(main)
        elif kind == 1:
            self.error, broken = "endif without if", ["endif"]
        elif kind == 2:
            self.error, broken = "if without endif", ["if true", "GenBroken = 1"]
            position = len(main)
        elif kind == 3:
            self.error, broken = "missing required include", [f"include : {ROOT}/absent.conf"]
        elif kind == 4:
            self.error, broken = "unknown template", ["use POLICY : NoSuchTemplateAtAll"]
        elif kind == 5:
            self.error, broken = "line without operator", ["this line is not configuration"]
        elif kind == 6:
            self.error, broken = "else twice", ["if false", "else", "else", "endif"]
        else:
            self.error, broken = (
                "comment ends a continuation",
                [
                    "GenBroken = a \\",
                    "# no backslash here",
                    "  b c",
                ],
            )
        main[position:position] = broken

    def build(self) -> GeneratedConfig:
        rng = self.rng
        main = self._helpers()
        main += self._statements(rng.randrange(4, 16), 0, True)
        self._local_config(main)
        main += self._statements(rng.randrange(0, 4), 0, True)
        self._env_override()
        self._break(main)
        main_name = "condor_config"
        self.files[main_name] = "\n".join(main) + "\n"
        return GeneratedConfig(
            number=self.number,
            files=dict(self.files),
            main=main_name,
            env=dict(self.env),
            names_to_check=tuple(self.checked.values()),
            random_knobs=dict(self.random_knobs),
            features=frozenset(self.features),
            error=self.error,
        )


def generate(number: int, templates: Sequence[TemplateChoice] = ()) -> GeneratedConfig:
    """Case ``number``; ``templates`` are those ``use`` lines may name."""
    return _Builder(number, templates).build()
