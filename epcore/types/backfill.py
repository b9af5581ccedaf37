"""Backfill systems (``ep_backfill_backends``): the client the startd runs on idle slots."""

from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING, Protocol, runtime_checkable

import attrs

if TYPE_CHECKING:
    from epcore.classad import ClassAd
    from epcore.config import Config


@attrs.frozen
class BackfillStatus:
    """What a backfill client is doing: whether it runs, how many CPUs it may use, how many
    tasks it computes and the CPU seconds those tasks have used so far; ``detail`` is a line
    for logs and ``ep status`` (the project, an error)."""

    running: bool
    cpus: int = 0
    tasks: int = 0
    cpu_seconds: float = 0.0
    detail: str = ""


@runtime_checkable
class BackfillBackend(Protocol):
    """A backfill system (seed 000: BOINC) the startd runs on the slots no job wants.

    The startd runs the client as a local vanilla job through its starters (so it has a
    sandbox, cgroups, soft and hard kill), one client per startd shared by every slot in
    Backfill/Busy: :meth:`start` prepares the client's files and returns the job ad to run;
    :meth:`resize` tells the running client how many CPUs it may use as slots come and go;
    :meth:`stop` asks it to end its work cleanly before the startd's soft kill; :meth:`status`
    asks it what it does. None of them may block for more than a second or so: the startd
    calls them from its loop.
    """

    name: str

    def start(self, cpus: int) -> ClassAd:
        """Prepare a client that may use ``cpus`` CPUs; the job ad the starter runs (Cmd,
        Iwd, Owner, Arguments, Environment, Out, Err, JobUniverse)."""
        ...

    def resize(self, cpus: int) -> None:
        """The running client may use ``cpus`` CPUs from now on (at least 1)."""
        ...

    def stop(self) -> None:
        """The client is about to be killed: let it leave its work cleanly (best effort)."""
        ...

    def status(self) -> BackfillStatus:
        """What the client is doing now (``running`` False when it cannot be asked)."""
        ...


@attrs.frozen
class BackfillBackendSpec:
    """A backfill system a plugin offers (``ep_backfill_backends``): its ``name`` as
    BACKFILL_SYSTEM names it (compared without case) and the ``factory`` that builds it for a
    configuration without starting anything; the factory raises
    :class:`~epcore.errors.ConfigError` naming the knob for a configuration it cannot run (a
    missing or bad BOINC_* value, a client program that is not there)."""

    name: str
    factory: Callable[[Config], BackfillBackend]
