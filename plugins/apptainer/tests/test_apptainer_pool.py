"""End to end: container jobs submitted with ``ep submit`` by real unprivileged users to a real
personal pool (``ep run``) with the apptainer plugin, run in their images and copied back
(must-show 1), and the failures a pool sees (must-show 2)."""

from __future__ import annotations

import os
import re
from collections.abc import Callable
from pathlib import Path

import pytest
from apptainer_fixtures import OS_RELEASE

from epcore.testing.pool import PoolProcess, submit_as
from epcore.testing.system import SlotUser, user_processes

pytestmark = pytest.mark.system

SHOW = """\
universe = container
container_image = {image}
executable = /bin/sh
transfer_executable = false
arguments = "-c 'cat /etc/os-release; id -u; echo made in the container > made.txt'"
output = job.out
error = job.err
log = job.log
request_cpus = 1
request_memory = 64
queue
"""

LEGACY = """\
executable = /bin/sh
transfer_executable = false
arguments = "-c 'cat /etc/os-release'"
+SingularityImage = "{image}"
output = job.out
error = job.err
request_cpus = 1
request_memory = 64
queue
"""


def _pool(pool_factory: Callable[..., PoolProcess], runtime: str, extra: str = "") -> PoolProcess:
    return pool_factory(f"SINGULARITY = {runtime}\n{extra}", cpus=2, memory=1024)


def _gone(pool: PoolProcess) -> None:
    pool.wait_for(lambda: not pool.jobs(), 90, "the job to leave the queue")


def _execute_dir(pool: PoolProcess) -> Path:
    result = pool.ep("config", "EXECUTE")
    assert result.status == 0, result.stderr
    return Path(result.stdout.strip())


def _nothing_left(pool: PoolProcess, user: SlotUser) -> None:
    """No process of the user (so no container and no mount namespace of its) and no
    scratch directory is left."""
    pool.wait_for(lambda: user_processes(user.name) == [], 20, "no process of the user")
    execute = _execute_dir(pool)
    pool.wait_for(
        lambda: not [p for p in execute.iterdir() if p.name.startswith("dir_")],
        20,
        "no scratch directory",
    )


@pytest.mark.parametrize("kind", ["sif", "sandbox"])
def test_container_job_runs_in_its_image_and_output_comes_back(
    kind: str,
    pool_factory: Callable[..., PoolProcess],
    plugin_visible: None,
    runtime_program: str,
    sif_image: str,
    sandbox_image: str,
    slot_users: tuple[SlotUser, ...],
    shared_dir: Path,
) -> None:
    """A universe = container job with a SIF or a sandbox image, submitted by a real user, runs
    in the image as that user (its /etc/os-release, its uid), its output comes back to its Iwd,
    it completes with exit code 0 and nothing of it is left; the slots advertise the probe."""
    pool = _pool(pool_factory, runtime_program)
    status = pool.ep("status", "-l")
    assert status.status == 0, status.stderr
    for line in ("HasSingularity = true", "HasSIF = true", "HasSandboxImage = true"):
        assert re.search(rf"^{line}$", status.stdout, re.MULTILINE), status.stdout[:3000]
    user = slot_users[0] if kind == "sif" else slot_users[1]
    image = sif_image if kind == "sif" else sandbox_image
    home = submit_as(pool, user, shared_dir, SHOW.format(image=image))
    _gone(pool)
    (job,) = pool.jobs(history=True)
    assert (job.evaluate("JobStatus"), job.evaluate("ExitCode")) == (4, 0), job
    assert (home / "job.out").read_text() == OS_RELEASE + f"{user.uid}\n"
    assert (home / "made.txt").read_text() == "made in the container\n"
    assert (home / "made.txt").stat().st_uid == user.uid
    _nothing_left(pool, user)


def test_docker_reference_from_a_local_registry(
    pool_factory: Callable[..., PoolProcess],
    plugin_visible: None,
    runtime_program: str,
    docker_image: str,
    slot_users: tuple[SlotUser, ...],
    shared_dir: Path,
) -> None:
    """A container_image = docker://127.0.0.1:<port>/... job pulls the image from the registry
    and runs in it."""
    pool = _pool(pool_factory, runtime_program)
    user = slot_users[2]
    home = submit_as(pool, user, shared_dir, SHOW.format(image=docker_image))
    _gone(pool)
    (job,) = pool.jobs(history=True)
    assert (job.evaluate("JobStatus"), job.evaluate("ExitCode")) == (4, 0), job
    assert (home / "job.out").read_text() == OS_RELEASE + f"{user.uid}\n"
    _nothing_left(pool, user)


