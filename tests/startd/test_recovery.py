"""What a restarted startd does with the jobs whose starters died while no startd ran: each
is recorded as lost, and a schedd in another process is told (it could not know otherwise)."""

from __future__ import annotations

from epcore.classad import ClassAd, parse_ad
from epcore.runtime import persist
from epcore.startd import recovery
from epcore.startd.startd import Startd
from epcore.state.restore import SavedClaim

JOB = parse_ad('[ Owner = "alice"; ClusterId = 12; ProcId = 3; RequestCpus = 1 ]')
REMOTE = "<10.77.0.2:9618>"


class _Results:
    """The startd's JobResults, keeping what it is handed."""

    def __init__(self) -> None:
        self.results: list[ClassAd] = []

    def job_result(self, result: ClassAd, now: float) -> None:
        self.results.append(result)


def _saved(claim_id: str, client: str) -> SavedClaim:
    return SavedClaim(
        slot_id=1,
        partitionable=False,
        claim_id=claim_id,
        job=JOB,
        rank=0.0,
        made_at=900.0,
        lease=1200,
        client_machine=client,
        job_start=950.0,
        run_time=0.0,
        suspend_time=0.0,
    )


def test_a_job_lost_while_no_startd_ran_is_told_to_its_remote_schedd(startd: Startd) -> None:
    """A saved claim whose starter is gone (no start time kept) is recorded as evicted in
    the history; its result goes to the results link when the claim's client is a TCP
    address, whose client stays known; one of an in-process schedd is only recorded."""
    remote, local = "<10.77.0.3:9618>#100#1#cafe", "<unix:/x>#100#2#beef"
    persist.write_ad_lines(
        startd.paths.claims_file,
        [
            persist.saved_claim_ad(_saved(remote, REMOTE), 999_999),
            persist.saved_claim_ad(_saved(local, "<unix:/pool>"), 999_998),
        ],
    )
    sent = _Results()
    startd.job_results = sent
    startd.restore(startd.clock())
    outcomes = {str(ad.evaluate("ClaimId")): ad.evaluate("JobOutcome") for ad in startd.results}
    assert outcomes == {remote: "evicted", local: "evicted"}
    assert [ad.evaluate("ClaimId") for ad in sent.results] == [remote]
    assert sent.results[0].evaluate("ProcId") == 3
    assert recovery.client_of(startd, remote) == REMOTE
    assert recovery.client_of(startd, local) == ""
    assert persist.read_claims(startd.paths.claims_file) == []
