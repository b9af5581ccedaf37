"""Submit-file text to statements: commands, ``+Attr``, conditionals and ``queue`` statements.

Lines are joined and comments dropped exactly as the configuration reader does (condor_submit
reads submit files with the same reader). Nothing is expanded here: macros, conditions and
queue counts depend on values only known when jobs are built.
"""

from __future__ import annotations

import re

import attrs

from epcore.config.reader import LogicalLine, logical_lines
from epcore.errors import SubmitError
from epcore.submit.model import (
    Assignment,
    Conditional,
    Include,
    ItemSlice,
    QueueStatement,
    Statement,
    SubmitDescription,
)

_NAME = re.compile(r"[A-Za-z_][A-Za-z0-9_.]*")
_ATTRIBUTE = re.compile(r"[A-Za-z_][A-Za-z0-9_]*")
_KEYWORD = re.compile(r"(?:^|[\s,])(in|from|matching)(?=\s|\(|\[|$)", re.IGNORECASE)
_SLICE = re.compile(r"\[\s*(-?\d*)\s*(?::\s*(-?\d*)\s*)?(?::\s*(-?\d*)\s*)?\]")
_SEPARATORS = re.compile(r"[\s,]+")
_CONDITIONALS = ("if", "elif", "else", "endif")


def _first_word(text: str) -> tuple[str, str]:
    """The first blank-separated word, lower-cased, and the rest of the text."""
    parts = text.split(None, 1)
    if not parts:
        return "", ""
    return parts[0].lower(), parts[1].strip() if len(parts) > 1 else ""


def _slice_bound(text: str | None) -> int | None:
    return int(text) if text else None


def _take_slice(tail: str) -> tuple[ItemSlice | None, str]:
    match = _SLICE.match(tail)
    if match is None:
        if tail.startswith("["):
            raise ValueError(f"item slice {tail.split()[0]!r} is not [start:stop:step]")
        return None, tail
    step = _slice_bound(match.group(3))
    if step == 0:
        raise ValueError("an item slice step cannot be 0")
    bounds = ItemSlice(_slice_bound(match.group(1)), _slice_bound(match.group(2)), step)
    return bounds, tail[match.end() :].strip()


def _split_head(head: str) -> tuple[str, tuple[str, ...]]:
    """``[count] [var[,var...]]`` before the keyword."""
    words = [word for word in _SEPARATORS.split(head.strip()) if word]
    count = ""
    if words and (words[0][0].isdigit() or words[0].startswith("$")):
        count = words.pop(0)
    for word in words:
        if not _ATTRIBUTE.fullmatch(word):
            raise ValueError(f"{word!r} is not a valid queue variable name")
    return count, tuple(words) or ("Item",)


def _inline_list(tail: str) -> tuple[str, ...] | None:
    """The inline ``( ... )`` list of one line, or None when the list continues below."""
    if tail == "(":
        return None
    if not tail.endswith(")"):
        raise ValueError("an item list that starts with '(' must end with ')' or continue below")
    return (tail[1:-1],)


def parse_queue_arguments(arguments: str, line: int) -> tuple[QueueStatement, bool]:
    """Parse what follows ``queue``; the flag says an item list continues on the next lines.

    Raises ValueError with the reason when the arguments do not parse.
    """
    arguments = arguments.strip()
    keyword = _KEYWORD.search(arguments)
    if keyword is None:
        count = arguments
        if count and (" " in count or "\t" in count or not _count_shape(count)):
            raise ValueError(f"invalid queue count {count!r}")
        return QueueStatement(line=line, count=count), False
    count, variables = _split_head(arguments[: keyword.start(1)])
    mode = keyword.group(1).lower()
    item_slice, tail = _take_slice(arguments[keyword.end(1) :].strip())
    statement = QueueStatement(
        line=line, count=count, variables=variables, mode=mode, item_slice=item_slice
    )
    if mode == "matching":
        kind = "any"
        first, rest = _first_word(tail)
        if first in ("files", "dirs"):
            kind, tail = first, rest
        if tail.startswith("("):
            if not tail.endswith(")"):
                raise ValueError("'matching (' needs its ')' on the same line")
            tail = tail[1:-1]
        patterns = tuple(word for word in _SEPARATORS.split(tail) if word)
        if not patterns:
            raise ValueError("'matching' needs at least one pattern")
        return attrs.evolve(statement, patterns=patterns, matching_kind=kind), False
    if tail.startswith("("):
        items = _inline_list(tail)
        return attrs.evolve(statement, items=items), items is None
    if not tail:
        raise ValueError(f"'{mode}' needs an item list or a file name")
    if mode == "in":
        return attrs.evolve(statement, items=(tail,)), False
    return attrs.evolve(statement, path=tail), False


