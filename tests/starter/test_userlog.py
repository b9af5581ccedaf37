"""Tests of epcore.starter.userlog: job event logs that HTCondor's own reader understands."""

from __future__ import annotations

import os
import re
import time
import xml.etree.ElementTree as ET
from collections.abc import Callable, Mapping
from pathlib import Path
from typing import Any

import htcondor2
import pytest
from hypothesis import given
from hypothesis import strategies as st

from epcore.classad import parse_ad
from epcore.errors import EpError
from epcore.jobs.events import JobEvent, JobIds, UserLogError, format_text, one_line
from epcore.starter.userlog import (
    EventLogWriter,
    ExecuteEvent,
    GenericEvent,
    ImageSizeEvent,
    JobAbortedEvent,
    JobEvictedEvent,
    JobHeldEvent,
    JobSuspendedEvent,
    JobTerminatedEvent,
    JobUnsuspendedEvent,
    ResourceUsage,
)

JOB = JobIds(cluster=152, proc=3)
# A fixed moment with a fractional part: the log keeps whole seconds.
WHEN = 1_795_308_202.75

# Each event, the JobEventType htcondor2 must report, and fields it must read back.
EVENT_CASES = [
    pytest.param(
        ExecuteEvent(job=JOB, when=WHEN, host="<10.0.0.1:9618?addrs=10.0.0.1-9618>"),
        htcondor2.JobEventType.EXECUTE,
        {"ExecuteHost": "<10.0.0.1:9618?addrs=10.0.0.1-9618>"},
        id="execute",
    ),
    pytest.param(
        ExecuteEvent(job=JOB, when=WHEN, host="<10.0.0.1:9618>", slot_name="slot1_2"),
        htcondor2.JobEventType.EXECUTE,
        {"ExecuteHost": "<10.0.0.1:9618>", "SlotName": "slot1_2"},
        id="execute-slot",
    ),
    pytest.param(
        ImageSizeEvent(
            job=JOB, when=WHEN, image_size_kb=20480, memory_usage_mb=17, resident_set_kb=16384
        ),
        htcondor2.JobEventType.IMAGE_SIZE,
        {"Size": 20480, "MemoryUsage": 17, "ResidentSetSize": 16384},
        id="image-size",
    ),
    pytest.param(
        JobTerminatedEvent(
            job=JOB,
            when=WHEN,
            normal=True,
            code=42,
            run_usage=ResourceUsage(user_seconds=90061.9, system_seconds=5),
            bytes_sent=100,
            bytes_received=200,
        ),
        htcondor2.JobEventType.JOB_TERMINATED,
        {
            "TerminatedNormally": True,
            "ReturnValue": 42,
            "RunRemoteUsage": "Usr 1 01:01:01, Sys 0 00:00:05",
            "TotalRemoteUsage": "Usr 1 01:01:01, Sys 0 00:00:05",
            "SentBytes": 100.0,
            "ReceivedBytes": 200.0,
            "TotalSentBytes": 100.0,
            "TotalReceivedBytes": 200.0,
        },
        id="terminated-normally",
    ),
    pytest.param(
        JobTerminatedEvent(
            job=JOB,
            when=WHEN,
            normal=False,
            code=9,
            total_usage=ResourceUsage(user_seconds=3600),
            total_bytes_sent=7,
            total_bytes_received=8,
        ),
        htcondor2.JobEventType.JOB_TERMINATED,
        {
            "TerminatedNormally": False,
            "TerminatedBySignal": 9,
            "RunRemoteUsage": "Usr 0 00:00:00, Sys 0 00:00:00",
            "TotalRemoteUsage": "Usr 0 01:00:00, Sys 0 00:00:00",
            "TotalSentBytes": 7.0,
            "TotalReceivedBytes": 8.0,
        },
        id="terminated-by-signal",
    ),
    pytest.param(
        JobEvictedEvent(
            job=JOB, when=WHEN, run_usage=ResourceUsage(system_seconds=61), bytes_sent=5
        ),
        htcondor2.JobEventType.JOB_EVICTED,
        {
            "Checkpointed": False,
            "RunRemoteUsage": "Usr 0 00:00:00, Sys 0 00:01:01",
            "SentBytes": 5.0,
        },
        id="evicted",
    ),
    pytest.param(
        JobHeldEvent(job=JOB, when=WHEN, reason="Cannot open /x: No such file", code=6, subcode=2),
        htcondor2.JobEventType.JOB_HELD,
        {"HoldReason": "Cannot open /x: No such file", "HoldReasonCode": 6, "HoldReasonSubCode": 2},
        id="held",
    ),
    pytest.param(
        JobSuspendedEvent(job=JOB, when=WHEN, processes=4),
        htcondor2.JobEventType.JOB_SUSPENDED,
        {"NumberOfPIDs": 4},
        id="suspended",
    ),
    pytest.param(
        JobUnsuspendedEvent(job=JOB, when=WHEN),
        htcondor2.JobEventType.JOB_UNSUSPENDED,
        {},
        id="unsuspended",
    ),
    pytest.param(
        JobAbortedEvent(job=JOB, when=WHEN, reason="removed via <hook> & co"),
        htcondor2.JobEventType.JOB_ABORTED,
        {"Reason": "removed via <hook> & co"},
        id="aborted",
    ),
    pytest.param(
        GenericEvent(job=JOB, when=WHEN, info="prepare hook said hello"),
        htcondor2.JobEventType.GENERIC,
        {"Info": "prepare hook said hello"},
        id="generic",
    ),
]


