"""Talking to the oracle (HTCondor's own classad2) and comparing its answers with epcore's.

Both engines' results are brought to one canonical form, a tree of tuples that compares with
``==`` exactly as the differential tests need:

- ``("undefined",)``, ``("error",)``, ``("bool", b)``, ``("int", i)``, ``("string", s)``;
- ``("real", float.hex(x))``: reals compare bit for bit (so ``-0.0`` differs from ``0.0``),
  except that every NaN is ``("real", "nan")``;
- ``("abstime", seconds, offset)`` and ``("reltime", float.hex(seconds))``;
- ``("list", (item, ...))`` and ``("classad", ((lower-case name, value), ...))``, sorted by name;
- ``("syntax-error",)`` when the text does not parse, ``("raised", "...")`` when an engine throws.

classad2's ``ExprTree.eval`` loses two facts on the way to Python: a relative time comes back as a
plain ``float`` and an absolute time as a ``datetime`` converted to UTC. The oracle recovers the
first from ``ExprTree.simplify``, whose unparsed literal still says ``relTime(...)``, and the zone
offset of the second from ``splitTime(expr).Offset``; the number itself always comes from
``eval``, which is exact.
List elements and ClassAd attributes are compared by evaluating ``(expr)[i]`` and
``(expr)["name"]`` in each engine, so that both engines resolve them in the scope they really have.
"""

from __future__ import annotations

import calendar
import datetime
import math
import os
import pwd
import random
import re
import time
from collections.abc import Iterator
from contextlib import contextmanager
from typing import TYPE_CHECKING, Any, Final

import classad2
from hypothesis import reject
from quirks import failing_element_quirk, list_identity_quirk, unresolved_quirk
from sample_ads import JOB_AD_TEXT, MACHINE_AD_TEXT

from epcore.classad import (
    ERROR,
    UNDEFINED,
    AbsTime,
    ClassAd,
    ClassAdSyntaxError,
    EvalContext,
    RelTime,
    interpreter,
    parse_ad,
    parse_expr,
)

if TYPE_CHECKING:
    from oracle_child import OracleProcess

Canon = tuple[Any, ...]

#: A POSIX TZ rule with daylight saving time: it needs no tz database and is the same everywhere.
ORACLE_TZ = "EST5EDT,M3.2.0,M11.1.0"

#: The clock epcore sees in the deterministic tests; classad2 cannot be given a clock, which is
#: why clock-reading calls are kept out of those tests (see test_clock_functions).
FIXED_NOW = 1_700_003_600

#: How deep list elements and ClassAd attributes are compared, and how many of each.
#: An absolute time's text that neither libclassad nor epcore reads back as the same time: a
#: year before 1 (negative, or 0 as in "0-12-31T..."), or a year of one or two digits, which
#: both print without padding and read back wrong ("4-01-01T00:00:00" is 3-12-31, and
#: "24-11-03T01:30:00" is 24-01-03).
UNREADABLE_YEAR = re.compile(r'absTime\(\\*"(-|0+-|\d\d?-)')
MAX_DEPTH = 3
MAX_ITEMS = 16


@contextmanager
def fixed_timezone(tz: str = ORACLE_TZ) -> Iterator[None]:
    """Run with the process time zone (and so classad2's local time) set to ``tz``."""
    saved = os.environ.get("TZ")
    os.environ["TZ"] = tz
    time.tzset()
    try:
        yield
    finally:
        if saved is None:
            del os.environ["TZ"]
        else:
            os.environ["TZ"] = saved
        time.tzset()


def local_offset(epoch_secs: int) -> int:
    """The process's zone offset at ``epoch_secs``, which fixed_timezone makes the oracle's too."""
    return time.localtime(epoch_secs).tm_gmtoff


def passwd_home(user: str) -> str | None:
    """A user's home directory from the passwd database, as classad2's userHome() reads it."""
    try:
        return pwd.getpwnam(user).pw_dir
    except (KeyError, ValueError):
        return None


#: The seed of the random source random() draws from in the tests' contexts.
RANDOM_SEED = 19


def make_context(now: float | None = FIXED_NOW) -> EvalContext:
    """The evaluation context epcore gets in the differential tests.

    Its random source is seeded, so that an expression calling random() (the fuzz tests'
    text can) evaluates the same way in every run, as derandomized hypothesis examples must.
    """
    return EvalContext(
        now=now, local_offset=local_offset, user_home=passwd_home, rng=random.Random(RANDOM_SEED)
    )


