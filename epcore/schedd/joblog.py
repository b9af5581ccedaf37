"""The job events the schedd writes to a job's event log (the submit file's ``log``): those
of its connection to the job's execute host, which only the submit side sees.

HTCondor's shadow writes them, and its schedd the first one after a restart: 022
(disconnected) when the execute host stops answering, or for every job the schedd takes
back after a restart ("Local schedd and job shadow died, schedd now running again"); 023
(reconnected) when the execute host is found holding the job again; 024 (reconnect failed)
when the job's lease runs out or the execute host no longer has its claim, before the job
is rescheduled. The starter writes every other event of the run (:mod:`epcore.starter.joblog`).

The log is the job owner's file, named by the owner: the schedd (root) opens it with the
owner's file-system identity (:func:`epcore.transfer.userfs.as_owner`), never blocking on a
FIFO, and appends only to a regular file or a character device such as /dev/null, as the
starter does (:func:`epcore.transfer.userfs.open_user_file`). A log that cannot be written
is reported in the SchedLog; the job goes on.
"""

from __future__ import annotations

import logging
import os
import pwd

from epcore.classad import ClassAd
from epcore.jobs.events import (
    JobDisconnectedEvent,
    JobEvent,
    JobIds,
    JobReconnectedEvent,
    JobReconnectFailedEvent,
    UserLogError,
    format_text,
    format_xml,
)
from epcore.transfer.userfs import as_owner, open_user_file

#: HTCondor's reason in the disconnected event of a job taken back after a restart.
RESTART_REASON = "Local schedd and job shadow died, schedd now running again"
#: HTCondor's shadow's reason when the execute host stops answering.
SILENT_REASON = "Socket between submit and execute hosts closed unexpectedly"
#: HTCondor's shadow's reason when the startd answers that it has no such claim.
NO_CLAIM_REASON = "Claim not found at execution machine"
#: Opening the log: appending, never blocking on a FIFO, never a terminal.
APPEND_FLAGS = os.O_WRONLY | os.O_APPEND | os.O_CREAT


def _text(job: ClassAd, attribute: str) -> str | None:
    value = job.evaluate(attribute)
    return value if isinstance(value, str) and value.strip() else None


def log_path(job: ClassAd) -> str | None:
    """The job's event log (UserLog, relative to Iwd), None when it has none."""
    path = _text(job, "UserLog")
    if path is None:
        return None
    return path if os.path.isabs(path) else os.path.join(_text(job, "Iwd") or "/", path)


def _owner(job: ClassAd) -> tuple[int, int, tuple[int, ...]]:
    owner = _text(job, "Owner")
    if owner is None:
        raise UserLogError("the job has no Owner")
    try:
        entry = pwd.getpwnam(owner)
    except KeyError:
        raise UserLogError(f"no user {owner} on this host") from None
    return entry.pw_uid, entry.pw_gid, tuple(os.getgrouplist(owner, entry.pw_gid))


def append(job: ClassAd, event: JobEvent) -> None:
    """Append ``event`` to ``job``'s event log as its owner (module docstring); a
    :class:`UserLogError` when it cannot."""
    path = log_path(job)
    if path is None:
        return
    entry = format_xml(event) if job.evaluate("UserLogUseXML") is True else format_text(event)
    try:
        with as_owner(*_owner(job)):
            fd = open_user_file(path, APPEND_FLAGS, 0o644)
        try:
            os.write(fd, entry.encode("utf-8", errors="replace"))
        finally:
            os.close(fd)
    except OSError as error:
        raise UserLogError(
            f"cannot write job event log {path}: {error.strerror or error}"
        ) from error


def _write(job: ClassAd, event: JobEvent, log: logging.Logger) -> None:
    try:
        append(job, event)
    except UserLogError as error:
        log.warning("job %d.%d: %s", event.job.cluster, event.job.proc, error)


def _ids(job: ClassAd) -> JobIds | None:
    try:
        return JobIds.from_ad(job)
    except UserLogError:
        return None


def _startd(job: ClassAd, address: str) -> tuple[str, str]:
    """The execute side's name (the job's slot, RemoteHost) and address, as HTCondor's
    events name them."""
    return _text(job, "RemoteHost") or address, _text(job, "StartdIpAddr") or address


def disconnected(job: ClassAd, address: str, reason: str, now: float, log: logging.Logger) -> None:
    """022 for ``job``, whose startd at ``address`` does not answer (``reason``)."""
    ids = _ids(job)
    if ids is not None:
        name, startd = _startd(job, address)
        event = JobDisconnectedEvent(
            job=ids, when=now, reason=reason, startd_addr=startd, startd_name=name
        )
        _write(job, event, log)


def reconnected(job: ClassAd, address: str, now: float, log: logging.Logger) -> None:
    """023 for ``job``, whose startd at ``address`` holds it again. Its starter is reached
    through its startd (it has no address of its own), which the event says."""
    ids = _ids(job)
    if ids is not None:
        name, startd = _startd(job, address)
        event = JobReconnectedEvent(
            job=ids, when=now, startd_addr=startd, startd_name=name, starter_addr=startd
        )
        _write(job, event, log)


def reconnect_failed(
    job: ClassAd, address: str, reason: str, now: float, log: logging.Logger
) -> None:
    """024 for ``job``, rescheduled because its startd at ``address`` cannot take it back
    (``reason``)."""
    ids = _ids(job)
    if ids is not None:
        name, _ = _startd(job, address)
        event = JobReconnectFailedEvent(job=ids, when=now, reason=reason, startd_name=name)
        _write(job, event, log)
