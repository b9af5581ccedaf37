"""HTCondor's own ClassAd test data run through epcore.

Its two files, functional_tests.txt and tests.txt, are kept converted in tests/data
(classad_functional_tests.toml and classad_tests.toml, with their attribution); test ids and
:data:`STALE_LINES` give the lines of the original files.

functional_tests.txt asserts its outcomes itself (``same``/``diff``/``sameq``/``diffq``); its
XML lines are out of scope and reported as skipped. tests.txt carries no expected values: its
``evaluate`` lines are compared with classad2, its ``test-match`` lines with both the stated
expectation and classad2, and its ``test-lexer-one-token`` lines are checked through parse_expr.
"""

from __future__ import annotations

import tomllib
from pathlib import Path

import attrs
import classad2
import pytest
from oracle import (
    Scene,
    World,
    canon_epcore,
    canon_oracle,
    make_context,
    oracle_parses,
    parse_oracle_ad,
    render,
)

from epcore.classad import (
    ERROR,
    UNDEFINED,
    ClassAd,
    ClassAdSyntaxError,
    parse_ad,
    parse_expr,
    symmetric_match,
)

pytestmark = pytest.mark.oracle

DATA = Path(__file__).resolve().parents[1] / "data"
FUNCTIONAL = DATA / "classad_functional_tests.toml"
TESTS = DATA / "classad_tests.toml"


@attrs.frozen
class ScriptLine:
    """One command of functional_tests.txt with its ``$variables`` already substituted."""

    line: int
    command: str
    left: str
    right: str = ""
    skip: str = ""


def _functional_script() -> list[ScriptLine]:
    cases = tomllib.loads(FUNCTIONAL.read_text(encoding="utf-8"))["case"]
    return [ScriptLine(**case) for case in cases]


def _script_param(item: ScriptLine) -> object:
    marks = [pytest.mark.skip(reason=item.skip)] if item.skip else []
    return pytest.param(item, id=f"line{item.line}-{item.command}", marks=marks)


def same_as(left: object, right: object) -> bool:
    """libclassad's Value::SameAs on epcore values: same type and equal value.

    Reals compare with ``==`` (so NaN is never the same as NaN and 0.0 is the same as -0.0);
    lists element by element; ClassAds by their attribute expressions.
    """
    if isinstance(left, ClassAd) or isinstance(right, ClassAd):
        if not (isinstance(left, ClassAd) and isinstance(right, ClassAd)):
            return False
        names = {name.lower() for name in left}
        return names == {name.lower() for name in right} and all(
            left.lookup(name) == right.lookup(name) for name in left
        )
    if type(left) is not type(right):
        return False
    if isinstance(left, list) and isinstance(right, list):
        return len(left) == len(right) and all(map(same_as, left, right))
    return left is right if left in (UNDEFINED, ERROR) else left == right


#: tests.txt evaluations that hit a deliberate difference (subscript, then selection), each
#: with the equivalent expression (selection by name) that classad2 evaluates correctly.
SUBSCRIPT_THEN_SELECT = {
    'access_times["globus"]': "access_times.globus",
    'access_times["globus"].start': "access_times.globus.start",
}

#: Lines whose assertion HTCondor 25.14.1's classad2 itself no longer satisfies. The oracle
#: is the referee, so on these lines epcore must give what classad2 gives.
STALE_LINES = {
    58: 'a relTime("...") literal is a real in libclassad 25.x, so isReltime is false',
    97: "subscripting an ad with a name it lacks is undefined, not error",
    199: "splitTime of a relTime literal (a real) splits it as an absolute time",
    200: "splitTime of a relTime literal (a real) splits it as an absolute time",
    202: "splitTime of a relTime literal (a real) splits it as an absolute time",
    235: "sum of an empty list is 0",
    236: "avg of an empty list is 0",
}


@pytest.mark.parametrize("item", [_script_param(item) for item in _functional_script()])
def test_functional_script_line(item: ScriptLine, world: World) -> None:
    """Each line of functional_tests.txt holds in epcore as the script asserts (or as classad2
    answers, on the lines the script asserts out-of-date behaviour for)."""
    context = make_context()
    if item.line in STALE_LINES:
        scene = world.scenes[0]
        for side in (item.left, item.right):
            assert canon_epcore(side, scene, world.context) == canon_oracle(side, scene), (
                item.line,
                side,
                STALE_LINES[item.line],
            )
        theirs = canon_oracle(item.left, scene) == canon_oracle(item.right, scene)
        assert theirs != (item.command == "same"), f"line {item.line} is no longer stale"
        return
    if item.command == "eval":
        parse_expr(item.left).evaluate(context=context)
        return
    if item.command in ("sameq", "diffq"):
        identical = parse_expr(item.left) == parse_expr(item.right)
        assert identical == (item.command == "sameq"), (item.left, item.right)
        return
    left = parse_expr(item.left).evaluate(context=context)
    right = parse_expr(item.right).evaluate(context=context)
    expected = item.command == "same"
    assert item.command in ("same", "diff"), item
    assert same_as(left, right) == expected, (
        f"{item.command} {item.left}, {item.right}: epcore gives {left!r} and {right!r}"
    )


# ----------------------------------------------------------------------------- tests.txt