def _read_back(path: Path) -> list[Any]:
    return list(htcondor2.JobEventLog(str(path)).events(0))


def _check(read: Any, event: JobEvent, kind: object, fields: Mapping[str, object]) -> None:
    assert read.type == kind
    assert (read.cluster, read.proc) == (event.job.cluster, event.job.proc)
    assert read["Subproc"] == event.job.subproc
    assert read.timestamp == int(event.when)
    for name, value in fields.items():
        assert read[name] == value, name


@pytest.mark.oracle
@pytest.mark.parametrize("xml", [False, True], ids=["text", "xml"])
@pytest.mark.parametrize(("event", "kind", "fields"), EVENT_CASES)
def test_htcondor_reads_each_event(
    tmp_path: Path, xml: bool, event: JobEvent, kind: object, fields: Mapping[str, object]
) -> None:
    """htcondor2.JobEventLog reads each event back with its type, job ids, time and fields."""
    path = tmp_path / "job.log"
    EventLogWriter(str(path), xml=xml).write(event)
    [read] = _read_back(path)
    _check(read, event, kind, fields)


@pytest.mark.oracle
@pytest.mark.parametrize("xml", [False, True], ids=["text", "xml"])
def test_events_append_in_order(tmp_path: Path, xml: bool) -> None:
    """Successive writes append: the reader sees every event, in the order written."""
    path = tmp_path / "job.log"
    writer = EventLogWriter(str(path), xml=xml, fsync=True)
    for case in EVENT_CASES:
        event = case.values[0]
        assert isinstance(event, JobEvent)
        writer.write(event)
    read = _read_back(path)
    assert [r.type for r in read] == [case.values[1] for case in EVENT_CASES]


def test_text_header_layout() -> None:
    """The header is the 3-digit type, the zero-padded job id, local time and the text."""
    event = JobHeldEvent(job=JobIds(7, 12, 1), when=WHEN, reason="why", code=3)
    stamp = time.strftime("%Y-%m-%d %H:%M:%S", time.localtime(WHEN))
    assert format_text(event) == (
        f"012 (007.012.001) {stamp} Job was held.\n\twhy\n\tCode 3 Subcode 0\n...\n"
    )


@pytest.mark.parametrize("event", [case.values[0] for case in EVENT_CASES])
def test_xml_records_are_well_formed(tmp_path: Path, event: JobEvent) -> None:
    """Each XML record is a well-formed <c> ClassAd carrying the common event attributes."""
    path = tmp_path / "job.xml"
    EventLogWriter(str(path), xml=True).write(event)
    root = ET.fromstring(f"<classads>{path.read_text()}</classads>")
    [record] = list(root)
    assert record.tag == "c"
    values = {a.get("n"): a[0] for a in record}
    assert values["MyType"].text == event.my_type
    assert values["EventTypeNumber"].text == str(event.number)
    assert values["Cluster"].text == str(event.job.cluster)
    assert values["Proc"].text == str(event.job.proc)
    expected_time = time.strftime("%Y-%m-%dT%H:%M:%S", time.localtime(WHEN))
    assert values["EventTime"].text == expected_time


@pytest.mark.parametrize(
    ("text", "ids"),
    [
        ("[ ClusterId = 12; ProcId = 4 ]", JobIds(12, 4, 0)),
        ('[ Cmd = "/bin/true" ]', JobIds(0, 0, 0)),
        ("[ ClusterId = undefined; ProcId = 1 ]", JobIds(0, 1, 0)),
    ],
    ids=["both", "fetched-job", "undefined"],
)
def test_job_ids_from_ad(text: str, ids: JobIds) -> None:
    """ClusterId and ProcId come from the job ad, 0 when a fetched job has none."""
    assert JobIds.from_ad(parse_ad(text)) == ids


