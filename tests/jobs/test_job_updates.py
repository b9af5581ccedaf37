"""The attributes a job's runtime asks for in its job ad, carried in the job's result."""

from __future__ import annotations

from epcore.classad import ClassAd, parse_ad
from epcore.jobs.updates import JOB_UPDATES, add_job_updates, job_updates


def test_the_listed_attributes_go_in_and_come_out() -> None:
    """add_job_updates puts the attributes in the result and names them; job_updates gives
    back exactly those, not the result's other attributes."""
    result = parse_ad('[ ExitCode = 0; JobOutcome = "evicted" ]')
    updates = parse_ad('[ VM_CkptMac = "52:54:00:aa:bb:cc"; VM_CkptIP = "10.0.2.15" ]')
    add_job_updates(result, updates)
    assert result.evaluate(JOB_UPDATES) == "VM_CkptMac,VM_CkptIP"
    found = job_updates(result)
    assert sorted(found) == ["VM_CkptIP", "VM_CkptMac"]
    assert str(found["VM_CkptMac"]) == '"52:54:00:aa:bb:cc"'


def test_nothing_listed_gives_nothing() -> None:
    """No updates add no list; a result without a list, or listing a name it lacks, the list
    itself or a protected attribute (the job's status, its owner), gives none of them."""
    result = parse_ad("[ ExitCode = 0 ]")
    add_job_updates(result, ClassAd())
    assert JOB_UPDATES not in result
    assert job_updates(result) == {}
    result["JobStatus"] = 4
    result["owner"] = "mallory"
    result[JOB_UPDATES] = f"Missing, {JOB_UPDATES}, JobStatus, owner"
    assert job_updates(result) == {}
