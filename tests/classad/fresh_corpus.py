"""A fresh corpus check of epcore against classad2, run by hand (not collected by pytest).

    cd /work/wt/cadiff && PYTHONPATH=. python3 tests/classad/fresh_corpus.py --seed 7 -n 20000

It writes ``-n`` expressions with its own random generator (not the hypothesis strategies, so
that it finds what they were never taught to write), seeded by ``--seed`` (a random seed,
printed, when none is given), evaluates each in both engines in the four scenes of the
differential suite (oracle.World) and prints the disagreements grouped by kind. A kind is the
smallest sub-expression that still disagrees on its own (its function, operator or node type)
with the two results' types; each kind shows its shortest examples.

Expressions the suite leaves out on purpose are counted apart, not as disagreements: those on
which classad2 contradicts itself or crashes (oracle.OracleUnstable), lists holding their own
attribute (oracle.SELF_LISTING), the quirks of quirks.py and the
culprits of the deliberate differences recognised by deliberate().
"""

from __future__ import annotations

import argparse
import collections
import os
import random
import sys
import time
from collections.abc import Callable, Iterator

import attrs
from fresh_shapes import SHAPES, Writer
from oracle import (
    SELF_LISTING,
    Canon,
    OracleUnstable,
    Scene,
    World,
    canon_epcore,
    fixed_timezone,
    has_absolute_reference,
    render,
)
from oracle_child import OracleProcess
from quirks import failing_element_quirk, list_identity_quirk, unresolved_quirk

from epcore.classad import AbsTime, ClassAdSyntaxError, ast, parse_expr
from epcore.classad.classad import Expr

#: Seconds from the epoch past which localtime() fails and libclassad formats unset fields.
BEYOND_LOCALTIME = 2**55

#: Functions classad2 calls with a null scope when there is no ad (it crashes).
NEED_A_SCOPE = ("countmatches", "evalineachcontext")


@attrs.frozen
class Mismatch:
    """One expression on which the engines differ in one scene, and its smallest culprit."""

    shape: str
    text: str
    scene: str
    ours: Canon
    theirs: Canon
    culprit: str
    label: str


def scenes_for(text: str, world: World) -> tuple[Scene, ...]:
    """The scenes in which classad2 has an answer for ``text`` (as compare_everywhere skips)."""
    lower = text.lower()
    if has_absolute_reference(text) or any(name in lower for name in NEED_A_SCOPE):
        return world.scenes[1:]
    return world.scenes


NODE_TYPES = (
    ast.Literal, ast.AttrRef, ast.Unary, ast.Binary, ast.Ternary, ast.Elvis, ast.Paren,
    ast.Subscript, ast.Call, ast.ListExpr, ast.AdExpr,
)  # fmt: skip


def _children(node: object) -> Iterator[ast.Node]:
    for field in attrs.fields(type(node)):
        value = getattr(node, field.name)
        items = value if isinstance(value, tuple) else (value,)
        for item in items:
            if isinstance(item, tuple):  # an ad's (name, expression) pairs
                yield from (part for part in item if isinstance(part, NODE_TYPES))
            elif isinstance(item, NODE_TYPES):
                yield item


def _label(node: ast.Node) -> str:
    if isinstance(node, ast.Call):
        return f"{node.name.lower()}()"
    if isinstance(node, ast.Binary | ast.Unary):
        return f"op {node.op.lower()}" + (" (unary)" if isinstance(node, ast.Unary) else "")
    return type(node).__name__


def _subtrees(node: ast.Node) -> list[ast.Node]:
    found, todo = [], [node]
    while todo:
        current = todo.pop()
        found.append(current)
        todo.extend(_children(current))
    return found


class Checker:
    """Both engines on one world; the oracle in a child process, so a crash costs one text."""

    def __init__(self, world: World) -> None:
        self.world = world

    def compare(self, text: str, scene: Scene) -> tuple[Canon, Canon] | None:
        """Both canonical values, or None when they agree."""
        try:
            theirs = self.world.oracle(text, scene)
        except AssertionError as exc:
            # classad2's binding itself raised (split("ß", "é") is a SystemError in its list
            # code): no reference answer.
            raise OracleUnstable(str(exc)) from exc
        ours = canon_epcore(text, scene, self.world.context)
        return None if ours == theirs else (ours, theirs)

    def culprit(self, text: str, scene: Scene) -> tuple[str, str, ast.Node | None]:
        """The shortest sub-expression of ``text`` that disagrees alone in ``scene``, labelled."""
        try:
            root = parse_expr(text).node
        except ClassAdSyntaxError:
            return text, "syntax", None
        subtrees = sorted(_subtrees(root), key=lambda node: len(str(Expr(node))))
        for node in subtrees:
            piece = str(Expr(node))
            if scene not in scenes_for(piece, self.world):
                continue
            try:
                if self.compare(piece, scene) is not None:
                    return piece, _label(node), node
            except OracleUnstable:
                continue
        return text, _label(root), root


