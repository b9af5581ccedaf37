"""The path functions ``$F[pnxdqabfwu](name)``, ``$BASENAME(name)`` and ``$DIRNAME(name)``.

Letters select parts of a path: ``p`` the directory (with its trailing separator), ``d`` one
parent directory per ``d``, ``n`` the file name without extension, ``x`` the extension (with
its dot); ``b`` drops the separator or dot at the edge of the part, ``q`` quotes the result
(``a`` with single quotes), ``w`` and ``u`` turn separators into ``\\`` or ``/``, ``f`` asks for
a full path (the configuration reader has no working directory, so the path stays as it is).
Both ``/`` and ``\\`` separate directories, as in HTCondor.
"""

from __future__ import annotations

_SEPARATORS = "/\\"


def _unquote(text: str) -> str:
    if len(text) > 1 and text[0] == text[-1] and text[0] in "\"'":
        return text[1:-1]
    return text


def _copy_quoted(text: str, quote: str, separator: str) -> list[str]:
    # Strip one pair of quotes the value already had, then add the requested ones.
    if text[:1] == '"' or (quote and text[:1] == quote):
        first = text[0]
        text = text[1:]
        if text.endswith(first):
            text = text[:-1]
    if separator:
        other = "\\" if separator == "/" else "/"
        text = text.replace(other, separator)
    return list(quote + text + quote) if quote else list(text)


def _basename_index(chars: list[str]) -> int:
    for i in range(len(chars) - 1, -1, -1):
        if chars[i] in _SEPARATORS:
            return i + 1
    return 0


def _extension_index(chars: list[str], start: int, end: int) -> int:
    for i in range(end - 1, start - 1, -1):
        if chars[i] == ".":
            return i
    return end


def _plus_dirs(chars: list[str], dirs: int) -> int:
    starts = [i + 1 for i, ch in enumerate(chars) if ch in _SEPARATORS]
    del starts[len(starts) - dirs if dirs else len(starts) :]
    return starts[-1] if starts else 0


def path_function(prefix: str, function: str, value: str) -> str:
    """Apply the path function written as ``prefix`` (``$Fpn``, ``$BASENAME``...) to ``value``."""
    parts = dirs = 0
    quoted = bare = single = False
    separator = ""
    if function == "BASENAME":
        parts = 1 | 2
    elif function == "DIRNAME":
        parts = 4
    else:
        for letter in prefix[2:].lower():
            if letter == "x":
                parts |= 1
            elif letter == "n":
                parts |= 2
            elif letter == "p":
                parts |= 4
            elif letter == "d":
                parts |= 8
                dirs += 1
            elif letter == "a":
                single = True
            elif letter == "b":
                bare = True
            elif letter == "w":
                separator = "\\"
            elif letter == "u":
                separator = "/"
            elif letter == "q":
                quoted = True
    quote = ("'" if single else '"') if quoted else ""
    chars = _copy_quoted(_unquote(value), quote, separator)
    end = len(chars)
    name_at = _basename_index(chars)
    ext_at = _extension_index(chars, name_at, end)
    if not name_at and parts & 3:
        parts &= ~(4 | 8)
    start = 0
    selected = parts & 0xF
    if selected == 1:
        start = ext_at + (1 if bare and ext_at < end else 0)
    elif selected == 3:
        start = name_at
    elif selected == 2:
        start, end = name_at, ext_at
    elif selected == 4:
        end = name_at - 1 if bare and name_at > 0 else name_at
    elif selected == 6:
        end = ext_at
    elif selected >= 8:
        if name_at > 0:
            start = _plus_dirs(chars, dirs)
            if parts & 3 == 2:
                end = ext_at
            elif parts & 3 == 0:
                end = name_at - 1 if bare else name_at
        else:
            start = end = min(1, len(chars))
    if quoted:
        if start >= len(chars) or chars[start] != quote:
            start -= 1
            chars[start] = quote
        if end > 1 and chars[end - 1] == quote:
            end -= 1
        if end < len(chars):
            chars[end] = quote
        else:
            chars.append(quote)
        end += 1
    return "".join(chars[start:end])
