"""PCRE2 patterns run on the ``regex`` package, with PCRE2's byte semantics and a time bound.

libclassad compiles patterns with PCRE2 in 8-bit, non-UTF mode: ``.`` is one byte and
``\\w``/``\\d``/``\\s`` and caseless matching are ASCII-only. Matching UTF-8 bytes with a
bytes pattern gives exactly that. The syntax PCRE2 has and Python's ``re`` syntax lacks
or spells differently is rewritten here; a pattern neither engine accepts is an error
either way. ``\\K``, ``\\G``, ``\\X`` and ``\\p{..}`` pass through to the ``regex``
package, which has them; forward references and leading ``(*VERB)`` items are errors here.

Backtracking patterns can take exponential time (``^(a|aa)+$`` on a long run of ``a``), and
one ClassAd is evaluated inside daemons that serve everyone. libclassad bounds PCRE2 with its
match limit; here every match runs under :data:`MATCH_TIMEOUT`, and a match that exceeds it
raises :class:`MatchTimeout`, which the ClassAd functions turn into ERROR. The pattern and
subject of a timed-out match are remembered, so that evaluating the same expression again
(a job's Requirements against every slot, every cycle) costs nothing more.
"""

from __future__ import annotations

import hashlib
import re
import threading
from collections import OrderedDict
from functools import lru_cache
from typing import TYPE_CHECKING, Final

import attrs

if TYPE_CHECKING:
    import regex

from epcore.errors import ClassAdError

#: Seconds one match of a ClassAd regular expression may run before it gives ERROR.
MATCH_TIMEOUT: Final = 0.1
# How many timed-out (pattern, options, subject) triples are remembered.
_TIMED_OUT_KEPT: Final = 1024


def _byte_set(spec: str) -> frozenset[int]:
    members: set[int] = set()
    for part in spec.split(","):
        low, _, high = part.partition("-")
        members.update(range(int(low, 16), int(high or low, 16) + 1))
    return frozenset(members)


_POSIX_CLASSES: Final = {
    "alnum": _byte_set("30-39,41-5a,61-7a"),
    "alpha": _byte_set("41-5a,61-7a"),
    "ascii": _byte_set("00-7f"),
    "blank": _byte_set("09,20"),
    "cntrl": _byte_set("00-1f,7f"),
    "digit": _byte_set("30-39"),
    "graph": _byte_set("21-7e"),
    "lower": _byte_set("61-7a"),
    "print": _byte_set("20-7e"),
    "punct": _byte_set("21-2f,3a-40,5b-60,7b-7e"),
    "space": _byte_set("09-0d,20"),
    "upper": _byte_set("41-5a"),
    "word": _byte_set("30-39,41-5a,5f,61-7a"),
    "xdigit": _byte_set("30-39,41-46,61-66"),
}
# PCRE2 escapes naming character sets, as the contents of a bracket expression.
_SET_ESCAPES: Final = {"h": r"\t \xa0", "v": r"\n\x0b\x0c\r\x85"}
_INLINE_FLAGS: Final = re.compile(r"\(\?([a-zA-Z]*)(?:-([a-zA-Z]*))?\)")
_NAMED_GROUP: Final = re.compile(r"\(\?(?:P?<([A-Za-z_][A-Za-z0-9_]*)>|'([A-Za-z_][A-Za-z0-9_]*)')")
# The ``regex`` package's flag names: the package itself is imported by the first pattern
# compiled, since it costs every process evaluating a ClassAd (ep submit too) a few ms more.
_FLAGS: Final = {"i": "IGNORECASE", "m": "MULTILINE", "s": "DOTALL", "x": "VERBOSE"}
_CLASS_SPECIALS: Final = "[&~|"


class PatternError(ValueError):
    """A pattern that PCRE2 would refuse (or that this translation cannot express)."""


class MatchTimeout(ClassAdError):
    """A match ran longer than :data:`MATCH_TIMEOUT` (the function's value is ERROR)."""


def _ranges(members: frozenset[int]) -> str:
    """Bracket-expression contents for a set of byte values."""
    out: list[str] = []
    ordered = sorted(members)
    i = 0
    while i < len(ordered):
        j = i
        while j + 1 < len(ordered) and ordered[j + 1] == ordered[j] + 1:
            j += 1
        out.append(f"\\x{ordered[i]:02x}" + (f"-\\x{ordered[j]:02x}" if j > i else ""))
        i = j + 1
    return "".join(out)


def _hex_escape(code: int) -> str:
    if code > 0xFF:
        raise PatternError("character code above 0xff in non-UTF mode")
    return f"\\x{code:02x}"


