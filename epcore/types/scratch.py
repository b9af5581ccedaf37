"""Per-job scratch filesystems (``ep_scratch_filesystems``): one filesystem per job as its
sandbox.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import TYPE_CHECKING, Protocol, runtime_checkable

import attrs

from epcore.types.machine import MachineAttribute

if TYPE_CHECKING:
    from epcore.classad import ClassAd
    from epcore.config import Config


@attrs.frozen(eq=False)
class ScratchRequest:
    """What a starter asks a scratch filesystem for: one job's sandbox, before it holds
    anything.

    ``path`` is the sandbox directory, just made, empty and still root's (the filesystem is
    mounted on it); ``disk_kib`` the slot's provisioned ``Disk``, the size the job may fill;
    ``uid``/``gid`` the job's user, who owns the mounted filesystem's root; ``job`` the job's ad
    (a backend may refuse a job it cannot hold, a docker job under a hidden mount)."""

    path: str
    slot_name: str
    slot_id: int
    starter_id: int
    disk_kib: int
    uid: int
    gid: int
    job: ClassAd


@attrs.frozen
class ScratchVolume:
    """A job's scratch filesystem once made: its backend's ``name`` for it (the volume), the
    ``path`` it is mounted on, the block ``device`` and the ``size_kib`` the job may fill.
    ``mount_namespace`` names the private mount namespace it is mounted in (LVM_HIDE_MOUNT),
    which the job then enters; empty when it is mounted where every process sees it."""

    name: str
    path: str
    device: str
    size_kib: int
    mount_namespace: str = ""


@attrs.frozen
class ScratchVerdict:
    """What a periodic check of a job's scratch filesystem found that ends the job:
    ``hold`` True holds it with ``code``/``subcode`` (34, over its request_disk), False sends
    it back to idle (``code`` a vacate code: a thin pool that stays full)."""

    hold: bool
    reason: str
    code: int
    subcode: int = 0


@attrs.frozen
class SlotBreak:
    """What a starter reports when its job left something it could not clean up (HTCondor's
    broken slot): the startd marks the slot broken with ``code`` and ``reason``
    (SlotBrokenCode, SlotBrokenReason) and, when ``item`` names what was left, has the scratch
    filesystem ``backend`` retry its removal (a clean-up reminder) until the break is mended.
    """

    code: int
    reason: str
    backend: str = ""
    item: str = ""


@runtime_checkable
class ScratchFilesystem(Protocol):
    """Gives each job a filesystem of its own as its sandbox (seed 000's per-job ephemeral
    scratch filesystems: an LVM logical volume sized from the slot's Disk).

    Built by its :class:`ScratchFilesystemSpec` factory without touching the machine. The
    startd asks :meth:`wanted`, then calls :meth:`start` once at startup (make the backing
    store, remove the volumes no job holds) and advertises :meth:`machine_attributes`; every
    starter it forks calls :meth:`prepare` after making the empty sandbox directory and before
    writing anything into it, :meth:`check` every :attr:`check_interval` seconds while the job
    runs, and :meth:`remove` after the job's processes are gone, before the sandbox directory
    itself is removed. A volume a starter could not remove breaks its slot
    (:class:`SlotBreak`); the startd then calls :meth:`remove_left` with its name on its
    clean-up timer until it succeeds, and does the same for :meth:`leftovers` after
    :meth:`start`. At the startd's normal end it calls :meth:`stop`.
    """

    name: str
    #: Seconds between two :meth:`check` calls while a job runs.
    check_interval: float

    def wanted(self) -> bool:
        """True when the configuration turns per-job scratch filesystems on."""
        ...

    def start(self) -> None:
        """At startd start: make what the volumes come from and remove volumes left by a
        startd that died. Never raises: a machine that cannot do it makes the backend
        unavailable, which :meth:`machine_attributes` says with the reason."""
        ...

    def available(self) -> bool:
        """True when :meth:`start` succeeded: starters get volumes; otherwise jobs run in
        plain sandboxes without disk enforcement."""
        ...

    def machine_attributes(self) -> Sequence[MachineAttribute]:
        """What every slot ad says about it (IsEnforcingDiskUsage, why not...)."""
        ...

    def prepare(self, request: ScratchRequest) -> ScratchVolume:
        """Make, format and mount the job's filesystem on ``request.path``; raises
        :class:`~epcore.errors.JobSetupError` (a vacate code: the job goes back to idle) when
        it cannot."""
        ...

    def check(self, volume: ScratchVolume) -> ScratchVerdict | None:
        """The usage of ``volume`` now: None while the job may go on."""
        ...

    def remove(self, volume: ScratchVolume) -> None:
        """Unmount and destroy ``volume``; raises :class:`~epcore.errors.EpError` when it
        cannot (the slot is then broken and the startd retries with :meth:`remove_left`)."""
        ...

    def remove_left(self, name: str) -> None:
        """In the startd: remove the volume ``name`` (a :class:`ScratchVolume`'s ``name``) a
        starter or :meth:`start` could not remove; succeeds when it is already gone; raises
        :class:`~epcore.errors.EpError` while it still cannot."""
        ...

    def leftovers(self) -> Sequence[str]:
        """The names of the volumes :meth:`start` found and could not remove."""
        ...

    def stop(self) -> None:
        """At the startd's normal end, its starters gone: remove what :meth:`start` made for
        itself (a loop-backed volume group). Never raises."""
        ...


@attrs.frozen
class ScratchFilesystemSpec:
    """A scratch filesystem a plugin offers (``ep_scratch_filesystems``): its ``name`` and
    the ``factory`` that builds it for a configuration without touching the machine."""

    name: str
    factory: Callable[[Config], ScratchFilesystem]
