"""Tests of epcore.jobs.events: the reconnect events (022-024) in HTCondor's text, which its
own reader understands."""

from __future__ import annotations

import time
from pathlib import Path
from typing import Any

import htcondor2
import pytest

from epcore.jobs.events import (
    JobDisconnectedEvent,
    JobEvent,
    JobIds,
    JobReconnectedEvent,
    JobReconnectFailedEvent,
    format_text,
    format_xml,
)

JOB = JobIds(cluster=31, proc=2)
WHEN = 1_795_308_202.0
#: Where the event's local time goes in the expected texts: the stamp is made when the test
#: runs, since another test of the same worker may have changed the process's time zone since
#: collection.
STAMP = "<stamp>"
STARTD = "<10.0.0.7:9618?addrs=10.0.0.7-9618>"
SLOT = "slot1_1@exec1.example.org"

DISCONNECTED = JobDisconnectedEvent(
    job=JOB,
    when=WHEN,
    reason="Local schedd and job shadow died, schedd now running again",
    startd_addr=STARTD,
    startd_name=SLOT,
)
RECONNECTED = JobReconnectedEvent(
    job=JOB, when=WHEN, startd_addr=STARTD, startd_name=SLOT, starter_addr=STARTD
)
FAILED = JobReconnectFailedEvent(
    job=JOB,
    when=WHEN,
    reason="Job disconnected too long: JobLeaseDuration (20 seconds) expired",
    startd_name=SLOT,
)


@pytest.mark.parametrize(
    ("event", "text"),
    [
        pytest.param(
            DISCONNECTED,
            f"022 (031.002.000) {STAMP} Job disconnected, attempting to reconnect\n"
            "    Local schedd and job shadow died, schedd now running again\n"
            f"    Trying to reconnect to {SLOT} {STARTD}\n...\n",
            id="disconnected",
        ),
        pytest.param(
            RECONNECTED,
            f"023 (031.002.000) {STAMP} Job reconnected to {SLOT}\n"
            f"    startd address: {STARTD}\n"
            f"    starter address: {STARTD}\n...\n",
            id="reconnected",
        ),
        pytest.param(
            FAILED,
            f"024 (031.002.000) {STAMP} Job reconnection failed\n"
            "    Job disconnected too long: JobLeaseDuration (20 seconds) expired\n"
            f"    Can not reconnect to {SLOT}, rescheduling job\n...\n",
            id="reconnect-failed",
        ),
    ],
)
def test_reconnect_events_have_htcondors_text(event: JobEvent, text: str) -> None:
    """Each reconnect event is HTCondor's text: its headline, then its lines indented by four
    spaces (not the tab of the other events)."""
    stamp = time.strftime("%Y-%m-%d %H:%M:%S", time.localtime(WHEN))
    assert format_text(event) == text.replace(STAMP, stamp)


def _read_back(path: Path) -> list[Any]:
    return list(htcondor2.JobEventLog(str(path)).events(0))


@pytest.mark.oracle
@pytest.mark.parametrize("xml", [False, True], ids=["text", "xml"])
def test_htcondor_reads_the_reconnect_events_back(tmp_path: Path, xml: bool) -> None:
    """htcondor2.JobEventLog reads the three events back with their types and fields."""
    path = tmp_path / "job.log"
    path.write_text(
        "".join(
            (format_xml if xml else format_text)(e) for e in (DISCONNECTED, RECONNECTED, FAILED)
        )
    )
    disconnected, reconnected, failed = _read_back(path)
    assert disconnected.type == htcondor2.JobEventType.JOB_DISCONNECTED
    assert (disconnected.cluster, disconnected.proc) == (31, 2)
    assert disconnected["DisconnectReason"] == DISCONNECTED.reason
    assert disconnected["StartdAddr"] == STARTD
    assert disconnected["StartdName"] == SLOT
    assert reconnected.type == htcondor2.JobEventType.JOB_RECONNECTED
    assert reconnected["StartdName"] == SLOT
    assert reconnected["StarterAddr"] == STARTD
    assert failed.type == htcondor2.JobEventType.JOB_RECONNECT_FAILED
    assert failed["Reason"] == FAILED.reason
    assert failed["StartdName"] == SLOT
