"""Each docker knob against the real dockerd: what a job's container gets from DOCKER_VOLUMES
(and its _MOUNT_IF and DOCKER_MOUNT_VOLUMES), docker_network_type, DOCKER_SHM_SIZE,
DOCKER_DROP_ALL_CAPABILITIES and DOCKER_EXTRA_ARGUMENTS, seen from inside and by inspection."""

from __future__ import annotations

import os
from collections.abc import Iterator, Mapping
from pathlib import Path
from typing import Any

import docker
import docker.errors
import pytest
from docker_fixtures import TEST_RUN_LABEL
from epcore_docker.runtime import DockerRuntime
from runtime_helpers import (
    LOG,
    NOBODY,
    JobRun,
    container_job,
    docker_runtime,
    make_sandbox,
    run_label,
    run_script,
    shell_output,
)

from epcore.errors import JobSetupError

MiB = 1024 * 1024

pytestmark = pytest.mark.usefixtures("no_container_left")
#: docker's own /dev/shm size when nothing asks for another.
DOCKER_DEFAULT_SHM = 64 * MiB


def runtime_with(
    spool: Path, run_tag: str, docker_client: docker.DockerClient, **knobs: str
) -> DockerRuntime:
    """A runtime of ``knobs``, checked to be usable (HasDocker true)."""
    runtime = docker_runtime(spool, run_tag, knobs)
    assert runtime.offline_reason() is None
    return runtime


def status_fields(text: str) -> dict[str, str]:
    """/proc/self/status as {field: value}."""
    pairs = (line.split(":", 1) for line in text.splitlines() if ":" in line)
    return {name.strip(): value.strip() for name, value in pairs}


# -- volumes --------------------------------------------------------------------------------


VOLUME_SCRIPT = (
    "echo a > {a}/from_job;"
    " echo b > /data_b/from_job;"
    " cat /data_c/marker;"
    " if echo c > /data_c/from_job; then echo c-writable; else echo c-read-only; fi;"
    " if [ -e /data_d ]; then echo d-mounted; else echo d-absent; fi"
)


@pytest.fixture(scope="module")
def volume_run(
    spool: Path,
    run_tag: str,
    jobs_dir: Path,
    busybox_image: str,
    docker_client: docker.DockerClient,
) -> tuple[dict[str, Path], str]:
    """One job with four volumes: A as host, B as host:container, C as host:container:ro and
    D configured but not in DOCKER_MOUNT_VOLUMES; the host directories and what it printed."""
    hosts = {}
    for name in "abcd":
        hosts[name] = jobs_dir / f"volume_{name}"
        hosts[name].mkdir()
        os.chown(hosts[name], NOBODY, NOBODY)
    (hosts["c"] / "marker").write_text("marker-of-c\n")
    runtime = runtime_with(
        spool,
        run_tag,
        docker_client,
        DOCKER_VOLUMES="A, B, C, D",
        DOCKER_VOLUME_DIR_A=str(hosts["a"]),
        DOCKER_VOLUME_DIR_B=f"{hosts['b']}:/data_b",
        DOCKER_VOLUME_DIR_C=f"{hosts['c']}:/data_c:ro",
        DOCKER_VOLUME_DIR_D=f"{hosts['d']}:/data_d",
        DOCKER_MOUNT_VOLUMES="A, B, C",
    )
    script = VOLUME_SCRIPT.format(a=hosts["a"])
    output = shell_output(runtime, make_sandbox(jobs_dir), busybox_image, script, run_tag=run_tag)
    return hosts, output


def test_a_host_path_volume_is_mounted_at_the_same_path(
    volume_run: tuple[dict[str, Path], str],
) -> None:
    """DOCKER_VOLUME_DIR_A = /host mounts /host at /host, writable."""
    hosts, _ = volume_run
    assert (hosts["a"] / "from_job").read_text() == "a\n"


def test_a_host_container_volume_is_mounted_at_the_container_path(
    volume_run: tuple[dict[str, Path], str],
) -> None:
    """DOCKER_VOLUME_DIR_B = /host:/data_b mounts /host at /data_b, writable."""
    hosts, _ = volume_run
    assert (hosts["b"] / "from_job").read_text() == "b\n"


