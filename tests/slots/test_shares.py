"""Reading SLOT_TYPE_<N> text: shares, items, blanket shares, constraints and their errors."""

from __future__ import annotations

import pytest
from hypothesis import given
from hypothesis import strategies as st

from epcore.errors import SlotConfigError
from epcore.slots.shares import (
    AUTO,
    MINIMAL_FRACTION,
    ResourceShare,
    parse_share,
    parse_slot_type,
    standard_resource,
)

SHARES = [
    ("1/4", ResourceShare("fraction", 0.25, "1/4")),
    ("25%", ResourceShare("fraction", 0.25, "25%")),
    ("12.5%", ResourceShare("fraction", 0.125, "12.5%")),
    ("3 / 4", ResourceShare("fraction", 0.75, "3 / 4")),
    ("128", ResourceShare("absolute", 128, "128")),
    ("0.5", ResourceShare("absolute", 0.5, "0.5")),
    ("0", ResourceShare("absolute", 0, "0")),
    ("auto", ResourceShare("auto", text="auto")),
    ("AUTO", ResourceShare("auto", text="AUTO")),
    ("automatic", ResourceShare("auto", text="automatic")),
    ("min", ResourceShare("fraction", MINIMAL_FRACTION, "min", minimal=True)),
    ("Minimal", ResourceShare("fraction", MINIMAL_FRACTION, "Minimal", minimal=True)),
]


@pytest.mark.parametrize(("text", "expected"), SHARES)
def test_a_share_reads_as_its_kind_and_amount(text: str, expected: ResourceShare) -> None:
    """Fractions, percentages, absolute amounts, auto and min read as the seed describes."""
    assert parse_share("SLOT_TYPE_1", text) == expected


BAD_SHARES = [
    ("4G", "has a unit (G)"),
    ("512MB", "has a unit (MB)"),
    ("-2", "is negative"),
    ("1/0", "divides by 0"),
    ("half", "is not a share"),
    ("25%%", "is not a share"),
    ("", "the share is missing"),
]


@pytest.mark.parametrize(("text", "reason"), BAD_SHARES)
def test_a_malformed_share_is_an_error_naming_knob_and_fragment(text: str, reason: str) -> None:
    """A share HTCondor's atof would read as a silent number is an error with the fragment."""
    with pytest.raises(SlotConfigError) as caught:
        parse_share("SLOT_TYPE_3", text, f"mem={text}")
    message = str(caught.value)
    assert message.startswith("SLOT_TYPE_3: 'mem=")
    assert reason in message


NAMES = [
    ("Cpus", "Cpus"),
    ("C", "Cpus"),
    ("c", "Cpus"),
    ("cpu", "Cpus"),
    ("CPUs", "Cpus"),
    ("ram", "Memory"),
    ("RAM", "Memory"),
    ("MEMORY", "Memory"),
    ("memory", "Memory"),
    ("Mem", "Memory"),
    ("R", "Memory"),
    ("r", "Memory"),
    ("M", "Memory"),
    ("m", "Memory"),
    ("disk", "Disk"),
    ("Disk", "Disk"),
    ("D", "Disk"),
    ("d", "Disk"),
    ("swap", "Swap"),
    ("SWAP", "Swap"),
    ("S", "Swap"),
    ("s", "Swap"),
    ("VirtualMemory", "Swap"),
    ("V", "Swap"),
    ("v", "Swap"),
    ("virt", "Swap"),
    ("cpuss", None),
    ("cores", None),
    ("gpus", None),
    ("memoryx", None),
    ("", None),
]


@pytest.mark.parametrize(("name", "resource"), NAMES)
def test_resource_names_follow_the_seed_list(name: str, resource: str | None) -> None:
    """Every spelling seed 000 lists (and any leading part of the full name) is recognised;
    other names are not standard resources."""
    assert standard_resource(name) == resource


def test_a_bare_share_is_the_blanket_for_everything() -> None:
    """``SLOT_TYPE_5 = 25%`` has no items and a 25% blanket share."""
    parsed = parse_slot_type("SLOT_TYPE_5", "25%")
    assert parsed.items == ()
    assert parsed.blanket == ResourceShare("fraction", 0.25, "25%")


def test_a_list_keeps_its_items_and_blanket() -> None:
    """``cpus=1, disk=auto, 50%``: two items and a 50% blanket for the rest."""
    parsed = parse_slot_type("SLOT_TYPE_1", "cpus=1, disk=auto, 50%")
    assert [(i.name, i.share.kind, i.share.amount) for i in parsed.items] == [
        ("cpus", "absolute", 1),
        ("disk", "auto", 0.0),
    ]
    assert parsed.blanket.amount == 0.5