def _count_shape(count: str) -> bool:
    """A count is a number, a macro reference, or an expression of those (checked later)."""
    return bool(re.fullmatch(r"[0-9$()A-Za-z_.:+*/-]+", count))


def _collect_list(lines: list[LogicalLine], start: int, opener: int, source: str) -> int:
    """The index of the line that closes the multi-line list opened on line ``opener``."""
    for index in range(start, len(lines)):
        if lines[index].text.lstrip().startswith(")"):
            return index
    raise SubmitError(
        "queue: reached the end of the file without the ')' that closes the item list",
        source,
        opener,
    )


def _parse_assignment(text: str, line: int, source: str) -> Assignment:
    name, equals, value = text.partition("=")
    name = name.strip()
    if not equals:
        raise SubmitError(f"{text!r} is not a submit command (expected name = value)", source, line)
    attribute = False
    if name.startswith("+"):
        name, attribute = name[1:].strip(), True
    elif name[:3].lower() == "my.":
        name, attribute = name[3:], True
    pattern = _ATTRIBUTE if attribute else _NAME
    if not pattern.fullmatch(name):
        what = "job attribute" if attribute else "command or macro"
        raise SubmitError(f"{name!r} is not a valid {what} name", source, line)
    return Assignment(name=name, value=value.strip(), line=line, attribute=attribute)


def _parse_include(rest: str, line: int, source: str) -> Include:
    """``include [ifexist] : path``; ``include command`` runs programs, which we refuse."""
    kind, _, path = rest.partition(":")
    kind = kind.strip().lower()
    if kind == "command":
        raise SubmitError("include command : is not supported (it runs a program)", source, line)
    if kind not in ("", "ifexist"):
        raise SubmitError(f"include {kind!r} : is not a kind of include", source, line)
    if not path.strip():
        raise SubmitError("include : needs a file name", source, line)
    return Include(path=path.strip(), line=line, optional=kind == "ifexist")


def _check_nesting(statements: list[Statement], source: str) -> None:
    """if/elif/else/endif must pair up (their conditions are evaluated later)."""
    open_blocks: list[tuple[int, bool]] = []  # (line of the if, an else was seen)
    for statement in statements:
        if not isinstance(statement, Conditional):
            continue
        keyword = statement.keyword
        if keyword == "if":
            if len(open_blocks) >= 63:
                raise SubmitError("if nesting too deep (63 levels at most)", source, statement.line)
            open_blocks.append((statement.line, False))
            continue
        if not open_blocks:
            raise SubmitError(f"{keyword} without matching if", source, statement.line)
        if keyword == "endif":
            open_blocks.pop()
            continue
        if open_blocks[-1][1]:
            raise SubmitError(f"{keyword} is not allowed after else", source, statement.line)
        if keyword == "else":
            open_blocks[-1] = (open_blocks[-1][0], True)
    if open_blocks:
        raise SubmitError("if without matching endif", source, open_blocks[-1][0])


def parse_submit(text: str, *, source: str = "<submit>") -> SubmitDescription:
    """Parse a submit description; SubmitError names the line of the first mistake."""
    lines = logical_lines(text.replace("\r\n", "\n"))
    statements: list[Statement] = []
    index = 0
    while index < len(lines):
        text_line, number = lines[index].text.strip(), lines[index].line
        index += 1
        if "\x00" in text_line:
            raise SubmitError("a submit file cannot contain NUL characters", source, number)
        word, rest = _first_word(text_line)
        if word in _CONDITIONALS:
            if word in ("if", "elif") and not rest:
                raise SubmitError(f"{word} needs a condition", source, number)
            if word in ("else", "endif") and rest:
                raise SubmitError(f"{word} takes no condition, found {rest!r}", source, number)
            statements.append(Conditional(word, rest, number))
            continue
        if word == "include" and ":" in rest.partition("=")[0]:
            statements.append(_parse_include(rest, number, source))
            continue
        if word == "queue":
            try:
                statement, continues = parse_queue_arguments(rest, number)
            except ValueError as error:
                raise SubmitError(f"queue: {error}", source, number) from error
            if continues:
                close = _collect_list(lines, index, number, source)
                items = tuple(entry.text.strip() for entry in lines[index:close])
                trailing = lines[close].text.strip()[1:].strip()
                if trailing:
                    raise SubmitError(
                        f"queue: unexpected {trailing!r} after the closing ')'",
                        source,
                        lines[close].line,
                    )
                statement = attrs.evolve(statement, items=items)
                index = close + 1
            statements.append(statement)
            continue
        statements.append(_parse_assignment(text_line, number, source))
    _check_nesting(statements, source)
    return SubmitDescription(statements=tuple(statements), source=source)
