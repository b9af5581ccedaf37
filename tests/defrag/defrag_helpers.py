"""Slot ads and settings for the defrag tests."""

from __future__ import annotations

from epcore.classad import ClassAd
from epcore.config import Config
from epcore.defrag.settings import DefragSettings

NAME = "defrag@cm.example"
REASON = f"Defrag {NAME}"


def settings(text: str = "") -> DefragSettings:
    """Settings from configuration ``text``, the daemon named NAME."""
    return DefragSettings.from_config(Config.from_text(f"DEFRAG_NAME = {NAME}\n{text}"))


def pslot(
    machine: str,
    cpus: int = 1,
    total: int = 8,
    *,
    slot: str = "slot1",
    draining: bool = False,
    reason: str | None = None,
    **extra: object,
) -> ClassAd:
    """A partitionable slot of ``machine`` with ``cpus`` of its ``total`` cpus left."""
    ad = ClassAd()
    ad["MyType"] = "Machine"
    ad["Name"] = f"{slot}@{machine}"
    ad["MyAddress"] = f"<{machine}:9618>"
    ad["PartitionableSlot"] = True
    ad["SlotID"] = int(slot.removeprefix("slot"))
    ad["Cpus"] = cpus
    ad["TotalSlotCpus"] = total
    ad["Draining"] = draining
    if reason is not None:
        ad["DrainReason"] = reason
    for name, value in extra.items():
        ad[name] = value
    return ad
