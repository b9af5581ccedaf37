"""HTCondor's job event log ("user log") as text: the events' common shape and their two formats.

A text event is a header line ``NNN (cluster.proc.subproc) YYYY-MM-DD HH:MM:SS <text>`` (local
time), indented detail lines, and a ``...`` line; this is what HTCondor writes and what its
readers (``htcondor2.JobEventLog``, ``condor_wait``) parse. Most events indent their details
with a tab; the reconnect events (022-024) with four spaces, as HTCondor's do. The XML
variant writes each event as one ``<c>`` ClassAd record carrying the same attributes the
readers report (``MyType``, ``EventTypeNumber``, ``Cluster``, ``Proc``, ``Subproc``,
``EventTime`` ...); no document header is written, so appending by several writers keeps the
file readable.

Pure: the starter (:mod:`epcore.starter.userlog`, the events of a run) and the schedd
(:mod:`epcore.schedd.joblog`, the events of its connection to a job) each write them with
their own file access.

Free text (hold and abort reasons, generic information) is written on one line, because a
reader takes each line of an event as a separate field: line breaks become spaces and
surrounding white space is dropped (:func:`one_line`).
"""

from __future__ import annotations

import abc
import time
from typing import ClassVar

import attrs

from epcore.classad import UNDEFINED, ClassAd
from epcore.errors import EpError

_EVENT_END = "..."
XmlValue = str | int | float | bool


class UserLogError(EpError):
    """A job event log that cannot be written; names the log's path."""


def one_line(text: str) -> str:
    """``text`` as a single log line: line breaks become spaces, outer white space goes."""
    return " ".join(text.splitlines()).strip()


def _ad_id(job: ClassAd, attribute: str) -> int:
    value = job.evaluate(attribute) if attribute in job else UNDEFINED
    if value is UNDEFINED:
        return 0
    if isinstance(value, bool) or not isinstance(value, int):
        raise UserLogError(f"job ad attribute {attribute}: expected an integer, got {value!r}")
    return value


@attrs.frozen
class JobIds:
    """A job's identity in the log: cluster, proc and subproc numbers."""

    cluster: int = 0
    proc: int = 0
    subproc: int = 0

    @classmethod
    def from_ad(cls, job: ClassAd) -> JobIds:
        """ClusterId and ProcId of ``job``; 0 when absent, as for a fetched job."""
        return cls(_ad_id(job, "ClusterId"), _ad_id(job, "ProcId"))


@attrs.frozen(kw_only=True)
class JobEvent(abc.ABC):
    """What every event carries: the job it is about and when it happened (epoch seconds)."""

    number: ClassVar[int] = 0
    my_type: ClassVar[str] = ""
    #: What begins each detail line of the text form.
    indent: ClassVar[str] = "\t"

    job: JobIds
    when: float

    @abc.abstractmethod
    def headline(self) -> str:
        """The text after the header's time stamp."""

    def details(self) -> list[str]:
        """The event's detail lines, without their leading tab."""
        return []

    def fields(self) -> list[tuple[str, XmlValue]]:
        """The event-specific attributes of the XML record."""
        return []


@attrs.frozen(kw_only=True)
class JobDisconnectedEvent(JobEvent):
    """022: the submit side lost its connection to the job's execute host (``startd_name``,
    its slot's name, at ``startd_addr``) and tries to reconnect."""

    number: ClassVar[int] = 22
    my_type: ClassVar[str] = "JobDisconnectedEvent"
    indent: ClassVar[str] = "    "

    reason: str
    startd_addr: str
    startd_name: str

    def headline(self) -> str:
        return "Job disconnected, attempting to reconnect"

    def details(self) -> list[str]:
        return [
            one_line(self.reason),
            f"Trying to reconnect to {one_line(self.startd_name)} {one_line(self.startd_addr)}",
        ]

    def fields(self) -> list[tuple[str, XmlValue]]:
        return [
            ("StartdAddr", self.startd_addr),
            ("StartdName", self.startd_name),
            ("DisconnectReason", one_line(self.reason)),
            ("EventDescription", self.headline()),
        ]


