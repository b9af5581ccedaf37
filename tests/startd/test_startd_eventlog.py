"""The job event log a real job writes through the startd, read back by HTCondor's own
``htcondor2.JobEventLog``."""

from __future__ import annotations

import os

import pytest

htcondor2 = pytest.importorskip("htcondor2")

pytestmark = [pytest.mark.system, pytest.mark.oracle]


def test_event_log_reads_back_with_htcondor(startd_factory, slot_users, tmp_path) -> None:
    """A job that runs, is suspended and continued, then exits with status 5 leaves execute,
    image size, suspend, unsuspend and terminated events that HTCondor reads with the right
    values; the XML StarterUserLog holds the same events."""
    user = slot_users[0]
    iwd = tmp_path / "iwd"
    iwd.mkdir()
    os.chown(iwd, user.uid, user.gid)
    startd = startd_factory(
        "WANT_SUSPEND = True\n"
        'SUSPEND = Activity == "Busy" && (time() - EnteredCurrentActivity) > 2\n'
        "CONTINUE = (time() - EnteredCurrentActivity) > 1\n"
    )
    job = (
        f'[ ClusterId = 42; ProcId = 3; Owner = "{user.name}"; Cmd = "/bin/sh";'
        f' Arguments = "-c \'sleep 5; exit 5\'"; Iwd = "{iwd}"; UserLog = "job.log";'
        ' StarterUserLog = "starter.xml"; StarterUserLogUseXML = true;'
        " RequestCpus = 1; RequestMemory = 64; RequestDisk = 1024 ]"
    )
    startd.run_job(job)
    startd.wait_for(lambda: len(startd.history()) == 1, 60, "the job to finish")
    events = list(htcondor2.JobEventLog(str(iwd / "job.log")).events(0))
    kinds = [event.type for event in events]
    assert kinds[0] == htcondor2.JobEventType.EXECUTE
    assert kinds[-1] == htcondor2.JobEventType.JOB_TERMINATED
    assert htcondor2.JobEventType.IMAGE_SIZE in kinds
    assert htcondor2.JobEventType.JOB_SUSPENDED in kinds
    assert htcondor2.JobEventType.JOB_UNSUSPENDED in kinds
    assert all((event.cluster, event.proc) == (42, 3) for event in events)
    terminated = events[-1]
    assert terminated["TerminatedNormally"] is True
    assert terminated["ReturnValue"] == 5
    xml_events = list(htcondor2.JobEventLog(str(iwd / "starter.xml")).events(0))
    assert [event.type for event in xml_events] == kinds
