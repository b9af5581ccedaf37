"""The job events a starter reports for a job it runs, and the writer that appends them to a
job event log (their shape and text: :mod:`epcore.jobs.events`)."""

from __future__ import annotations

import os
from typing import ClassVar

import attrs

from epcore.jobs.events import (
    JobEvent,
    UserLogError,
    XmlValue,
    format_text,
    format_xml,
    one_line,
)
from epcore.transfer.userfs import open_user_file

_NO_REASON = "Reason unspecified"


@attrs.frozen
class ResourceUsage:
    """CPU time a job used, in seconds, as the ``Usr d hh:mm:ss, Sys d hh:mm:ss`` text."""

    user_seconds: float = 0.0
    system_seconds: float = 0.0

    def text(self) -> str:
        """The usage as HTCondor prints it."""
        return f"Usr {_duration(self.user_seconds)}, Sys {_duration(self.system_seconds)}"


_NO_USAGE = ResourceUsage()


def _duration(seconds: float) -> str:
    whole = max(0, int(seconds))
    days, rest = divmod(whole, 86400)
    hours, rest = divmod(rest, 3600)
    minutes, secs = divmod(rest, 60)
    return f"{days} {hours:02d}:{minutes:02d}:{secs:02d}"


@attrs.frozen(kw_only=True)
class ExecuteEvent(JobEvent):
    """001: the job started on ``host`` (a sinful string), optionally in slot ``slot_name``."""

    number: ClassVar[int] = 1
    my_type: ClassVar[str] = "ExecuteEvent"

    host: str
    slot_name: str | None = None

    def headline(self) -> str:
        return f"Job executing on host: {one_line(self.host)}"

    def details(self) -> list[str]:
        return [f"SlotName: {one_line(self.slot_name)}"] if self.slot_name else []

    def fields(self) -> list[tuple[str, XmlValue]]:
        found: list[tuple[str, XmlValue]] = [("ExecuteHost", self.host)]
        return found + ([("SlotName", self.slot_name)] if self.slot_name else [])


@attrs.frozen(kw_only=True)
class ImageSizeEvent(JobEvent):
    """006: the job's image size (KB), memory usage (MB) and resident set size (KB)."""

    number: ClassVar[int] = 6
    my_type: ClassVar[str] = "JobImageSizeEvent"

    image_size_kb: int
    memory_usage_mb: int
    resident_set_kb: int

    def headline(self) -> str:
        return f"Image size of job updated: {self.image_size_kb}"

    def details(self) -> list[str]:
        return [
            f"{self.memory_usage_mb}  -  MemoryUsage of job (MB)",
            f"{self.resident_set_kb}  -  ResidentSetSize of job (KB)",
        ]

    def fields(self) -> list[tuple[str, XmlValue]]:
        return [
            ("Size", self.image_size_kb),
            ("MemoryUsage", self.memory_usage_mb),
            ("ResidentSetSize", self.resident_set_kb),
        ]


def _usage_lines(run: ResourceUsage, total: ResourceUsage | None) -> list[str]:
    lines = [f"\t{run.text()}  -  Run Remote Usage", f"\t{_NO_USAGE.text()}  -  Run Local Usage"]
    if total is not None:
        lines += [
            f"\t{total.text()}  -  Total Remote Usage",
            f"\t{_NO_USAGE.text()}  -  Total Local Usage",
        ]
    return lines


@attrs.frozen(kw_only=True)
class JobTerminatedEvent(JobEvent):
    """005: the job exited, normally with ``code`` as return value or killed by signal ``code``.

    ``run_usage``/``bytes_*`` cover this run; the ``total_*`` fields all runs (the starter
    of a fetched job knows only this run, so they default to the run's values).
    """

    number: ClassVar[int] = 5
    my_type: ClassVar[str] = "JobTerminatedEvent"

    normal: bool
    code: int
    run_usage: ResourceUsage = _NO_USAGE
    total_usage: ResourceUsage | None = None
    bytes_sent: int = 0
    bytes_received: int = 0
    total_bytes_sent: int | None = None
    total_bytes_received: int | None = None

    def _totals(self) -> tuple[ResourceUsage, int, int]:
        return (
            self.total_usage if self.total_usage is not None else self.run_usage,
            self.total_bytes_sent if self.total_bytes_sent is not None else self.bytes_sent,
            self.total_bytes_received
            if self.total_bytes_received is not None
            else self.bytes_received,
        )

    def headline(self) -> str:
        return "Job terminated."

    def details(self) -> list[str]:
        usage, sent, received = self._totals()
        if self.normal:
            lines = [f"(1) Normal termination (return value {self.code})"]
        else:
            lines = [f"(0) Abnormal termination (signal {self.code})", "(0) No core file"]
        return [
            *lines,
            *_usage_lines(self.run_usage, usage),
            f"{self.bytes_sent}  -  Run Bytes Sent By Job",
            f"{self.bytes_received}  -  Run Bytes Received By Job",
            f"{sent}  -  Total Bytes Sent By Job",
            f"{received}  -  Total Bytes Received By Job",
        ]

    def fields(self) -> list[tuple[str, XmlValue]]:
        usage, sent, received = self._totals()
        outcome: tuple[str, XmlValue] = (
            ("ReturnValue", self.code) if self.normal else ("TerminatedBySignal", self.code)
        )
        return [
            ("TerminatedNormally", self.normal),
            outcome,
            ("RunRemoteUsage", self.run_usage.text()),
            ("RunLocalUsage", _NO_USAGE.text()),
            ("TotalRemoteUsage", usage.text()),
            ("TotalLocalUsage", _NO_USAGE.text()),
            ("SentBytes", float(self.bytes_sent)),
            ("ReceivedBytes", float(self.bytes_received)),
            ("TotalSentBytes", float(sent)),
            ("TotalReceivedBytes", float(received)),
        ]


