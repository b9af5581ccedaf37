"""The output of a startd cron job, read into ads (seed 000, "Daemon ClassAd Hooks").

A cron job writes old-syntax attribute lines (``Name = expression``). A line starting with
``-`` ends the current ad; the dash may be followed by a uniqueness tag naming the ad (a later
output with the same tag replaces it) and by ``update:true`` or ``update:false``, which forces
or suppresses an immediate update to the collector::

    Value=1
    SlotId=1
    -s1
    Value=10
    - update:true

Blank lines and ``#`` comment lines are skipped. Output that is not of this form is a
:class:`CronOutputError` naming the line, and none of the output is used. Pure: text in,
records out.
"""

from __future__ import annotations

import re

import attrs

from epcore.classad import Expr, parse_expr
from epcore.errors import ClassAdError, EpError

_ATTRIBUTE_NAME = re.compile(r"[A-Za-z_][A-Za-z0-9_]*\Z")
_UPDATE_WORDS = {"true": True, "false": False, "1": True, "0": False, "yes": True, "no": False}


class CronOutputError(EpError):
    """Cron job output that is not ads; ``line`` is the 1-based line of the fault (0: the
    fault is in an ad as a whole, such as a SlotId that is not an integer)."""

    def __init__(self, message: str, line: int, job: str = "") -> None:
        self.reason = message
        self.line = line
        self.job = job
        where = f"cron job {job} output" if job else "cron job output"
        if line > 0:
            where = f"{where}, line {line}"
        super().__init__(f"{where}: {message}")


@attrs.frozen
class CronOutputAd:
    """One ad of a cron job's output: its uniqueness tag (empty: the job's main ad), its
    attributes in output order, and the ``update:`` of the line that ended it (None: none)."""

    tag: str
    attributes: tuple[tuple[str, Expr], ...]
    update: bool | None = None


@attrs.frozen
class CronOutput:
    """Every ad of one output, in order (a tag given twice: the later ad only), and the last
    ``update:`` any separator line gave (None: the output said nothing)."""

    ads: tuple[CronOutputAd, ...]
    update: bool | None = None


def _separator(text: str, line: int, job: str) -> tuple[str, bool | None]:
    """The tag and update flag of a ``- [name] [update:bool]`` line."""
    tag = ""
    update: bool | None = None
    for word in text[1:].split():
        key, colon, value = word.partition(":")
        if colon and key.lower() == "update":
            flag = _UPDATE_WORDS.get(value.lower())
            if flag is None:
                raise CronOutputError(
                    f"update:{value} is not update:true or update:false", line, job
                )
            update = flag
        elif tag or update is not None:
            raise CronOutputError(f"unexpected {word!r} after the ad's name", line, job)
        elif not _ATTRIBUTE_NAME.match(word):
            raise CronOutputError(f"{word!r} is not a name for an ad", line, job)
        else:
            tag = word
    return tag, update


def _attribute(text: str, line: int, job: str) -> tuple[str, Expr]:
    """One ``Name = expression`` line."""
    name, equals, value = text.partition("=")
    name = name.strip()
    if not equals:
        raise CronOutputError(f"{text[:60]!r} is neither 'Name = value' nor a '-' line", line, job)
    if not _ATTRIBUTE_NAME.match(name):
        raise CronOutputError(f"{name[:60]!r} is not an attribute name", line, job)
    if not value.strip():
        raise CronOutputError(f"attribute {name} has no value", line, job)
    try:
        return name, parse_expr(value)
    except (ClassAdError, RecursionError) as error:
        raise CronOutputError(f"attribute {name}: {error}", line, job) from error


def parse_cron_output(text: str, job: str = "") -> CronOutput:
    """Read a cron job's standard output into ads (``job`` names it in errors).

    The attributes after the last ``-`` line form a last, untagged ad; a ``-`` line with
    neither attributes before it nor a tag (a lone ``- update:true``) makes no ad, only its
    flag counts.
    """
    ads: dict[str, CronOutputAd] = {}
    order: list[str] = []
    current: list[tuple[str, Expr]] = []
    flag: bool | None = None

    def finish(tag: str, update: bool | None) -> None:
        if tag in ads:
            order.remove(tag)
        ads[tag] = CronOutputAd(tag, tuple(current), update)
        order.append(tag)
        current.clear()

    for number, raw in enumerate(text.splitlines(), start=1):
        stripped = raw.strip()
        if not stripped or stripped.startswith("#"):
            continue
        if stripped.startswith("-"):
            tag, update = _separator(stripped, number, job)
            if update is not None:
                flag = update
            if current or tag:
                finish(tag, update)
            continue
        current.append(_attribute(stripped, number, job))
    if current:
        finish("", None)
    return CronOutput(tuple(ads[tag] for tag in order), flag)
