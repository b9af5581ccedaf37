"""Plugin ClassAd functions in matchmaking: the negotiator evaluates both sides' Requirements
and ranks with the configuration's function table, and its reference index treats a plugin
function as able to read anything."""

from __future__ import annotations

import pytest
from lucky_functions import lucky_config
from negotiator_helpers import DOMAIN, ChooserName, cycle, job, matched, slot

from epcore.classad import parse_ad
from epcore.classad.references import ReferenceIndex
from epcore.config import Config
from epcore.interfaces import SubmitterJobs

CHOOSERS = pytest.mark.parametrize("chooser", ["indexed", "plain"])


def _jobs(*numbers: int, requirements: str = "true", rank: str = "0") -> SubmitterJobs:
    ads = tuple(
        job(1, proc, requirements=requirements, rank=rank, extra={"N": number})
        for proc, number in enumerate(numbers)
    )
    return SubmitterJobs(f"alice@{DOMAIN}", ads)


@CHOOSERS
def test_slot_start_calling_a_plugin_function_decides_the_matches(chooser: ChooserName) -> None:
    """A slot whose Requirements call the plugin's function matches only the jobs it accepts."""
    slots = [slot(n, requirements="isLucky(TARGET.N)") for n in (1, 2, 3)]
    result = cycle(lucky_config(), slots, [_jobs(3, 14, 5, 21)], chooser=chooser)
    assert sorted(matched(result)) == ["1.1", "1.3"]
    assert result.rejections["1.0"] == "no match found"


@CHOOSERS
def test_job_rank_calling_a_plugin_function_picks_the_slot(chooser: ChooserName) -> None:
    """A job's Rank that calls the plugin's function prefers the slot it calls lucky."""
    slots = [slot(n, extra={"N": n * 7 if n == 2 else n}) for n in (1, 2, 3)]
    result = cycle(lucky_config(), slots, [_jobs(0, rank="isLucky(TARGET.N)")], chooser=chooser)
    assert matched(result) == {"1.0": "slot2@m1"}


def test_without_the_plugin_nothing_matches() -> None:
    """The same slots under a configuration without the plugin match no job (ERROR is false)."""
    slots = [slot(1, requirements="isLucky(TARGET.N)")]
    result = cycle(Config.from_text(""), slots, [_jobs(14)])
    assert matched(result) == {}


def test_a_plugin_function_makes_the_whole_ad_the_key() -> None:
    """A function that is not built in may read anything: the reference analysis gives up."""
    lucky = parse_ad('[Requirements = isLucky(Memory); Memory = 7; Name = "a"]')
    refs = ReferenceIndex([lucky]).closure((), ("requirements",))
    assert refs.names is None
    built_in = parse_ad('[Requirements = floor(Memory) > 0; Memory = 7; Name = "a"]')
    assert ReferenceIndex([built_in]).closure((), ("requirements",)).names is not None