def parse_oracle_ad(text: str) -> classad2.ClassAd:
    """Parse new (``[...]``) or old (one attribute a line) ClassAd text with classad2."""
    kind = classad2.ParserType.New if text.lstrip().startswith("[") else classad2.ParserType.Old
    return classad2.parseOne(text, kind)


class Scene:
    """One way of evaluating: which ads are MY and TARGET in each engine.

    A plain class with a short repr: hypothesis prints fixtures in its failure reports, and the
    ads themselves are already in the mismatch report.
    """

    def __init__(
        self,
        name: str,
        my: ClassAd | None,
        target: ClassAd | None,
        oracle_my: classad2.ClassAd | None,
        oracle_target: classad2.ClassAd | None,
        ad_texts: tuple[tuple[str, str], ...],
    ) -> None:
        self.name = name
        self.my = my
        self.target = target
        self.oracle_my = oracle_my
        self.oracle_target = oracle_target
        self.ad_texts = ad_texts

    def __repr__(self) -> str:
        return f"Scene({self.name!r})"


class World:
    """The machine and job ads in both engines and the four scenes the differential tests use.

    The scenes are: no ad; MY = machine; MY = machine with TARGET = job; MY = job with
    TARGET = machine. classad2 gets an empty ad as TARGET when there is none, so that it
    evaluates in a match context exactly as epcore does whenever MY is given.
    """

    def __init__(
        self,
        machine: ClassAd,
        job: ClassAd,
        oracle_machine: classad2.ClassAd,
        oracle_job: classad2.ClassAd,
        context: EvalContext,
        scenes: tuple[Scene, ...],
    ) -> None:
        self.machine = machine
        self.job = job
        self.oracle_machine = oracle_machine
        self.oracle_job = oracle_job
        self.context = context
        self.scenes = scenes
        #: Where generated expressions meet classad2; None evaluates them in this process.
        self.process: OracleProcess | None = None

    def oracle(self, text: str, scene: Scene) -> Canon:
        """stable_canon_oracle of ``text`` in one of this world's scenes, in the child if any."""
        if self.process is None or scene not in self.scenes:
            # The child knows only the world's own scenes; a test's own scene is evaluated
            # here, which is safe for the hand-written expressions such tests use.
            return stable_canon_oracle(text, scene)
        return self.process.call("scene", text, self.scenes.index(scene))

    @classmethod
    def build(cls) -> World:
        """Parse the sample ads in both engines."""
        machine, job = parse_ad(MACHINE_AD_TEXT), parse_ad(JOB_AD_TEXT)
        oracle_machine = parse_oracle_ad(MACHINE_AD_TEXT)
        oracle_job = parse_oracle_ad(JOB_AD_TEXT)
        machine_text = ("machine ad", MACHINE_AD_TEXT)
        job_text = ("job ad", JOB_AD_TEXT)
        scenes = (
            Scene("no ad", None, None, None, None, ()),
            Scene(
                "MY = machine", machine, None, oracle_machine, classad2.ClassAd(), (machine_text,)
            ),
            Scene(
                "MY = machine, TARGET = job",
                machine,
                job,
                oracle_machine,
                oracle_job,
                (machine_text, job_text),
            ),
            Scene(
                "MY = job, TARGET = machine",
                job,
                machine,
                oracle_job,
                oracle_machine,
                (job_text, machine_text),
            ),
        )
        return cls(machine, job, oracle_machine, oracle_job, make_context(), scenes)

    def __repr__(self) -> str:
        return "World(machine ad, job ad)"


def _real(value: float) -> Canon:
    return ("real", "nan") if math.isnan(value) else ("real", value.hex())


_IDENTIFIER = re.compile(r"[A-Za-z_][A-Za-z0-9_]*")
_KEYWORDS = {"true", "false", "undefined", "error", "is", "isnt"}


def _key_path(text: str, name: str) -> str:
    # Selection, not a string subscript: classad2 evaluates ad["name"] without the ad's scope
    # (a list element naming a sibling attribute comes out undefined), ad.name with it.
    if _IDENTIFIER.fullmatch(name) and name.lower() not in _KEYWORDS:
        return f"({text}).{name}"
    escaped = name.replace("\\", "\\\\").replace('"', '\\"')
    return f'({text})["{escaped}"]'


# ----------------------------------------------------------------------------- epcore side