def test_a_read_only_volume_can_be_read_but_not_written(
    volume_run: tuple[dict[str, Path], str],
) -> None:
    """DOCKER_VOLUME_DIR_C = /host:/data_c:ro shows the host's files and refuses a write."""
    hosts, output = volume_run
    assert output.splitlines()[:2] == ["marker-of-c", "c-read-only"]
    assert not (hosts["c"] / "from_job").exists()


def test_a_volume_not_in_mount_volumes_is_not_mounted(
    volume_run: tuple[dict[str, Path], str],
) -> None:
    """A DOCKER_VOLUMES entry left out of DOCKER_MOUNT_VOLUMES is not mounted."""
    _, output = volume_run
    assert output.splitlines()[2:] == ["d-absent"]


@pytest.mark.parametrize(
    ("job", "mounted"),
    [
        pytest.param({"WantSomeDirMounted": True, "Owner": "smith"}, True, id="smith-wants"),
        pytest.param({"WantSomeDirMounted": True, "Owner": "jones"}, False, id="jones-wants"),
        pytest.param({"WantSomeDirMounted": False, "Owner": "smith"}, False, id="smith-not"),
        pytest.param({"Owner": "smith"}, False, id="smith-undefined"),
    ],
)
def test_mount_if_mounts_the_volume_only_when_it_is_true(
    spool: Path,
    run_tag: str,
    jobs_dir: Path,
    sandbox: Path,
    busybox_image: str,
    docker_client: docker.DockerClient,
    job: Mapping[str, object],
    mounted: bool,
) -> None:
    """The seed's DOCKER_VOLUME_DIR_SOME_DIR_MOUNT_IF = WantSomeDirMounted && Owner == "smith"
    mounts the volume for smith's jobs that want it and for no other."""
    host = jobs_dir / f"some_dir_{sandbox.name}"
    host.mkdir()
    (host / "marker").write_text("some-dir\n")
    runtime = runtime_with(
        spool,
        run_tag,
        docker_client,
        DOCKER_VOLUMES="SOME_DIR",
        DOCKER_VOLUME_DIR_SOME_DIR=f"{host}:/some_dir",
        DOCKER_VOLUME_DIR_SOME_DIR_MOUNT_IF='WantSomeDirMounted && Owner == "smith"',
        DOCKER_MOUNT_VOLUMES="SOME_DIR",
    )
    script = "cat /some_dir/marker 2>/dev/null || echo absent"
    output = shell_output(runtime, sandbox, busybox_image, script, run_tag=run_tag, job=job)
    assert output == ("some-dir\n" if mounted else "absent\n")


# -- networks -------------------------------------------------------------------------------


@pytest.fixture(scope="module")
def custom_network(docker_client: docker.DockerClient, run_tag: str) -> Iterator[str]:
    """An internal bridge network of this run (dockerd here has no default bridge)."""
    name = f"epcore-test-{run_tag}-net"
    network = docker_client.networks.create(
        name, driver="bridge", internal=True, labels={TEST_RUN_LABEL: run_tag}
    )
    try:
        yield name
    finally:
        network.remove()


def interfaces_inside(
    runtime: DockerRuntime, sandbox: Path, image: str, run_tag: str, network: str
) -> JobRun:
    run = run_script(
        runtime,
        sandbox,
        image,
        "ls /sys/class/net",
        run_tag=run_tag,
        job={"DockerNetworkType": network},
    )
    assert run.status == (0, None), run.stderr
    return run


@pytest.mark.parametrize("network", ["none", "NONE"])
def test_network_none_leaves_only_the_loopback(
    spool: Path,
    run_tag: str,
    sandbox: Path,
    busybox_image: str,
    docker_client: docker.DockerClient,
    network: str,
) -> None:
    """docker_network_type none (in any case) gives a container whose only interface is lo."""
    runtime = runtime_with(spool, run_tag, docker_client)
    run = interfaces_inside(runtime, sandbox, busybox_image, run_tag, network)
    assert run.stdout.split() == ["lo"]
    assert run.host_config["NetworkMode"] == "none"


