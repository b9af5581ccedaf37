"""Helpers of the runtime-level tests: a configuration, a job request, a run to its end."""

from __future__ import annotations

import logging
import os
import select
import shutil
import tempfile
import uuid
from collections.abc import Iterator, Mapping
from contextlib import contextmanager
from pathlib import Path

import attrs
from epcore_apptainer.runtime import ApptainerRuntime

from epcore.classad import ClassAd
from epcore.config import Config
from epcore.types import ContainerJob, RunningContainer

#: The unprivileged account the runtime-level test jobs run as.
NOBODY = 65534
JOB_TIMEOUT = 30.0
LOG = logging.getLogger("epcore.apptainer.test")


def apptainer_config(runtime: str, spool: Path, knobs: Mapping[str, str] | None = None) -> Config:
    """A configuration with SINGULARITY = ``runtime``, SPOOL = ``spool`` and ``knobs``."""
    values = {"SINGULARITY": runtime, "SPOOL": str(spool)}
    values.update(knobs or {})
    return Config.from_text("".join(f"{name} = {value}\n" for name, value in values.items()))


def make_runtime(
    runtime: str, spool: Path, knobs: Mapping[str, str] | None = None
) -> ApptainerRuntime:
    return ApptainerRuntime(apptainer_config(runtime, spool, knobs), LOG)


@contextmanager
def sandbox_dir() -> Iterator[Path]:
    """A job sandbox owned by nobody under a world-searchable directory; removed after."""
    parent = Path(tempfile.mkdtemp(prefix="ep_apptainer_job_"))
    try:
        parent.chmod(0o755)
        sandbox = parent / f"dir_{uuid.uuid4().hex[:8]}"
        sandbox.mkdir()
        os.chown(sandbox, NOBODY, NOBODY)
        yield sandbox
    finally:
        shutil.rmtree(parent, ignore_errors=True)


def job_ad(image: str, **attributes: object) -> ClassAd:
    """A container job's ad for ``image``."""
    ad = ClassAd()
    ad["WantContainer"] = True
    ad["ContainerImage"] = image
    ad["WantSIF" if image.endswith(".sif") else "WantSandboxImage"] = True
    for name, value in attributes.items():
        ad[name] = value
    return ad


def request_for(
    sandbox: Path,
    job: ClassAd,
    argv: tuple[str, ...],
    machine: ClassAd | None = None,
    environment: tuple[tuple[str, str], ...] = (),
) -> ContainerJob:
    """A request to run ``argv`` as nobody, output in the sandbox's job.out and job.err."""
    return ContainerJob(
        job_key=f"ep_test_{uuid.uuid4().hex[:8]}",
        slot_name="slot1@test",
        job=job,
        machine=machine if machine is not None else ClassAd(),
        argv=argv,
        environment=environment,
        sandbox=str(sandbox),
        stdin="/dev/null",
        stdout=str(sandbox / "job.out"),
        stderr=str(sandbox / "job.err"),
        uid=NOBODY,
        gid=NOBODY,
        cpus=1.0,
        memory_mb=128,
        kill_signal=15,
        vacate_seconds=5.0,
    )


@attrs.frozen
class Finished:
    code: int | None
    signal: int | None
    stdout: str
    stderr: str


def wait_for(
    container: RunningContainer, timeout: float = JOB_TIMEOUT
) -> tuple[int | None, int | None]:
    """Wait on the container's descriptor until it ended; its exit status."""
    ready, _, _ = select.select([container.fileno()], [], [], timeout)
    assert ready, "the job did not end in time"
    status = container.exit_status()
    assert status is not None
    return status


def run_to_end(runtime: ApptainerRuntime, request: ContainerJob) -> Finished:
    """Start the request, wait for its end, release it; what it printed."""
    container = runtime.start(request, LOG)
    try:
        code, signum = wait_for(container)
    finally:
        container.release()
    out = Path(request.stdout)
    err = Path(request.stderr)
    return Finished(
        code,
        signum,
        out.read_text() if out.exists() else "",
        err.read_text() if err.exists() else "",
    )