def run(
    seed: int, count: int, only: str | None, report: Callable[[str], None]
) -> tuple[collections.Counter[str], list[Mismatch]]:
    """Write and check ``count`` expressions; the outcome counts and the disagreements."""
    writer = Writer(random.Random(seed))
    counts: collections.Counter[str] = collections.Counter()
    mismatches: list[Mismatch] = []
    with fixed_timezone():
        world = World.build()
        world.process = OracleProcess()
        checker = Checker(world)
        shapes = [(name, make) for name, make in SHAPES if only in (None, name)]
        try:
            for index in range(count):
                name, make = shapes[index % len(shapes)]
                text = make(writer)
                counts[f"shape {name}"] += 1
                if SELF_LISTING.search(text):
                    counts["left out: list holding its own attribute"] += 1
                    continue
                if failing_element_quirk(text):
                    counts["left out: deliberate: a list element whose evaluation fails"] += 1
                    continue
                if list_identity_quirk(text):
                    counts["left out: deliberate: =?= between a built list and another list"] += 1
                    continue
                if unresolved_quirk(text):
                    counts["left out: deliberate: unresolved() quirks"] += 1
                    continue
                found = _check_one(checker, name, text, counts)
                mismatches.extend(found)
                if index % 2000 == 1999:
                    report(f"  {index + 1} expressions, {len(mismatches)} disagreements")
        finally:
            world.process.close()
    return counts, mismatches


def _check_one(
    checker: Checker, shape: str, text: str, counts: collections.Counter[str]
) -> list[Mismatch]:
    found = []
    for scene in scenes_for(text, checker.world):
        try:
            differs = checker.compare(text, scene)
        except OracleUnstable:
            counts["left out: classad2 unstable or crashed"] += 1
            return []
        counts["evaluations"] += 1
        if differs is None:
            continue
        culprit, label, node = checker.culprit(text, scene)
        reason = deliberate(node, *differs)
        if reason is not None:
            counts[f"left out: {reason}"] += 1
            continue
        found.append(Mismatch(shape, text, scene.name, *differs, culprit, label))
    return found


def deliberate(node: ast.Node | None, ours: Canon, theirs: Canon) -> str | None:
    """The deliberate difference a culprit shows (test_deliberate_differences), if any."""
    if (
        isinstance(node, ast.Subscript)
        and isinstance(node.index, ast.Literal)
        and type(node.index.value) is str
        and theirs[0] in ("classad", "list")
    ):
        return "deliberate: subscript-then-select (an ad from a string subscript)"
    if node is not None and any(_beyond_localtime(sub) for sub in _subtrees(node)):
        return "deliberate: a time past localtime()'s range (test_differences)"
    return None


#: Functions that split a time with localtime(), which fails past BEYOND_LOCALTIME.
CALENDAR_FUNCTIONS = {
    "formattime", "splittime", "getyear", "getmonth", "getdayofyear", "getdayofmonth",
    "getdayofweek", "gethours", "getminutes", "getseconds",
}  # fmt: skip


def _beyond_localtime(node: ast.Node) -> bool:
    if not (isinstance(node, ast.Call) and node.name.lower() in CALENDAR_FUNCTIONS and node.args):
        return False
    try:
        when = Expr(node.args[0]).evaluate()
    except Exception:
        return False
    seconds = when.secs if isinstance(when, AbsTime) else when
    return isinstance(seconds, int | float) and abs(seconds) > BEYOND_LOCALTIME


def _kind(m: Mismatch) -> str:
    return f"{m.label}: epcore {m.ours[0]} / classad2 {m.theirs[0]}"


def print_report(
    seed: int, counts: collections.Counter[str], mismatches: list[Mismatch], examples: int
) -> None:
    """The counts, then each kind of disagreement with its shortest examples."""
    print(f"seed {seed}")
    for key in sorted(counts):
        print(f"  {key}: {counts[key]}")
    texts = {m.text for m in mismatches}
    print(f"disagreeing expressions: {len(texts)} ({len(mismatches)} expression-scenes)")
    kinds: dict[str, list[Mismatch]] = collections.defaultdict(list)
    for m in mismatches:
        kinds[_kind(m)].append(m)
    for kind, items in sorted(kinds.items(), key=lambda kv: -len(kv[1])):
        print(f"\n== {kind}  ({len(items)})")
        seen = set()
        for m in sorted(items, key=lambda m: len(m.culprit)):
            if m.culprit in seen:
                continue
            seen.add(m.culprit)
            print(f"  [{m.shape}; {m.scene}] {m.culprit}")
            print(f"      epcore {render(m.ours)[:150]} | classad2 {render(m.theirs)[:150]}")
            if m.culprit != m.text:
                print(f"      in: {m.text[:300]}")
            if len(seen) >= examples:
                break


def main(argv: list[str] | None = None) -> int:
    """Parse the arguments, run the corpus, print the report; exit 1 when anything disagrees."""
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--seed", type=int, default=None)
    parser.add_argument("-n", "--count", type=int, default=20000)
    parser.add_argument(
        "--shape", default=None, help="only this shape: " + ", ".join(name for name, _ in SHAPES)
    )
    parser.add_argument("--examples", type=int, default=4)
    args = parser.parse_args(argv)
    seed = args.seed if args.seed is not None else int.from_bytes(os.urandom(4), "big")
    started = time.monotonic()
    counts, mismatches = run(
        seed, args.count, args.shape, lambda line: print(line, file=sys.stderr, flush=True)
    )
    print_report(seed, counts, mismatches, args.examples)
    print(f"\n{time.monotonic() - started:.0f} s")
    return 1 if mismatches else 0


if __name__ == "__main__":
    sys.exit(main())