def epcore_value(text: str, scene: Scene, context: EvalContext) -> object:
    """Parse and evaluate ``text`` with epcore; a syntax error or an exception becomes a Canon."""
    try:
        expr = parse_expr(text)
    except ClassAdSyntaxError:
        return ("syntax-error",)
    except Exception as exc:
        return ("raised", f"parse_expr: {type(exc).__name__}: {exc}")
    try:
        return expr.evaluate(scene.my, scene.target, context=context)
    except Exception as exc:
        return ("raised", f"evaluate: {type(exc).__name__}: {exc}")


#: interpreter.WARM_UP that has every expression not yet compiled walked, however often.
ALWAYS_WALK: Final = 1 << 62


def canon_epcore(text: str, scene: Scene, context: EvalContext, depth: int = 0) -> Canon:
    """The canonical form of epcore's value of ``text`` in ``scene``.

    Evaluated twice, walked by the interpreter (as a fresh expression's first evaluations
    are) and compiled: the two must give the same value (the attributes of the scene's ads
    are walked until their code is compiled, which the compiled pass does).
    """
    if depth > 0:  # an element of a value being put in canonical form: the same pass
        return _canon_epcore(text, scene, context, depth)
    passes: dict[int, Canon] = {}
    saved = interpreter.WARM_UP
    try:
        for warm_up in (ALWAYS_WALK, 0):
            interpreter.WARM_UP = warm_up
            passes[warm_up] = _canon_epcore(text, scene, context, depth)
    finally:
        interpreter.WARM_UP = saved
    walked, compiled = passes[ALWAYS_WALK], passes[0]
    assert walked == compiled, f"{text!r}: walked {render(walked)}, compiled {render(compiled)}"
    return compiled


def _canon_epcore(text: str, scene: Scene, context: EvalContext, depth: int) -> Canon:
    value = epcore_value(text, scene, context)
    return _canon_epcore_value(value, text, scene, context, depth)


def _canon_epcore_value(
    value: object, text: str, scene: Scene, context: EvalContext, depth: int
) -> Canon:
    if type(value) is tuple:
        return value
    if value is UNDEFINED:
        return ("undefined",)
    if value is ERROR:
        return ("error",)
    kind = type(value)
    if kind is bool:
        return ("bool", value)
    if kind is int:
        return ("int", value)
    if kind is float:
        assert isinstance(value, float)
        return _real(value)
    if kind is str:
        return ("string", value)
    if kind is AbsTime:
        assert isinstance(value, AbsTime)
        return ("abstime", value.secs, value.offset)
    if kind is RelTime:
        assert isinstance(value, RelTime)
        return ("reltime", float(value.secs).hex())
    if kind is list:
        assert isinstance(value, list)
        if depth >= MAX_DEPTH:
            return ("list", len(value), "...")
        items = tuple(
            _canon_epcore_value(item, f"({text})[{i}]", scene, context, depth + 1)
            if type(item) is not ClassAd
            else canon_epcore(f"({text})[{i}]", scene, context, depth + 1)
            for i, item in enumerate(value[:MAX_ITEMS])
        )
        return ("list", items)
    if isinstance(value, ClassAd):
        names = sorted((name.lower(), name) for name in value)
        if depth >= MAX_DEPTH:
            return ("classad", tuple(lower for lower, _ in names), "...")
        return (
            "classad",
            tuple(
                (lower, canon_epcore(_key_path(text, name), scene, context, depth + 1))
                for lower, name in names[:MAX_ITEMS]
            ),
        )
    return ("raised", f"evaluate returned a {kind.__name__}: {value!r}")


# ----------------------------------------------------------------------------- oracle side


def _oracle_tree(text: str) -> tuple[classad2.ClassAd, Any] | None:
    # The holder ad owns the tree; a bare classad2.ExprTree(text) would dangle.
    try:
        holder = classad2.ClassAd(f"[__e = {text}\n]")
    except Exception:
        return None
    tree = holder.lookup("__e")
    if tree is None:
        return None
    return holder, tree


def oracle_parses(text: str) -> bool:
    """Whether classad2 accepts ``text`` as one expression."""
    return _oracle_tree(text) is not None


def oracle_old_format_is_lossless(text: str) -> bool:
    """Whether classad2 reads back its own old-syntax rendering of ad ``text`` unchanged.

    Old syntax has no escapes but ``\\"``, so HTCondor itself cannot write some strings in it
    (a newline, a trailing backslash); epcore is only held to a lossless old format where
    HTCondor's is lossless.
    """
    ad = parse_oracle_ad(text)
    try:
        back = classad2.parseOne(ad.printOld(), classad2.ParserType.Old)
    except Exception:
        return False
    if {k.lower() for k in back} != {k.lower() for k in ad}:
        return False
    return all(str(back.lookup(name)) == str(ad.lookup(name)) for name in ad)


