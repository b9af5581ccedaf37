"""An infrastructure failure through a real personal pool: the VM job goes back to the queue
and the startd, told by the starter, marks the VM universe offline on its slots."""

from __future__ import annotations

from collections.abc import Callable

import pytest
from vm_pool import JOB_DEADLINE, VmPool


@pytest.mark.xdist_group("libvirtd")
def test_a_libvirt_failure_requeues_the_job_and_marks_the_machine(
    vm_pool: Callable[..., VmPool],
) -> None:
    """A LIBVIRT_XML_SCRIPT that fails is the machine's fault: the job goes back to idle
    (HTCondor's VMError, 1020) and every slot then says HasVM = false with VMOfflineReason,
    VMOfflineTime and OfflineUniverses, so that the job does not match again."""
    vm = vm_pool("LIBVIRT_XML_SCRIPT = /bin/false\n")
    pool = vm.pool
    vm.submit()
    pool.wait_for(
        lambda: "universe is offline" in pool.log("StartLog"), JOB_DEADLINE, "the offline mark"
    )

    def slot_ad() -> str:
        return pool.ep("status", "-l").stdout

    pool.wait_for(lambda: "VMOfflineReason" in slot_ad(), 60, "the mark in the slot ad")
    ad = slot_ad()
    assert "HasVM = false" in ad, ad
    assert "LIBVIRT_XML_SCRIPT /bin/false exited 1" in ad, ad
    assert "VMOfflineTime = " in ad and "OfflineUniverses = " in ad, ad
    assert [j.evaluate("JobStatus") for j in pool.jobs()] == [1]
    assert pool.log("StartLog").count("started starter") == 1
    assert "will be rescheduled" in vm.starter_log()
