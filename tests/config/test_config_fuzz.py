"""Fuzzing the configuration reader: any text is either read or refused with ConfigError.

Nothing else may escape: not a Python error from the reader, the macro functions, the
conditions or the templates, and no endless loop (expansion has a budget).
"""

from __future__ import annotations

import contextlib

from hypothesis import example, given, settings
from hypothesis import strategies as st

from epcore.config import Config, ConfigError, MemoryHost, Origin
from epcore.config.conditions import ConditionError, ConditionScope, evaluate_condition

#: Pieces that make the generated text hit the reader's special cases often.
FRAGMENTS = [
    "A",
    "b",
    "START",
    "X.Y",
    "STARTD.",
    "=",
    " = ",
    ":",
    "@=",
    "@",
    "end",
    "\n",
    "\\\n",
    "\\ \n",
    "#",
    " ",
    "\t",
    "$(",
    ")",
    "$(A)",
    "$(A:",
    "$(DOLLAR)",
    "$$(",
    "$ENV(",
    "$INT(",
    "$REAL(",
    "$CHOICE(",
    "$SUBSTR(",
    "$RANDOM_CHOICE(",
    "$RANDOM_INTEGER(",
    "$STRING(",
    "$EVAL(",
    "$Fpnxdqb(",
    "$BASENAME(",
    "$DIRNAME(",
    ",",
    "1",
    "-1",
    "0.5",
    "%d",
    "%s",
    "if ",
    "elif ",
    "else",
    "endif",
    "version >= 8.1",
    "defined ",
    "use ",
    "POLICY",
    "FEATURE",
    "Desktop",
    "PartitionableSlot(",
    "StaticSlots(2, 1)",
    "include",
    "ifexist",
    "command",
    "error",
    "warning",
    "true",
    "false",
    "!",
    "[",
    "]",
    '"',
    "'",
    "\x00",
    "é",
    "\r\n",
]

text_from_fragments = st.lists(st.sampled_from(FRAGMENTS), max_size=60).map("".join)
any_text = st.text(max_size=300)
scaled = settings(max_examples=settings().max_examples)


def _exercise(text: str) -> None:
    try:
        cfg = Config.from_text(text, host=MemoryHost())
    except ConfigError:
        return
    for name in list(cfg.names()):
        try:
            value = cfg.get(name)
        except ConfigError:
            continue
        assert value is None or isinstance(value, str)


@scaled
@given(text_from_fragments)
def test_fragment_soup_is_read_or_refused(text: str) -> None:
    """Text built from the language's own tokens never raises anything but ConfigError."""
    _exercise(text)


@scaled
@given(any_text)
def test_arbitrary_text_is_read_or_refused(text: str) -> None:
    """Arbitrary Unicode text never raises anything but ConfigError."""
    _exercise(text)


@scaled
@given(st.lists(st.sampled_from(FRAGMENTS), max_size=20).map("".join))
# CI's second pass drew this one: refused only at the substitution limit, after eight minutes.
@example(":$(A:$(A) X.Y")
def test_any_value_expands_or_is_refused(value: str) -> None:
    """Whatever a value holds, reading it expands it or raises ConfigError."""
    cfg = Config.from_text("B = 1\nL = x, y\n", host=MemoryHost())
    cfg.table.set("A", value, Origin("<fuzz>", 1))
    try:
        result = cfg.get("A")
    except ConfigError:
        return
    assert result is None or isinstance(result, str)


@scaled
@given(st.lists(st.sampled_from(FRAGMENTS), max_size=12).map("".join))
def test_any_condition_is_decided_or_refused(condition: str) -> None:
    """An if condition evaluates to a bool or raises ConditionError."""
    scope = ConditionScope(
        expand=lambda text: text.replace("$(A)", "1"),
        lookup=lambda name: "1" if name == "A" else None,
        has_template=lambda category, name: category.upper() == "POLICY",
    )
    with contextlib.suppress(ConditionError):
        assert isinstance(evaluate_condition(condition, scope), bool)


def test_self_including_template_nesting_is_bounded() -> None:
    """Deeply nested includes stop at HTCondor's nesting limit with a ConfigError."""
    host = MemoryHost(files={f"/f{i}": f"include : /f{i + 1}\n" for i in range(40)})
    host.files["/f40"] = "A = 1\n"
    try:
        Config.from_text("include : /f0\n", host=host)
    except ConfigError as error:
        assert "nested too deep" in str(error)
    else:
        raise AssertionError("40 nested includes were accepted")
