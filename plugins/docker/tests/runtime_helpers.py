"""Helpers of the runtime-level docker tests: configurations, sandboxes, job requests, runs.

Every configuration built here labels the containers with the run's tag (through
DOCKER_EXTRA_ARGUMENTS), so that the session's clean-up removes whatever a failed test left.
"""

from __future__ import annotations

import contextlib
import logging
import os
import select
import shutil
import signal
import tempfile
import uuid
from collections.abc import Iterator, Mapping
from pathlib import Path
from typing import Any

import attrs
import docker
from docker_fixtures import TEST_RUN_LABEL
from epcore_docker.container import DockerContainer
from epcore_docker.runtime import DockerRuntime

from epcore.classad import ClassAd
from epcore.config import Config
from epcore.types import ContainerJob

#: The unprivileged account the test jobs run as.
NOBODY = 65534
#: How long a test job may run before the test gives up on it.
JOB_TIMEOUT = 30.0
LOG = logging.getLogger("epcore.docker.test")


def run_label(run_tag: str) -> str:
    """The DOCKER_EXTRA_ARGUMENTS option putting this run's label on a container."""
    return f"--label {TEST_RUN_LABEL}={run_tag}"


def docker_config(spool: Path, run_tag: str, knobs: Mapping[str, str] | None = None) -> Config:
    """A startd configuration with SPOOL at ``spool``, the run label in DOCKER_EXTRA_ARGUMENTS
    (unless ``knobs`` sets that knob itself) and ``knobs``."""
    values = {"SPOOL": str(spool), "DOCKER_EXTRA_ARGUMENTS": run_label(run_tag)}
    values.update(knobs or {})
    return Config.from_text("".join(f"{name} = {value}\n" for name, value in values.items()))


def docker_runtime(
    spool: Path, run_tag: str, knobs: Mapping[str, str] | None = None
) -> DockerRuntime:
    """A runtime of :func:`docker_config`."""
    return DockerRuntime(docker_config(spool, run_tag, knobs), LOG)


@contextlib.contextmanager
def jobs_root(run_tag: str) -> Iterator[Path]:
    """A world-searchable directory for sandboxes and volumes, removed on the way out.

    Not under pytest's tmp_path: every pytest session that starts turns the shared
    /tmp/pytest-of-<user> back to 0700, which would lock the job's user out of a sandbox
    under it while another session starts alongside this one.
    """
    root = Path(tempfile.mkdtemp(prefix=f"epcore-docker-{run_tag}-"))
    try:
        root.chmod(0o755)
        yield root
    finally:
        shutil.rmtree(root, ignore_errors=True)


def make_sandbox(parent: Path, name: str | None = None) -> Path:
    """A job sandbox under ``parent`` (world-searchable), owned by nobody."""
    sandbox = parent / (name or f"sandbox_{uuid.uuid4().hex[:8]}")
    sandbox.mkdir()
    os.chown(sandbox, NOBODY, NOBODY)
    return sandbox


def containers_of_run(client: docker.DockerClient, run_tag: str) -> list[str]:
    """The names of the containers carrying this run's label."""
    found = client.containers.list(all=True, filters={"label": f"{TEST_RUN_LABEL}={run_tag}"})
    return [str(container.name) for container in found]


def job_key(run_tag: str, prefix: str = "ep_test") -> str:
    """A fresh job key of this run (its container is named after it)."""
    return f"{prefix}_{run_tag}_{uuid.uuid4().hex[:8]}"


