"""The schedd's job events (epcore.schedd.joblog): appended to the job's own event log as the
job's owner, in text or XML as the job asks, never blocking on a FIFO, and a log that
cannot be written is only reported."""

from __future__ import annotations

import logging
import os
import pwd
import shutil
import tempfile
from collections.abc import Iterator
from pathlib import Path

import pytest

from epcore.classad import ClassAd
from epcore.schedd import joblog

NOW = 1_795_308_202.0
STARTD = "<10.0.0.7:9618>"
ROOT_ONLY = pytest.mark.skipif(os.geteuid() != 0, reason="acting as another user needs root")


def _job(log: str, owner: str, **more: object) -> ClassAd:
    ad = ClassAd({"ClusterId": 4, "ProcId": 1, "Owner": owner, "UserLog": log})
    ad["RemoteHost"] = "slot1@exec.example.org"
    ad["StartdIpAddr"] = STARTD
    for name, value in more.items():
        ad[name] = value
    return ad


def _me() -> str:
    return pwd.getpwuid(os.getuid()).pw_name


def test_a_relative_log_is_under_iwd_and_gets_the_text_event(tmp_path: Path) -> None:
    """A log named relative to Iwd is written there, in HTCondor's text."""
    job = _job("job.log", _me(), Iwd=str(tmp_path))
    joblog.disconnected(job, STARTD, joblog.SILENT_REASON, NOW, logging.getLogger("test"))
    text = (tmp_path / "job.log").read_text()
    assert text.startswith("022 (004.001.000) ")
    assert f"    Trying to reconnect to slot1@exec.example.org {STARTD}\n...\n" in text


def test_a_job_asking_for_xml_gets_an_xml_record(tmp_path: Path) -> None:
    """UserLogUseXML makes the event an XML record."""
    job = _job(str(tmp_path / "job.xml"), _me(), UserLogUseXML=True)
    joblog.reconnected(job, STARTD, NOW, logging.getLogger("test"))
    text = (tmp_path / "job.xml").read_text()
    assert text.startswith("<c>") and '<a n="StarterAddr">' in text


def test_a_job_without_a_log_writes_nothing(tmp_path: Path) -> None:
    """No UserLog: nothing is written, nothing reported."""
    job = ClassAd({"ClusterId": 4, "ProcId": 1, "Owner": _me(), "Iwd": str(tmp_path)})
    assert joblog.log_path(job) is None
    joblog.reconnect_failed(job, STARTD, "gone", NOW, logging.getLogger("test"))
    assert list(tmp_path.iterdir()) == []


@pytest.fixture
def reachable_dir() -> Iterator[Path]:
    """A directory under /tmp that every user can reach (pytest's own are root's alone)."""
    path = Path(tempfile.mkdtemp(prefix="epcore-joblog-", dir="/tmp"))
    path.chmod(0o755)
    try:
        yield path
    finally:
        shutil.rmtree(path)


@ROOT_ONLY
def test_the_log_is_made_by_the_owner_and_a_forbidden_one_only_reported(
    reachable_dir: Path, caplog: pytest.LogCaptureFixture
) -> None:
    """The schedd (root) creates the log as the job's owner (nobody here); a log in a
    directory the owner may not write is reported in the SchedLog, not made by root."""
    tmp_path = reachable_dir
    open_dir = tmp_path / "open"
    open_dir.mkdir(mode=0o777)
    open_dir.chmod(0o777)
    nobody = pwd.getpwnam("nobody")
    job = _job(str(open_dir / "job.log"), "nobody")
    joblog.disconnected(job, STARTD, joblog.RESTART_REASON, NOW, logging.getLogger("test"))
    assert (open_dir / "job.log").stat().st_uid == nobody.pw_uid
    closed = tmp_path / "closed"
    closed.mkdir(mode=0o755)
    caplog.set_level(logging.WARNING, "test")
    job = _job(str(closed / "job.log"), "nobody")
    joblog.disconnected(job, STARTD, joblog.RESTART_REASON, NOW, logging.getLogger("test"))
    assert not (closed / "job.log").exists()
    assert f"cannot write job event log {closed / 'job.log'}" in caplog.text


def test_a_character_device_log_is_written_as_the_starter_writes_one() -> None:
    """A log that is /dev/null (a character device) is taken, as the starter takes it: the
    schedd and the starter share one rule for a job's files."""
    joblog.append(
        _job("/dev/null", _me()),
        joblog.JobReconnectFailedEvent(
            job=joblog.JobIds(4, 1), when=NOW, reason="gone", startd_name="slot1"
        ),
    )


def test_a_fifo_log_is_refused_without_blocking(tmp_path: Path) -> None:
    """A log that is a FIFO nobody reads is refused at once (the schedd's loop never waits
    on it)."""
    fifo = tmp_path / "job.log"
    os.mkfifo(fifo)
    with pytest.raises(joblog.UserLogError, match=r"not a regular file|No such device"):
        joblog.append(
            _job(str(fifo), _me()),
            joblog.JobReconnectFailedEvent(
                job=joblog.JobIds(4, 1), when=NOW, reason="gone", startd_name="slot1"
            ),
        )
