"""The docker runtime against the real dockerd: detection, a job's life in its container
(sandbox, user, environment, stdin and output, exit code, limits, suspend, vacate, OOM), the
removal of containers (release, reclaim, sweep) and image pulls with their LRU cache."""

from __future__ import annotations

import contextlib
import re
import signal
import time
from pathlib import Path

import attrs
import docker
import docker.errors
import pytest
from docker_fixtures import TEST_RUN_LABEL, PushImage
from epcore_docker.images import CACHE_FILE, read_entries
from epcore_docker.runtime import JOB_KEY_LABEL, DockerRuntime
from runtime_helpers import (
    LOG,
    NOBODY,
    container_job,
    docker_runtime,
    job_key,
    make_sandbox,
    run_to_end,
    shell_output,
    started,
    wait_for,
)

from epcore.errors import JobSetupError
from epcore.types import MachineAttribute

#: A gid other than nobody's own, to tell the uid and gid apart inside.
JOB_GID = 65533
MiB = 1024 * 1024

pytestmark = pytest.mark.usefixtures("no_container_left")


@pytest.fixture(scope="module")
def runtime(spool: Path, run_tag: str, docker_client: docker.DockerClient) -> DockerRuntime:
    """A runtime with the default docker knobs (and the run label)."""
    return docker_runtime(spool, run_tag)


def attributes(found: object) -> dict[str, object]:
    assert isinstance(found, list | tuple)
    assert all(isinstance(attribute, MachineAttribute) for attribute in found)
    return {attribute.name: attribute.value for attribute in found}


def container_exists(client: docker.DockerClient, container_id: str) -> bool:
    try:
        client.api.inspect_container(container_id)
    except docker.errors.NotFound:
        return False
    return True


def image_present(client: docker.DockerClient, image: str) -> bool:
    try:
        client.images.get(image)
    except docker.errors.ImageNotFound:
        return False
    return True


# -- detection ------------------------------------------------------------------------------


def test_a_running_dockerd_is_advertised_with_its_version(
    runtime: DockerRuntime, docker_client: docker.DockerClient
) -> None:
    """HasDocker is true and DockerVersion names the server's version as docker --version does."""
    found = attributes(runtime.machine_attributes())
    server = docker_client.version()["Version"]
    assert found["HasDocker"] is True
    assert re.fullmatch(
        rf"Docker version {re.escape(server)}(, build \S+)?", str(found["DockerVersion"])
    )
    assert "DockerOfflineReason" not in found


@pytest.mark.parametrize(
    ("knobs", "reason_names"),
    [
        pytest.param(
            {"DOCKER_URL": "unix:///nonexistent/epcore/docker.sock"},
            "unix:///nonexistent/epcore/docker.sock",
            id="no-daemon-at-url",
        ),
        pytest.param({"DOCKER": ""}, "DOCKER is empty", id="docker-empty"),
        pytest.param(
            {"DOCKER_EXTRA_ARGUMENTS": "--frobnicate yes"},
            "DOCKER_EXTRA_ARGUMENTS",
            id="bad-extra-arguments",
        ),
    ],
)
def test_docker_that_cannot_be_used_is_advertised_offline_with_the_reason(
    spool: Path, run_tag: str, knobs: dict[str, str], reason_names: str
) -> None:
    """An unusable docker gives HasDocker = false and a DockerOfflineReason naming the cause,
    without raising."""
    found = attributes(docker_runtime(spool, run_tag, knobs).machine_attributes())
    assert found["HasDocker"] is False
    assert reason_names in str(found["DockerOfflineReason"])
    assert "DockerVersion" not in found


def test_a_job_on_an_offline_docker_is_held_with_code_6(
    spool: Path, run_tag: str, sandbox: Path, busybox_image: str
) -> None:
    """start() on a runtime whose dockerd does not answer raises JobSetupError code 6 naming
    the image."""
    url = "unix:///nonexistent/epcore/docker.sock"
    offline = docker_runtime(spool, run_tag, {"DOCKER_URL": url})
    request = container_job(sandbox, busybox_image, ("true",), run_tag=run_tag)
    with pytest.raises(JobSetupError) as raised:
        offline.start(request, LOG)
    assert raised.value.hold_code == 6
    assert busybox_image in raised.value.reason


