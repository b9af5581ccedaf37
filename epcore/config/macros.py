"""Finding and expanding ``$(NAME)``, ``$FUNC(...)`` and template-argument references.

Expansion is textual, as in HTCondor: the leftmost reference is replaced by its value and the
scan resumes where that reference started, so a value that itself contains references is
expanded in turn. ``$$(...)`` is left alone (it is expanded at match time) and ``$(DOLLAR)``
becomes ``$`` only after everything else, so that it can produce a literal ``$(`` without
starting a new reference.

What counts as a reference follows HTCondor's scanner: ``$(`` followed by identifier
characters (letters, digits, ``_``, ``.``, ``/``), optionally a colon and a default; a body
with any other character is not a reference and stays as text. The special functions
(``$ENV``, ``$INT``, ``$F...``) are in :mod:`epcore.config.macro_functions`.
"""

from __future__ import annotations

import re
from collections.abc import Callable

import attrs

from epcore.errors import ConfigError

#: Function identifiers; NORMAL is a plain ``$(NAME)``.
NORMAL = "NORMAL"
FILENAME = "F"
_NAMED_FUNCTIONS = {
    "$ENV": "ENV",
    "$RANDOM_CHOICE": "RANDOM_CHOICE",
    "$RANDOM_INTEGER": "RANDOM_INTEGER",
    "$CHOICE": "CHOICE",
    "$SUBSTR": "SUBSTR",
    "$INT": "INT",
    "$REAL": "REAL",
    "$STRING": "STRING",
    "$EVAL": "EVAL",
    "$BASENAME": "BASENAME",
    "$DIRNAME": "DIRNAME",
}
_FILENAME_LETTERS = frozenset("pnxdqabfwu")
_WHITESPACE = frozenset(" \t\n\r\f\v")
_ALNUM = frozenset("abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789_")

#: How many substitutions one expansion may make before it counts as endless (HTCondor itself
#: loops forever on ``A = $(B)``, ``B = $(A)``; we stop and say which knob did it).
MAX_SUBSTITUTIONS = 20_000
#: The longest text an expansion may grow to.
MAX_EXPANDED_LENGTH = 4_000_000
#: How many characters one expansion may search for references, summed over its
#: substitutions: each one searches the text again from where it replaced, so a value that
#: refers to itself inside a default it never closes (``$(A:$(A) x``) would otherwise cost time
#: quadratic in MAX_SUBSTITUTIONS (minutes) before it is refused.
MAX_SCANNED_CHARACTERS = 50_000_000


@attrs.frozen
class MacroRef:
    """One reference found in a text: ``text[dollar:right]`` is ``$func(body)``."""

    function: str
    prefix: str  # the text from "$" to "(", e.g. "$", "$ENV", "$Fpq"
    dollar: int
    body: int
    default: int | None  # index of the first character after the colon, if any
    right: int  # index just past the closing parenthesis

    def name(self, text: str) -> str:
        """The body up to the colon (the whole body when there is no default)."""
        end = self.default - 1 if self.default is not None else self.right - 1
        return text[self.body : end]

    def body_text(self, text: str) -> str:
        """The whole body, between the parentheses."""
        return text[self.body : self.right - 1]

    def default_text(self, text: str) -> str | None:
        """The default after the colon, or None."""
        return None if self.default is None else text[self.default : self.right - 1]


Skip = Callable[[str, str], bool]


def _config_function(prefix: str) -> tuple[str | None, bool]:
    """The function a ``$prefix(`` starts and whether its body is identifier-with-default."""
    if prefix == "$":
        return NORMAL, True
    if prefix.startswith("$$"):
        return None, False
    if prefix[1:2] == "F" and all(ch.lower() in _FILENAME_LETTERS for ch in prefix[2:]):
        return FILENAME, False
    function = _NAMED_FUNCTIONS.get(prefix)
    return function, function == "ENV"


def _meta_function(prefix: str) -> tuple[str | None, bool]:
    return (NORMAL, True) if prefix == "$" else (None, False)


# An identifier-style body up to its closing parenthesis: a name, then optionally a colon and
# a default, in which a parenthesis opens a group that runs to the next ")". The possessive
# repeats never backtrack, so a body that never closes costs one pass in the regex engine: a
# value that makes expansion re-read such a body again and again (``$(A:$(A) X``) must not take
# minutes to be refused.
_BODY = re.compile(r"([A-Za-z0-9_./]*+)(:(?:[A-Za-z0-9_./$ ,\\:]++|\([^)]*\))*+)?\)")
# A template's argument reference: digits and ``?#+`` before the colon, anything after it.
_META_BODY = re.compile(r"([0-9?#+]*+)(:(?:[^()]++|\([^)]*\))*+)?\)")


def _scan_body(text: str, start: int, meta: bool) -> tuple[int, int] | None:
    """Scan an identifier-style body from ``start``; return (close index, colon offset), the
    offset 0 when the body has no default."""
    found = (_META_BODY if meta else _BODY).match(text, start)
    if found is None:
        return None
    colon = found.end(1) + 1 - start if found.group(2) is not None else 0
    return found.end() - 1, colon


def find_reference(text: str, start: int, skip: Skip, *, meta: bool = False) -> MacroRef | None:
    """Find the first reference at or after ``start`` that ``skip(function, body)`` accepts."""
    classify = _meta_function if meta else _config_function
    n = len(text)
    pos = start
    while True:
        dollar = text.find("$", pos)
        if dollar < 0:
            return None
        p = dollar + 1
        if p < n and text[p] == "$":
            p += 1
        while p < n and text[p] in _ALNUM:
            p += 1
        if p >= n or text[p] != "(":
            pos = p
            continue
        prefix = text[dollar:p]
        function, identifier_body = classify(prefix)
        if function is None:
            pos = p
            continue
        body = p + 1
        if identifier_body:
            scanned = _scan_body(text, body, meta)
            if scanned is None:
                pos = body
                continue
            close, colon = scanned
        else:
            close = text.find(")", body)
            if close < 0:
                pos = body
                continue
            colon = 0
        if skip(function, text[body:close]):
            pos = close
            continue
        return MacroRef(
            function=function,
            prefix=prefix,
            dollar=dollar,
            body=body,
            default=body + colon if colon else None,
            right=close + 1,
        )