@attrs.define
class _Translator:
    """One left-to-right pass over a PCRE2 pattern."""

    pattern: str
    out: list[str] = attrs.field(factory=list)
    pos: int = 0
    in_class: bool = False
    groups: int = 0
    # For each open group, the inline-flag groups opened inside it, to close with it.
    inline: list[list[str]] = attrs.field(factory=lambda: [[]])

    def run(self) -> str:
        while self.pos < len(self.pattern):
            char = self.pattern[self.pos]
            if char == "\\" and self.pos + 1 < len(self.pattern):
                self.escape()
            elif self.in_class:
                self.class_member(char)
            else:
                self.outside(char)
        self.out.append(")" * len(self.inline[0]))
        return "".join(self.out)

    def take_braced(self) -> str:
        end = self.pattern.find("}", self.pos)
        if self.pattern[self.pos : self.pos + 1] != "{" or end < 0:
            raise PatternError("malformed braced escape")
        body = self.pattern[self.pos + 1 : end]
        self.pos = end + 1
        return body

    def group_reference(self, text: str) -> str:
        if re.fullmatch(r"-?[0-9]+", text) is None:
            return f"(?P={text})"
        number = int(text)
        if number < 0:
            number += self.groups + 1
        if not 0 < number <= self.groups:
            raise PatternError("reference to a group not yet defined")
        return f"(?:\\{number})"

    def escape(self) -> None:
        pattern = self.pattern
        nxt = pattern[self.pos + 1]
        self.pos += 2
        out = self.out
        if nxt == "Q":
            end = pattern.find("\\E", self.pos)
            literal = pattern[self.pos :] if end < 0 else pattern[self.pos : end]
            out.append("".join(f"\\x{b:02x}" for b in literal.encode("utf-8", "surrogateescape")))
            self.pos = len(pattern) if end < 0 else end + 2
        elif nxt == "E":
            return
        elif nxt in _SET_ESCAPES:
            body = _SET_ESCAPES[nxt]
            out.append(body if self.in_class else f"[{body}]")
        elif nxt in "HV" and not self.in_class:
            out.append(f"[^{_SET_ESCAPES[nxt.lower()]}]")
        elif nxt == "R" and not self.in_class:
            out.append(r"(?:\r\n|[\n\x0b\x0c\r\x85])")
        elif nxt == "N" and not self.in_class and pattern[self.pos : self.pos + 1] != "{":
            out.append(r"[^\n]")
        elif nxt == "C" and not self.in_class:
            out.append(r"[\x00-\xff]")
        elif nxt == "e":
            out.append(r"\x1b")
        elif nxt == "z" and not self.in_class:
            out.append(r"\Z")
        elif nxt == "Z" and not self.in_class:
            out.append(r"(?=\n?\Z)")
        elif nxt == "x" and pattern[self.pos : self.pos + 1] == "{":
            out.append(_hex_escape(int(self.take_braced(), 16)))
        elif nxt == "o" and pattern[self.pos : self.pos + 1] == "{":
            out.append(_hex_escape(int(self.take_braced(), 8)))
        elif nxt == "c" and self.pos < len(pattern):
            out.append(_hex_escape(ord(pattern[self.pos].upper()) ^ 0x40))
            self.pos += 1
        elif nxt == "k" and pattern[self.pos : self.pos + 1] in ("<", "'", "{"):
            close = {"<": ">", "'": "'", "{": "}"}[pattern[self.pos]]
            end = pattern.find(close, self.pos + 1)
            if end < 0:
                raise PatternError("malformed group reference")
            out.append(f"(?P={pattern[self.pos + 1 : end]})")
            self.pos = end + 1
        elif nxt == "g" and not self.in_class:
            if pattern[self.pos : self.pos + 1] == "{":
                out.append(self.group_reference(self.take_braced()))
            else:
                number = re.match(r"-?[0-9]+", pattern[self.pos :])
                if number is None:
                    raise PatternError("malformed \\g reference")
                self.pos += number.end()
                out.append(self.group_reference(number.group(0)))
        else:
            out.append("\\" + nxt)

    def class_member(self, char: str) -> None:
        pattern = self.pattern
        if char == "[" and pattern[self.pos + 1 : self.pos + 2] in (":", ".", "="):
            kind = pattern[self.pos + 1]
            end = pattern.find(kind + "]", self.pos + 2)
            if kind != ":" and end >= 0:
                raise PatternError("POSIX collating elements are not supported")
            if kind == ":" and end >= 0:
                name = pattern[self.pos + 2 : end]
                members = _POSIX_CLASSES.get(name.lstrip("^"))
                if members is None:
                    raise PatternError("unknown POSIX class")
                if name.startswith("^"):
                    members = frozenset(range(256)) - members
                self.out.append(_ranges(members))
                self.pos = end + 2
                return
        if char == "]":
            self.in_class = False
            self.out.append(char)
        elif char in _CLASS_SPECIALS:
            # Literal in PCRE2 classes; escaped so Python reads no set operation into them.
            self.out.append("\\" + char)
        else:
            self.out.append(char)
        self.pos += 1

    def outside(self, char: str) -> None:
        pattern, out = self.pattern, self.out
        if char == "[":
            self.in_class = True
            out.append(char)
            self.pos += 1
            # A ']' right after '[' or '[^' is a literal member in PCRE2.
            if pattern.startswith("^", self.pos):
                out.append("^")
                self.pos += 1
            if pattern.startswith("]", self.pos):
                out.append(r"\]")
                self.pos += 1
            return
        if char == "(":
            flags = _INLINE_FLAGS.match(pattern, self.pos)
            if flags is not None and (flags.group(1) or flags.group(2)):
                # PCRE2's (?i) runs to the end of the enclosing group; re only scopes (?i:...).
                text = flags.group(1) + (f"-{flags.group(2)}" if flags.group(2) else "")
                out.append(f"(?{text}:")
                self.inline[-1].append(text)
                self.pos = flags.end()
                return
            named = _NAMED_GROUP.match(pattern, self.pos)
            if named is not None:
                out.append(f"(?P<{named.group(1) or named.group(2)}>")
                self.pos = named.end()
                self.groups += 1
                self.inline.append([])
                return
            if not pattern.startswith("(?", self.pos) and not pattern.startswith("(*", self.pos):
                self.groups += 1
            self.inline.append([])
        elif char == ")" and len(self.inline) > 1:
            out.append(")" * len(self.inline.pop()))
        elif char == "^":
            # In multiline mode PCRE2's ^ does not match after a newline that ends the subject;
            # re's does. Without multiline both are the subject's start.
            out.append(r"(?:\A|^(?!\Z))")
            self.pos += 1
            return
        elif char == "|":
            opened = self.inline[-1]
            out.append(")" * len(opened) + "|" + "".join(f"(?{flags}:" for flags in opened))
            self.pos += 1
            return
        out.append(char)
        self.pos += 1


