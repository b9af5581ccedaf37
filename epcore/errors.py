"""The one exception tree of epcore: everything raised on purpose derives from EpError."""

from __future__ import annotations


class EpError(Exception):
    """Base of every error epcore raises on purpose."""


class ClassAdError(EpError):
    """A problem with ClassAd text or ClassAd data (not a run-time ERROR value)."""


class ClassAdSyntaxError(ClassAdError):
    """ClassAd text that does not parse; carries the 1-based line and column of the fault."""

    def __init__(self, message: str, line: int, column: int, source: str | None = None) -> None:
        self.reason = message
        self.line = line
        self.column = column
        self.source = source
        where = f"{source}:" if source else ""
        super().__init__(f"{where}{line}:{column}: {message}")


class ConfigError(EpError):
    """A configuration that HTCondor would refuse, located at its file and line when known.

    ``source`` is the file (or ``<string>``, or a template such as ``use POLICY:Desktop``) and
    ``line`` its 1-based line; both are None for errors that belong to no single line (a
    missing ``CONDOR_CONFIG`` file, say).
    """

    def __init__(self, message: str, source: str | None = None, line: int | None = None) -> None:
        self.reason = message
        self.source = source
        self.line = line
        super().__init__(located(message, source, line))


def located(message: str, source: str | None, line: int | None) -> str:
    """``message`` prefixed with ``source, line N: `` (or ``source: ``) when they are known."""
    if source is None:
        return message
    return f"{source}, line {line}: {message}" if line is not None else f"{source}: {message}"


class SlotConfigError(ConfigError):
    """A slot layout the machine cannot hold, or slot knobs that do not parse; names the knob."""


class PluginError(EpError):
    """A plugin that cannot be loaded or that breaks a hook's contract."""


class PowerError(EpError):
    """A power backend that cannot say which sleep states the machine has, or cannot put it
    into one; the startd stays awake and logs this message."""


class IsolationError(EpError):
    """An isolation backend that cannot track or limit a job (no free tracking GID, a cgroup
    that cannot be made); the starter refuses the job with this message."""


class JobSetupError(EpError):
    """A job that cannot be started as its ad asks; ``hold_code`` and ``hold_subcode`` are
    HTCondor's HoldReasonCode (6 executable, 7 output, 8 input, 14 Iwd...) and the errno."""

    def __init__(self, message: str, hold_code: int, hold_subcode: int = 0) -> None:
        self.reason = message
        # A HoldCode becomes the plain integer a job ad carries.
        self.hold_code = int(hold_code)
        self.hold_subcode = hold_subcode
        super().__init__(message)


class UniverseOffline(JobSetupError):
    """The machine failed the job's universe, not the job (a hypervisor that will not start a
    VM): the job goes back to the queue (``hold_code`` is 1000 or more, which HTCondor's
    shadow vacates for) and the startd advertises the universe offline on every slot, as
    HTCondor's starter tells its startd ``HasVM = false`` with ``VMOfflineReason``.

    ``universe`` is the name the slot attributes use (``VM``: HasVM, VMOfflineReason) and
    ``universe_number`` its JobUniverse (13), both listed in ``OfflineUniverses``."""

    def __init__(
        self, message: str, universe: str, universe_number: int, hold_code: int, reason: str
    ) -> None:
        super().__init__(message, hold_code)
        self.universe = universe
        self.universe_number = universe_number
        #: What the slots advertise as ``<universe>OfflineReason``.
        self.offline_reason = reason


class DaemonError(EpError):
    """The startd cannot start or serve (a log directory it cannot write, a control socket
    already in use by a live daemon)."""


class PoolError(EpError):
    """A problem of the personal pool's central-manager side (collector, negotiator, job
    queue) or of a request made to it; the message names the job, submitter or ad."""


class SubmitError(PoolError):
    """A submit description that cannot be turned into jobs, located at its file and line.

    ``source`` is the submit file (or ``<string>``), ``line`` its 1-based line; both are None
    for errors that belong to no single line.
    """

    def __init__(self, message: str, source: str | None = None, line: int | None = None) -> None:
        self.reason = message
        self.source = source
        self.line = line
        super().__init__(located(message, source, line))


class QueueError(PoolError):
    """A job-queue request that cannot be carried out (no such job, a status change the job's
    status does not allow, a damaged queue database)."""
