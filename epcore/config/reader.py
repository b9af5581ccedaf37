"""Physical lines to logical lines, exactly as HTCondor's configuration reader joins them.

HTCondor trims each physical line at both ends, joins a line that ends in a backslash with the
next one (the backslash is dropped, the text before it is kept as it is, the next line loses its
leading whitespace), and drops lines whose first character is ``#``. Three details matter for
compatibility with existing files:

- A comment line inside a continuation does not end it. HTCondor then keeps the comment's last
  character (its reader skips to the character *before* the end of the line instead of the end),
  so ``A = x \\`` followed by ``# note`` gives ``x e``; a comment that itself ends in a backslash
  continues further. We reproduce this rather than silently disagree with HTCondor.
- A line that starts with ``#`` is never continued by a trailing backslash.
- The last line of a file that has no final newline is returned untrimmed and unjoined.
"""

from __future__ import annotations

from typing import NamedTuple

_WHITESPACE = " \t\n\r\f\v"


class LogicalLine(NamedTuple):
    """One logical line: its text and the number of the last physical line it used."""

    text: str
    line: int


def logical_lines(text: str) -> list[LogicalLine]:
    """Split configuration text into logical lines, skipping blank lines and comments."""
    if "\\" not in text and text.endswith("\n"):
        # No continuations and a final newline: every line stands alone.
        out_fast: list[LogicalLine] = []
        for number, raw in enumerate(text.split("\n")[:-1], 1):
            stripped = raw.strip(_WHITESPACE)
            if stripped and stripped[0] != "#":
                out_fast.append(LogicalLine(stripped, number))
        return out_fast
    physical = text.split("\n")
    terminated = text.endswith("\n")
    if terminated:
        physical.pop()
    last = len(physical) - 1
    out: list[LogicalLine] = []
    index = 0
    while index <= last:
        number = index + 1
        if index == last and not terminated:
            # HTCondor returns a final line that has no newline as it was read.
            raw = physical[index]
            if raw.strip(_WHITESPACE) and not raw.lstrip(_WHITESPACE).startswith("#"):
                out.append(LogicalLine(raw, number))
            break
        buffer = physical[index].strip(_WHITESPACE)
        index += 1
        is_comment = buffer.startswith("#")
        while buffer.endswith("\\") and not is_comment and index <= last:
            buffer = buffer[:-1]
            number = index + 1
            if index == last and not terminated:
                buffer += physical[index]
                index += 1
                break
            part = physical[index].strip(_WHITESPACE)
            index += 1
            if part.startswith("#"):
                part = part[-1:]
            buffer += part
        if buffer.endswith("\\") and not is_comment:
            buffer = buffer[:-1]
        if buffer and not is_comment:
            out.append(LogicalLine(buffer, number))
    return out