class OracleUnstable(Exception):
    """classad2 has no trustworthy answer: it contradicts itself or would crash the process."""


#: Functions that classad2 calls with a null scope when there is no ad (a segmentation fault).
_NEED_A_SCOPE = ("countmatches", "evalineachcontext")


def _oracle_plain(text: str, scene: Scene) -> object:
    parsed = _oracle_tree(text)
    assert parsed is not None, text
    return parsed[1].eval(scene.oracle_my, scene.oracle_target)


def canon_oracle(text: str, scene: Scene, depth: int = 0) -> Canon:
    """The canonical form of classad2's value of ``text`` in ``scene``."""
    if scene.oracle_my is None and any(name in text.lower() for name in _NEED_A_SCOPE):
        raise OracleUnstable(f"classad2 crashes on {text} without a scope")
    parsed = _oracle_tree(text)
    if parsed is None:
        return ("syntax-error",)
    _holder, tree = parsed
    try:
        value = tree.eval(scene.oracle_my, scene.oracle_target)
    except classad2.ClassAdException:
        # Evaluate() itself failed (e.g. an absolute reference with no scope); the language
        # has no such outcome, and ERROR is its nearest value.
        return ("error",)
    except UnicodeDecodeError as exc:
        # The C++ string is not UTF-8 (a byte-oriented function cut a character in two).
        raw = exc.object if isinstance(exc.object, bytes) else bytes(exc.object)
        return ("string", raw.decode("utf-8", "surrogateescape"))
    except (ValueError, OverflowError):
        # An absolute time outside datetime's years 1 to 9999: ask for its parts instead.
        seconds = _oracle_plain(f"int(({text}))", scene)
        zone = _oracle_plain(f"splitTime(({text})).Offset", scene)
        return ("abstime", seconds, zone if type(zone) is int else repr(zone))
    if value is classad2.Value.Undefined:
        return ("undefined",)
    if value is classad2.Value.Error:
        return ("error",)
    kind = type(value)
    if kind is bool:
        return ("bool", value)
    if kind is int:
        return ("int", value)
    if kind is str:
        return ("string", value)
    if kind is float:
        literal = str(tree.simplify(scene.oracle_my, scene.oracle_target)).strip()
        if literal.startswith("relTime("):
            return ("reltime", value.hex())
        return _real(value)
    if kind is datetime.datetime:
        # splitTime() reports the zone offset to the second; the unparsed literal only to the
        # minute, and eval() drops it.
        zone = _oracle_plain(f"splitTime(({text})).Offset", scene)
        return ("abstime", _epoch_seconds(value), zone if type(zone) is int else repr(zone))
    if kind is list:
        if depth >= MAX_DEPTH:
            return ("list", len(value), "...")
        return (
            "list",
            tuple(
                canon_oracle(f"({text})[{i}]", scene, depth + 1)
                for i in range(min(len(value), MAX_ITEMS))
            ),
        )
    if kind is classad2.ClassAd:
        names = sorted((name.lower(), name) for name in value)
        if depth >= MAX_DEPTH:
            return ("classad", tuple(lower for lower, _ in names), "...")
        return (
            "classad",
            tuple(
                (lower, canon_oracle(_key_path(text, name), scene, depth + 1))
                for lower, name in names[:MAX_ITEMS]
            ),
        )
    return ("raised", f"classad2 returned a {kind.__name__}: {value!r}")


def _epoch_seconds(moment: datetime.datetime) -> int | float:
    whole = calendar.timegm(moment.utctimetuple())
    return whole + moment.microsecond / 1e6 if moment.microsecond else whole


# ----------------------------------------------------------------------------- comparing


def render(canon: Canon) -> str:
    """A readable form of a canonical value for failure messages."""
    tag = canon[0]
    if tag in ("undefined", "error", "syntax-error"):
        return str(tag)
    if tag == "real":
        return "real NaN" if canon[1] == "nan" else f"real {float.fromhex(canon[1])!r}"
    if tag == "reltime":
        return f"relTime {float.fromhex(canon[1])!r}"
    if tag == "abstime":
        return f"absTime {canon[1]!r} offset {canon[2]!r}"
    if tag == "list" and len(canon) == 2:
        return "{" + ", ".join(render(item) for item in canon[1]) + "}"
    if tag == "classad" and len(canon) == 2:
        return "[" + "; ".join(f"{name} = {render(item)}" for name, item in canon[1]) + "]"
    return f"{tag} {canon[1:]!r}" if len(canon) > 2 else f"{tag} {canon[1]!r}"