@attrs.frozen(kw_only=True)
class JobEvictedEvent(JobEvent):
    """004: the job was stopped before it finished (preempted, vacated); never checkpointed."""

    number: ClassVar[int] = 4
    my_type: ClassVar[str] = "JobEvictedEvent"

    run_usage: ResourceUsage = _NO_USAGE
    bytes_sent: int = 0
    bytes_received: int = 0

    def headline(self) -> str:
        return "Job was evicted."

    def details(self) -> list[str]:
        return [
            "(0) Job was not checkpointed.",
            *_usage_lines(self.run_usage, None),
            f"{self.bytes_sent}  -  Run Bytes Sent By Job",
            f"{self.bytes_received}  -  Run Bytes Received By Job",
        ]

    def fields(self) -> list[tuple[str, XmlValue]]:
        return [
            ("Checkpointed", False),
            ("TerminatedAndRequeued", False),
            ("TerminatedNormally", False),
            ("RunRemoteUsage", self.run_usage.text()),
            ("RunLocalUsage", _NO_USAGE.text()),
            ("SentBytes", float(self.bytes_sent)),
            ("ReceivedBytes", float(self.bytes_received)),
        ]


@attrs.frozen(kw_only=True)
class JobHeldEvent(JobEvent):
    """012: the job was put on hold with HoldReason, HoldReasonCode and HoldReasonSubCode."""

    number: ClassVar[int] = 12
    my_type: ClassVar[str] = "JobHeldEvent"

    reason: str
    code: int = 0
    subcode: int = 0

    def headline(self) -> str:
        return "Job was held."

    def details(self) -> list[str]:
        return [one_line(self.reason) or _NO_REASON, f"Code {self.code} Subcode {self.subcode}"]

    def fields(self) -> list[tuple[str, XmlValue]]:
        return [
            ("HoldReason", one_line(self.reason) or _NO_REASON),
            ("HoldReasonCode", self.code),
            ("HoldReasonSubCode", self.subcode),
        ]


@attrs.frozen(kw_only=True)
class JobSuspendedEvent(JobEvent):
    """010: the job was suspended; ``processes`` is how many processes were stopped."""

    number: ClassVar[int] = 10
    my_type: ClassVar[str] = "JobSuspendedEvent"

    processes: int

    def headline(self) -> str:
        return "Job was suspended."

    def details(self) -> list[str]:
        return [f"Number of processes actually suspended: {self.processes}"]

    def fields(self) -> list[tuple[str, XmlValue]]:
        return [("NumberOfPIDs", self.processes)]


@attrs.frozen(kw_only=True)
class JobUnsuspendedEvent(JobEvent):
    """011: the job was resumed after a suspension."""

    number: ClassVar[int] = 11
    my_type: ClassVar[str] = "JobUnsuspendedEvent"

    def headline(self) -> str:
        return "Job was unsuspended."


@attrs.frozen(kw_only=True)
class JobAbortedEvent(JobEvent):
    """009: the job was removed, with the reason."""

    number: ClassVar[int] = 9
    my_type: ClassVar[str] = "JobAbortedEvent"

    reason: str = ""

    def headline(self) -> str:
        return "Job was aborted."

    def details(self) -> list[str]:
        return [one_line(self.reason)] if one_line(self.reason) else []

    def fields(self) -> list[tuple[str, XmlValue]]:
        return [("Reason", one_line(self.reason))] if one_line(self.reason) else []


@attrs.frozen(kw_only=True)
class GenericEvent(JobEvent):
    """008: free information text, written on the header line."""

    number: ClassVar[int] = 8
    my_type: ClassVar[str] = "GenericEvent"

    info: str

    def headline(self) -> str:
        return one_line(self.info)

    def fields(self) -> list[tuple[str, XmlValue]]:
        return [("Info", one_line(self.info))]


class EventLogWriter:
    """Appends events to the job event log at ``path``, in text or (``xml=True``) XML.

    Each write opens, appends and closes the file, so other writers (and log rotation by
    renaming) interleave safely at event boundaries; ``fsync=True`` also flushes each event to
    disk before returning.
    """

    def __init__(self, path: str, *, xml: bool = False, fsync: bool = False) -> None:
        self.path = path
        self.xml = xml
        self.fsync = fsync

    def write(self, event: JobEvent) -> None:
        """Append ``event``; a log that cannot be opened or written is a :class:`UserLogError`."""
        entry = format_xml(event) if self.xml else format_text(event)
        try:
            self._append(entry)
        except OSError as error:
            raise UserLogError(
                f"cannot write job event log {self.path}: {error.strerror or error}"
            ) from error

    def check(self) -> None:
        """Open the log as :meth:`write` would, writing nothing: a :class:`UserLogError` when
        it cannot be opened or is not a regular file (a FIFO would block every write)."""
        try:
            os.close(open_user_file(self.path, os.O_WRONLY | os.O_APPEND | os.O_CREAT))
        except OSError as error:
            raise UserLogError(
                f"cannot write job event log {self.path}: {error.strerror or error}"
            ) from error

    def _append(self, entry: str) -> None:
        fd = open_user_file(self.path, os.O_WRONLY | os.O_APPEND | os.O_CREAT)
        with open(fd, "a", encoding="utf-8", errors="replace") as log:
            log.write(entry)
            if self.fsync:
                log.flush()
                os.fsync(log.fileno())
