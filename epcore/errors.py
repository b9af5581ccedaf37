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
        where = ""
        if source is not None:
            where = f"{source}, line {line}: " if line is not None else f"{source}: "
        super().__init__(f"{where}{message}")


class SlotConfigError(ConfigError):
    """A slot layout the machine cannot hold, or slot knobs that do not parse; names the knob."""


class PluginError(EpError):
    """A plugin that cannot be loaded or that breaks a hook's contract."""