def test_network_host_shows_the_host_interfaces(
    spool: Path, run_tag: str, sandbox: Path, busybox_image: str, docker_client: docker.DockerClient
) -> None:
    """docker_network_type host shares the host's network: the same interfaces are seen."""
    runtime = runtime_with(spool, run_tag, docker_client)
    run = interfaces_inside(runtime, sandbox, busybox_image, run_tag, "host")
    assert sorted(run.stdout.split()) == sorted(os.listdir("/sys/class/net"))
    assert run.host_config["NetworkMode"] == "host"


def test_a_custom_network_of_docker_networks_is_joined(
    spool: Path,
    run_tag: str,
    sandbox: Path,
    busybox_image: str,
    docker_client: docker.DockerClient,
    custom_network: str,
) -> None:
    """docker_network_type naming one of DOCKER_NETWORKS puts the container on that network."""
    runtime = runtime_with(spool, run_tag, docker_client, DOCKER_NETWORKS=custom_network)
    run = interfaces_inside(runtime, sandbox, busybox_image, run_tag, custom_network)
    assert sorted(run.stdout.split()) == ["eth0", "lo"]
    assert run.host_config["NetworkMode"] == custom_network


@pytest.mark.parametrize("network", ["epcore-no-such-network", "bridge"])
def test_a_network_the_machine_does_not_offer_is_held_with_code_6(
    spool: Path,
    run_tag: str,
    sandbox: Path,
    busybox_image: str,
    docker_client: docker.DockerClient,
    network: str,
) -> None:
    """A docker_network_type that is neither none, host nor in DOCKER_NETWORKS is a
    JobSetupError with code 6 naming it, and no container is made."""
    runtime = runtime_with(spool, run_tag, docker_client, DOCKER_NETWORKS="epcore-other-net")
    request = container_job(
        sandbox, busybox_image, ("true",), run_tag=run_tag, job={"DockerNetworkType": network}
    )
    with pytest.raises(JobSetupError) as raised:
        runtime.start(request, LOG)
    assert raised.value.hold_code == 6
    assert network in raised.value.reason
    made = docker_client.containers.list(
        all=True, filters={"label": f"epcore.job_key={request.job_key}"}
    )
    assert made == []


# -- /dev/shm -------------------------------------------------------------------------------

SEED_HALF_OF_MEMORY = "Memory * 1024 * 1024 / 2"
SEED_FROM_THE_JOB = (
    "ifThenElse(DevShmSize isnt Undefined && isInteger(DevShmSize) && int(DevShmSize) <="
    " (Memory * 1024 * 1024), int(DevShmSize), 2 * 1024 * 1024 * 1024)"
)


@pytest.mark.parametrize(
    ("knob", "job", "expected"),
    [
        pytest.param(SEED_HALF_OF_MEMORY, {}, 50 * MiB, id="half-of-memory"),
        pytest.param(SEED_FROM_THE_JOB, {"DevShmSize": 8 * MiB}, 8 * MiB, id="job-devshmsize"),
        pytest.param(
            SEED_FROM_THE_JOB, {"DevShmSize": 200 * MiB}, 2048 * MiB, id="job-devshmsize-too-big"
        ),
        pytest.param(SEED_FROM_THE_JOB, {}, 2048 * MiB, id="job-devshmsize-undefined"),
        pytest.param(None, {}, DOCKER_DEFAULT_SHM, id="unset-docker-default"),
    ],
)
def test_docker_shm_size_sets_the_size_of_dev_shm(
    spool: Path,
    run_tag: str,
    sandbox: Path,
    busybox_image: str,
    docker_client: docker.DockerClient,
    knob: str | None,
    job: Mapping[str, object],
    expected: int,
) -> None:
    """DOCKER_SHM_SIZE, evaluated against the slot (Memory 100) and the job, is the container's
    ShmSize and the size of /dev/shm inside; unset, docker's 64 MB apply."""
    knobs = {} if knob is None else {"DOCKER_SHM_SIZE": knob}
    runtime = runtime_with(spool, run_tag, docker_client, **knobs)
    run = run_script(
        runtime, sandbox, busybox_image, "df -k /dev/shm", run_tag=run_tag, job=job, memory_mb=100
    )
    assert run.status == (0, None), run.stderr
    assert run.host_config["ShmSize"] == expected
    size_kib = int(run.stdout.splitlines()[-1].split()[1])
    assert size_kib * 1024 == expected


