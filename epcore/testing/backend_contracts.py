"""Contract tests for backend plugins: isolation backends and container runtimes.

What a new backend's author must pass, in two parts. The structural part needs nothing of the
machine: the plugin offers well-named specs whose factories build objects of the kind's
Protocol without starting anything. The behavioural part runs a real job in the backend named
by the class attribute ``backend_name`` (``runtime_name`` for a container runtime): its
processes are all tracked, its usage is readable, a kill reaches every one of them, and once
released nothing of the job is left for a later sweep. A backend the machine does not offer
(no cgroups, no container daemon) skips those tests with the reason, or fails them under
``CI=true``, where every component must be present::

    class TestCgroupIsolation(IsolationBackendContract):
        backend_name = "cgroup"
        config_text = "BASE_CGROUP = htcondor\\n"

        @pytest.fixture
        def plugin(self):
            return epcore.builtin.isolation

:mod:`epcore.testing.contracts` re-exports both classes.
"""

from __future__ import annotations

import contextlib
import logging
import os
import signal
import time
import uuid
from collections.abc import Callable, Iterator, Sequence
from pathlib import Path
from typing import ClassVar

import attrs
import psutil
import pytest

from epcore.classad import ClassAd
from epcore.config import Config
from epcore.plugins import Plugins
from epcore.starter.launch import LaunchedJob, LaunchSpec, launch
from epcore.testing.contract_base import PluginContract, check_attribute
from epcore.testing.system import missing
from epcore.types import (
    ContainerJob,
    ContainerRuntime,
    ContainerRuntimeSpec,
    IsolationBackend,
    IsolationBackendSpec,
    JobTracking,
    MachineAttribute,
    RunningContainer,
    TrackedUsage,
    TrackingRequest,
    activation_refusal,
)

#: How long a contract job may take to start its processes, or to die of SIGKILL.
SETTLE_SECONDS = 15.0
#: The unprivileged account root runs contract containers as.
NOBODY = 65534
#: The contract job: a shell with two children, so that a kill must reach more than one process.
JOB_SCRIPT = "sleep 600 & sleep 600 & wait"


def wait_until(condition: Callable[[], bool], what: str, seconds: float = SETTLE_SECONDS) -> None:
    """Poll ``condition`` until it holds; an AssertionError saying ``what`` after ``seconds``."""
    deadline = time.monotonic() + seconds
    while not condition():
        assert time.monotonic() < deadline, f"after {seconds:.0f} s: {what}"
        time.sleep(0.05)


def live(pids: frozenset[int]) -> frozenset[int]:
    """Those of ``pids`` still running (zombies are dead: only their parent's wait is left)."""
    alive = set()
    for pid in pids:
        with contextlib.suppress(psutil.Error):
            if psutil.Process(pid).status() != psutil.STATUS_ZOMBIE:
                alive.add(pid)
    return frozenset(alive)


def check_usage(usage: TrackedUsage) -> None:
    """Assert that every reading of ``usage`` is unknown (None) or a sane number."""
    assert isinstance(usage, TrackedUsage), f"usage() answered {usage!r}"
    for name, value in attrs.asdict(usage).items():
        assert value is None or (value >= 0 and not isinstance(value, bool)), f"{name} = {value}"


def _check_names(names: Sequence[str], what: str) -> None:
    assert names, f"the plugin offers no {what}"
    for name in names:
        assert name.strip() and not any(ch.isspace() for ch in name), f"{what} {name!r}"
    assert len({name.lower() for name in names}) == len(names), f"two share a name: {names}"


# -- isolation backends ---------------------------------------------------------------------


@attrs.frozen
class TrackedJob:
    """The contract's job running under one backend: its key, tracking and supervisor."""

    key: str
    tracking: JobTracking
    launched: LaunchedJob

    def processes(self) -> frozenset[int]:
        """The job's live processes as the operating system sees them (below its supervisor)."""
        try:
            children = psutil.Process(self.launched.supervisor_pid).children(recursive=True)
        except psutil.Error:
            return frozenset()
        return live(frozenset(child.pid for child in children))

    def kill(self) -> None:
        """SIGKILL every process the tracking sees until it sees none (what a starter does)."""
        self.tracking.thaw()

        def gone() -> bool:
            self.tracking.signal_all(signal.SIGKILL)
            return not live(self.tracking.pids() - {self.launched.supervisor_pid})

        wait_until(gone, "processes survive signal_all(SIGKILL)")