@pytest.mark.parametrize("text", ['[ ClusterId = "12" ]', "[ ProcId = 1.5 ]", "[ ProcId = true ]"])
def test_job_ids_of_wrong_type_are_refused(text: str) -> None:
    """A ClusterId or ProcId that is not an integer is a UserLogError naming the attribute."""
    with pytest.raises(UserLogError, match=r"job ad attribute (ClusterId|ProcId)"):
        JobIds.from_ad(parse_ad(text))


@pytest.mark.parametrize(
    "make_path",
    [
        pytest.param(lambda tmp: tmp / "missing" / "job.log", id="missing-directory"),
        pytest.param(lambda tmp: tmp, id="path-is-a-directory"),
    ],
)
def test_unwritable_log_names_its_path(tmp_path: Path, make_path: Callable[[Path], Path]) -> None:
    """A log that cannot be opened is a UserLogError (an EpError) naming the path, from
    write and from check alike."""
    path = str(make_path(tmp_path))
    writer = EventLogWriter(path)
    with pytest.raises(UserLogError, match=re.escape(path)) as caught:
        writer.write(JobUnsuspendedEvent(job=JOB, when=WHEN))
    assert isinstance(caught.value, EpError)
    with pytest.raises(UserLogError, match=re.escape(path)):
        writer.check()


@pytest.mark.parametrize("reader", [False, True], ids=["nobody-reads", "someone-reads"])
def test_a_fifo_log_is_refused_without_blocking(tmp_path: Path, reader: bool) -> None:
    """A log that is a FIFO (read by someone or not) is refused at once by check and write,
    naming it as not a regular file, instead of blocking the writer."""
    fifo = tmp_path / "job.log"
    os.mkfifo(fifo)
    held = os.open(fifo, os.O_RDONLY | os.O_NONBLOCK) if reader else None
    try:
        writer = EventLogWriter(str(fifo))
        started = time.monotonic()
        with pytest.raises(UserLogError, match=f"{re.escape(str(fifo))}: it is a FIFO"):
            writer.check()
        with pytest.raises(UserLogError, match="not a regular file"):
            writer.write(JobUnsuspendedEvent(job=JOB, when=WHEN))
        assert time.monotonic() - started < 1.0
    finally:
        if held is not None:
            os.close(held)


def test_check_makes_the_log_and_dev_null_passes(tmp_path: Path) -> None:
    """check creates a missing log (as the first write would) and accepts /dev/null."""
    EventLogWriter(str(tmp_path / "new.log")).check()
    assert (tmp_path / "new.log").is_file()
    EventLogWriter("/dev/null").check()
    EventLogWriter("/dev/null").write(JobUnsuspendedEvent(job=JOB, when=WHEN))


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("a\nb", "a b"),
        ("a\r\nb\rc", "a b c"),
        ("  padded \n", "padded"),
        ("tab\tkept", "tab\tkept"),
        ("", ""),
    ],
    ids=repr,
)
def test_one_line_joins_lines(text: str, expected: str) -> None:
    """Free text is written on one line: breaks become spaces, outer blanks are dropped."""
    assert one_line(text) == expected


_reasons = st.text(st.characters(exclude_categories=["Cs"], exclude_characters="\x00"), max_size=60)


@pytest.mark.oracle
@given(reason=_reasons)
def test_any_hold_reason_survives(tmp_path_factory: pytest.TempPathFactory, reason: str) -> None:
    """Any hold reason, newlines included, leaves a parsable log that gives back its one line."""
    path = tmp_path_factory.mktemp("held") / "job.log"
    EventLogWriter(str(path)).write(JobHeldEvent(job=JOB, when=WHEN, reason=reason, code=6))
    [read] = _read_back(path)
    assert read.type == htcondor2.JobEventType.JOB_HELD
    assert read["HoldReasonCode"] == 6
    assert read.get("HoldReason") == (one_line(reason) or None)


def test_xml_records_escape_markup_in_strings(tmp_path: Path) -> None:
    """A string value with XML's markup characters is escaped and reads back unchanged."""
    path = tmp_path / "job.xml"
    reason = "a<b & c>d \"quoted\" 'single'"
    EventLogWriter(str(path), xml=True).write(
        JobHeldEvent(job=JOB, when=WHEN, reason=reason, code=6)
    )
    root = ET.fromstring(f"<classads>{path.read_text()}</classads>")
    values = {a.get("n"): a[0] for a in root[0]}
    assert values["HoldReason"].text == reason
