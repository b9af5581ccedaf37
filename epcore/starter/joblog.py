"""The job event logs a starter writes: the job's own ``log`` and the StarterUserLog.

With no shadow in between, the starter writes the events itself: to the job's UserLog (the
submit file's ``log``, relative to Iwd) and to StarterUserLog (seed 000's fetch-work job ad
attribute), in XML when StarterUserLogUseXML is true. A log the starter creates is owned by the
job's user. A log that cannot be written is reported in the StarterLog; it never stops the
job.
"""

from __future__ import annotations

import logging
import os

from epcore.classad import ClassAd
from epcore.starter.userlog import EventLogWriter, JobEvent, JobIds, UserLogError


def _path(job: ClassAd, attribute: str, iwd: str) -> str | None:
    value = job.evaluate(attribute)
    if not isinstance(value, str) or not value.strip():
        return None
    return value if os.path.isabs(value) else os.path.join(iwd, value)


class JobLogs:
    """Every event log of one job."""

    def __init__(self, job: ClassAd, iwd: str, uid: int, gid: int, log: logging.Logger) -> None:
        self.log = log
        self.uid = uid
        self.gid = gid
        self.writers: list[EventLogWriter] = []
        try:
            self.ids = JobIds.from_ad(job)
        except UserLogError as error:
            log.error("no job event log: %s", error)
            self.ids = JobIds()
            return
        user_log = _path(job, "UserLog", iwd)
        if user_log is not None:
            self.writers.append(EventLogWriter(user_log))
        starter_log = _path(job, "StarterUserLog", iwd)
        if starter_log is not None and starter_log != user_log:
            xml = job.evaluate("StarterUserLogUseXML") is True
            self.writers.append(EventLogWriter(starter_log, xml=xml))

    def _own(self, path: str) -> None:
        if os.path.exists(path) or os.geteuid() != 0:
            return
        try:
            fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_APPEND, 0o644)
            os.close(fd)
            os.chown(path, self.uid, self.gid)
        except OSError as error:
            self.log.error("cannot create job event log %s: %s", path, error.strerror)

    def write(self, event: JobEvent) -> None:
        """Append ``event`` to every log (errors are logged, not raised)."""
        for writer in self.writers:
            self._own(writer.path)
            try:
                writer.write(event)
            except UserLogError as error:
                self.log.error("%s", error)
