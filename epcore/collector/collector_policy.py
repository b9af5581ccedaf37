"""The collector's knobs read once into a value, and the small ad tests its policy needs."""

from __future__ import annotations

import logging
import math
from typing import Final

import attrs

from epcore.classad import ClassAd, EvalContext, Expr, parse_expr
from epcore.classad.ast import AttrRef, Node
from epcore.classad.functions._support import children
from epcore.config import Config
from epcore.errors import ClassAdSyntaxError, ConfigError, PoolError

# The pool answers queries in the schedd's process; its log is the SchedLog.
_log = logging.getLogger("epcore.schedd")

#: HTCondor's built-in values (the knobs have no entry in the parameter table).
DEFAULT_CLASSAD_LIFETIME: Final = 900
DEFAULT_ABSENT_EXPIRE_ADS_AFTER: Final = 30 * 24 * 3600

MACHINE_TYPE: Final = "Machine"


@attrs.frozen
class CollectorSettings:
    """What the collector's knobs say, in seconds; None for "never"."""

    classad_lifetime: float = DEFAULT_CLASSAD_LIFETIME
    absent_requirements: Expr | None = None
    absent_expire_after: float | None = DEFAULT_ABSENT_EXPIRE_ADS_AFTER
    offline_expire_after: float | None = None
    expire_invalidated: bool = False

    @classmethod
    def from_config(cls, config: Config) -> CollectorSettings:
        """Read CLASSAD_LIFETIME, ABSENT_REQUIREMENTS, ABSENT_EXPIRE_ADS_AFTER,
        OFFLINE_EXPIRE_ADS_AFTER and EXPIRE_INVALIDATED_ADS; ConfigError names a bad one."""
        absent_text = config.get("ABSENT_REQUIREMENTS")
        absent: Expr | None = None
        if absent_text is not None and absent_text.strip():
            try:
                absent = parse_expr(absent_text, source="ABSENT_REQUIREMENTS")
            except ClassAdSyntaxError as error:
                raise ConfigError(
                    f"ABSENT_REQUIREMENTS does not parse as a ClassAd expression: {error}"
                ) from error
        absent_after = config.get_int(
            "ABSENT_EXPIRE_ADS_AFTER", DEFAULT_ABSENT_EXPIRE_ADS_AFTER, minimum=0
        )
        offline_after = config.get_int("OFFLINE_EXPIRE_ADS_AFTER", 0, minimum=0)
        return cls(
            classad_lifetime=config.get_int(
                "CLASSAD_LIFETIME", DEFAULT_CLASSAD_LIFETIME, minimum=0
            ),
            absent_requirements=absent,
            # 0 keeps absent ads forever, as the manual says; HTCondor's own default for
            # OFFLINE_EXPIRE_ADS_AFTER is "practically never", which 0 also spells here.
            absent_expire_after=absent_after or None,
            offline_expire_after=offline_after or None,
            expire_invalidated=config.get_bool("EXPIRE_INVALIDATED_ADS", False),
        )


def is_true(value: object) -> bool:
    """A ClassAd result read as a condition: true, or a non-zero number (UNDEFINED is false)."""
    if type(value) is bool:
        return value
    if type(value) is int or type(value) is float:
        return value != 0
    return False


def attribute_is_true(ad: ClassAd, name: str) -> bool:
    """Whether the ad's own ``name`` evaluates to a true condition."""
    return name in ad and is_true(ad.evaluate(name))


def string_attribute(ad: ClassAd, name: str) -> str | None:
    """The ad's ``name`` when it evaluates to a string, else None."""
    if name not in ad:
        return None
    value = ad.evaluate(name)
    return value if isinstance(value, str) else None


def number_attribute(ad: ClassAd, name: str) -> float | None:
    """The ad's ``name`` when it evaluates to a finite number (not a boolean), else None."""
    if name not in ad:
        return None
    value = ad.evaluate(name)
    if (type(value) is int or type(value) is float) and math.isfinite(value):
        return float(value)
    return None


def ad_key(ad: ClassAd, what: str) -> tuple[str, str]:
    """(lower-cased MyType, Name) of an ad; PoolError when either is missing or not a string."""
    my_type = string_attribute(ad, "MyType")
    name = string_attribute(ad, "Name")
    if my_type is None or name is None:
        missing = "MyType" if my_type is None else "Name"
        shown = name if name is not None else str(ad)[:120]
        raise PoolError(f"{what}: ad {shown!r} has no string {missing} attribute")
    return my_type.lower(), name


def parse_constraint(text: str) -> Expr:
    """A query constraint; PoolError saying that it does not parse."""
    try:
        return parse_expr(text, source="constraint")
    except ClassAdSyntaxError as error:
        raise PoolError(f"query constraint {text!r} does not parse: {error}") from error


def names_attribute(node: Node, name: str) -> bool:
    """Whether the expression refers to attribute ``name`` anywhere (any scope)."""
    wanted = name.lower()
    pending = [node]
    while pending:
        current = pending.pop()
        if type(current) is AttrRef and current.name.lower() == wanted:
            return True
        pending.extend(children(current))
    return False


def matches(constraint: Expr | None, ad: ClassAd, now: float | None) -> bool:
    """Whether the ad passes the constraint (no constraint passes everything); ``now`` None
    lets ``time()`` read the system clock."""
    if constraint is None:
        return True
    try:
        return is_true(constraint.evaluate(ad, context=EvalContext(now=now)))
    except Exception:
        # One ad that trips a fault must not fail the query (or the loop) for every ad.
        name = ad.evaluate("Name") if "Name" in ad else None
        if name is None and "ClusterId" in ad:
            name = f"job {ad.evaluate('ClusterId')}.{ad.evaluate('ProcId')}"
        _log.exception("constraint %s failed on the ad of %s; left out", constraint, name)
        return False


def project(ad: ClassAd, projection: tuple[str, ...] | None) -> ClassAd:
    """A copy of the ad holding only the projected attributes it has (all without one)."""
    if projection is None:
        return ad.copy()
    kept = ClassAd()
    for name in projection:
        expr = ad.lookup(name)
        if expr is not None:
            kept[ad.name_of(name) or name] = expr
    return kept