# -- capabilities ---------------------------------------------------------------------------


def capabilities_run(
    runtime: DockerRuntime, sandbox: Path, image: str, run_tag: str, owner: str
) -> tuple[dict[str, str], Mapping[str, Any]]:
    """Run a job of ``owner`` as root inside (where capabilities show in CapEff); its
    /proc/self/status and HostConfig."""
    run = run_script(
        runtime,
        sandbox,
        image,
        "cat /proc/self/status",
        run_tag=run_tag,
        job={"Owner": owner},
        uid=0,
        gid=0,
    )
    assert run.status == (0, None), run.stderr
    return status_fields(run.stdout), run.host_config


def test_all_capabilities_are_dropped_by_default(
    spool: Path, run_tag: str, sandbox: Path, busybox_image: str, docker_client: docker.DockerClient
) -> None:
    """By default even root in the container has no capability (CapEff and CapBnd 0) and
    setuid binaries are disabled (no-new-privileges)."""
    runtime = runtime_with(spool, run_tag, docker_client)
    status, host = capabilities_run(runtime, sandbox, busybox_image, run_tag, "smith")
    assert int(status["CapEff"], 16) == 0
    assert int(status["CapBnd"], 16) == 0
    assert status["NoNewPrivs"] == "1"
    assert "no-new-privileges" in host["SecurityOpt"]
    assert host["CapDrop"] == ["ALL"]


@pytest.mark.parametrize(("owner", "dropped"), [("trusted", False), ("smith", True)])
def test_drop_all_capabilities_follows_its_expression_for_the_job(
    spool: Path,
    run_tag: str,
    sandbox: Path,
    busybox_image: str,
    docker_client: docker.DockerClient,
    owner: str,
    dropped: bool,
) -> None:
    """DOCKER_DROP_ALL_CAPABILITIES = TARGET.Owner != "trusted" keeps docker's default
    capabilities for the trusted owner's job and drops them for the others."""
    runtime = runtime_with(
        spool, run_tag, docker_client, DOCKER_DROP_ALL_CAPABILITIES='TARGET.Owner != "trusted"'
    )
    status, host = capabilities_run(runtime, sandbox, busybox_image, run_tag, owner)
    assert (int(status["CapEff"], 16) == 0) is dropped
    assert (int(status["CapBnd"], 16) == 0) is dropped
    assert (status["NoNewPrivs"] == "1") is dropped
    assert (host["CapDrop"] == ["ALL"]) is dropped


# -- DOCKER_EXTRA_ARGUMENTS -----------------------------------------------------------------

EXTRA_SCRIPT = (
    'exec > report; hostname; echo "$EXTRA_VAR"; ulimit -n; ulimit -Hn;'
    " grep ' /scratchfs ' /proc/mounts | cut -d' ' -f3;"
    " if touch /on-the-root 2>/dev/null; then echo root-writable; else echo root-read-only; fi;"
    " grep CapBnd /proc/self/status | cut -f2"
)


@pytest.fixture(scope="module")
def extra_run(
    spool: Path,
    run_tag: str,
    jobs_dir: Path,
    busybox_image: str,
    docker_client: docker.DockerClient,
) -> tuple[JobRun, list[str]]:
    """One job with many DOCKER_EXTRA_ARGUMENTS options (its logs go nowhere, so it reports in
    its sandbox): its run and its report's lines."""
    arguments = (
        f"{run_label(run_tag)} --label epcore.extra=yes --pids-limit 50 --env EXTRA_VAR=from-knob"
        " --ulimit nofile=512:1024 --tmpfs /scratchfs:size=1m --cap-add SYS_PTRACE"
        " --hostname ep-extra-host --read-only --log-driver none"
    )
    runtime = runtime_with(spool, run_tag, docker_client, DOCKER_EXTRA_ARGUMENTS=arguments)
    sandbox = make_sandbox(jobs_dir)
    run = run_script(runtime, sandbox, busybox_image, EXTRA_SCRIPT, run_tag=run_tag)
    assert run.status == (0, None)
    return run, (sandbox / "report").read_text().splitlines()


