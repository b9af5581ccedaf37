"""Malformed or impossible slot configurations: each is a SlotConfigError whose message names
the knob (and, for over-commitment, the resource and by how much), located at the knob's
line."""

from __future__ import annotations

import pytest
from slot_helpers import config, gpus, machine

from epcore.errors import ConfigError, SlotConfigError
from epcore.slots.consumption import slot_weight
from epcore.slots.layout import plan_slots

# (configuration after the helper's EXECUTE line, the message, the line of the knob named)
CASES = [
    pytest.param(
        "SLOT_TYPE_1 = cpus=1/0\nNUM_SLOTS_TYPE_1 = 1",
        "SLOT_TYPE_1: 'cpus=1/0': the fraction '1/0' divides by 0",
        2,
        id="fraction-by-zero",
    ),
    pytest.param(
        "SLOT_TYPE_1 = 150%\nNUM_SLOTS_TYPE_1 = 1",
        "SLOT_TYPE_1: '150%': a slot cannot have more than all (100%)",
        2,
        id="blanket-over-100",
    ),
    pytest.param(
        "SLOT_TYPE_1 = 2\nNUM_SLOTS_TYPE_1 = 1",
        "SLOT_TYPE_1: '2': a share for every resource must be a percentage",
        2,
        id="absolute-blanket",
    ),
    pytest.param(
        "NUM_SLOTS_TYPE_1 = 1\nSLOT_TYPE_1 = cogs=2",
        "SLOT_TYPE_1: 'cogs=2': this machine has no resource 'cogs' (custom resources: GPUs)",
        3,
        id="unknown-resource",
    ),
    pytest.param(
        "SLOT_TYPE_1 = mem=4G\nNUM_SLOTS_TYPE_1 = 1",
        "SLOT_TYPE_1: 'mem=4G': '4G' has a unit (G)",
        2,
        id="unit",
    ),
    pytest.param(
        "SLOT_TYPE_1 = cpus=two\nNUM_SLOTS_TYPE_1 = 1",
        "SLOT_TYPE_1: 'cpus=two': 'two' is not a share",
        2,
        id="not-a-share",
    ),
    pytest.param(
        "SLOT_TYPE_1 = cpus = 2\nNUM_SLOTS_TYPE_1 = 1",
        "without spaces around '='",
        2,
        id="spaces-around-equals",
    ),
    pytest.param(
        "SLOT_TYPE_1 = cpus=1, c=2\nNUM_SLOTS_TYPE_1 = 1",
        "SLOT_TYPE_1: Cpus is given twice, 'cpus=1' and 'c=2'",
        2,
        id="repeated-resource",
    ),
    pytest.param(
        "SLOT_TYPE_1 = disk=1000\nNUM_SLOTS_TYPE_1 = 1",
        "SLOT_TYPE_1: 'disk=1000': Disk changes while the startd runs",
        2,
        id="absolute-disk",
    ),
    pytest.param(
        "SLOT_TYPE_1 = swap=10\nNUM_SLOTS_TYPE_1 = 1",
        "SLOT_TYPE_1: 'swap=10': Swap changes while the startd runs",
        2,
        id="absolute-swap",
    ),
    pytest.param(
        "SLOT_TYPE_1 = cpus=3\nNUM_SLOTS_TYPE_1 = 1\nSLOT_TYPE_2 = cpus=3\nNUM_SLOTS_TYPE_2 = 1",
        "SLOT_TYPE_1 and SLOT_TYPE_2 ask for 6 Cpus, the machine has 4 (2 too many)",
        2,
        id="cpus-overcommit",
    ),
    pytest.param(
        "SLOT_TYPE_2 = mem=100\nNUM_SLOTS_TYPE_2 = 3",
        "SLOT_TYPE_2 (3 slots) ask for 300 MB of Memory, the machine has 256 MB (44 MB too many)",
        2,
        id="memory-overcommit",
    ),
    pytest.param(
        "SLOT_TYPE_1 = swap=60%\nNUM_SLOTS_TYPE_1 = 2",
        "SLOT_TYPE_1 (2 slots) ask for 120% of the Swap, at most 100% is possible (20% too many)",
        2,
        id="swap-overcommit",
    ),
    pytest.param(
        "MACHINE_RESOURCE_Cogs = 16\nSLOT_TYPE_1 = cogs=10\nNUM_SLOTS_TYPE_1 = 2",
        "SLOT_TYPE_1 (2 slots) ask for 20 Cogs, the machine has 16 (4 too many)",
        3,
        id="custom-overcommit",
    ),
    pytest.param(
        "SLOT_TYPE_1 = mem=256\nNUM_SLOTS_TYPE_1 = 1\nNUM_SLOTS_TYPE_2 = 1",
        "SLOT_TYPE_2 share 0 MB of Memory automatically, what SLOT_TYPE_1 leaves; each slot "
        "needs at least 1 MB, 1 MB in all (1 MB too few)",
        4,
        id="nothing-left-for-auto-memory",
    ),
    pytest.param(
        "SLOT_TYPE_1 = disk=100%\nNUM_SLOTS_TYPE_1 = 1\nNUM_SLOTS_TYPE_2 = 1",
        "SLOT_TYPE_2 share 0% of the Disk of /execute automatically, what SLOT_TYPE_1 leaves; "
        "nothing is left for them",
        4,
        id="nothing-left-for-auto-disk",
    ),
    pytest.param(
        "NUM_SLOTS = 8",
        "NUM_SLOTS (8 slots) share 4 Cpus automatically; each slot needs at least 1, 8 in all "
        "(4 too few)",
        2,
        id="more-slots-than-cpus",
    ),
    pytest.param("NUM_SLOTS = 0", "NUM_SLOTS: 0 is less than 1", 2, id="no-slots"),
    pytest.param("NUM_SLOTS = lots", "NUM_SLOTS: 'lots' is not a number", 2, id="num-slots-nan"),
    pytest.param(
        "NUM_SLOTS_TYPE_1 = -1", "NUM_SLOTS_TYPE_1: -1 is less than 0", 2, id="negative-count"
    ),
    pytest.param(
        "NUM_SLOTS_TYPE_12 = 1",
        "NUM_SLOTS_TYPE_12: slot type 12 is beyond MAX_SLOT_TYPES (10)",
        2,
        id="type-beyond-max",
    ),
    pytest.param(
        "SLOT_TYPE_0 = 50%",
        "SLOT_TYPE_0: slot type 0 is built in and cannot be configured",
        2,
        id="type-zero",
    ),
    pytest.param(
        "NUM_SLOTS_TYPE_0 = 2",
        "NUM_SLOTS_TYPE_0: slot type 0 is built in and cannot be configured",
        2,
        id="type-zero-count",
    ),
    pytest.param(
        "SLOT_TYPE_1 @=end\n GPUs = 1 : Capability >=\n 50%\n@end\nNUM_SLOTS_TYPE_1 = 1",
        "SLOT_TYPE_1: 'GPUs = 1 : Capability >=': the constraint 'Capability >=' is not a "
        "ClassAd expression",
        2,
        id="bad-constraint",
    ),
    pytest.param(
        'SLOT_TYPE_1 = cpus=1:Arch=="X86_64"\nNUM_SLOTS_TYPE_1 = 1',
        "a constraint chooses devices of a custom resource; Cpus has none",
        2,
        id="constraint-on-cpus",
    ),
    pytest.param(
        "MACHINE_RESOURCE_Cogs = 4\nSLOT_TYPE_1 = Cogs=1:Size>2\nNUM_SLOTS_TYPE_1 = 1",
        "the constraint chooses devices, but Cogs is a plain quantity without device ids",
        3,
        id="constraint-on-quantity",
    ),
    pytest.param(
        "SLOT_TYPE_1 @=end\n GPUs = 2 : Capability >= 8.0\n 50%\n@end\nNUM_SLOTS_TYPE_1 = 1\n"
        'SLOT_TYPE_2 @=end\n GPUs = 1 : "GPU-a"\n 50%\n@end\nNUM_SLOTS_TYPE_2 = 1',
        'SLOT_TYPE_2: slot2 needs 1 GPUs matching "GPU-a", only 0 of the free devices match '
        "(free: GPU-c)",
        7,
        id="device-taken-by-an-earlier-slot",
    ),
    pytest.param(
        "MACHINE_RESOURCE_Cogs = 4 +",
        "MACHINE_RESOURCE_Cogs: '4 +' is neither a number nor a list of ids",
        2,
        id="bad-machine-resource",
    ),
    pytest.param(
        "MACHINE_RESOURCE_CPUS = 4",
        "MACHINE_RESOURCE_CPUS: 'CPUS' is a reserved resource name",
        2,
        id="reserved-machine-resource",
    ),
    pytest.param(
        "MAX_SLOT_TYPES = many\nNUM_SLOTS_TYPE_1 = 1",
        "MAX_SLOT_TYPES: 'many' is not a number",
        2,
        id="bad-max-slot-types",
    ),
]