@attrs.frozen(kw_only=True)
class JobReconnectedEvent(JobEvent):
    """023: the submit side is connected to the job again; ``starter_addr`` is where its
    starter is reached (here: through its startd)."""

    number: ClassVar[int] = 23
    my_type: ClassVar[str] = "JobReconnectedEvent"
    indent: ClassVar[str] = "    "

    startd_addr: str
    startd_name: str
    starter_addr: str

    def headline(self) -> str:
        return f"Job reconnected to {one_line(self.startd_name)}"

    def details(self) -> list[str]:
        return [
            f"startd address: {one_line(self.startd_addr)}",
            f"starter address: {one_line(self.starter_addr)}",
        ]

    def fields(self) -> list[tuple[str, XmlValue]]:
        return [
            ("StartdAddr", self.startd_addr),
            ("StartdName", self.startd_name),
            ("StarterAddr", self.starter_addr),
            ("EventDescription", "Job reconnected"),
        ]


@attrs.frozen(kw_only=True)
class JobReconnectFailedEvent(JobEvent):
    """024: the job's execute host could not be reached again (``reason``): the job is
    rescheduled."""

    number: ClassVar[int] = 24
    my_type: ClassVar[str] = "JobReconnectFailedEvent"
    indent: ClassVar[str] = "    "

    reason: str
    startd_name: str

    def headline(self) -> str:
        return "Job reconnection failed"

    def details(self) -> list[str]:
        return [
            one_line(self.reason),
            f"Can not reconnect to {one_line(self.startd_name)}, rescheduling job",
        ]

    def fields(self) -> list[tuple[str, XmlValue]]:
        return [
            ("StartdName", self.startd_name),
            ("Reason", one_line(self.reason)),
            ("EventDescription", "Job reconnect impossible: rescheduling job"),
        ]


def _xml_value(value: XmlValue) -> str:
    if isinstance(value, bool):
        return f'<b v="{"t" if value else "f"}"/>'
    if isinstance(value, int):
        return f"<i>{value}</i>"
    if isinstance(value, float):
        return f"<r>{value!r}</r>"
    return f"<s>{_xml_text(_xml_safe(value))}</s>"


def _xml_text(text: str) -> str:
    """``text`` with XML's three markup characters escaped. Written here rather than taken
    from ``xml.sax.saxutils``, which imports ``urllib.request`` and so ``ssl`` and
    ``http.client``: about 6 MB of resident memory in every startd, zygote and starter."""
    return text.replace("&", "&amp;").replace("<", "&lt;").replace(">", "&gt;")


def _xml_safe(text: str) -> str:
    """Drop characters XML 1.0 cannot carry at all (most C0 controls), which no reader wants."""
    return "".join(c for c in text if c in "\t\n\r" or ord(c) >= 0x20)


def format_text(event: JobEvent) -> str:
    """``event`` as a text log entry, ending with the ``...`` line."""
    stamp = time.strftime("%Y-%m-%d %H:%M:%S", time.localtime(event.when))
    ids = f"{event.job.cluster:03d}.{event.job.proc:03d}.{event.job.subproc:03d}"
    lines = [f"{event.number:03d} ({ids}) {stamp} {event.headline()}"]
    lines += [f"{event.indent}{line}" for line in event.details()]
    lines.append(_EVENT_END)
    return "\n".join(lines) + "\n"


def format_xml(event: JobEvent) -> str:
    """``event`` as one ``<c>`` ClassAd XML record."""
    stamp = time.strftime("%Y-%m-%dT%H:%M:%S", time.localtime(event.when))
    common: list[tuple[str, XmlValue]] = [
        ("MyType", event.my_type),
        ("EventTypeNumber", event.number),
        ("EventTime", stamp),
        ("Cluster", event.job.cluster),
        ("Proc", event.job.proc),
        ("Subproc", event.job.subproc),
    ]
    attributes = [
        f'    <a n="{_xml_text(name)}">{_xml_value(value)}</a>'
        for name, value in [*common, *event.fields()]
    ]
    return "<c>\n" + "\n".join(attributes) + "\n</c>\n"