def test_singularity_job_puts_a_vanilla_job_in_its_image(
    pool_factory: Callable[..., PoolProcess],
    plugin_visible: None,
    runtime_program: str,
    sandbox_image: str,
    slot_users: tuple[SlotUser, ...],
    shared_dir: Path,
) -> None:
    """SINGULARITY_JOB and SINGULARITY_IMAGE_EXPR as the manual's legacy example: a vanilla job
    with +SingularityImage runs in that image."""
    extra = (
        "SINGULARITY_JOB = !isUndefined(TARGET.SingularityImage)\n"
        "SINGULARITY_IMAGE_EXPR = TARGET.SingularityImage\n"
    )
    pool = _pool(pool_factory, runtime_program, extra)
    user = slot_users[0]
    home = submit_as(pool, user, shared_dir, LEGACY.format(image=sandbox_image))
    _gone(pool)
    assert (home / "job.out").read_text() == OS_RELEASE


PLAIN = """\
executable = /bin/sh
transfer_executable = false
arguments = "-c 'cat /etc/os-release'"
output = job.out
error = job.err
request_cpus = 1
request_memory = 64
queue
"""


def test_default_container_puts_a_plain_vanilla_job_in_its_image(
    pool_factory: Callable[..., PoolProcess],
    plugin_visible: None,
    runtime_program: str,
    sandbox_image: str,
    slot_users: tuple[SlotUser, ...],
    shared_dir: Path,
) -> None:
    """USE_DEFAULT_CONTAINER and DEFAULT_CONTAINER_IMAGE: a vanilla job that asked for no
    container runs in the default image."""
    extra = f"USE_DEFAULT_CONTAINER = true\nDEFAULT_CONTAINER_IMAGE = {sandbox_image}\n"
    pool = _pool(pool_factory, runtime_program, extra)
    user = slot_users[2]
    home = submit_as(pool, user, shared_dir, PLAIN)
    _gone(pool)
    assert (home / "job.out").read_text() == OS_RELEASE


def test_singularity_job_and_image_expr_see_the_slot_ad(
    pool_factory: Callable[..., PoolProcess],
    plugin_visible: None,
    runtime_program: str,
    sandbox_image: str,
    slot_users: tuple[SlotUser, ...],
    shared_dir: Path,
) -> None:
    """SINGULARITY_JOB and SINGULARITY_IMAGE_EXPR are evaluated with the slot as MY: a slot
    attribute (STARTD_ATTRS) puts a plain vanilla job in the image another one names."""
    extra = (
        "ContainerSlot = true\n"
        f'SlotImage = "{sandbox_image}"\n'
        "STARTD_ATTRS = $(STARTD_ATTRS) ContainerSlot SlotImage\n"
        "SINGULARITY_JOB = MY.ContainerSlot =?= true\n"
        "SINGULARITY_IMAGE_EXPR = MY.SlotImage\n"
    )
    pool = _pool(pool_factory, runtime_program, extra)
    home = submit_as(pool, slot_users[0], shared_dir, PLAIN)
    _gone(pool)
    assert (home / "job.out").read_text() == OS_RELEASE


def test_failed_pre_job_test_requeues_the_job(
    pool_factory: Callable[..., PoolProcess],
    plugin_visible: None,
    runtime_program: str,
    slot_users: tuple[SlotUser, ...],
    shared_dir: Path,
) -> None:
    """A missing image fails the pre-job test: the job goes back to idle (not held) with
    VacateReasonCode 45 and the runtime's reason, as HTCondor 25.x does."""
    pool = _pool(pool_factory, runtime_program)
    user = slot_users[1]
    submit_as(pool, user, shared_dir, SHOW.format(image="/no/such/image.sif"))

    def requeued() -> bool:
        jobs = pool.jobs()
        return bool(jobs) and jobs[0].evaluate("VacateReasonCode") == 45

    pool.wait_for(requeued, 60, "the job to be requeued")
    (job,) = pool.jobs()
    assert job.evaluate("JobStatus") in (1, 2), job
    reason = job.evaluate("VacateReason")
    assert isinstance(reason, str) and reason.startswith("Singularity test failed:"), job
    assert "/no/such/image.sif" in reason
    assert job.evaluate("VacateReasonSubCode") == -1000
    assert pool.ep("rm", "-all", user=user).status == 0


def test_launcher_completes_a_job_and_requeues_a_runtime_that_failed(
    pool_factory: Callable[..., PoolProcess],
    plugin_visible: None,
    runtime_program: str,
    sif_image: str,
    slot_users: tuple[SlotUser, ...],
    shared_dir: Path,
) -> None:
    """SINGULARITY_USE_LAUNCHER without the pre-job test: a job that ran completes (its
    launcher's marker does not come back with its output); a runtime that failed before the
    job (a missing image) sends the job back to idle with VacateReasonCode 1021 and
    "Apptainer runtime failed to start", where without the launcher it would complete with
    exit code 255."""
    extra = "SINGULARITY_USE_LAUNCHER = true\nSINGULARITY_RUN_TEST_BEFORE_JOB = false\n"
    pool = _pool(pool_factory, runtime_program, extra)
    user = slot_users[0]
    home = submit_as(pool, user, shared_dir, SHOW.format(image=sif_image))
    _gone(pool)
    (job,) = pool.jobs(history=True)
    assert (job.evaluate("JobStatus"), job.evaluate("ExitCode")) == (4, 0), job
    assert (home / "made.txt").read_text() == "made in the container\n"
    assert not (home / ".condor_container_launched").exists()
    submit_as(pool, user, shared_dir, SHOW.format(image="/no/such/image.sif"))

    def requeued() -> bool:
        jobs = pool.jobs()
        return bool(jobs) and jobs[0].evaluate("VacateReasonCode") == 1021

    pool.wait_for(requeued, 60, "the job to be requeued")
    (job,) = pool.jobs()
    assert job.evaluate("JobStatus") in (1, 2), job
    reason = job.evaluate("VacateReason")
    assert isinstance(reason, str) and reason.startswith("Apptainer runtime failed to start"), job
    assert pool.ep("rm", "-all", user=user).status == 0