def test_whitespace_also_separates_items_on_one_line() -> None:
    """As in HTCondor (and ``use FEATURE : StaticSlots(2, 3, cpus=1 mem=100)``), spaces
    separate items on one line."""
    parsed = parse_slot_type("SLOT_TYPE_2", "cpus=1 mem=100")
    assert [(i.name, i.share.amount) for i in parsed.items] == [("cpus", 1), ("mem", 100)]


def test_an_empty_value_is_all_auto() -> None:
    """An unset or empty SLOT_TYPE_<N> gives every resource the ``auto`` share."""
    assert parse_slot_type("SLOT_TYPE_3", None).blanket == AUTO
    assert parse_slot_type("SLOT_TYPE_3", "  ").items == ()


def test_the_multi_line_form_reads_constraints() -> None:
    """In the @= form each line is an item; text after ':' is a parsed constraint."""
    text = "GPUs = 2 : Capability >= 8.0\nCPUs = 1\n90%"
    parsed = parse_slot_type("SLOT_TYPE_1", text)
    gpus, cpus = parsed.items
    assert (gpus.name, gpus.share.amount, gpus.constraint_text) == ("GPUs", 2, "Capability >= 8.0")
    assert gpus.constraint is not None
    assert cpus.constraint is None
    assert parsed.blanket.amount == pytest.approx(0.9)


def test_a_string_constraint_is_kept_as_written() -> None:
    """``GPUs = 1 : "GPU-6a96bd13"`` keeps the quoted id as its constraint."""
    (item,) = parse_slot_type("SLOT_TYPE_2", 'GPUs = 1 : "GPU-6a96bd13"\n').items
    assert item.constraint_text == '"GPU-6a96bd13"'


BAD_TYPES = [
    ("cpus = 2", "without spaces around '='"),
    ("cpus=", "the share is missing after '='"),
    ("=2", "the resource name is missing"),
    ("2", "a share for every resource must be a percentage"),
    ("150%", "cannot have more than all"),
    ("25%, 1/2", "two shares for every other resource"),
    ("GPUs=1:Capability>=", "is not a ClassAd expression"),
    ("GPUs=1:Capability >= 8.0", "a constraint ends at the first space or comma"),
    ("GPUs = 1 : Capability >= (8\n", "is not a ClassAd expression"),
    ("GPUs=1:", "the constraint after ':' is missing"),
]


@pytest.mark.parametrize(("text", "reason"), BAD_TYPES)
def test_a_malformed_slot_type_is_an_error_naming_the_knob(text: str, reason: str) -> None:
    """Each malformed value raises SlotConfigError starting with the knob's name."""
    with pytest.raises(SlotConfigError) as caught:
        parse_slot_type("SLOT_TYPE_7", text)
    assert str(caught.value).startswith("SLOT_TYPE_7: ")
    assert reason in str(caught.value)


numbers = st.integers(min_value=0, max_value=10_000)


@given(numerator=numbers, denominator=st.integers(min_value=1, max_value=10_000))
def test_a_fraction_and_its_percentage_agree(numerator: int, denominator: int) -> None:
    """``a/b`` reads as a/b, and ``p%`` as p/100, for any whole numbers."""
    assert parse_share("T", f"{numerator}/{denominator}").amount == numerator / denominator
    assert parse_share("T", f"{numerator}%").amount == numerator / 100


@given(
    items=st.lists(
        st.tuples(st.sampled_from(["cpus", "mem", "disk", "swap", "Cogs"]), numbers),
        unique_by=lambda item: item[0],
        max_size=5,
    ),
    separator=st.sampled_from([", ", ",", " ", "\n"]),
)
def test_items_read_back_whatever_the_separator(
    items: list[tuple[str, int]], separator: str
) -> None:
    """A list written with any separator reads back as the same names and amounts."""
    disk_or_swap = {"disk", "swap"}
    text = separator.join(
        f"{name}={amount}%" if name in disk_or_swap else f"{name}={amount}"
        for name, amount in items
    )
    if separator == "\n" and len(items) == 1:
        text += "\n"
    parsed = parse_slot_type("SLOT_TYPE_1", text)
    read = [(i.name, i.share.amount) for i in parsed.items]
    expected = [(n, a / 100 if n in disk_or_swap else a) for n, a in items]
    assert read == expected