def mismatch_report(text: str, scene: Scene, ours: Canon, theirs: Canon) -> str:
    """Everything needed to act on a difference: the expression, the ads and both results."""
    lines = [
        "epcore and classad2 disagree",
        f"  expression: {text}",
        f"  scene:      {scene.name}",
        f"  epcore:     {render(ours)}",
        f"  classad2:   {render(theirs)}",
    ]
    for label, ad_text in scene.ad_texts:
        lines.append(f"  {label}:")
        lines.extend(f"      {line}" for line in ad_text.splitlines())
    return "\n".join(lines)


def stable_canon_oracle(text: str, scene: Scene) -> Canon:
    """canon_oracle, evaluated twice; raises OracleUnstable when the two answers differ.

    formatTime() of an absolute time past the year 9999, for one, prints uninitialised memory.
    """
    first, second = canon_oracle(text, scene), canon_oracle(text, scene)
    if first != second:
        raise OracleUnstable(f"{text}: {render(first)} then {render(second)}")
    if _impossible_calendar(first):
        # A time beyond the C library's range: libclassad splits it into garbage fields,
        # consistently, where epcore computes the real calendar date.
        raise OracleUnstable(f"{text}: classad2 gives impossible calendar fields")
    return first


def _impossible_calendar(canon: Canon) -> bool:
    """Whether a canonical value holds a split time whose month or day cannot exist."""
    if canon[0] == "list":
        items = canon[1] if isinstance(canon[1], tuple) else ()
        return any(_impossible_calendar(item) for item in items if isinstance(item, tuple))
    if canon[0] != "classad" or not isinstance(canon[1], tuple):
        return False
    fields = dict(item for item in canon[1] if isinstance(item, tuple) and len(item) == 2)
    month, day = fields.get("month"), fields.get("day")
    if fields.get("type") == ("string", "AbsoluteTime") and month and day:
        return not (1 <= month[-1] <= 12 and 1 <= day[-1] <= 31)
    return any(_impossible_calendar(value) for value in fields.values())


def has_absolute_reference(text: str) -> bool:
    """Whether ``text`` may hold an absolute reference ``.name`` (strings can give false hits)."""
    for index, char in enumerate(text):
        if char != ".":
            continue
        after = text[index + 1 :].lstrip()
        before = text[:index].rstrip()
        starts_name = after[:1].isalpha() or after[:1] in ("_", "'")
        follows_operand = bool(before) and (before[-1].isalnum() or before[-1] in "_)]}'\"")
        if starts_name and not follows_operand:
            return True
    return False


def compare_everywhere(
    text: str, world: World, scenes: tuple[Scene, ...] | None = None
) -> list[str]:
    """Evaluate ``text`` in every scene in both engines; one report per scene that differs."""
    reports = []
    for scene in scenes if scenes is not None else world.scenes:
        if scene.oracle_my is None and has_absolute_reference(text):
            # With no ad at all, libclassad fails any evaluation that reaches ".name", and
            # what classad2 then shows depends on where its Python layer re-evaluates list
            # elements; epcore answers ERROR (pinned in test_evaluation.py).
            continue
        theirs = world.oracle(text, scene)
        ours = canon_epcore(text, scene, world.context)
        if ours != theirs:
            reports.append(mismatch_report(text, scene, ours, theirs))
    return reports


#: An ad literal whose list holds a reference to the attribute the list is bound to
#: (``[A = {A}]``).
SELF_LISTING = re.compile(r"\b([A-Za-z_]\w*)\s*=\s*\{[^{}]*\b\1\b", re.IGNORECASE)


def assert_same_everywhere(text: str, world: World) -> None:
    """Fail with a full report unless epcore and classad2 agree on ``text`` in every scene.

    An expression on which classad2 contradicts itself has no reference answer and is skipped
    (hypothesis counts it as invalid and draws another). So is a list that holds a reference to
    its own attribute: a deliberate difference. libclassad keeps list elements unevaluated, so
    ``[A = {A}].A`` is a list whose element is again that list, without end; epcore evaluates
    list elements with the list, so the element is a cycle and evaluates to UNDEFINED. So are
    the texts that may meet one of the quirks in quirks.py (other deliberate differences).
    """
    if SELF_LISTING.search(text) or unresolved_quirk(text) or list_identity_quirk(text):
        reject()
    if failing_element_quirk(text):
        reject()
    try:
        reports = compare_everywhere(text, world)
    except OracleUnstable:
        reject()
    assert not reports, "\n\n".join(reports)