def test_each_configured_volume_and_the_networks_are_advertised(
    spool: Path, run_tag: str, tmp_path: Path, docker_client: docker.DockerClient
) -> None:
    """HasDockerVolume<NAME> is true for each of DOCKER_VOLUMES and DockerNetworks lists
    DOCKER_NETWORKS."""
    knobs = {
        "DOCKER_VOLUMES": "SCRATCH, Data",
        "DOCKER_VOLUME_DIR_SCRATCH": f"{tmp_path}",
        "DOCKER_VOLUME_DIR_Data": f"{tmp_path}:/data:ro",
        "DOCKER_NETWORKS": "ep-net-one, ep-net-two",
    }
    found = attributes(docker_runtime(spool, run_tag, knobs).machine_attributes())
    assert found["HasDocker"] is True
    volumes = {name: value for name, value in found.items() if name.startswith("HasDockerVolume")}
    assert volumes == {"HasDockerVolumeSCRATCH": True, "HasDockerVolumeData": True}
    assert found["DockerNetworks"] == "ep-net-one,ep-net-two"


# -- a job in its container -----------------------------------------------------------------


@attrs.frozen
class BasicRun:
    """The one job of :func:`basic_run`: what it printed and wrote."""

    sandbox: Path
    status: tuple[int | None, int | None] | None
    stdout: Path
    stderr: Path


BASIC_SCRIPT = (
    'pwd; id -u; id -g; echo "$GREETING"; echo "$_CONDOR_SCRATCH_DIR";'
    " echo written-by-job > from_job; cat; echo to-stderr >&2; exit 7"
)


@pytest.fixture(scope="module")
def basic_run(
    runtime: DockerRuntime,
    busybox_image: str,
    run_tag: str,
    jobs_dir: Path,
) -> BasicRun:
    """One job run to its end: it prints its directory, ids and environment, writes a file,
    copies its stdin, writes to stderr and exits 7."""
    sandbox = make_sandbox(jobs_dir)
    stdin = sandbox / "input.txt"
    stdin.write_text("line from the input file\n")
    request = container_job(
        sandbox,
        busybox_image,
        ("sh", "-c", BASIC_SCRIPT),
        run_tag=run_tag,
        environment=(("GREETING", "hello from the job ad"),),
        stdin=str(stdin),
        stdout=str(sandbox / "job.out"),
        stderr=str(sandbox / "job.err"),
        gid=JOB_GID,
    )
    status = run_to_end(runtime, request)
    return BasicRun(sandbox, status, sandbox / "job.out", sandbox / "job.err")


def basic_lines(run: BasicRun) -> list[str]:
    return run.stdout.read_text().splitlines()


def test_the_sandbox_is_the_working_directory(basic_run: BasicRun) -> None:
    """The job starts in its sandbox (mounted at the same path) and a file it writes there
    appears on the host, owned by the job's uid and gid."""
    assert basic_lines(basic_run)[0] == str(basic_run.sandbox)
    written = basic_run.sandbox / "from_job"
    assert written.read_text() == "written-by-job\n"
    assert (written.stat().st_uid, written.stat().st_gid) == (NOBODY, JOB_GID)


def test_the_job_runs_as_the_slot_uid_and_gid(basic_run: BasicRun) -> None:
    """id -u and id -g inside print the request's uid and gid."""
    assert basic_lines(basic_run)[1:3] == [str(NOBODY), str(JOB_GID)]


def test_the_job_environment_and_scratch_dir_are_visible_inside(basic_run: BasicRun) -> None:
    """A variable of the job's environment and _CONDOR_SCRATCH_DIR reach the job."""
    assert basic_lines(basic_run)[3:5] == ["hello from the job ad", str(basic_run.sandbox)]


