"""The job event logs a starter writes: the job's own ``log`` and the StarterUserLog.

With no shadow in between, the starter writes the events itself: to the job's UserLog (the
submit file's ``log``, relative to Iwd) and to StarterUserLog (seed 000's fetch-work job ad
attribute), in XML when StarterUserLogUseXML is true. The logs are opened with the job
user's own identity: the paths are the job's to choose, so the kernel must check them as it
would for the job (a log it creates is the user's). A log that cannot be written is reported
in the StarterLog once the job runs; one that cannot be opened when the job starts (a FIFO,
a directory, no permission) holds the job with HTCondor's code 22, as its shadow does.
"""

from __future__ import annotations

import logging
import os

from epcore.classad import ClassAd
from epcore.errors import JobSetupError
from epcore.jobs.codes import HoldCode
from epcore.jobs.events import JobEvent, JobIds, UserLogError
from epcore.starter.privileges import as_user
from epcore.starter.userlog import EventLogWriter


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

    def write(self, event: JobEvent) -> None:
        """Append ``event`` to every log (errors are logged, not raised)."""
        for writer in self.writers:
            try:
                # As the job's user: the paths are the job's to choose (see privileges.py).
                with as_user(self.uid, self.gid):
                    writer.write(event)
            except UserLogError as error:
                self.log.error("%s", error)

    def check(self) -> None:
        """Before the job starts: every log can be opened for appending and is a regular file
        (or a character device). Raises JobSetupError (hold code 22) naming the log."""
        for writer in self.writers:
            try:
                with as_user(self.uid, self.gid):
                    writer.check()
            except UserLogError as error:
                raise JobSetupError(
                    f"Failed to initialize user log: {error}", HoldCode.UNABLE_TO_INIT_USER_LOG
                ) from error
