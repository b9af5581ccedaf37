"""Attributes the configuration adds to slot ads: STARTD_ATTRS and STARTD_SLOT_ATTRS.

``STARTD_ATTRS`` names configuration macros whose values are published as ClassAd
*expressions*: ``GenomeDBName = "FruitFlies"`` is a string, ``GenomeDBSizeGB = 1729`` a number,
``HasLargeGenomeDB = GenomeDBSizeGB > 100`` an expression, and the common mistake
``WRONGGenomeDBName = FruitFlies`` a reference to an attribute FruitFlies, which evaluates to
UNDEFINED (seed 000, "Note on classad types in slot ad attributes"). A slot's list is, in order,
STARTD_ATTRS (SLOT_TYPE_<T>_STARTD_ATTRS replaces it for slots of type T), SLOT<N>_STARTD_ATTRS,
the older STARTD_EXPRS and SLOT<N>_STARTD_EXPRS (seed 002), then SYSTEM_STARTD_ATTRS, the
attributes HTCondor itself needs (COLLECTOR_HOST_STRING). Each value is looked up per slot:
SLOT<N>_<attr>, then SLOT_TYPE_<T>_<attr>, then <attr>; a dynamic slot uses its parent's N.
A value that is not a ClassAd expression is left out, as HTCondor leaves it out with a
"CONFIGURATION PROBLEM" in its log: :func:`startd_attrs` gives such an entry its problem and no
expression, and :func:`epcore.slots.ads.slot_ad_problems` lists them for the startd to log.

``STARTD_SLOT_ATTRS`` (and STARTD_SLOT_EXPRS, SYSTEM_STARTD_SLOT_ATTRS) names slot attributes
copied from every slot's ad into every slot's ad as ``slot<N>_<attr>`` (``slot<N>_<M>_<attr>``
for a dynamic slot), so that one slot's policy can look at another's (``slot1_State``). The
copy is the expression itself; with STARTD_EVAL_SLOT_ATTRS it is the value, and only values
that are neither ERROR nor UNDEFINED are copied.
"""

from __future__ import annotations

from collections.abc import Iterable

import attrs

from epcore.classad import ClassAdSyntaxError, Expr, parse_expr
from epcore.config import Config, split_list
from epcore.slots.model import Slot


@attrs.frozen
class ConfigAttribute:
    """One STARTD_ATTRS entry of one slot: its name, and its expression or the parse error."""

    name: str
    text: str
    expr: Expr | None
    problem: str | None = None


def _unique(names: Iterable[str]) -> list[str]:
    seen: set[str] = set()
    result = []
    for name in names:
        key = name.lower()
        if key not in seen:
            seen.add(key)
            result.append(name)
    return result


def startd_attr_names(config: Config, slot_id: int, type_id: int) -> list[str]:
    """The STARTD_ATTRS list of slot ``slot_id`` of type ``type_id`` (0: no type)."""
    base = None
    if type_id:
        base = config.get(f"SLOT_TYPE_{type_id}_STARTD_ATTRS")
    if base is None:
        base = config.get("STARTD_ATTRS")
    names = [
        *split_list(base),
        *config.get_list(f"SLOT{slot_id}_STARTD_ATTRS"),
        *config.get_list("STARTD_EXPRS"),
        *config.get_list(f"SLOT{slot_id}_STARTD_EXPRS"),
        *config.get_list("SYSTEM_STARTD_ATTRS"),
    ]
    return _unique(names)


class ExprCache:
    """Parsed expression text, so that 256 slots with the same START parse it once."""

    def __init__(self) -> None:
        self._parsed: dict[str, Expr | ClassAdSyntaxError] = {}

    def parse(self, text: str) -> Expr:
        """The expression ``text`` (raises ClassAdSyntaxError, also for a cached failure)."""
        found = self._parsed.get(text)
        if found is None:
            try:
                found = parse_expr(text)
            except ClassAdSyntaxError as error:
                found = error
            self._parsed[text] = found
        if isinstance(found, ClassAdSyntaxError):
            raise found
        return found


def startd_attrs(
    config: Config, slot_id: int, type_id: int, cache: ExprCache | None = None
) -> list[ConfigAttribute]:
    """The STARTD_ATTRS entries slot ``slot_id`` publishes, with their per-slot values.

    Entries without a value are left out; entries whose value does not parse carry a problem
    and no expression.
    """
    cache = cache or ExprCache()
    entries = []
    for name in startd_attr_names(config, slot_id, type_id):
        text = config.slot_get(name, slot_id, type_id or None)
        if text is None:
            continue
        try:
            entries.append(ConfigAttribute(name, text, cache.parse(text)))
        except ClassAdSyntaxError as error:
            problem = (
                f"CONFIGURATION PROBLEM: slot{slot_id}: STARTD_ATTRS entry {name} = {text} is "
                f"not a ClassAd expression ({error}); it is left out of the slot ad. The most "
                "common reason is a string value without double quotes."
            )
            entries.append(ConfigAttribute(name, text, None, problem))
    return entries


def slot_attr_names(config: Config) -> list[str]:
    """The STARTD_SLOT_ATTRS list: attributes every slot copies from every other slot."""
    return _unique(
        [
            *config.get_list("STARTD_SLOT_ATTRS"),
            *config.get_list("STARTD_SLOT_EXPRS"),
            *config.get_list("SYSTEM_STARTD_SLOT_ATTRS"),
        ]
    )


def slot_prefix(slot: Slot) -> str:
    """``slot<N>`` or ``slot<N>_<M>``: the slot's name without the host, as cross-slot
    attribute names and log lines spell it."""
    if slot.sub_id is None:
        return f"slot{slot.slot_id}"
    return f"slot{slot.slot_id}_{slot.sub_id}"
