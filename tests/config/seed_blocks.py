"""The configuration examples of the seed documents, found at test time.

The seeds are the specification; they are not part of the project, and the tests find them
where EPCORE_SEEDS_DIR says (``tests/seed_documents.py``). Two extractors find their
configuration examples:

- reStructuredText (000): every ``.. code-block:: LANGUAGE`` directive; the block is the run of
  lines indented deeper than the directive (blank lines included), dedented. ``condor-config``
  blocks are configuration. ``text`` blocks are configuration when every statement in them
  reads as one (``NAME = value``, ``NAME @=tag``, ``use``, ``include``, ``if``...), unless
  :data:`NOT_CONFIG` says otherwise. Every other language (``console``, ``condor-submit``,
  ``condor-classad``, ``bash``, ``mermaid``...) is skipped with its language as the reason.
- plain text (002, 003): the page was rendered to text, so blocks have no markers and are
  often not even indented. A block is a maximal run of configuration-like lines: an assignment
  (``NAME = value`` or ``NAME @=tag``, where ``=`` is not the start of ``=?=``, ``=!=`` or
  ``==``), a ``#`` comment, a ``use``/``include`` line, or any line that a trailing backslash on
  the previous line continues; blank lines inside a run are kept. A run of comments alone is
  not a block.

Each block records the seed, the 1-based line of its first line, and why it is skipped (None
when it is configuration). Broken examples (the ``MachineBusy`` line without its closing
parenthesis, undefined ``$(SmallJob)``...) are kept: the tests compare what both readers do.
"""

from __future__ import annotations

import re
import textwrap
from pathlib import Path

import attrs

#: The seeds whose configuration examples are tested, by file name.
SEED_FILES = (
    "000_6f45d922920bf6ab.rst",
    "002_436683992cf4ba06.txt",
    "003_a8fc686f94e03d08.txt",
)

#: Blocks that read as configuration but are something else: (seed number, line) -> reason.
_SLOT_PICTURE = "a picture of a slot's resources, not configuration"
_CLASSAD = "ClassAd attributes of a slot or job, not configuration"
_SUBMIT = "a submit description, not configuration"
NOT_CONFIG: dict[tuple[str, int], str] = {
    ("000", 432): _SLOT_PICTURE,
    ("000", 457): _SLOT_PICTURE,
    ("000", 3267): _CLASSAD,
    ("000", 3274): _CLASSAD,
    ("000", 3281): _CLASSAD,
    ("002", 890): _SUBMIT,
    ("002", 1007): _CLASSAD,
    ("002", 1010): _CLASSAD,
    ("002", 1013): _CLASSAD,
    ("002", 1023): _SLOT_PICTURE,
    ("002", 1027): _SLOT_PICTURE,
    ("002", 1034): _SLOT_PICTURE,
    ("002", 1053): _SUBMIT,
    ("002", 1063): _CLASSAD,
    ("002", 1065): _CLASSAD,
    ("002", 1133): _CLASSAD,
    ("003", 148): _CLASSAD,
}

_DIRECTIVE = re.compile(r"^(?P<indent>\s*)\.\.\s+code-block::\s*(?P<language>\S*)\s*$")
_ASSIGNMENT = re.compile(r"^[A-Za-z_$][A-Za-z0-9_.$()]*\s*(?:@=\s*\S+|=(?![=?!]))")
_KEYWORD = re.compile(
    r"^(?:use\s+\S.*:|include\s*(?:ifexist\s*)?(?:command\s*)?:|else|endif"
    r"|(?:el)?if\s+(?:!\s*)?(?:defined\s+\S+(?:\s*:\s*\S+)?|version\s*[<>=!]+\s*[\d.]+"
    r"|true|false|yes|no|\d+|\$\([^)]*\)))\s*$",
    re.IGNORECASE,
)