def test_the_exit_code_is_reported(basic_run: BasicRun) -> None:
    """A job that exits 7 gives the exit status (7, None)."""
    assert basic_run.status == (7, None)


def test_stdin_comes_from_the_job_input_file(basic_run: BasicRun) -> None:
    """cat copies the job's input file, fed to the container's stdin."""
    assert basic_lines(basic_run)[5:] == ["line from the input file"]


def test_stdout_and_stderr_are_collected_into_files_owned_by_the_job(
    basic_run: BasicRun,
) -> None:
    """collect_output() writes the two streams apart into the job's files, as its uid:gid."""
    assert basic_run.stderr.read_text() == "to-stderr\n"
    assert "to-stderr" not in basic_run.stdout.read_text()
    for path in (basic_run.stdout, basic_run.stderr):
        assert (path.stat().st_uid, path.stat().st_gid) == (NOBODY, JOB_GID)


def test_a_missing_input_file_is_held_with_code_8(
    runtime: DockerRuntime, sandbox: Path, busybox_image: str, run_tag: str
) -> None:
    """An input file the job's user cannot open is a JobSetupError with code 8."""
    request = container_job(
        sandbox, busybox_image, ("cat",), run_tag=run_tag, stdin=str(sandbox / "absent")
    )
    with pytest.raises(JobSetupError) as raised:
        runtime.start(request, LOG)
    assert raised.value.hold_code == 8


# -- limits, suspend, vacate, OOM -----------------------------------------------------------


@pytest.mark.parametrize(("memory_mb", "cpus"), [(100, 1), (300, 2.5)])
def test_the_slot_memory_and_cpus_become_container_limits(
    runtime: DockerRuntime,
    sandbox: Path,
    busybox_image: str,
    run_tag: str,
    docker_client: docker.DockerClient,
    memory_mb: int,
    cpus: float,
) -> None:
    """Memory and MemorySwap are the slot's memory in MiB and CpuShares is 100 per CPU."""
    request = container_job(
        sandbox,
        busybox_image,
        ("sleep", "30"),
        run_tag=run_tag,
        memory_mb=memory_mb,
        cpus=cpus,
    )
    with started(runtime, request) as container:
        host = docker_client.api.inspect_container(container.id)["HostConfig"]
    assert host["Memory"] == memory_mb * MiB
    assert host["MemorySwap"] == memory_mb * MiB
    assert host["CpuShares"] == int(cpus * 100)


def test_freeze_pauses_and_thaw_resumes_the_container(
    runtime: DockerRuntime,
    sandbox: Path,
    busybox_image: str,
    run_tag: str,
    docker_client: docker.DockerClient,
) -> None:
    """freeze() leaves the container Paused and thaw() runs it again."""
    request = container_job(sandbox, busybox_image, ("sleep", "30"), run_tag=run_tag)
    with started(runtime, request) as container:
        assert container.freeze() is True
        paused = docker_client.api.inspect_container(container.id)["State"]
        assert container.thaw() is True
        resumed = docker_client.api.inspect_container(container.id)["State"]
    assert (paused["Paused"], paused["Running"]) == (True, True)
    assert (resumed["Paused"], resumed["Running"]) == (False, True)


@pytest.mark.parametrize(
    ("script", "earliest", "latest", "stopped_by"),
    [
        pytest.param(
            "trap 'echo ignored' TERM; while :; do sleep 0.1; done",
            1.5,
            6.0,
            signal.SIGKILL,
            id="ignores-term-killed-after-grace",
        ),
        pytest.param("exec sleep 30", 0.0, 1.5, signal.SIGTERM, id="exits-on-term"),
    ],
)
def test_stop_sends_the_kill_signal_then_sigkill_after_the_grace_time(
    runtime: DockerRuntime,
    sandbox: Path,
    busybox_image: str,
    run_tag: str,
    script: str,
    earliest: float,
    latest: float,
    stopped_by: int,
) -> None:
    """stop(SIGTERM, 2) ends a job that ignores SIGTERM about 2 s later by SIGKILL, and one that
    obeys SIGTERM at once; both report the signal."""
    request = container_job(sandbox, busybox_image, ("sh", "-c", script), run_tag=run_tag)
    with started(runtime, request) as container:
        time.sleep(0.3)  # let the shell set its trap
        began = time.monotonic()
        container.stop(signal.SIGTERM, 2)
        assert wait_for(container, 15)
        took = time.monotonic() - began
        status = container.exit_status()
    assert earliest <= took <= latest
    assert status == (None, stopped_by)