@contextlib.contextmanager
def run_tracked_job(
    backend: IsolationBackend, request_for: Callable[[str], TrackingRequest]
) -> Iterator[TrackedJob]:
    """Run :data:`JOB_SCRIPT` under ``backend`` (tracked with ``request_for(key)``) as a
    starter does: track, launch with the child setup, attach; killed and released on the way
    out, whatever the test did to it."""
    key = f"ep_contract_{uuid.uuid4().hex[:10]}"
    tracking = backend.track(request_for(key))
    try:
        spec = LaunchSpec(
            argv=("/bin/sh", "-c", JOB_SCRIPT),
            environment=(("PATH", "/usr/bin:/bin"),),
            cwd="/",
            setup=tracking.child_setup(),
        )
        launched = launch(spec)
    except BaseException:
        tracking.release()
        raise
    tracking.attach(launched.supervisor_pid)
    job = TrackedJob(key, tracking, launched)
    started: frozenset[int] = frozenset()
    try:
        wait_until(lambda: len(job.processes()) >= 3, "the job's shell and sleeps run")
        started = job.processes()
        yield job
    finally:
        with contextlib.suppress(AssertionError):
            job.kill()
        for pid in live(started | job.processes()):
            # What a broken backend missed must not outlive the test.
            with contextlib.suppress(ProcessLookupError):
                os.kill(pid, signal.SIGKILL)
        launched.close()
        tracking.release()


class IsolationBackendContract(PluginContract):
    """A plugin offering isolation backends (``ep_isolation_backends``).

    Structural: named specs whose factories build :class:`~epcore.types.IsolationBackend`
    objects answering ``available()`` and ``wanted()``. Behavioural, for ``backend_name``: a
    job started with the backend's child setup is tracked whole, its usage is readable,
    ``signal_all`` kills every process of it, and after ``release`` the backend holds nothing
    of it (``sweep`` and ``reclaim`` find nothing).
    """

    hooks = ("ep_isolation_backends",)
    #: The offered backend the behavioural tests run a job in ("": structural tests only).
    backend_name: ClassVar[str] = ""

    @pytest.fixture
    def specs(self, plugins: Plugins) -> list[IsolationBackendSpec]:
        """The isolation backends the plugin offers."""
        return plugins.isolation_backends()

    def test_offers_named_backends(self, specs: Sequence[IsolationBackendSpec]) -> None:
        """At least one backend, with distinct names without blanks."""
        _check_names([spec.name for spec in specs], "isolation backend")

    def test_factories_build_backends(
        self, plugins: Plugins, specs: Sequence[IsolationBackendSpec], config: Config
    ) -> None:
        """Each factory builds an IsolationBackend of its name that says whether it is
        available and wanted (building starts nothing, so this is safe on any machine)."""
        for spec in specs:
            backend = plugins.build_isolation_backend(spec, config)
            assert isinstance(backend.available(), bool), f"{spec.name}: available()"
            assert isinstance(backend.wanted(), bool), f"{spec.name}: wanted()"

    @pytest.fixture
    def backend(
        self, plugins: Plugins, specs: Sequence[IsolationBackendSpec], config: Config
    ) -> IsolationBackend:
        """The backend ``backend_name``, built for ``config`` on a machine that has it."""
        if not self.backend_name:
            pytest.skip("the subclass names no backend_name to run a job in")
        chosen = [spec for spec in specs if spec.name == self.backend_name]
        assert chosen, f"the plugin offers no isolation backend {self.backend_name}"
        backend = plugins.build_isolation_backend(chosen[0], config)
        if not backend.available():
            missing(f"isolation backend {self.backend_name} is not available on this machine")
        return backend

    def tracking_request(self, key: str) -> TrackingRequest:
        """What the contract's job asks of the backend (override for other limits)."""
        return TrackingRequest(key, slot_name="slot1", slot_id=1, cpus=1.0, memory_mb=256)

    @pytest.fixture
    def job(self, backend: IsolationBackend) -> Iterator[TrackedJob]:
        """The contract's job, started as a starter starts one, killed and released after."""
        with run_tracked_job(backend, self.tracking_request) as job:
            yield job

    def test_tracks_every_process_of_the_job(self, job: TrackedJob) -> None:
        """``pids()`` sees the job's shell and both its children."""
        missed = job.processes() - job.tracking.pids()
        assert not missed, f"processes of the job the backend does not see: {sorted(missed)}"

    def test_usage_is_readable(self, job: TrackedJob) -> None:
        """``usage()`` of a running job answers numbers or None, and ``out_of_memory()`` a bool."""
        check_usage(job.tracking.usage())
        assert job.tracking.out_of_memory() is False

    def test_kill_reaches_every_process(self, job: TrackedJob) -> None:
        """``signal_all(SIGKILL)`` kills the job's shell and both its children."""
        before = job.processes()
        job.kill()
        assert not live(before), f"survivors of SIGKILL: {sorted(live(before))}"

    def test_release_leaves_nothing(self, backend: IsolationBackend, job: TrackedJob) -> None:
        """Once killed and released, the backend holds nothing of the job: a sweep at the
        next start reclaims nothing of it, and ``reclaim`` finds nothing."""
        job.kill()
        job.tracking.release()
        job.tracking.release()  # a second release does nothing
        assert backend.sweep(keep=(), prefixes=(job.key,)) == ()
        assert backend.reclaim(job.key) is False


