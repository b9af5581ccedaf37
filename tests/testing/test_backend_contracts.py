"""The backend contracts of epcore.testing: the built-in isolation backends pass them, a small
container runtime passes the part that needs no daemon, and broken backends fail them."""

from __future__ import annotations

import contextlib
import os
import signal
import uuid
from collections.abc import Collection, Iterator
from pathlib import Path
from types import ModuleType

import pytest

import epcore.builtin.isolation
from epcore.classad import ClassAd
from epcore.config import Config
from epcore.errors import PluginError
from epcore.plugins import Plugins
from epcore.starter.trackers import ProcessGroupBackend
from epcore.testing.backend_contracts import (
    ContainerRuntimeContract,
    IsolationBackendContract,
    live,
    run_tracked_job,
    wait_until,
)
from epcore.testing.fixtures import plugins_from
from epcore.testing.offers import BackendOffer
from epcore.types import (
    ChildSetup,
    ContainerRuntimeSpec,
    IsolationBackendSpec,
    MachineAttribute,
    TrackedUsage,
    TrackingRequest,
)

CGROUP_V1 = Path("/sys/fs/cgroup")


class TestProcessGroupIsolation(IsolationBackendContract):
    """The built-in process-group backend keeps the isolation contract."""

    backend_name = "process_group"

    @pytest.fixture
    def plugin(self) -> ModuleType:
        """The built-in isolation plugin."""
        return epcore.builtin.isolation


class TestCgroupIsolation(IsolationBackendContract):
    """The built-in cgroup backend keeps the isolation contract (as root, where cgroups are)."""

    backend_name = "cgroup"

    @pytest.fixture
    def plugin(self) -> ModuleType:
        """The built-in isolation plugin."""
        return epcore.builtin.isolation

    @pytest.fixture
    def config(self, plugins: Plugins) -> Iterator[Config]:
        """A BASE_CGROUP of this test alone, removed with whatever is left in it."""
        base = f"ep_contract_{uuid.uuid4().hex[:8]}"
        yield Config.from_text(f"BASE_CGROUP = {base}\n", defaults=plugins.config_defaults())
        for group in [*CGROUP_V1.glob(f"*/{base}"), CGROUP_V1 / "unified" / base]:
            with contextlib.suppress(OSError):
                group.rmdir()


class Runtime:
    """A container runtime that advertises and sweeps, but whose daemon is never there."""

    name = "fakebox"

    def machine_attributes(self) -> list[MachineAttribute]:
        return [MachineAttribute("HasFakebox", False), MachineAttribute("FakeboxError", "down")]

    def runs(self, job: ClassAd, machine: ClassAd | None = None) -> bool:
        return job.evaluate("WantFakebox") is True

    def start(self, request: object, log: object) -> object:
        raise AssertionError("no daemon: nothing is started")

    def sweep(self, keep: Collection[str], prefixes: Collection[str]) -> tuple[str, ...]:
        return ()

    def reclaim(self, job_key: str) -> bool:
        return False


class TestFakeContainerRuntime(ContainerRuntimeContract):
    """A runtime without its daemon keeps the part of the contract that needs none."""

    @pytest.fixture
    def plugin(self) -> BackendOffer:
        """The fake runtime's plugin."""
        return BackendOffer(ContainerRuntimeSpec("fakebox", lambda config: Runtime()))


# -- broken backends fail the contract ------------------------------------------------------


class Leaky(ProcessGroupBackend):
    """A process-group backend that sees and kills only the job's first process."""

    name = "leaky"

    def track(self, request: TrackingRequest) -> LeakyTracking:  # type: ignore[override]
        return LeakyTracking()


class LeakyTracking:
    """Tracks the one PID it is given, and nothing it starts."""

    def __init__(self) -> None:
        self.pid: int | None = None

    def child_setup(self) -> ChildSetup:
        return ChildSetup()

    def attach(self, pid: int) -> None:
        self.pid = pid

    def pids(self) -> frozenset[int]:
        return frozenset() if self.pid is None else frozenset({self.pid})

    def signal_all(self, signum: int) -> None:
        if self.pid is not None:
            with contextlib.suppress(ProcessLookupError):
                os.kill(self.pid, signum)

    def freeze(self) -> bool:
        return False

    def thaw(self) -> bool:
        return False

    def usage(self) -> TrackedUsage:
        return TrackedUsage()

    def out_of_memory(self) -> bool:
        return False

    def release(self) -> None:
        pass


def _request(key: str) -> TrackingRequest:
    return TrackingRequest(key, "slot1", 1, 1.0, 256)


@pytest.mark.parametrize(
    "check", ["test_tracks_every_process_of_the_job", "test_kill_reaches_every_process"]
)
def test_isolation_contract_rejects_a_backend_that_misses_children(check: str) -> None:
    """A backend that tracks only the first process fails the tracking and the kill checks."""
    leaky = Leaky(Config.from_text(""))
    with run_tracked_job(leaky, _request) as job:
        started = job.processes()
        with pytest.raises(AssertionError):
            getattr(IsolationBackendContract(), check)(job)
    wait_until(lambda: not live(started), "the contract's clean-up kills what the backend missed")


def test_isolation_contract_rejects_a_misbuilt_backend(tmp_path: Path) -> None:
    """A factory building something that is not an IsolationBackend fails the contract with a
    PluginError naming the plugin."""
    offer = BackendOffer(IsolationBackendSpec("broken", lambda config: Runtime()))  # type: ignore[arg-type,return-value]
    plugins = plugins_from(offer)
    with pytest.raises(PluginError, match="the factory of broken built"):
        IsolationBackendContract().test_factories_build_backends(
            plugins, plugins.isolation_backends(), Config.from_text("")
        )


class Claiming(Runtime):
    """A runtime that claims every job, even one asking for no container."""

    def runs(self, job: ClassAd, machine: ClassAd | None = None) -> bool:
        return True


class Sweeping(Runtime):
    """A runtime whose sweep reports jobs it never ran."""

    def sweep(self, keep: Collection[str], prefixes: Collection[str]) -> tuple[str, ...]:
        return tuple(prefixes)


@pytest.mark.parametrize(
    ("runtime", "check"),
    [
        (Claiming(), "test_runtimes_describe_themselves"),
        (Sweeping(), "test_nothing_to_sweep_for_unknown_jobs"),
    ],
    ids=["claims-plain-jobs", "sweeps-strangers"],
)
def test_container_contract_rejects_broken_runtimes(runtime: Runtime, check: str) -> None:
    """A runtime claiming a plain job, or sweeping jobs it never ran, fails the contract."""
    with pytest.raises(AssertionError):
        getattr(ContainerRuntimeContract(), check)([runtime])


def test_kill_in_the_contract_job_is_sigkill() -> None:
    """The contract's kill uses SIGKILL (which no job can catch), not a catchable signal."""
    seen: list[int] = []

    class Recording(LeakyTracking):
        def signal_all(self, signum: int) -> None:
            seen.append(signum)
            super().signal_all(signum)

    class RecordingBackend(Leaky):
        def track(self, request: TrackingRequest) -> Recording:  # type: ignore[override]
            return Recording()

    with run_tracked_job(RecordingBackend(Config.from_text("")), _request) as job:
        job.kill()
    assert set(seen) == {signal.SIGKILL}