@attrs.frozen
class SeedBlock:
    """One code example of a seed: where it is, its text, and why it is skipped (if it is)."""

    seed: str
    line: int
    language: str
    text: str
    skip: str | None

    @property
    def id(self) -> str:
        """A test id: the seed's number and the block's first line."""
        return f"{self.seed}-L{self.line}"


def is_statement(line: str) -> bool:
    """True when ``line`` (stripped) reads as a configuration statement."""
    return bool(_ASSIGNMENT.match(line) or _KEYWORD.match(line))


def _continues(line: str) -> bool:
    return line.rstrip().endswith("\\")


def _statements_only(text: str) -> bool:
    """True when every statement of ``text`` reads as configuration (and there is one)."""
    lines = text.splitlines()
    found = False
    i = 0
    while i < len(lines):
        stripped = lines[i].strip()
        if not stripped or stripped.startswith("#"):
            i += 1
            continue
        if not is_statement(stripped):
            return False
        found = True
        tag = re.match(r"^\S+\s*@=\s*(\S+)", stripped)
        if tag:
            end = f"@{tag.group(1)}"
            while i < len(lines) and lines[i].strip() != end:
                i += 1
        while i < len(lines) and _continues(lines[i]):
            i += 1
        i += 1
    return found


def rst_blocks(seed: str, text: str) -> list[SeedBlock]:
    """The code blocks of a reStructuredText seed."""
    lines = text.splitlines()
    blocks: list[SeedBlock] = []
    for index, line in enumerate(lines):
        directive = _DIRECTIVE.match(line)
        if directive is None:
            continue
        depth = len(directive.group("indent").expandtabs())
        body: list[str] = []
        first = None
        j = index + 1
        while j < len(lines):
            current = lines[j]
            if current.strip() and len(current) - len(current.lstrip()) <= depth:
                break
            if current.strip().startswith(":") and first is None:
                j += 1  # a directive option such as :caption:
                continue
            if current.strip() and first is None:
                first = j + 1
            if first is not None:
                body.append(current)
            j += 1
        if first is None:
            continue
        block_text = textwrap.dedent("\n".join(body)).strip("\n") + "\n"
        language = directive.group("language") or "default"
        blocks.append(
            SeedBlock(
                seed, first, language, block_text, _rst_skip(seed, first, language, block_text)
            )
        )
    return blocks


def _rst_skip(seed: str, line: int, language: str, text: str) -> str | None:
    if (seed, line) in NOT_CONFIG:
        return NOT_CONFIG[(seed, line)]
    if language == "condor-config":
        return None
    if language == "text":
        return None if _statements_only(text) else "a text block that is not configuration"
    return f"a {language} block, not configuration"


def text_blocks(seed: str, text: str) -> list[SeedBlock]:
    """The configuration runs of a plain-text seed (see the module docstring)."""
    blocks: list[SeedBlock] = []
    run: list[str] = []
    start = 0
    continued = False

    def flush() -> None:
        while run and not run[-1].strip():
            run.pop()
        body = "\n".join(run) + "\n"
        if run and _statements_only(body):
            skip = NOT_CONFIG.get((seed, start))
            blocks.append(SeedBlock(seed, start, "text", body, skip))
        run.clear()

    for number, line in enumerate(text.splitlines(), start=1):
        stripped = line.strip()
        if continued:
            run.append(line)
        elif is_statement(stripped) or stripped.startswith("#"):
            if not run:
                start = number
            run.append(line)
        elif not stripped and run:
            run.append(line)
        else:
            flush()
        continued = bool(run) and _continues(line)
    flush()
    return blocks


def seed_blocks(seeds: Path) -> list[SeedBlock]:
    """Every code example of the tested seeds in ``seeds``, in document order."""
    blocks: list[SeedBlock] = []
    for name in SEED_FILES:
        text = (seeds / name).read_text(encoding="utf-8")
        seed = name.split("_", 1)[0]
        if name.endswith(".rst"):
            blocks += rst_blocks(seed, text)
        else:
            blocks += text_blocks(seed, text)
    return blocks
