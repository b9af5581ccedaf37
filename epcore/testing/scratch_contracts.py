"""Contract tests for per-job scratch filesystem plugins (``ep_scratch_filesystems``).

What a scratch filesystem's author must pass: the plugin offers well-named specs whose
factories build a :class:`~epcore.types.ScratchFilesystem` of that name without touching the
machine; after ``start()`` its slot-ad attributes are well-formed whether it is available or
not; and, where it is available, a job's volume is mounted on the empty sandbox the request
names, owned by the job's user, sized as asked, passes its check while nearly empty, and is
gone after ``remove()``, which leaves the sandbox an empty directory. ``config_text`` points
the backend at what it may use (a volume group, a backing file)::

    class TestLvm(ScratchFilesystemContract):
        backend_name = "lvm"
        config_text = "STARTD_ENFORCE_DISK_LIMITS = True\\n"

        @pytest.fixture
        def plugin(self):
            return epcore_lvm.plugin
"""

from __future__ import annotations

import os
import subprocess
from collections.abc import Iterator
from pathlib import Path
from typing import ClassVar

import pytest

from epcore import hookimpl
from epcore.classad import parse_ad
from epcore.config import Config
from epcore.errors import EpError, JobSetupError
from epcore.jobs.codes import HoldCode, VacateCode
from epcore.plugins import Plugins
from epcore.testing.contract_base import PluginContract, check_attribute
from epcore.types import (
    MachineAttribute,
    ScratchFilesystem,
    ScratchFilesystemSpec,
    ScratchRequest,
    ScratchVerdict,
    ScratchVolume,
)

#: The slot Disk a contract job asks for (KiB): small, so that a loop-backed store holds it.
REQUEST_KIB = 64 * 1024


class ScratchFilesystemContract(PluginContract):
    """The contract of a scratch filesystem named ``backend_name`` (module docstring)."""

    hooks: ClassVar[tuple[str, ...]] = ("ep_scratch_filesystems",)
    backend_name: ClassVar[str] = ""
    #: True when the backend's volume is a real mount (a fake one may only use the directory).
    mounts: ClassVar[bool] = True

    @pytest.fixture
    def backend(self, plugins: Plugins, config: Config) -> Iterator[ScratchFilesystem]:
        """The backend ``backend_name`` built for ``config`` and started."""
        specs = {spec.name: spec for spec in plugins.scratch_filesystems()}
        assert self.backend_name in specs, f"no scratch filesystem {self.backend_name!r}"
        built = plugins.build_scratch_filesystem(specs[self.backend_name], config)
        built.start()
        yield built

    @pytest.fixture
    def request_for(self, tmp_path: Path) -> ScratchRequest:
        """A job's request: an empty sandbox directory, root's, mode 0700."""
        sandbox = tmp_path / "dir_4242"
        sandbox.mkdir(mode=0o700)
        return ScratchRequest(
            path=str(sandbox),
            slot_name="slot1@contract",
            slot_id=1,
            starter_id=4242,
            disk_kib=REQUEST_KIB,
            uid=os.getuid(),
            gid=os.getgid(),
            job=parse_ad('[ ClusterId = 1; ProcId = 0; JobUniverse = 5; Owner = "nobody" ]'),
        )

    def _volume(self, backend: ScratchFilesystem, request: ScratchRequest) -> ScratchVolume:
        if not backend.available():
            pytest.skip(f"{self.backend_name} is unavailable here")
        return backend.prepare(request)

    def test_backend_is_built_under_its_name(self, backend: ScratchFilesystem) -> None:
        """The factory builds a ScratchFilesystem named as its spec, with a positive check
        interval."""
        assert isinstance(backend, ScratchFilesystem)
        assert backend.name == self.backend_name
        assert backend.check_interval > 0

    def test_attributes_are_well_formed(self, backend: ScratchFilesystem) -> None:
        """After start, available or not, every advertised attribute fits a slot ad."""
        assert isinstance(backend.available(), bool)
        for attribute in backend.machine_attributes():
            check_attribute(attribute)

    def test_volume_is_the_sandbox(
        self, backend: ScratchFilesystem, request_for: ScratchRequest
    ) -> None:
        """The volume is on the request's sandbox, owned by the job's user, at least the size
        asked, and a nearly empty one passes its check."""
        volume = self._volume(backend, request_for)
        try:
            assert volume.path == request_for.path
            if self.mounts:
                assert os.path.ismount(volume.path)
            assert os.stat(volume.path).st_uid == request_for.uid
            assert volume.size_kib >= request_for.disk_kib
            Path(volume.path, "small").write_bytes(b"x" * 4096)
            assert backend.check(volume) is None
        finally:
            backend.remove(volume)

    def test_removal_leaves_an_empty_directory(
        self, backend: ScratchFilesystem, request_for: ScratchRequest
    ) -> None:
        """After remove, the sandbox is an empty directory that is no mount point."""
        volume = self._volume(backend, request_for)
        Path(volume.path, "left").write_bytes(b"x")
        backend.remove(volume)
        assert not os.path.ismount(request_for.path)
        assert os.listdir(request_for.path) == []

    def test_a_left_volume_is_removed_by_name_once(
        self, backend: ScratchFilesystem, request_for: ScratchRequest
    ) -> None:
        """remove_left (the startd's clean-up reminder) removes a volume by its name, and
        succeeds again once it is gone; leftovers is a list of names; stop does not raise."""
        volume = self._volume(backend, request_for)
        backend.remove_left(volume.name)
        if self.mounts:
            assert not os.path.ismount(request_for.path)
        backend.remove_left(volume.name)
        assert all(isinstance(name, str) for name in backend.leftovers())
        backend.stop()