@pytest.mark.parametrize(("text", "message", "line"), CASES)
def test_a_malformed_slot_configuration_names_the_knob(text: str, message: str, line: int) -> None:
    """plan_slots raises SlotConfigError (a ConfigError) with the message, at the knob's line."""
    cfg = config(text)
    with pytest.raises(SlotConfigError) as caught:
        inventory = machine(cfg, detected=[gpus(("GPU-a", 8.0), ("GPU-b", 8.0), ("GPU-c", 7.0))])
        plan_slots(cfg, inventory)
    assert isinstance(caught.value, ConfigError)
    assert message in caught.value.reason
    assert (caught.value.source, caught.value.line) == ("<string>", line)


def test_an_error_from_a_template_points_at_its_use_line() -> None:
    """``use FEATURE : StaticSlots(1, 9)`` makes 9 slots on 4 Cpus: the error names the knob
    the template set, located at the ``use`` line."""
    cfg = config("# a comment\nuse FEATURE : StaticSlots(1, 9)")
    with pytest.raises(SlotConfigError) as caught:
        plan_slots(cfg, machine(cfg))
    assert caught.value.reason.startswith("SLOT_TYPE_1 (9 slots) share 4 Cpus automatically")
    assert caught.value.line == 3


def test_a_slot_weight_that_does_not_parse_names_the_knob() -> None:
    """SLOT_WEIGHT = Cpus * is a SlotConfigError naming SLOT_WEIGHT at its line."""
    cfg = config("SLOT_WEIGHT = Cpus *")
    layout = plan_slots(cfg, machine(cfg))
    with pytest.raises(SlotConfigError) as caught:
        slot_weight(cfg, layout.slots[0].resources)
    assert caught.value.reason.startswith("SLOT_WEIGHT: 'Cpus *' is not a ClassAd expression")
    assert caught.value.line == 2
