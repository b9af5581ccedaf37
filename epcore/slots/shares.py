"""The text of ``SLOT_TYPE_<N>``: what share of each resource a slot of that type gets.

Forms (seed 000, "Dividing System Resources in Multi-core Machines"; the GPU example in
"Configuring GPUs"):

- a bare share for everything: ``1/4``, ``25%``, ``auto``;
- a list of ``name=share`` items, with an optional bare *blanket* share for every resource the
  list does not name: ``cpus=2, ram=128, swap=25%, disk=1/2``, ``cpus=1, disk=auto, 50%``;
- the multi-line (``@=``) form with one item per line, where an item may end in
  ``: constraint`` choosing which devices of a custom resource the slot gets
  (``GPUs = 2 : Capability >= 8.0``, ``GPUs = 1 : "GPU-6a96bd13"``).

A share is an absolute amount (``128``: Cpus, MB of memory, or units of a custom resource), a
fraction of the machine's total (``1/2``, ``50%``), ``auto`` (split evenly with the other
``auto`` slots whatever explicit shares leave) or ``min``/``minimal`` (1/128, and the slot may
then have less than one Cpu). As in HTCondor, a one-line value is split at commas *and*
whitespace, so ``cpus = 2`` on one line is an error (use ``cpus=2``, or the ``@=`` form, where
only line ends separate items).

Deliberate differences from HTCondor, which reads shares with C's ``atof`` and so turns a typo
into a silent 0: a share that is not a number, a fraction or a percentage is an error; so is an
amount with a unit (``mem=4G`` would be 4 MB in HTCondor), a negative amount and a second
blanket share (HTCondor keeps the last). Every error names the knob and the fragment.

This module only reads the text. Which resource a name means (``m`` is Memory, ``GPUs`` a
custom resource of this machine) is decided against the machine in
:mod:`epcore.slots.slot_types`; :func:`standard_resource` gives the rule for the four standard
names.
"""

from __future__ import annotations

import re
from typing import Literal

import attrs

from epcore.classad import Expr, parse_expr
from epcore.errors import ClassAdSyntaxError, SlotConfigError

ShareKind = Literal["absolute", "fraction", "auto"]
StandardResource = Literal["Cpus", "Memory", "Disk", "Swap"]

#: The share HTCondor calls "minimal": 1/128 of the machine, fractional Cpus allowed.
MINIMAL_FRACTION = 1.0 / 128

_NUMBER = r"(?:\d+\.?\d*|\.\d+)(?:[eE][+-]?\d+)?"
_PERCENT = re.compile(rf"({_NUMBER})\s*%")
_FRACTION = re.compile(rf"({_NUMBER})\s*/\s*({_NUMBER})")
_ABSOLUTE = re.compile(_NUMBER)
_WITH_UNIT = re.compile(rf"{_NUMBER}\s*([a-zA-Z]+)")
_ONE_LINE_SEPARATORS = re.compile(r"[,\s]+")
_SPACED_EQUALS = re.compile(r"\s=|=\s")

# A name means a standard resource when it is a leading part (case-insensitive) of one of
# these words: HTCondor has accepted c, cpu, r, m, mem, s, v, virt, d... since 8.1.4.
_STANDARD_WORDS: tuple[tuple[str, StandardResource], ...] = (
    ("cpus", "Cpus"),
    ("ram", "Memory"),
    ("memory", "Memory"),
    ("swap", "Swap"),
    ("virtualmemory", "Swap"),
    ("disk", "Disk"),
)


@attrs.frozen
class ResourceShare:
    """How much of one resource a slot gets.

    ``kind`` "absolute": ``amount`` in the resource's unit (Cpus, MB of Memory, units of a
    custom resource); "fraction": ``amount`` is the part of the machine's total (0.25 for
    ``25%`` or ``1/4``); "auto": an even part of what explicit shares leave. ``minimal`` marks
    HTCondor's ``min`` share (a fraction of 1/128 that lets Cpus go below one). ``text`` is
    the share as written, for messages.
    """

    kind: ShareKind
    amount: float = 0.0
    text: str = ""
    minimal: bool = False

    def of(self, total: float) -> float:
        """The amount this share gives of ``total`` (meaningless for "auto")."""
        if self.kind == "fraction":
            return self.amount * total
        return self.amount


AUTO = ResourceShare("auto", text="auto")


@attrs.frozen
class ShareItem:
    """One ``name=share[: constraint]`` item of a slot type, as written.

    ``name`` is stripped but not interpreted; ``constraint`` is the parsed expression after the
    colon (None without one) and ``constraint_text`` its text; ``text`` is the whole item.
    """

    name: str
    share: ResourceShare
    text: str
    constraint: Expr | None = None
    constraint_text: str | None = None


@attrs.frozen
class SlotTypeText:
    """A ``SLOT_TYPE_<N>`` value read into items and a blanket share.

    ``blanket`` applies to every resource no item names (``auto`` when the value has no bare
    share); ``knob`` is the knob the text came from, for messages.
    """

    knob: str
    items: tuple[ShareItem, ...] = ()
    blanket: ResourceShare = AUTO


def standard_resource(name: str) -> StandardResource | None:
    """The standard resource a share name means, or None.

    A name means Cpus, Memory, Swap or Disk when it is a leading part, in any case, of
    ``cpus``, ``ram``/``memory``, ``swap``/``virtualmemory`` or ``disk``: ``c``, ``CPU``,
    ``r``, ``Mem``, ``v``, ``virt``, ``VirtualMemory``, ``D``... (seed 000 lists the usual
    spellings; HTCondor matches any leading part). A custom resource of the machine with the
    same name takes precedence; that is decided by the caller.
    """
    lowered = name.lower()
    if not lowered:
        return None
    for word, resource in _STANDARD_WORDS:
        if word.startswith(lowered):
            return resource
    return None


