"""The state diagram as a table: every seed transition is there, and nothing else is."""

from __future__ import annotations

import pytest

from epcore.state.states import (
    ACTIVITIES,
    TRANSITIONS,
    Activity,
    IllegalTransition,
    Place,
    State,
    edge,
    letters,
    numbers,
)


def test_every_letter_and_number_of_the_seeds_is_in_the_table() -> None:
    """Letters A to P and numbers 1 to 37 each label at least one edge."""
    assert letters() == frozenset("ABCDEFGHIJKLMNOP")
    assert numbers() == frozenset(range(1, 38))


def test_every_edge_joins_valid_places() -> None:
    """Each edge starts and ends at a State/Activity pair the state allows."""
    for item in TRANSITIONS:
        for place in (item.source, item.target):
            assert place.activity in ACTIVITIES[place.state]


def test_letters_label_state_changes_and_numbers_alone_activity_changes() -> None:
    """An edge with a letter changes State; one without keeps it (activity change only)."""
    for item in TRANSITIONS:
        assert (item.letter is not None) == (item.source.state != item.target.state), item


@pytest.mark.parametrize(
    ("source", "target", "number", "letter"),
    [
        ("Owner/Idle", "Unclaimed/Idle", 1, "A"),
        ("Unclaimed/Idle", "Owner/Idle", 2, "B"),
        ("Unclaimed/Idle", "Matched/Idle", 6, "C"),
        ("Unclaimed/Idle", "Claimed/Idle", 5, "D"),
        ("Unclaimed/Idle", "Backfill/Idle", 7, "E"),
        ("Matched/Idle", "Owner/Idle", 8, "F"),
        ("Matched/Idle", "Claimed/Idle", 9, "G"),
        ("Claimed/Retiring", "Preempting/Vacating", 18, "H"),
        ("Preempting/Killing", "Claimed/Idle", 24, "I"),
        ("Preempting/Vacating", "Owner/Idle", 22, "J"),
        ("Backfill/Busy", "Owner/Idle", 30, "K"),
        ("Backfill/Idle", "Matched/Idle", 32, "L"),
        ("Backfill/Idle", "Claimed/Idle", 31, "M"),
        ("Owner/Idle", "Drained/Retiring", 36, "N"),
        ("Drained/Idle", "Owner/Idle", 34, "O"),
        ("Unclaimed/Idle", "Drained/Retiring", 37, "P"),
        ("Claimed/Busy", "Claimed/Suspended", 14, None),
        ("Drained/Retiring", "Drained/Idle", 33, None),
    ],
)
def test_seed_transitions_are_edges(
    source: str, target: str, number: int, letter: str | None
) -> None:
    """The seed's transitions are found with their number and letter (text over flowchart)."""
    found = edge(Place.parse(source), Place.parse(target), number)
    assert (found.number, found.letter) == (number, letter)


@pytest.mark.parametrize(
    ("source", "target"),
    [
        ("Owner/Idle", "Claimed/Busy"),
        ("Matched/Idle", "Claimed/Busy"),
        ("Claimed/Busy", "Owner/Idle"),
        ("Preempting/Killing", "Preempting/Vacating"),
        ("Drained/Idle", "Unclaimed/Idle"),
        ("Backfill/Busy", "Claimed/Idle"),
    ],
)
def test_moves_the_diagram_lacks_raise(source: str, target: str) -> None:
    """A move that is not an edge raises IllegalTransition naming both places."""
    with pytest.raises(IllegalTransition, match=f"{source} to {target}"):
        edge(Place.parse(source), Place.parse(target))


def test_a_move_with_the_wrong_number_raises() -> None:
    """Asking for an edge under another transition's number is refused."""
    with pytest.raises(IllegalTransition, match="as transition 2"):
        edge(Place.parse("Owner/Idle"), Place.parse("Unclaimed/Idle"), 2)


@pytest.mark.parametrize("text", ["Owner/Busy", "Claimed/Vacating", "Nowhere/Idle", "Owner"])
def test_invalid_places_raise(text: str) -> None:
    """A state with an activity it does not allow, or an unknown name, is refused."""
    with pytest.raises(IllegalTransition):
        Place.parse(text)


def test_places_print_as_state_slash_activity() -> None:
    """str(Place) is the State/Activity form the simulator and ep status show."""
    assert str(Place(State.CLAIMED, Activity.RETIRING)) == "Claimed/Retiring"
    assert Place.parse("claimed/busy") == Place(State.CLAIMED, Activity.BUSY)