@pytest.mark.parametrize(
    ("section", "key", "expected"),
    [
        ("HostConfig", "PidsLimit", 50),
        ("HostConfig", "Ulimits", [{"Name": "nofile", "Soft": 512, "Hard": 1024}]),
        ("HostConfig", "Tmpfs", {"/scratchfs": "size=1m"}),
        ("HostConfig", "CapAdd", ["SYS_PTRACE"]),
        ("HostConfig", "ReadonlyRootfs", True),
        ("HostConfig", "LogConfig", {"Type": "none", "Config": {}}),
        ("Config", "Hostname", "ep-extra-host"),
    ],
)
def test_extra_arguments_reach_the_container(
    extra_run: tuple[JobRun, list[str]], section: str, key: str, expected: object
) -> None:
    """Each mapped DOCKER_EXTRA_ARGUMENTS option shows in dockerd's inspection."""
    run, _ = extra_run
    assert run.inspection[section][key] == expected


def test_extra_labels_and_environment_join_epcore_own(
    extra_run: tuple[JobRun, list[str]],
) -> None:
    """--label and --env add to the labels and environment epcore sets, which stay."""
    run, _ = extra_run
    labels = run.inspection["Config"]["Labels"]
    assert labels["epcore.extra"] == "yes"
    assert "epcore.job_key" in labels
    environment = run.inspection["Config"]["Env"]
    assert "EXTRA_VAR=from-knob" in environment
    assert any(entry.startswith("_CONDOR_SCRATCH_DIR=") for entry in environment)


def test_extra_arguments_take_effect_inside(extra_run: tuple[JobRun, list[str]]) -> None:
    """Inside: the host name, the variable, the ulimits, the tmpfs, a read-only root and only
    the added capability (CAP_SYS_PTRACE, bit 19) in the bounding set."""
    _, report = extra_run
    assert report == [
        "ep-extra-host",
        "from-knob",
        "512",
        "1024",
        "tmpfs",
        "root-read-only",
        f"{1 << 19:016x}",
    ]


@pytest.mark.parametrize(
    ("arguments", "word"),
    [
        ("--network host", "--network"),
        ("--user 0:0", "--user"),
        ("--frobnicate", "--frobnicate"),
        ("--memory 1g", "--memory"),
    ],
)
def test_an_option_that_cannot_be_mapped_turns_docker_off(
    spool: Path,
    run_tag: str,
    sandbox: Path,
    busybox_image: str,
    docker_client: docker.DockerClient,
    arguments: str,
    word: str,
) -> None:
    """A refused or unknown DOCKER_EXTRA_ARGUMENTS option gives HasDocker = false with a
    reason naming the knob and the option, and start() holds the job without a container."""
    runtime = docker_runtime(
        spool, run_tag, {"DOCKER_EXTRA_ARGUMENTS": f"{run_label(run_tag)} {arguments}"}
    )
    advertised = {a.name: a.value for a in runtime.machine_attributes()}
    assert advertised["HasDocker"] is False
    reason = str(advertised["DockerOfflineReason"])
    assert "DOCKER_EXTRA_ARGUMENTS" in reason
    assert word in reason
    request = container_job(sandbox, busybox_image, ("true",), run_tag=run_tag)
    with pytest.raises(JobSetupError) as raised:
        runtime.start(request, LOG)
    assert raised.value.hold_code == 6
    assert "DOCKER_EXTRA_ARGUMENTS" in raised.value.reason
    made = docker_client.containers.list(
        all=True, filters={"label": f"epcore.job_key={request.job_key}"}
    )
    assert made == []