# -- container runtimes -----------------------------------------------------------------------


@contextlib.contextmanager
def run_container(
    runtime: ContainerRuntime, job_ad: ClassAd, sandbox: Path
) -> Iterator[tuple[str, RunningContainer]]:
    """Run :data:`JOB_SCRIPT` in a container of ``runtime`` for ``job_ad`` with its sandbox
    at ``sandbox``: its job key and the running container, killed and released on the way
    out."""
    key = f"ep_contract_{uuid.uuid4().hex[:10]}"
    sandbox.chmod(0o755)
    # Jobs never run as root: root's contract job runs as nobody, as a slot user would.
    account = NOBODY if os.geteuid() == 0 else os.getuid()
    request = ContainerJob(
        job_key=key,
        slot_name="slot1",
        job=job_ad,
        machine=ClassAd({"Cpus": 1, "Memory": 128}),
        argv=("/bin/sh", "-c", JOB_SCRIPT),
        environment=(),
        sandbox=str(sandbox),
        stdin="/dev/null",
        stdout=str(sandbox / "stdout"),
        stderr=str(sandbox / "stderr"),
        uid=account,
        gid=account,
        cpus=1.0,
        memory_mb=128,
        kill_signal=int(signal.SIGTERM),
        vacate_seconds=2.0,
    )
    running = runtime.start(request, logging.getLogger("epcore.testing.contract"))
    try:
        yield key, running
    finally:
        running.signal_all(signal.SIGKILL)
        running.release()


