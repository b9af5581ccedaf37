"""better-analyze with plugin ClassAd functions: slots whose START calls a plugin's function
are counted as the negotiator would count them, given the configuration's context."""

from __future__ import annotations

from analysis_pool import NOW, STANDARD, job, pool
from lucky_functions import lucky_context

from epcore.analysis.analysis import analyze_job


def test_slots_start_calling_a_plugin_function_is_analysed_with_it() -> None:
    """With the plugin's functions a lucky job finds every slot available and an unlucky one is
    refused by every slot; without them both look refused."""
    slots = pool("START = isLucky(TARGET.N)")
    lucky = analyze_job(job(STANDARD, N=14), slots, now=NOW, base=lucky_context())
    unlucky = analyze_job(job(STANDARD, N=3), slots, now=NOW, base=lucky_context())
    blind = analyze_job(job(STANDARD, N=14), slots, now=NOW)
    assert (lucky.available, lucky.rejected_by_slots) == (4, 0)
    assert (unlucky.available, unlucky.rejected_by_slots) == (0, 4)
    assert (blind.available, blind.rejected_by_slots) == (0, 4)
