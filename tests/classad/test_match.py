"""Matchmaking: symmetric_match and rank with MY/TARGET bound both ways."""

from __future__ import annotations

from epcore.classad import parse_ad, rank, symmetric_match

MACHINE = parse_ad(
    '[ Arch = "X86_64"; Cpus = 4; Memory = 8192; Owner = "nobody";'
    " Requirements = TARGET.RequestCpus <= MY.Cpus && RequestMemory <= Memory;"
    ' Rank = (TARGET.Owner == "alice") * 10 ]'
)


def _job(owner: str, cpus: int) -> str:
    return (
        f'[ Owner = "{owner}"; RequestCpus = {cpus}; RequestMemory = 1024;'
        ' Requirements = TARGET.Arch == "X86_64"; Rank = TARGET.Memory ]'
    )


def test_symmetric_match_needs_both_requirements() -> None:
    """Both ads' Requirements must be true against each other."""
    assert symmetric_match(MACHINE, parse_ad(_job("alice", 2)))
    assert not symmetric_match(MACHINE, parse_ad(_job("alice", 8)))
    unhappy = parse_ad(_job("alice", 2))
    unhappy["Requirements"] = False
    assert not symmetric_match(MACHINE, unhappy)


def test_undefined_requirements_do_not_match() -> None:
    """UNDEFINED (a missing attribute) is not a match, nor is a missing Requirements."""
    job = parse_ad("[ RequestCpus = 1; Requirements = TARGET.NoSuchThing ]")
    assert not symmetric_match(MACHINE, job)
    assert not symmetric_match(MACHINE, parse_ad("[ RequestCpus = 1; RequestMemory = 1 ]"))


def test_rank_is_evaluated_with_the_other_ad_as_target() -> None:
    """rank(a, b) evaluates a's Rank with b as TARGET and returns a real."""
    assert rank(MACHINE, parse_ad(_job("alice", 1))) == 10.0
    assert rank(MACHINE, parse_ad(_job("bob", 1))) == 0.0
    assert rank(parse_ad(_job("bob", 1)), MACHINE) == 8192.0
    assert rank(parse_ad('[ Rank = "high" ]'), MACHINE) == 0.0


def test_match_evaluation_does_not_change_the_ads() -> None:
    """Evaluating a match leaves both ads exactly as they were."""
    job = parse_ad(_job("alice", 2))
    before = (str(MACHINE), str(job))
    symmetric_match(MACHINE, job)
    rank(MACHINE, job)
    assert (str(MACHINE), str(job)) == before
