"""What the configuration reader needs from the machine, as an object that tests can replace.

The reader itself does no I/O: it asks a :class:`ConfigHost` for file contents, directory
listings, the output of ``include command`` lines, environment variables and the values HTCondor
detects before it reads any file (``DETECTED_CORES``, ``FULL_HOSTNAME``, ``OPSYS``, ...). The real
machine is ``epcore.builtin.host.LocalHost``; the hosts held in memory, for tests, the policy
simulator and embedding, are in :mod:`epcore.config.memory_host`.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Protocol

import attrs


@attrs.frozen
class HostFacts:
    """The values HTCondor puts into the configuration before reading any file.

    ``detected`` holds macros a configuration file may override (``DETECTED_CORES``, ``ARCH``,
    ``OPSYSANDVER``, ``TILDE``, ...); ``specials`` holds those HTCondor inserts again after
    reading every file, so that no file can change them (``USERNAME``, ``PID``, ``HOSTNAME``,
    ``IP_ADDRESS``, ...). ``hostname`` is the short name from which ``FULL_HOSTNAME`` is built.
    """

    hostname: str
    full_hostname: str
    detected: Mapping[str, str] = attrs.field(factory=dict)
    specials: Mapping[str, str] = attrs.field(factory=dict)


@attrs.frozen
class CommandOutput:
    """What ``include command : ...`` read: the command's standard output and exit status."""

    stdout: str
    exit_status: int


class ConfigHost(Protocol):
    """The machine as the configuration reader sees it. Every method may raise ``OSError``."""

    def read_text(self, path: str) -> str:
        """Return the contents of the file at ``path``."""
        ...

    def list_dir(self, path: str) -> list[str]:
        """Return the names of the regular files (not directories) in the directory ``path``."""
        ...

    def run_command(self, command: str) -> CommandOutput:
        """Run ``command`` (a command line, split as HTCondor splits arguments) and capture it."""
        ...

    def environ(self) -> Mapping[str, str]:
        """Return the process environment (for ``$ENV()`` and ``_CONDOR_`` overrides)."""
        ...

    def facts(self) -> HostFacts:
        """Return the detected values (see :class:`HostFacts`)."""
        ...

    def is_file(self, path: str) -> bool:
        """Return True when ``path`` names an existing, readable regular file."""
        ...

    def write_text(self, path: str, text: str) -> None:
        """Write ``text`` to ``path`` (``include command into`` keeps command output there)."""
        ...