def test_a_job_beyond_its_memory_limit_is_out_of_memory(
    runtime: DockerRuntime, sandbox: Path, busybox_image: str, run_tag: str
) -> None:
    """A shell holding 64 MB in a variable under a 16 MB limit is killed and out_of_memory()
    says so."""
    script = 'x=$(head -c 64000000 /dev/zero | tr "\\0" a); echo survived'
    request = container_job(
        sandbox, busybox_image, ("sh", "-c", script), run_tag=run_tag, memory_mb=16
    )
    with started(runtime, request) as container:
        assert wait_for(container)
        state = runtime.client().api.inspect_container(container.id)["State"]
        found = (container.out_of_memory(), container.exit_status())
    assert found == (True, (None, signal.SIGKILL)), state


def test_a_job_within_its_memory_limit_is_not_out_of_memory(
    runtime: DockerRuntime, sandbox: Path, busybox_image: str, run_tag: str
) -> None:
    """A small job under a 64 MB limit ends normally and out_of_memory() is false."""
    script = 'x=$(head -c 1000000 /dev/zero | tr "\\0" a); echo ${#x}'
    output = shell_output(runtime, sandbox, busybox_image, script, run_tag=run_tag, memory_mb=64)
    assert output == "1000000\n"


# -- removal --------------------------------------------------------------------------------


def test_release_removes_the_container(
    runtime: DockerRuntime,
    sandbox: Path,
    busybox_image: str,
    run_tag: str,
    docker_client: docker.DockerClient,
) -> None:
    """release() removes the job's container, even while it runs."""
    request = container_job(sandbox, busybox_image, ("sleep", "30"), run_tag=run_tag)
    with started(runtime, request) as container:
        assert container_exists(docker_client, container.id)
    assert not container_exists(docker_client, container.id)


def test_reclaim_removes_the_container_a_dead_starter_left(
    runtime: DockerRuntime,
    spool: Path,
    sandbox: Path,
    busybox_image: str,
    run_tag: str,
    docker_client: docker.DockerClient,
) -> None:
    """A new runtime's reclaim(job_key) removes that job's container and says so, and finds
    nothing the second time."""
    request = container_job(sandbox, busybox_image, ("sleep", "30"), run_tag=run_tag)
    with started(runtime, request) as container:
        startd = docker_runtime(spool, run_tag)
        assert startd.reclaim(request.job_key) is True
        assert not container_exists(docker_client, container.id)
        assert startd.reclaim(request.job_key) is False


def test_sweep_removes_only_unkept_containers_of_its_prefixes(
    runtime: DockerRuntime,
    spool: Path,
    sandbox: Path,
    busybox_image: str,
    run_tag: str,
    docker_client: docker.DockerClient,
) -> None:
    """sweep(keep, prefixes) removes the containers whose job key has one of the prefixes and
    is not kept, and leaves the kept ones and those of other prefixes."""
    ours, others = f"sweep_{run_tag}_mine", f"sweep_{run_tag}_other"
    kept, stale, foreign = job_key(run_tag, ours), job_key(run_tag, ours), job_key(run_tag, others)
    requests = [
        container_job(sandbox, busybox_image, ("sleep", "30"), run_tag=run_tag, key=key)
        for key in (kept, stale, foreign)
    ]
    with contextlib.ExitStack() as stack:
        containers = [stack.enter_context(started(runtime, request)) for request in requests]
        removed = docker_runtime(spool, run_tag).sweep({kept}, (ours,))
        present = [container_exists(docker_client, c.id) for c in containers]
    assert removed == (stale,)
    assert present == [True, False, True]