@attrs.frozen
class Corpus:
    """What tests.txt holds that is in scope: lexer cases, ads, evaluations and matches."""

    tokens: list[tuple[int, str, str]]
    ads: dict[str, str]
    evaluations: list[tuple[int, str, str]]
    matches: list[tuple[int, str, str, str, str]]


def _tests_file() -> Corpus:
    data = tomllib.loads(TESTS.read_text(encoding="utf-8"))
    return Corpus(
        [(token["line"], token["text"], token["token"]) for token in data["token"]],
        data["ads"],
        [(item["line"], item["ad"], item["expr"]) for item in data["evaluation"]],
        [
            (item["line"], item["kind"], item["left"], item["right"], item["expect"])
            for item in data["match"]
        ],
    )


TESTS_FILE = _tests_file()
VALUE_TOKENS = {
    "LEX_INTEGER_VALUE",
    "LEX_REAL_VALUE",
    "LEX_BOOLEAN_VALUE",
    "LEX_STRING_VALUE",
    "LEX_UNDEFINED_VALUE",
    "LEX_ERROR_VALUE",
}


@pytest.mark.parametrize(
    ("text", "token"),
    [pytest.param(text, token, id=f"line{n}-{token}") for n, text, token in TESTS_FILE.tokens],
)
def test_lexer_token(text: str, token: str, world: World) -> None:
    """A token that is a whole expression parses as in the oracle; any other token fails."""
    if token in VALUE_TOKENS:
        scene = world.scenes[0]
        ours, theirs = canon_epcore(text, scene, world.context), canon_oracle(text, scene)
        assert ours == theirs, f"{text}: epcore {render(ours)}, classad2 {render(theirs)}"
        assert parse_expr(str(parse_expr(text))) == parse_expr(text)
    elif token == "LEX_IDENTIFIER":
        ad = parse_ad(f"[{text} = 42]")
        assert parse_expr(text).evaluate(ad) == 42
        assert classad2.ClassAd(f"[{text} = 42]").eval(text) == 42
        assert str(parse_expr(text)) == text
    else:
        with pytest.raises(ClassAdSyntaxError):
            parse_expr(text)
        assert not oracle_parses(text), f"classad2 accepts {text!r} as an expression"


@pytest.mark.parametrize("name", sorted(TESTS_FILE.ads))
def test_tests_file_ad_parses(name: str) -> None:
    """Every ClassAd of tests.txt parses in epcore with the attribute names classad2 sees."""
    text = TESTS_FILE.ads[name]
    ours = {key.lower() for key in parse_ad(text)}
    theirs = {key.lower() for key in parse_oracle_ad(text)}
    assert ours == theirs


def _scene(name: str) -> Scene:
    text = TESTS_FILE.ads[name]
    return Scene(
        name, parse_ad(text), None, parse_oracle_ad(text), classad2.ClassAd(), ((name, text),)
    )


@pytest.mark.parametrize(
    ("ad_name", "expr"),
    [pytest.param(ad, e, id=f"line{n}-{ad}-{e}") for n, ad, e in TESTS_FILE.evaluations],
)
def test_tests_file_evaluation(ad_name: str, expr: str, world: World) -> None:
    """Each ``evaluate AD EXPR`` line gives epcore the value classad2 gives, except where
    test_differential.test_deliberate_differences lists why not."""
    scene = _scene(ad_name)
    ours, theirs = canon_epcore(expr, scene, world.context), canon_oracle(expr, scene)
    if expr in SUBSCRIPT_THEN_SELECT:
        # classad2 loses the attributes of an ad a string subscript returned.
        assert ours != theirs and ours == canon_epcore(
            SUBSCRIPT_THEN_SELECT[expr], scene, world.context
        )
        return
    assert ours == theirs, f"{expr} in {ad_name}: epcore {render(ours)}, classad2 {render(theirs)}"


@pytest.mark.parametrize(
    ("kind", "left", "right", "expect"),
    [pytest.param(*m[1:], id=f"line{m[0]}-{'-'.join(m[1:])}") for m in TESTS_FILE.matches],
)
def test_tests_file_match(kind: str, left: str, right: str, expect: str) -> None:
    """Each ``test-match`` line holds in epcore and in classad2.

    ``leftMatchesRight`` means the right ad's Requirements hold with the left ad as TARGET, as
    libclassad's MatchClassAd defines it; ``rightMatchesLeft`` is the converse.
    """
    ours_left, ours_right = parse_ad(TESTS_FILE.ads[left]), parse_ad(TESTS_FILE.ads[right])
    theirs_left = parse_oracle_ad(TESTS_FILE.ads[left])
    theirs_right = parse_oracle_ad(TESTS_FILE.ads[right])
    if kind == "symmetricMatch":
        ours = symmetric_match(ours_left, ours_right)
        theirs = theirs_left.symmetricMatch(theirs_right)
    elif kind == "leftMatchesRight":
        ours = ours_right.evaluate("Requirements", target=ours_left) is True
        theirs = theirs_left.matches(theirs_right)
    else:
        ours = ours_left.evaluate("Requirements", target=ours_right) is True
        theirs = theirs_right.matches(theirs_left)
    expected = expect == "ExpectMatch"
    assert (ours, theirs) == (expected, expected)
