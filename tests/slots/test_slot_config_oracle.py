"""HTCondor's own configuration reader (htcondor2.param) confirms the knob values the slot
model reads: the SLOT_TYPE text of every seed slot example, the slot and consumption defaults,
what the slot templates set, and NUM_CPUS / MEMORY read as integers.

It cannot confirm slot layouts (the wheel has no startd); those are checked against the seed
text in test_slot_seed_examples.py.
"""

from __future__ import annotations

import pytest
from param_oracle import ParamOracle
from slot_helpers import seed_lines

from epcore.config import Config
from epcore.slots.knobs import read_int

pytest.importorskip("htcondor2")
pytestmark = pytest.mark.oracle


def ours(text: str) -> Config:
    """``text`` read by epcore on the real machine (the oracle reads it there too)."""
    from epcore.builtin.host import LocalHost

    return Config.from_text(text, host=LocalHost())


EXAMPLES = [
    pytest.param([("000", 197, 203)], ["SLOT_TYPE_1"], id="000-197-mem"),
    pytest.param(
        [("000", 239, 249)],
        [f"SLOT_TYPE_{n}" for n in range(1, 7)],
        id="000-239-types",
    ),
    pytest.param([("000", 265, 267)], ["SLOT_TYPE_1"], id="000-265-half"),
    pytest.param(
        [("000", 288, 289), ("000", 298, 300), ("000", 310, 320)],
        [
            "MACHINE_RESOURCE_Cogs",
            "MACHINE_RESOURCE_actuator",
            "SLOT_TYPE_1",
            "SLOT_TYPE_2",
            "NUM_SLOTS_TYPE_1",
            "NUM_SLOTS_TYPE_2",
            "SLOT_TYPE_2_PARTITIONABLE",
        ],
        id="000-288-cogs",
    ),
    pytest.param(
        [("000", 4147, 4170)],
        ["SLOT_TYPE_1", "SLOT_TYPE_2", "SLOT_TYPE_3", "NUM_SLOTS_TYPE_3"],
        id="000-4147-gpus",
    ),
    pytest.param(
        [("000", 4252, 4256), ("000", 4262, 4264)],
        [
            "MACHINE_RESOURCE_NAMES",
            "MACHINE_RESOURCE_gpus",
            "SLOT_TYPE_2",
            "SLOT_TYPE_2_CONSUMPTION_gpus",
            "SLOT_WEIGHT",
        ],
        id="000-4252-consumption",
    ),
    pytest.param(
        [("002", 867, 867), ("002", 871, 886)],
        ["MACHINE_RESOURCE_NAMES", "MACHINE_RESOURCE_gpu", "SLOT_TYPE_1", "SLOT_TYPE_2"],
        id="002-867-gpu",
    ),
]


@pytest.mark.parametrize(("where", "names"), EXAMPLES)
def test_the_slot_text_of_each_seed_example_is_htcondors(
    param_oracle: ParamOracle, where: list[tuple[str, int, int]], names: list[str]
) -> None:
    """The value the share parser receives (for the @= GPU example: lines, tabs stripped) is
    the text HTCondor's reader produces for the same lines."""
    text = "".join(seed_lines(*lines) for lines in where)
    answer = param_oracle.load(text, names)
    assert answer.error is None
    cfg = ours(text)
    for name in names:
        assert cfg.get(name) == answer.values[name].text, name


DEFAULTS = [
    "MODIFY_REQUEST_EXPR_REQUESTCPUS",
    "MODIFY_REQUEST_EXPR_REQUESTMEMORY",
    "MODIFY_REQUEST_EXPR_REQUESTDISK",
    "MUST_MODIFY_REQUEST_EXPRS",
    "CONSUMPTION_POLICY",
    "CONSUMPTION_CPUS",
    "CONSUMPTION_MEMORY",
    "CONSUMPTION_DISK",
    "SLOT_WEIGHT",
    "RESERVED_MEMORY",
    "RESERVED_DISK",
    "MEMORY",
    "NUM_SLOTS",
    "NUM_SLOTS_TYPE_1",
    "SLOT_TYPE_1",
    "SLOT_TYPE_0_PARTITIONABLE",
    "MACHINE_RESOURCE_NAMES",
]


def test_the_slot_defaults_are_htcondors(param_oracle: ParamOracle) -> None:
    """With an empty configuration every knob the slot model reads has HTCondor's value
    (None where HTCondor's startd applies its own fallback)."""
    answer = param_oracle.load("", DEFAULTS)
    assert answer.error is None
    cfg = ours("")
    assert {name: cfg.get(name) for name in DEFAULTS} == {
        name: answer.values[name].text for name in DEFAULTS
    }


def test_max_slot_types_falls_back_to_htcondors_default(param_oracle: ParamOracle) -> None:
    """HTCondor's MAX_SLOT_TYPES is 10, the fallback the slot model uses when it is unset."""
    answer = param_oracle.load("", ["MAX_SLOT_TYPES"])
    assert answer.values["MAX_SLOT_TYPES"].typed == "10"


TEMPLATES = [
    "use FEATURE : PartitionableSlot",
    "use FEATURE : StaticSlots",
    "use FEATURE : StaticSlots(2, 3, cpus=1 mem=100)",
    "use FEATURE : PartitionableSlot(3, cpus=50%)",
]


@pytest.mark.parametrize("text", TEMPLATES)
def test_the_slot_templates_set_what_htcondor_sets(param_oracle: ParamOracle, text: str) -> None:
    """The slot templates give NUM_SLOTS_TYPE_<N>, SLOT_TYPE_<N> and _PARTITIONABLE the values
    HTCondor gives them (the knobs read_slot_types reads)."""
    names = [
        f"{knob}_{n}" if knob.startswith("NUM") else f"SLOT_TYPE_{n}{knob}"
        for n in (1, 2, 3)
        for knob in ("NUM_SLOTS_TYPE", "", "_PARTITIONABLE")
    ]
    answer = param_oracle.load(text, names)
    assert answer.error is None
    cfg = ours(text)
    assert {n: cfg.get(n) for n in names} == {n: answer.values[n].text for n in names}


def test_the_seed_lie_reads_as_htcondors_numbers(param_oracle: ParamOracle) -> None:
    """Seed 000 lines 3041 and 3045: ``NUM_CPUS = $(DETECTED_CORES)*2`` is an integer knob to
    HTCondor, and MEMORY's text evaluates (as the startd's param_integer does) to the number
    the slot model reads."""
    import classad2

    text = seed_lines("000", 3040, 3046)
    answer = param_oracle.load(text, ["NUM_CPUS", "MEMORY"])
    cfg = ours(text)
    assert answer.values["NUM_CPUS"].kind == "int"
    assert read_int(cfg, "NUM_CPUS") == int(answer.values["NUM_CPUS"].typed)
    memory = answer.values["MEMORY"].text
    assert read_int(cfg, "MEMORY") == classad2.ExprTree(memory).eval()