def test_broken_runtime_is_advertised_offline(
    pool_factory: Callable[..., PoolProcess],
    plugin_visible: None,
    shared_dir: Path,
) -> None:
    """A runtime that answers --version but cannot run a container: the slots say
    HasSingularity = false with SingularityOfflineReason, and the startd runs on."""
    broken = shared_dir / "broken-apptainer"
    broken.write_text(
        "#!/bin/sh\n"
        'if [ "$1" = --version ]; then echo "apptainer version 0.0-broken"; exit 0; fi\n'
        'echo "FATAL:   container creation failed: no usable namespaces" >&2\n'
        "exit 255\n"
    )
    broken.chmod(0o755)
    pool = _pool(pool_factory, str(broken))
    status = pool.ep("status", "-l")
    assert status.status == 0, status.stderr
    assert re.search(r"^HasSingularity = false$", status.stdout, re.MULTILINE), status.stdout
    found = re.search(r"^SingularityOfflineReason = (.*)$", status.stdout, re.MULTILINE)
    assert found is not None, status.stdout
    assert found.group(1) == (
        '"Both SIF and Sandbox tests on startup failed : '
        'FATAL:   container creation failed: no usable namespaces"'
    )
    assert re.search(r'^SingularityVersion = "apptainer version 0.0-broken"$', status.stdout, re.M)
    assert os.path.exists(pool.socket)


CGROUP = """\
universe = container
container_image = {image}
executable = /bin/sh
transfer_executable = false
arguments = "-c 'grep memory /proc/self/cgroup'"
output = job.out
error = job.err
request_cpus = 1
request_memory = 64
queue
"""


def test_container_job_is_in_the_jobs_cgroup(
    pool_factory: Callable[..., PoolProcess],
    plugin_visible: None,
    runtime_program: str,
    sandbox_image: str,
    slot_users: tuple[SlotUser, ...],
    shared_dir: Path,
) -> None:
    """The job in its container is in the memory cgroup the startd made for it under
    BASE_CGROUP, so it is tracked and limited like any other job."""
    pool = _pool(pool_factory, runtime_program)
    base = pool.ep("config", "BASE_CGROUP")
    assert base.status == 0, base.stderr
    user = slot_users[2]
    home = submit_as(pool, user, shared_dir, CGROUP.format(image=sandbox_image))
    _gone(pool)
    line = (home / "job.out").read_text().strip()
    path = line.split(":", 2)[2]
    assert path.startswith("/" + base.stdout.strip().strip("/") + "/"), (line, base.stdout)
    _nothing_left(pool, user)


LONG = """\
universe = container
container_image = {image}
executable = /bin/sh
transfer_executable = false
arguments = "-c 'echo started > started.txt; while :; do sleep 1; done'"
output = job.out
error = job.err
request_cpus = 1
request_memory = 64
queue
"""


def _running(pool: PoolProcess) -> bool:
    jobs = pool.jobs()
    return bool(jobs) and jobs[0].evaluate("JobStatus") == 2


@pytest.mark.parametrize("how", ["vacate", "rm"])
def test_vacated_or_removed_container_job_leaves_nothing(
    how: str,
    pool_factory: Callable[..., PoolProcess],
    plugin_visible: None,
    runtime_program: str,
    sandbox_image: str,
    slot_users: tuple[SlotUser, ...],
    shared_dir: Path,
) -> None:
    """A running container job that is vacated goes back to idle, one that is removed leaves
    the queue; either way no process, container or scratch directory of it is left."""
    pool = _pool(pool_factory, runtime_program, "MachineMaxVacateTime = 2\n")
    user = slot_users[0] if how == "vacate" else slot_users[1]
    submit_as(pool, user, shared_dir, LONG.format(image=sandbox_image))
    pool.wait_for(lambda: _running(pool), 60, "the job to run")
    pool.wait_for(lambda: user_processes(user.name) != [], 30, "the job's processes")
    if how == "vacate":
        assert pool.ep("vacate").status == 0
        # Back to idle, and perhaps matched again at once: its last outcome says so.
        pool.wait_for(
            lambda: any(j.evaluate("JobLastOutcome") == "evicted" for j in pool.jobs()),
            60,
            "the job to be evicted back to the queue",
        )
        assert pool.ep("rm", "-all", user=user).status == 0
    else:
        assert pool.ep("rm", "-all", user=user).status == 0
    _gone(pool)
    _nothing_left(pool, user)
