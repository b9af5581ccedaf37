"""Which slot ads a startd cron job's ads are merged into (seed 000, "Job output").

Each ad may carry one of four attributes saying where it goes, in order of priority (the first
one present decides; the others are not considered):

1. ``SlotMergeConstraint``: every slot for which the expression is true, evaluated with the
   cron ad as MY and the slot ad as TARGET;
2. ``SlotName`` (or ``Name``): every slot whose Name starts with the value;
3. ``SlotTypeId``: every slot with that SlotTypeId;
4. ``SlotId``: every slot with that SlotID.

An ad with none of them goes to every slot. The job's STARTD_CRON_<NAME>_SLOTS, when set,
limits all its ads to those slot numbers. The ads that go everywhere are merged first and the
targeted ones over them, so ``Value=10`` for all slots and ``Value=1`` for slot 1 leave slot 1
with 1 whatever the output order. The targeting attributes themselves are not merged (a
``Name`` would rename the slot). Attribute names get the job's PREFIX. Pure: no clock, no I/O.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence

import attrs

from epcore.classad import ClassAd, EvalContext, Expr
from epcore.slots.cron_output import CronOutputAd, CronOutputError

#: The targeting attributes, lower-cased, in the seed's order of priority.
TARGETING = ("slotmergeconstraint", "slotname", "name", "slottypeid", "slotid")

#: One slot's merged cron attributes, in merge order (a later entry of a name wins).
SlotCronAttributes = tuple[tuple[str, Expr], ...]


@attrs.frozen
class MergeTarget:
    """Where an ad goes: at most one of the four is set (none: every slot)."""

    constraint: Expr | None = None
    name_prefix: str | None = None
    type_id: int | None = None
    slot_id: int | None = None

    @property
    def everywhere(self) -> bool:
        """True for an ad with no targeting attribute."""
        return (
            self.constraint is None
            and self.name_prefix is None
            and self.type_id is None
            and self.slot_id is None
        )


@attrs.frozen
class CronAd:
    """One ad of a cron job, ready to merge: the job, the ad's tag, its attributes (prefixed,
    without the targeting ones), where it goes, and the job's SLOTS (empty: all)."""

    job: str
    tag: str
    attributes: tuple[tuple[str, Expr], ...]
    target: MergeTarget
    slots: tuple[int, ...] = ()
    #: The ad as the job wrote it (MY of SlotMergeConstraint).
    source: tuple[tuple[str, Expr], ...] = ()


@attrs.frozen
class CronLayers:
    """The cron attributes of every slot, by the slot's short name (``slot1``, ``slot1_2``)."""

    by_slot: Mapping[str, SlotCronAttributes] = attrs.field(factory=dict)

    def of(self, slot: str) -> SlotCronAttributes:
        """The cron attributes of ``slot`` (none when no ad goes there)."""
        return self.by_slot.get(slot, ())


def _literal(expr: Expr, name: str, job: str, kind: type) -> object:
    """The value of a targeting attribute, which must be a ``kind`` constant."""
    value = expr.evaluate()
    if kind is int and isinstance(value, float) and value.is_integer():
        value = int(value)
    if not isinstance(value, kind) or isinstance(value, bool):
        wanted = "an integer" if kind is int else "a string"
        raise CronOutputError(f"{name} = {expr} is not {wanted}", 0, job)
    return value


def merge_target(attributes: Iterable[tuple[str, Expr]], job: str = "") -> MergeTarget:
    """Where an ad with these attributes goes (CronOutputError: a SlotId that is no integer,
    a SlotName that is no string)."""
    found = {name.lower(): expr for name, expr in attributes}
    if "slotmergeconstraint" in found:
        return MergeTarget(constraint=found["slotmergeconstraint"])
    for key, label in (("slotname", "SlotName"), ("name", "Name")):
        if key in found:
            prefix = _literal(found[key], label, job, str)
            assert isinstance(prefix, str)
            return MergeTarget(name_prefix=prefix)
    if "slottypeid" in found:
        type_id = _literal(found["slottypeid"], "SlotTypeId", job, int)
        assert isinstance(type_id, int)
        return MergeTarget(type_id=type_id)
    if "slotid" in found:
        slot_id = _literal(found["slotid"], "SlotId", job, int)
        assert isinstance(slot_id, int)
        return MergeTarget(slot_id=slot_id)
    return MergeTarget()


def cron_ad(job: str, ad: CronOutputAd, *, prefix: str = "", slots: Sequence[int] = ()) -> CronAd:
    """``ad`` of cron job ``job`` ready to merge, its attribute names given ``prefix``."""
    target = merge_target(ad.attributes, job)
    merged = tuple(
        (f"{prefix}{name}", expr) for name, expr in ad.attributes if name.lower() not in TARGETING
    )
    return CronAd(job, ad.tag, merged, target, tuple(slots), ad.attributes)


def _number(ad: ClassAd, name: str) -> int | None:
    value = ad.evaluate(name)
    return value if isinstance(value, int) and not isinstance(value, bool) else None


def goes_to(cron: CronAd, slot_ad: ClassAd, context: EvalContext) -> bool:
    """Whether ``cron`` is merged into the slot whose ad is ``slot_ad``."""
    if cron.slots and _number(slot_ad, "SlotID") not in cron.slots:
        return False
    target = cron.target
    if target.constraint is not None:
        my = ClassAd()
        for name, expr in cron.source:
            my[name] = expr
        return target.constraint.evaluate(my, slot_ad, context=context) is True
    if target.name_prefix is not None:
        slot_name = slot_ad.evaluate("Name")
        return isinstance(slot_name, str) and slot_name.startswith(target.name_prefix)
    if target.type_id is not None:
        return _number(slot_ad, "SlotTypeId") == target.type_id
    if target.slot_id is not None:
        return _number(slot_ad, "SlotID") == target.slot_id
    return True


def merge_cron_ads(
    ads: Sequence[CronAd],
    slot_ads: Mapping[str, ClassAd],
    now: float,
    base: EvalContext | None = None,
) -> CronLayers:
    """The cron attributes of each slot of ``slot_ads`` (by short name): the ads that go
    everywhere first, then the targeted ones, each group in the order given. SlotMergeConstraint
    is evaluated with ``base`` (the configuration's context: its functions) at ``now``."""
    context = (base or EvalContext()).at(now)
    ordered = [ad for ad in ads if ad.target.everywhere] + [
        ad for ad in ads if not ad.target.everywhere
    ]
    layers: dict[str, SlotCronAttributes] = {}
    for slot, slot_ad in slot_ads.items():
        merged: list[tuple[str, Expr]] = []
        for ad in ordered:
            if goes_to(ad, slot_ad, context):
                merged.extend(ad.attributes)
        if merged:
            layers[slot] = tuple(merged)
    return CronLayers(layers)
