"""The docker fixtures themselves, end to end: the busybox image runs, the registry serves
pushed images that pull back, and the session's labelled containers and images are swept."""

from __future__ import annotations

import io
import json
import re
import tarfile
import urllib.request
from pathlib import Path

import docker
import docker.errors
import pytest
from docker_fixtures import (
    BUSYBOX_APPLETS,
    TEST_RUN_LABEL,
    PushImage,
    busybox_rootfs,
    remove_labelled,
    statically_linked,
)

from epcore.testing.system import missing


def _run(
    client: docker.DockerClient, image: str, command: list[str], labels: dict[str, str]
) -> str:
    output: bytes = client.containers.run(
        image, command, network_mode="none", labels=labels, remove=True
    )
    return output.decode()


def test_busybox_image_offers_each_applet(
    docker_client: docker.DockerClient, busybox_image: str, test_labels: dict[str, str]
) -> None:
    """Every applet the image promises is a symlink to the static busybox in /bin."""
    listing = _run(docker_client, busybox_image, ["ls", "-l", "/bin"], test_labels)
    links = dict(re.findall(r" (\S+) -> (\S+)$", listing, re.MULTILINE))
    assert links == dict.fromkeys(BUSYBOX_APPLETS, "busybox")


def test_busybox_image_runs_as_a_slot_uid_with_a_sticky_tmp(
    docker_client: docker.DockerClient, busybox_image: str, test_labels: dict[str, str]
) -> None:
    """A container of the image runs as an arbitrary uid:gid and can write to /tmp (1777)."""
    output = docker_client.containers.run(
        busybox_image,
        ["sh", "-c", "id -u; id -g; stat -c %a /tmp; touch /tmp/x && echo written"],
        user="4321:4322",
        network_mode="none",
        labels=test_labels,
        remove=True,
    ).decode()
    assert output.split() == ["4321", "4322", "1777", "written"]


def test_busybox_image_carries_the_run_label(
    docker_client: docker.DockerClient, busybox_image: str, run_tag: str
) -> None:
    """The image is labelled with the run, so the session's sweep finds it."""
    labels = docker_client.images.get(busybox_image).labels
    assert busybox_image == f"epcore-test/busybox:{run_tag}"
    assert labels[TEST_RUN_LABEL] == run_tag


def test_busybox_rootfs_holds_only_busybox_its_applets_and_tmp() -> None:
    """The root filesystem archive is bin/busybox, one symlink per applet and a 1777 /tmp."""
    fake_busybox = Path(__file__)
    with tarfile.open(fileobj=io.BytesIO(busybox_rootfs(fake_busybox))) as tar:
        members = {member.name: member for member in tar.getmembers()}
    assert set(members) == {"bin", "tmp", "bin/busybox"} | {f"bin/{a}" for a in BUSYBOX_APPLETS}
    assert members["tmp"].mode == 0o1777 and members["tmp"].isdir()
    assert members["bin/busybox"].size == fake_busybox.stat().st_size
    assert all(members[f"bin/{a}"].linkname == "busybox" for a in BUSYBOX_APPLETS)


@pytest.mark.parametrize(
    ("path", "static"),
    [
        pytest.param(Path("/bin/busybox"), True, id="busybox-static"),
        pytest.param(Path("/bin/ls"), False, id="dynamic-ls"),
        pytest.param(Path(__file__), False, id="not-elf"),
    ],
)
def test_static_linking_is_recognised(path: Path, static: bool) -> None:
    """Only an ELF without a program interpreter counts as statically linked."""
    if not path.exists():
        missing(f"{path} is not on this machine (Debian's busybox-static)")
    assert statically_linked(path) is static


def test_registry_answers_the_v2_api(registry: str) -> None:
    """The registry listens on loopback and answers GET /v2/ with an empty JSON object."""
    assert registry.startswith("127.0.0.1:")
    with urllib.request.urlopen(f"http://{registry}/v2/", timeout=5) as response:
        assert json.loads(response.read()) == {}


def test_pushed_image_is_only_in_the_registry_and_pulls_back(
    docker_client: docker.DockerClient,
    registry: str,
    run_tag: str,
    push_image: PushImage,
    test_labels: dict[str, str],
) -> None:
    """push_image leaves the image in the registry only; pulled, it holds the marker bytes."""
    name = push_image("fixture-check", marker_bytes=3000)
    assert name == f"{registry}/epcore-test-{run_tag}/fixture-check:1"
    with pytest.raises(docker.errors.ImageNotFound):
        docker_client.images.get(name)
    repository = name.removeprefix(f"{registry}/").removesuffix(":1")
    with urllib.request.urlopen(f"http://{registry}/v2/{repository}/tags/list") as response:
        assert json.loads(response.read())["tags"] == ["1"]
    pulled = docker_client.images.pull(name)
    assert pulled.labels[TEST_RUN_LABEL] == run_tag
    size = _run(docker_client, name, ["stat", "-c", "%s", "/marker"], test_labels)
    assert size.strip() == "3000"


def test_push_image_refuses_a_name_docker_would_refuse(push_image: PushImage) -> None:
    """A tag suffix with characters docker does not allow in names is refused at once."""
    with pytest.raises(ValueError, match="not a valid image name part"):
        push_image("Upper Case")


def test_sweep_removes_labelled_containers_and_images_only(
    docker_client: docker.DockerClient, busybox_image: str, run_tag: str
) -> None:
    """The end-of-session sweep removes what carries its run label and nothing else."""
    sweep_tag = f"{run_tag}sweep"
    labelled = docker_client.containers.create(
        busybox_image, ["true"], labels={TEST_RUN_LABEL: sweep_tag}, network_mode="none"
    )
    unlabelled = docker_client.containers.create(busybox_image, ["true"], network_mode="none")
    child = docker_client.images.build(
        fileobj=io.BytesIO(f"FROM {busybox_image}\nLABEL {TEST_RUN_LABEL}={sweep_tag}\n".encode()),
        tag=f"epcore-test/sweep:{run_tag}",
        network_mode="none",
        rm=True,
    )[0]
    try:
        assert remove_labelled(docker_client, sweep_tag) == []
        with pytest.raises(docker.errors.NotFound):
            docker_client.containers.get(labelled.id)
        with pytest.raises(docker.errors.ImageNotFound):
            docker_client.images.get(child.id)
        assert docker_client.containers.get(unlabelled.id).id == unlabelled.id
        assert docker_client.images.get(busybox_image).id
    finally:
        unlabelled.remove(force=True)