def translate(pattern: str) -> str:
    """Rewrite PCRE2 syntax into the equivalent Python ``re`` syntax."""
    return _Translator(pattern).run()


if TYPE_CHECKING:
    Match = regex.Match[bytes]


@attrs.frozen(eq=False)
class BoundedPattern:
    """A compiled pattern whose every match is bounded by :data:`MATCH_TIMEOUT`."""

    compiled: regex.Pattern[bytes]
    source: str
    options: str

    @property
    def groups(self) -> int:
        """The number of capturing groups."""
        return self.compiled.groups

    def search(self, target: bytes, pos: int = 0) -> Match | None:
        """The first match at or after ``pos``; MatchTimeout when it takes too long."""
        subject = self._refuse_known(target)
        try:
            return self.compiled.search(target, pos, timeout=MATCH_TIMEOUT)
        except TimeoutError as error:
            raise self._timed_out(subject) from error

    def nonempty_at(self, target: bytes, pos: int) -> Match | None:
        """PCRE2's ANCHORED|NOTEMPTY_ATSTART match: a non-empty match starting at ``pos``."""
        subject = self._refuse_known(target)
        try:
            scanner = self.compiled.scanner(target, pos, timeout=MATCH_TIMEOUT)
            found = scanner.match()
            if found is not None and found.end() == pos:
                # A second scan from the same place must advance, ruling the empty match out.
                found = scanner.match()
            return found
        except TimeoutError as error:
            raise self._timed_out(subject) from error

    def finditer(self, target: bytes) -> list[Match]:
        """Every non-overlapping match, each bounded."""
        subject = self._refuse_known(target)
        try:
            return list(self.compiled.finditer(target, timeout=MATCH_TIMEOUT))
        except TimeoutError as error:
            raise self._timed_out(subject) from error

    def _refuse_known(self, target: bytes) -> tuple[str, str, bytes]:
        """The memo key of this match; MatchTimeout when the same match timed out before."""
        # Long subjects are remembered by digest, so the memo stays small.
        if len(target) > 64:
            target = hashlib.blake2b(target, digest_size=16).digest()
        subject = (self.source, self.options, target)
        if subject in _TIMED_OUT:
            raise MatchTimeout(f"pattern {self.source!r} timed out on this subject before")
        return subject

    def _timed_out(self, subject: tuple[str, str, bytes]) -> MatchTimeout:
        with _TIMED_OUT_LOCK:
            _TIMED_OUT[subject] = None
            while len(_TIMED_OUT) > _TIMED_OUT_KEPT:
                _TIMED_OUT.popitem(last=False)
        return MatchTimeout(f"pattern {self.source!r} ran longer than {MATCH_TIMEOUT} s")


# The oldest entries are forgotten first; a hit does not refresh an entry (no lock to read).
_TIMED_OUT: OrderedDict[tuple[str, str, bytes], None] = OrderedDict()
_TIMED_OUT_LOCK: Final = threading.Lock()


@lru_cache(maxsize=256)
def compile_pattern(pattern: str, options: str) -> BoundedPattern:
    """Compile a PCRE2 pattern with libclassad's option letters; raises PatternError."""
    import regex

    flags = 0
    for letter, flag in _FLAGS.items():
        if letter in options:
            flags |= getattr(regex, flag)
    try:
        source = translate(pattern).encode("utf-8", "surrogateescape")
        return BoundedPattern(regex.compile(source, flags), pattern, options)
    except (regex.error, ValueError, OverflowError) as exc:
        raise PatternError(str(exc)) from exc