def test_containers_carry_the_job_key_label(
    runtime: DockerRuntime,
    sandbox: Path,
    busybox_image: str,
    run_tag: str,
    docker_client: docker.DockerClient,
) -> None:
    """The container is labelled with the job key (what reclaim and sweep look for) and
    keeps the label of DOCKER_EXTRA_ARGUMENTS (what the session's clean-up looks for)."""
    request = container_job(sandbox, busybox_image, ("sleep", "30"), run_tag=run_tag)
    with started(runtime, request) as container:
        labels = docker_client.api.inspect_container(container.id)["Config"]["Labels"]
    assert labels[JOB_KEY_LABEL] == request.job_key
    assert labels[TEST_RUN_LABEL] == run_tag


# -- images ---------------------------------------------------------------------------------


def cached_images(spool: Path) -> list[str]:
    return [entry.image for entry in read_entries((spool / CACHE_FILE).read_text())]


def test_an_image_from_the_registry_is_pulled_and_recorded(
    spool: Path,
    run_tag: str,
    tmp_path: Path,
    sandbox: Path,
    push_image: PushImage,
    docker_client: docker.DockerClient,
) -> None:
    """A job's image missing from dockerd is pulled, the job runs from it and the cache file
    in SPOOL lists it."""
    image = push_image("pulled", marker_bytes=123)
    assert not image_present(docker_client, image)
    own_spool = tmp_path / "spool"
    own_spool.mkdir()
    output = shell_output(
        docker_runtime(own_spool, run_tag), sandbox, image, "wc -c < /marker", run_tag=run_tag
    )
    assert output.strip() == "123"
    assert image_present(docker_client, image)
    assert cached_images(own_spool) == [image]


@pytest.mark.parametrize("missing", ["absent-repository:1", "pulled-tagless:2"])
def test_an_image_that_cannot_be_pulled_is_held_with_code_6(
    runtime: DockerRuntime,
    sandbox: Path,
    run_tag: str,
    registry: str,
    push_image: PushImage,
    missing: str,
) -> None:
    """A job whose image or tag the registry does not have is a JobSetupError with code 6 and
    'Cannot pull docker image <name>'."""
    if missing.startswith("pulled-tagless"):
        push_image("pulled-tagless")  # the repository exists, tag 2 does not
    image = f"{registry}/epcore-test-{run_tag}/{missing}"
    request = container_job(sandbox, image, ("true",), run_tag=run_tag)
    with pytest.raises(JobSetupError) as raised:
        runtime.start(request, LOG)
    assert raised.value.hold_code == 6
    assert f"Cannot pull docker image {image}" in raised.value.reason


def test_the_image_cache_evicts_the_least_recently_used_pulled_image(
    run_tag: str,
    tmp_path: Path,
    sandbox: Path,
    busybox_image: str,
    push_image: PushImage,
    docker_client: docker.DockerClient,
) -> None:
    """With DOCKER_IMAGE_CACHE_SIZE = 1 the second pulled image evicts the first from dockerd,
    while an image that was already there is never removed."""
    first, second = push_image("cache-first", 10), push_image("cache-second", 20)
    own_spool = tmp_path / "spool"
    own_spool.mkdir()
    cache_of_one = docker_runtime(own_spool, run_tag, {"DOCKER_IMAGE_CACHE_SIZE": "1"})
    for image in (busybox_image, first, busybox_image, second, busybox_image):
        shell_output(cache_of_one, sandbox, image, "true", run_tag=run_tag)
    assert not image_present(docker_client, first)
    assert image_present(docker_client, second)
    assert image_present(docker_client, busybox_image)
    assert cached_images(own_spool) == [second]