class TmpfsScratch:
    """A scratch filesystem for tests of the core: a tmpfs of the slot's Disk per job (root
    only), held with code 34 once the job has filled ``hold_fraction`` of it."""

    name = "tmpfs"

    def __init__(self, config: Config, hold_fraction: float = 0.9) -> None:
        self.config = config
        self.hold_fraction = hold_fraction
        self.check_interval = config.get_float("TMPFS_SCRATCH_CHECK_INTERVAL", 0.2)
        #: The paths it mounted and unmounted, in order (what a test looks at).
        self.mounted: list[str] = []
        self.removed: list[str] = []
        self.started = False
        self.stopped = False

    def wanted(self) -> bool:
        return self.config.get_bool("TMPFS_SCRATCH", False)

    def start(self) -> None:
        self.started = True

    def available(self) -> bool:
        return self.started and os.geteuid() == 0

    def machine_attributes(self) -> list[MachineAttribute]:
        return [MachineAttribute("IsEnforcingDiskUsage", self.available())]

    def prepare(self, request: ScratchRequest) -> ScratchVolume:
        size = max(request.disk_kib, 1024)
        # The mount's source names it, so that the startd finds it again (remove_left).
        name = f"ep_tmpfs_{request.starter_id}"
        try:
            subprocess.run(
                ["mount", "-t", "tmpfs", "-o", f"size={size}k,mode=0700", name, request.path],
                check=True,
                capture_output=True,
            )
            os.chown(request.path, request.uid, request.gid)
        except (OSError, subprocess.CalledProcessError) as error:
            raise JobSetupError(
                f"Failed to create scratch dir: {error}", VacateCode.SCRATCH_DIR_ERROR
            ) from error
        self.mounted.append(request.path)
        return ScratchVolume(name, request.path, "tmpfs", size)

    def check(self, volume: ScratchVolume) -> ScratchVerdict | None:
        stats = os.statvfs(volume.path)
        used_kib = (stats.f_blocks - stats.f_bfree) * stats.f_frsize // 1024
        if used_kib < self.hold_fraction * volume.size_kib:
            return None
        return ScratchVerdict(
            hold=True,
            reason=f"Job has exceeded allocated disk ({volume.size_kib} KiB).",
            code=HoldCode.JOB_OUT_OF_RESOURCES,
        )

    def remove(self, volume: ScratchVolume) -> None:
        done = subprocess.run(["umount", volume.path], capture_output=True, text=True)
        if done.returncode != 0:
            raise EpError(f"cannot unmount {volume.path}: {done.stderr.strip()}")
        self.removed.append(volume.path)

    def remove_left(self, name: str) -> None:
        """Unmount the tmpfs named ``name`` (its mount's source) wherever it is mounted."""
        with open("/proc/self/mounts") as mounts:
            found = [line.split()[1] for line in mounts if line.split()[0] == name]
        for path in found:
            done = subprocess.run(["umount", path], capture_output=True, text=True)
            if done.returncode != 0:
                raise EpError(f"cannot unmount {path}: {done.stderr.strip()}")
            self.removed.append(path)

    def leftovers(self) -> list[str]:
        return []

    def stop(self) -> None:
        self.stopped = True


class TmpfsScratchPlugin:
    """The plugin offering :class:`TmpfsScratch`; ``built`` holds what its factory built."""

    def __init__(self) -> None:
        self.built: list[TmpfsScratch] = []

    def _build(self, config: Config) -> TmpfsScratch:
        self.built.append(TmpfsScratch(config))
        return self.built[-1]

    @hookimpl
    def ep_scratch_filesystems(self) -> list[ScratchFilesystemSpec]:
        return [ScratchFilesystemSpec("tmpfs", self._build)]