def parse_share(knob: str, text: str, item: str | None = None) -> ResourceShare:
    """Read one share (``128``, ``1/2``, ``50%``, ``auto``, ``min``).

    ``item`` is the whole fragment the share comes from, quoted in errors (defaults to
    ``text``). Raises SlotConfigError naming ``knob`` and the fragment.
    """
    fragment = item if item is not None else text
    value = text.strip()
    lowered = value.lower()
    if lowered in ("auto", "automatic"):
        return ResourceShare("auto", text=value)
    if lowered in ("min", "minimal"):
        return ResourceShare("fraction", MINIMAL_FRACTION, value, minimal=True)
    match = _PERCENT.fullmatch(value)
    if match:
        return ResourceShare("fraction", float(match.group(1)) / 100.0, value)
    match = _FRACTION.fullmatch(value)
    if match:
        denominator = float(match.group(2))
        if denominator <= 0:
            raise SlotConfigError(
                f"{knob}: {fragment!r}: the fraction {value!r} divides by {match.group(2)}"
            )
        return ResourceShare("fraction", float(match.group(1)) / denominator, value)
    if _ABSOLUTE.fullmatch(value):
        number = float(value)
        return ResourceShare("absolute", int(number) if number.is_integer() else number, value)
    raise SlotConfigError(f"{knob}: {fragment!r}: {_why_not_a_share(value)}")


def _why_not_a_share(value: str) -> str:
    if not value:
        return "the share is missing (write a number, a fraction like 1/4, a percentage or auto)"
    if value.startswith("-"):
        return f"{value!r} is negative; a share is a number, a fraction or a percentage"
    unit = _WITH_UNIT.fullmatch(value)
    if unit:
        return (
            f"{value!r} has a unit ({unit.group(1)}); shares take plain numbers "
            "(Memory in MB) or fractions and percentages of the machine"
        )
    return (
        f"{value!r} is not a share: write a number, a fraction like 1/4, a percentage like "
        "25% or auto"
    )


def parse_slot_type(knob: str, text: str | None) -> SlotTypeText:
    """Read a ``SLOT_TYPE_<N>`` value; None or empty gives an all-``auto`` slot type.

    A value with line breaks (the ``@=`` form) has one item per line; otherwise items are
    separated by commas and whitespace, as HTCondor separates them.
    """
    if text is None or not text.strip():
        return SlotTypeText(knob)
    multi_line = "\n" in text
    try:
        return _parse_pieces(knob, text, multi_line)
    except SlotConfigError as exc:
        if multi_line:
            raise
        if ":" in text:
            hint = "a constraint ends at the first space or comma"
        elif _SPACED_EQUALS.search(text):
            hint = "write name=share without spaces around '='"
        else:
            raise
        raise SlotConfigError(
            f"{exc.reason} (on one line items are separated by commas and spaces: {hint}; "
            "or use an @= value of several lines, one item per line)"
        ) from exc


def _parse_pieces(knob: str, text: str, multi_line: bool) -> SlotTypeText:
    pieces = text.split("\n") if multi_line else _ONE_LINE_SEPARATORS.split(text)
    items: list[ShareItem] = []
    blanket: tuple[str, ResourceShare] | None = None
    for raw in pieces:
        piece = raw.strip()
        if not piece:
            continue
        if "=" not in piece:
            share = _parse_blanket(knob, piece)
            if blanket is not None:
                raise SlotConfigError(
                    f"{knob}: two shares for every other resource, {blanket[0]!r} and {piece!r}"
                )
            blanket = (piece, share)
            continue
        items.append(_parse_item(knob, piece, multi_line))
    return SlotTypeText(knob, tuple(items), blanket[1] if blanket else AUTO)


def _parse_blanket(knob: str, piece: str) -> ResourceShare:
    share = parse_share(knob, piece)
    if share.kind == "absolute":
        raise SlotConfigError(
            f"{knob}: {piece!r}: a share for every resource must be a percentage (like 25%), "
            "a fraction (like 1/4) or auto; to give absolute amounts list the resources "
            '(like "cpus=1, mem=512, 25%")'
        )
    if share.kind == "fraction" and share.amount > 1:
        raise SlotConfigError(f"{knob}: {piece!r}: a slot cannot have more than all (100%)")
    return share


def _parse_item(knob: str, piece: str, multi_line: bool) -> ShareItem:
    name, _, value = piece.partition("=")
    name = name.strip()
    if not name:
        raise SlotConfigError(f"{knob}: {piece!r}: the resource name is missing before '='")
    if not value.strip():
        raise SlotConfigError(f"{knob}: {piece!r}: the share is missing after '='")
    amount, colon, constraint_text = value.partition(":")
    share = parse_share(knob, amount, piece)
    if not colon:
        return ShareItem(name, share, piece)
    constraint_text = constraint_text.strip()
    if not constraint_text:
        raise SlotConfigError(f"{knob}: {piece!r}: the constraint after ':' is missing")
    try:
        constraint = parse_expr(constraint_text)
    except ClassAdSyntaxError as exc:
        hint = "" if multi_line else "; put each resource on its own line (the @= form)"
        raise SlotConfigError(
            f"{knob}: {piece!r}: the constraint {constraint_text!r} is not a ClassAd "
            f"expression ({exc.reason}){hint}"
        ) from exc
    return ShareItem(name, share, piece, constraint, constraint_text)
