"""The contract between the evaluator and built-in functions.

A built-in function is a plain callable ``impl(call) -> Value``. It receives a
:class:`FunctionCall` describing one invocation and returns a ClassAd value.
Run-time problems (wrong arity, wrong types) are *values*: an implementation
returns :data:`~epcore.classad.values.ERROR`, it never raises.

Arguments arrive unevaluated, as libclassad passes them, so that functions such
as ``ifThenElse`` and ``unparse`` can decide what to evaluate. ``call.values()``
evaluates them all, left to right, for the common strict case.
"""

from __future__ import annotations

import random
import time
from collections.abc import Callable, Mapping, Sequence
from typing import TYPE_CHECKING, Protocol

import attrs

if TYPE_CHECKING:
    from epcore.classad.ast import Node
    from epcore.classad.classad import ClassAd
    from epcore.classad.values import Value


def _system_local_offset(epoch_secs: int) -> int:
    """Seconds east of UTC of the process's local time zone at ``epoch_secs``."""
    return time.localtime(epoch_secs).tm_gmtoff


def _system_zone_name(offset: int) -> str:
    """The process's local zone abbreviation for ``offset`` (seconds east of UTC).

    The standard and daylight names of the local zone answer their own offsets; any
    other offset is written as ``+hhmm`` (``UTC`` for zero), as no name is known for it.
    """
    if offset == -time.timezone:
        return time.tzname[0]
    if time.daylight and offset == -time.altzone:
        return time.tzname[1]
    if offset == 0:
        return "UTC"
    sign = "+" if offset > 0 else "-"
    offset = abs(offset)
    return f"{sign}{offset // 3600:02d}{offset // 60 % 60:02d}"


@attrs.frozen
class EvalContext:
    """What an evaluation may know about the world besides the ads themselves.

    ``now`` is the wall-clock time that ``time()``, ``currentTime()`` and the
    ``CurrentTime`` attribute report; ``None`` means "ask the system clock when a
    function needs it". Simulations pass a fixed ``now`` so results are reproducible.
    ``local_offset`` and ``zone_name`` describe the local time zone (formatTime's
    ``%z`` and ``%Z``); the defaults ask the process's own zone. ``functions`` is the
    function table evaluations use (None: the built-in functions); a daemon puts the
    built-ins and its plugins' functions here once, and every evaluation with this context,
    or one made from it with :meth:`at`, can call them.
    """

    now: float | None = None
    local_offset: Callable[[int], int] = _system_local_offset
    zone_name: Callable[[int], str] = _system_zone_name
    rng: random.Random | None = None
    user_home: Callable[[str], str | None] | None = None
    user_map: Callable[[str, str], Sequence[str] | None] | None = None
    # Left out of the hash (a table is a dict), kept in equality: equal contexts hash alike.
    functions: FunctionTable | None = attrs.field(default=None, hash=False)

    def at(self, now: float) -> EvalContext:
        """This context with the clock fixed at ``now`` (the functions and zones kept)."""
        return attrs.evolve(self, now=now)


class FunctionCall(Protocol):
    """One invocation of a built-in function, as the evaluator hands it over."""

    @property
    def name(self) -> str:
        """The function name as written in the expression."""

    @property
    def args(self) -> tuple[Node, ...]:
        """The argument expressions, unevaluated."""

    @property
    def context(self) -> EvalContext:
        """The evaluation context (clock, time zone, random source, user maps)."""

    def now(self) -> float:
        """The current time in seconds since the epoch, as the context defines it."""

    def rng(self) -> random.Random:
        """The random source of this evaluation."""

    def value(self, index: int) -> Value:
        """Evaluate argument ``index`` in the caller's scope."""

    def values(self) -> list[Value]:
        """Evaluate every argument, left to right, in the caller's scope."""

    def evaluate(self, node: Node, scope: ClassAd | None = None) -> Value:
        """Evaluate ``node`` in the caller's scope, or with ``scope`` as MY when given.

        With ``scope`` the caller's TARGET (if any) stays the TARGET.
        """

    def source_of(self, value: Value) -> Node | None:
        """The list literal a list value came from in this evaluation, or None.

        libclassad's list values are unevaluated expression lists; functions that print a
        list (string, strcat, unparse...) print these expressions when they are known.
        """

    def parse(self, text: str) -> Node:
        """Parse expression text; raises ClassAdSyntaxError when it does not parse."""

    def resolve(self, node: Node) -> Node | None:
        """The expression an attribute-reference node refers to, or None when unbound."""

    def resolve_where(self, node: Node) -> tuple[Node, FunctionCall] | None:
        """resolve(), with a call whose current ad is the ad that holds the expression."""

    def unparse(self, node: Node) -> str:
        """The new-syntax text of ``node``."""


FunctionImpl = Callable[[FunctionCall], "Value"]
FunctionTable = Mapping[str, FunctionImpl]
"""Built-in functions by lower-case name."""