def _is_dollar(function: str, body: str) -> bool:
    return function == NORMAL and body.lower() == "dollar"


def skip_dollar(function: str, body: str) -> bool:
    """Selector for ordinary expansion: every reference except ``$(DOLLAR)``."""
    return _is_dollar(function, body)


def only_dollar(function: str, body: str) -> bool:
    """Selector for the last pass: only ``$(DOLLAR)``."""
    return not _is_dollar(function, body)


def _runaway(substitutions: int, length: int, scanned: int) -> bool:
    """Whether an expansion has passed one of the bounds that make it count as endless."""
    return (
        substitutions > MAX_SUBSTITUTIONS
        or length > MAX_EXPANDED_LENGTH
        or scanned > MAX_SCANNED_CHARACTERS
    )


Evaluate = Callable[[MacroRef, str], str]


def substitute(text: str, skip: Skip, evaluate: Evaluate, what: str) -> str:
    """Replace references chosen by ``skip`` with ``evaluate(ref, text)``, leftmost first.

    ``what`` names the knob being expanded, for the error raised when expansion never ends.
    """
    pos = 0
    count = 0
    scanned = 0
    while True:
        ref = find_reference(text, pos, skip)
        if ref is None:
            return text
        scanned += len(text) - pos
        replacement = evaluate(ref, text)
        text = text[: ref.dollar] + replacement + text[ref.right :]
        pos = ref.dollar
        count += 1
        if _runaway(count, len(text), scanned):
            raise ConfigError(
                f"expanding {what} does not terminate: a macro refers to itself, "
                f"directly or through others (last expanded {ref.prefix}(...))"
            )


def replace_dollars(text: str) -> str:
    """The final pass: each ``$(DOLLAR)`` becomes a literal ``$``."""
    pos = 0
    while True:
        ref = find_reference(text, pos, only_dollar)
        if ref is None:
            return text
        text = text[: ref.dollar] + "$" + text[ref.right :]
        pos = ref.dollar


def self_selector(name: str, alias: str | None) -> Skip:
    """Selector for self-references: ``$(name)``, ``$(name:default)`` and ``$F..(name)``."""
    names = [name.lower()] + ([alias.lower()] if alias else [])

    def skip(function: str, body: str) -> bool:
        if function not in (NORMAL, FILENAME):
            return True
        lowered = body.lower()
        return not any(lowered == n or lowered.startswith(n + ":") for n in names)

    return skip


def has_template_args(text: str) -> bool:
    """True when ``text`` contains ``$(<digit>...``, a template argument reference."""
    pos = text.find("$(")
    while pos >= 0:
        if pos + 2 < len(text) and text[pos + 2].isdigit():
            return True
        pos = text.find("$(", pos + 2)
    return False


def _arg_tokens(args: str) -> list[tuple[int, int]]:
    """(start, end) of each argument, as HTCondor's tokenizer sees them.

    Commas separate arguments; pieces that are empty or only whitespace are not arguments.
    """
    out: list[tuple[int, int]] = []
    i = 0
    n = len(args)
    while i < n:
        while i < n and (args[i] == "," or args[i] in _WHITESPACE):
            i += 1
        if i >= n:
            break
        j = args.find(",", i)
        j = n if j < 0 else j
        out.append((i, j))
        i = j
    return out


def _template_arg(body: str, args: str) -> str:
    index_text = ""
    i = 0
    while i < len(body) and body[i].isdigit():
        index_text += body[i]
        i += 1
    index = int(index_text)
    empty_check = count_or_rest = False
    if i < len(body) and body[i] == "?":
        empty_check = True
        i += 1
    elif i < len(body) and body[i] in "#+":
        count_or_rest = True
        i += 1
    default = body[i + 1 :] if i < len(body) and body[i] == ":" else None
    tokens = _arg_tokens(args)
    if index <= 0:
        value = str(len(tokens)) if count_or_rest else args
    elif count_or_rest:
        # Everything after the first index-1 arguments, from just past their comma.
        rest_at = tokens[index - 2][1] if index >= 2 and len(tokens) >= index - 1 else 0
        if index >= 2 and len(tokens) < index - 1:
            value = ""
        else:
            value = args[rest_at:]
            if value.startswith(","):
                value = value[1:]
        if default is not None and not value:
            value = default
    elif index <= len(tokens):
        start, end = tokens[index - 1]
        value = args[start:end]
    else:
        value = default if default is not None else ""
    value = value.strip()
    if empty_check:
        return "1" if value else "0"
    return value


def expand_template_args(body: str, args: str, what: str) -> str:
    """Substitute ``$(0)``, ``$(N)``, ``$(N?)``, ``$(N+)``, ``$(0#)``, ``$(N:default)``."""

    def skip(function: str, text: str) -> bool:
        return not text[:1].isdigit()

    count = 0
    scanned = 0
    while True:
        ref = find_reference(body, 0, skip, meta=True)
        if ref is None:
            return body
        scanned += len(body)
        value = _template_arg(ref.body_text(body), args)
        body = body[: ref.dollar] + value + body[ref.right :]
        count += 1
        if _runaway(count, len(body), scanned):
            raise ConfigError(f"the arguments of {what} expand without end")