def container_job(
    sandbox: Path,
    image: str,
    argv: tuple[str, ...],
    *,
    run_tag: str,
    key: str | None = None,
    job: Mapping[str, object] | None = None,
    machine: Mapping[str, object] | None = None,
    environment: tuple[tuple[str, str], ...] = (),
    stdin: str = "/dev/null",
    stdout: str = "/dev/null",
    stderr: str = "/dev/null",
    cpus: float = 1,
    memory_mb: int = 128,
    uid: int = NOBODY,
    gid: int = NOBODY,
) -> ContainerJob:
    """A docker job of ``image`` running ``argv`` in ``sandbox`` as nobody; ``job`` and
    ``machine`` add to the two ads (the machine ad's Memory and Cpus follow the slot)."""
    job_ad = ClassAd({"WantDocker": True, "DockerImage": image, "Owner": "smith"})
    for name, value in (job or {}).items():
        job_ad[name] = value
    machine_ad = ClassAd({"Memory": memory_mb, "Cpus": cpus})
    for name, value in (machine or {}).items():
        machine_ad[name] = value
    return ContainerJob(
        job_key=key or job_key(run_tag),
        slot_name="slot1",
        job=job_ad,
        machine=machine_ad,
        argv=argv,
        environment=(("_CONDOR_SCRATCH_DIR", str(sandbox)), *environment),
        sandbox=str(sandbox),
        stdin=stdin,
        stdout=stdout,
        stderr=stderr,
        uid=uid,
        gid=gid,
        cpus=cpus,
        memory_mb=memory_mb,
        kill_signal=int(signal.SIGTERM),
        vacate_seconds=2.0,
    )


def wait_for(container: DockerContainer, timeout: float = JOB_TIMEOUT) -> bool:
    """Wait until the container stopped; False when ``timeout`` passed first."""
    readable, _, _ = select.select([container.fileno()], [], [], timeout)
    return bool(readable)


@contextlib.contextmanager
def started(runtime: DockerRuntime, request: ContainerJob) -> Iterator[DockerContainer]:
    """The job's started container, released (removed) on the way out."""
    container = runtime.start(request, LOG)
    assert isinstance(container, DockerContainer)
    try:
        yield container
    finally:
        container.release()


@contextlib.contextmanager
def finished(runtime: DockerRuntime, request: ContainerJob) -> Iterator[DockerContainer]:
    """The job's container once it has stopped (its output collected), still there to be
    inspected; removed on the way out."""
    with started(runtime, request) as container:
        assert wait_for(container), f"the job {request.argv} did not end in {JOB_TIMEOUT} s"
        container.collect_output()
        yield container


def run_to_end(runtime: DockerRuntime, request: ContainerJob) -> tuple[int | None, int | None]:
    """Run the job to its end, its output collected; its exit status."""
    with finished(runtime, request) as container:
        status = container.exit_status()
        assert status is not None
        return status


@attrs.frozen
class JobRun:
    """A finished job: its exit status, what it printed and dockerd's inspection of its
    container (taken after it stopped, before it was removed)."""

    status: tuple[int | None, int | None]
    stdout: str
    stderr: str
    inspection: Mapping[str, Any]

    @property
    def host_config(self) -> Mapping[str, Any]:
        found: Mapping[str, Any] = self.inspection["HostConfig"]
        return found


def run_script(
    runtime: DockerRuntime,
    sandbox: Path,
    image: str,
    script: str,
    *,
    run_tag: str,
    **options: Any,
) -> JobRun:
    """Run ``sh -c script`` as a job in ``sandbox`` to its end (``options`` go to
    :func:`container_job`)."""
    name = uuid.uuid4().hex[:6]
    out, err = sandbox / f"out_{name}", sandbox / f"err_{name}"
    request = container_job(
        sandbox,
        image,
        ("sh", "-c", script),
        run_tag=run_tag,
        stdout=str(out),
        stderr=str(err),
        **options,
    )
    with finished(runtime, request) as container:
        status = container.exit_status()
        assert status is not None
        inspection = runtime.client().api.inspect_container(container.id)
    return JobRun(status, _text_of(out), _text_of(err), inspection)


def _text_of(path: Path) -> str:
    """The file's text; empty when there is none (dockerd kept no logs to collect)."""
    return path.read_text() if path.exists() else ""


def shell_output(
    runtime: DockerRuntime, sandbox: Path, image: str, script: str, *, run_tag: str, **options: Any
) -> str:
    """Run ``sh -c script`` as a job that must exit 0; what it printed."""
    run = run_script(runtime, sandbox, image, script, run_tag=run_tag, **options)
    assert run.status == (0, None), f"{script!r} ended with {run.status}: {run.stderr}"
    return run.stdout