class ContainerRuntimeContract(PluginContract):
    """A plugin offering container runtimes (``ep_container_runtimes``).

    Structural (no container daemon needed: run it with a configuration pointing nowhere):
    named specs whose factories build :class:`~epcore.types.ContainerRuntime` objects that
    advertise well-formed attributes without raising, claim no job that asks for no
    container, and find nothing to sweep or reclaim for jobs they never ran. Behavioural, for
    ``runtime_name`` where its daemon runs (``job_ad`` must ask for it): a job's container
    starts, its processes and usage are readable, SIGKILL through ``signal_all`` stops it,
    and after ``release`` nothing of it is left.
    """

    hooks = ("ep_container_runtimes",)
    #: The offered runtime the behavioural tests run a container in ("": structural only).
    runtime_name: ClassVar[str] = ""

    @pytest.fixture
    def specs(self, plugins: Plugins) -> list[ContainerRuntimeSpec]:
        """The container runtimes the plugin offers."""
        return plugins.container_runtimes()

    @pytest.fixture
    def runtimes(
        self, plugins: Plugins, specs: Sequence[ContainerRuntimeSpec], config: Config
    ) -> list[ContainerRuntime]:
        """Every offered runtime built for ``config``."""
        return [plugins.build_container_runtime(spec, config) for spec in specs]

    def test_offers_named_runtimes(self, specs: Sequence[ContainerRuntimeSpec]) -> None:
        """At least one runtime, with distinct names without blanks."""
        _check_names([spec.name for spec in specs], "container runtime")

    def test_runtimes_describe_themselves(self, runtimes: Sequence[ContainerRuntime]) -> None:
        """Advertised attributes are well formed (a runtime that cannot work says so there,
        without raising), and a job asking for no container is no runtime's."""
        for runtime in runtimes:
            for attribute in runtime.machine_attributes():
                assert isinstance(attribute, MachineAttribute), attribute
                check_attribute(attribute)
            assert runtime.runs(ClassAd()) is False, f"{runtime.name} claims a plain job"

    def test_nothing_to_sweep_for_unknown_jobs(self, runtimes: Sequence[ContainerRuntime]) -> None:
        """Sweeping and reclaiming jobs the runtime never ran removes nothing and raises
        nothing, whether its daemon runs or not."""
        key = f"ep_contract_unknown_{uuid.uuid4().hex[:10]}"
        for runtime in runtimes:
            assert runtime.sweep(keep=(), prefixes=(key,)) == (), runtime.name
            assert runtime.reclaim(key) is False, runtime.name

    def test_activation_check_answers_a_reason_or_none(
        self, runtimes: Sequence[ContainerRuntime]
    ) -> None:
        """A runtime's optional activation check (:class:`~epcore.types.AdmitsActivation`)
        answers None or a non-empty reason without raising, for a job it does not run too,
        and :func:`~epcore.types.activation_refusal` passes that on (None for a runtime
        without the check)."""
        for runtime in runtimes:
            check = getattr(runtime, "refuse_activation", None)
            if check is None:
                assert activation_refusal(runtime, ClassAd(), ()) is None
                continue
            assert callable(check), f"{runtime.name}.refuse_activation is not a method"
            answer = check(ClassAd(), ())
            assert answer is None or (isinstance(answer, str) and answer), (runtime.name, answer)
            assert activation_refusal(runtime, ClassAd(), ()) == answer

    @pytest.fixture
    def runtime(self, runtimes: Sequence[ContainerRuntime]) -> ContainerRuntime:
        """The runtime ``runtime_name`` (built for ``config``) when it can run containers."""
        if not self.runtime_name:
            pytest.skip("the subclass names no runtime_name to run a container in")
        chosen = [runtime for runtime in runtimes if runtime.name == self.runtime_name]
        assert chosen, f"the plugin offers no container runtime {self.runtime_name}"
        return chosen[0]

    @pytest.fixture
    def job_ad(self) -> ClassAd:
        """A job asking for ``runtime_name`` (override: the contract cannot know how)."""
        pytest.fail(f"{type(self).__name__} must define a `job_ad` fixture for its runtime")

    @pytest.fixture
    def container_sandbox(self, tmp_path: Path) -> Path:
        """The contract job's sandbox directory (override where the runtime needs another)."""
        return tmp_path

    @pytest.fixture
    def container(
        self, runtime: ContainerRuntime, job_ad: ClassAd, container_sandbox: Path
    ) -> Iterator[tuple[str, RunningContainer]]:
        """The contract's job in a container of ``runtime``, removed after the test."""
        with run_container(runtime, job_ad, container_sandbox) as started:
            yield started

    def test_runs_the_job_it_claims(self, runtime: ContainerRuntime, job_ad: ClassAd) -> None:
        """The runtime claims ``job_ad``."""
        assert runtime.runs(job_ad) is True

    def test_container_is_tracked(self, container: tuple[str, RunningContainer]) -> None:
        """A started container shows its processes and readable usage, and has not stopped."""
        _, running = container
        wait_until(lambda: len(running.pids()) >= 3, "the container's shell and sleeps run")
        check_usage(running.usage())
        assert running.exit_status() is None

    def test_kill_stops_the_container(self, container: tuple[str, RunningContainer]) -> None:
        """``signal_all(SIGKILL)`` ends every process: the container stops and says so."""
        _, running = container
        wait_until(lambda: len(running.pids()) >= 3, "the container's shell and sleeps run")
        running.signal_all(signal.SIGKILL)
        wait_until(lambda: running.exit_status() is not None, "the container stops")
        assert not running.pids()

    def test_release_leaves_nothing(
        self, runtime: ContainerRuntime, container: tuple[str, RunningContainer]
    ) -> None:
        """After a kill and ``release``, nothing is left of the job to sweep or reclaim."""
        key, running = container
        running.signal_all(signal.SIGKILL)
        wait_until(lambda: running.exit_status() is not None, "the container stops")
        running.release()
        assert runtime.sweep(keep=(), prefixes=(key,)) == ()
        assert runtime.reclaim(key) is False
