"""Where epcore's functions differ from classad2 on purpose; each case asserts both sides.

Every entry names the reason. They are all places where exact parity would need something
the pure core does not have (a zone database, the passwd file, libclassad's lazily evaluated
lists).
"""

from __future__ import annotations

import re

import classad2
import pytest
from fn_oracle import evaluate, fixed_context
from oracle import World, canon_epcore, canon_oracle

from epcore.classad import ERROR, UNDEFINED, ClassAd, EvalContext

pytestmark = [pytest.mark.oracle, pytest.mark.usefixtures("compat")]


def _oracle(text: str) -> object:
    holder = classad2.ClassAd(f"[__e = {text}]")
    return holder.lookup("__e").eval(classad2.ClassAd(), classad2.ClassAd())


PASSWD = "the pure core reads no passwd file: without context.user_home every user is unknown"


def test_user_home_without_resolver() -> None:
    """classad2 reads the passwd file; epcore without context.user_home knows no user."""
    assert evaluate('userHome("root")', fixed_context()) is UNDEFINED
    assert evaluate('userHome("root", "/fallback")', fixed_context()) == "/fallback"
    assert _oracle('userHome("root")') == "/root", PASSWD


def test_random_with_an_empty_range() -> None:
    """libclassad's evaluation fails (classad2 raises); epcore returns ERROR instead."""
    assert evaluate("random(0)") is ERROR
    with pytest.raises(classad2.ClassAdException):
        _oracle("random(0)")


def test_format_time_beyond_the_c_library() -> None:
    """Past localtime()'s range libclassad formats fields it never set (a negative month);
    epcore formats the proleptic Gregorian date."""
    text = 'formatTime(9223372036854775807, "%Y-%m-%d")'
    assert evaluate(text, EvalContext(now=0, local_offset=lambda _secs: 0)) == "219250468-12-04"
    theirs = _oracle(text)
    assert isinstance(theirs, str), theirs
    date = re.fullmatch(r"-?\d+-(\d{2})-(\d{2})", theirs)
    assert date is None or not (1 <= int(date[1]) <= 12 and 1 <= int(date[2]) <= 31), theirs


@pytest.mark.parametrize("text", ["splitTime(-9223372036854775807)"])
def test_times_beyond_the_c_library(text: str, world: World) -> None:
    """Past localtime()'s range libclassad reads uninitialised fields; epcore extends the
    proleptic Gregorian calendar and takes the zone offset as 0."""
    value = evaluate(text, EvalContext(now=0))
    assert isinstance(value, ClassAd)
    assert value.evaluate("Year") == -292277022657
    assert value.evaluate("Offset") == 0
    assert canon_epcore(text, world.scenes[0], world.context) != canon_oracle(text, world.scenes[0])
