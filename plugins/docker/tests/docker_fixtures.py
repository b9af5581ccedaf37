"""A real docker daemon for the plugin's tests: a client, a tiny busybox image, a local registry.

A pytest plugin module (loaded by conftest.py). Tests that use these fixtures get the ``docker``
marker. Outside CI a missing component (no dockerd answering, no static busybox, no
docker-registry) skips the test with the reason; under ``CI=true`` it fails, because CI is where
they must run (.ci/run installs and starts them).

Everything is named with the run's tag so runs sharing the machine do not collide, and
everything is removed at the end of the session: every container and every image carrying the
label ``epcore.test_run=<run_tag>`` (:data:`TEST_RUN_LABEL`). The busybox image carries that label
in its configuration, so every image built from it, pushed and pulled back, carries it too;
containers get it from the test (``labels=test_labels``, or DOCKER_EXTRA_ARGUMENTS
``--label epcore.test_run=<run_tag>``).
"""

from __future__ import annotations

import io
import os
import re
import struct
import tarfile
import time
from collections.abc import Iterator
from pathlib import Path

import docker
import docker.errors
import pytest

from epcore.testing.registry import running_registry
from epcore.testing.system import missing

#: The label on every container and image the tests make, with the run's tag as its value.
TEST_RUN_LABEL = "epcore.test_run"

BUSYBOX = Path("/bin/busybox")
#: The applets the test image offers as commands (symlinks to busybox in /bin).
BUSYBOX_APPLETS = (
    "sh",
    "echo",
    "cat",
    "sleep",
    "ls",
    "id",
    "pwd",
    "env",
    "true",
    "false",
    "touch",
    "dd",
    "head",
    "grep",
    "mkdir",
    "kill",
    "ps",
    "wc",
    "tr",
    "stat",
    "df",
    "cut",
)

#: The fixtures that need dockerd; a test using any of them is marked ``docker``.
DOCKER_FIXTURES = frozenset({"docker_client", "busybox_image", "registry", "push_image"})

_ELF_PT_INTERP = 3
_IMAGE_NAME_PART = re.compile(r"[a-z0-9]+(?:[._-][a-z0-9]+)*")


def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    """Mark every test that uses a docker fixture with ``docker`` (``-m 'not docker'``)."""
    for item in items:
        if DOCKER_FIXTURES.intersection(getattr(item, "fixturenames", ())):
            item.add_marker(pytest.mark.docker)


def statically_linked(path: Path) -> bool:
    """Whether the 64-bit little-endian ELF at ``path`` has no program interpreter."""
    with path.open("rb") as elf:
        header = elf.read(64)
        if header[:6] != b"\x7fELF\x02\x01":
            return False
        (program_headers,) = struct.unpack_from("<Q", header, 0x20)
        entry_size, entry_count = struct.unpack_from("<HH", header, 0x36)
        for index in range(entry_count):
            elf.seek(program_headers + index * entry_size)
            (segment_type,) = struct.unpack("<I", elf.read(4))
            if segment_type == _ELF_PT_INTERP:
                return False
    return True


def busybox_rootfs(busybox: Path) -> bytes:
    """A tar archive of a root filesystem: /bin/busybox, its applets as symlinks, /tmp (1777)."""
    archive = io.BytesIO()
    with tarfile.open(fileobj=archive, mode="w") as tar:

        def add(name: str, kind: bytes, mode: int, data: bytes = b"", target: str = "") -> None:
            member = tarfile.TarInfo(name)
            member.type, member.mode, member.uid, member.gid = kind, mode, 0, 0
            member.mtime = int(time.time())
            member.size, member.linkname = len(data), target
            tar.addfile(member, io.BytesIO(data) if data else None)

        add("bin", tarfile.DIRTYPE, 0o755)
        add("tmp", tarfile.DIRTYPE, 0o1777)
        add("bin/busybox", tarfile.REGTYPE, 0o755, busybox.read_bytes())
        for applet in BUSYBOX_APPLETS:
            add(f"bin/{applet}", tarfile.SYMTYPE, 0o777, target="busybox")
    return archive.getvalue()


def remove_labelled(client: docker.DockerClient, run_tag: str) -> list[str]:
    """Remove this run's containers, then its images (children before their parents); what
    could not be removed."""
    selector = {"label": f"{TEST_RUN_LABEL}={run_tag}"}
    problems = []
    for container in client.containers.list(all=True, filters=selector):
        try:
            container.remove(force=True)
        except docker.errors.APIError as error:
            problems.append(f"container {container.name}: {error}")
    images = client.images.list(filters=selector)
    # An image with dependent children cannot be removed; each pass removes the leaves.
    while images:
        left = []
        for image in images:
            try:
                client.images.remove(image.id, force=True)
            except docker.errors.NotFound:
                pass
            except docker.errors.APIError as error:
                left.append((image, error))
        if len(left) == len(images):
            problems += [f"image {image.tags or image.id}: {error}" for image, error in left]
            break
        images = [image for image, _ in left]
    return problems


@pytest.fixture(scope="session")
def test_labels(run_tag: str) -> dict[str, str]:
    """The labels a test puts on the containers it makes, so that the session removes them."""
    return {TEST_RUN_LABEL: run_tag}


@pytest.fixture(scope="session")
def docker_client(run_tag: str) -> Iterator[docker.DockerClient]:
    """A client of the local dockerd (DOCKER_HOST or /var/run/docker.sock) that answers ping.

    At the end of the session every container and image labelled with this run is removed.
    """
    try:
        client = docker.from_env()
    except docker.errors.DockerException as error:
        missing(f"no docker daemon to talk to (is dockerd running? see .ci/run): {error}")
    try:
        client.ping()
    except (docker.errors.DockerException, OSError) as error:
        client.close()
        missing(f"dockerd does not answer ping (see .ci/run): {error}")
    try:
        yield client
    finally:
        problems = remove_labelled(client, run_tag)
        client.close()
        assert not problems, f"could not clean up after the docker tests: {problems}"


@pytest.fixture(scope="session")
def busybox_image(docker_client: docker.DockerClient, run_tag: str) -> str:
    """``epcore-test/busybox:<run_tag>``: a tiny image imported from a root filesystem holding
    a static /bin/busybox, its common applets and /tmp; removed at the end of the session."""
    if not BUSYBOX.exists():
        missing(f"{BUSYBOX} is missing: apt-get install busybox-static")
    if not statically_linked(BUSYBOX):
        missing(f"{BUSYBOX} is not statically linked: apt-get install busybox-static")
    repository, tag = "epcore-test/busybox", run_tag
    docker_client.api.import_image_from_data(
        busybox_rootfs(BUSYBOX),
        repository=repository,
        tag=tag,
        changes=[f"LABEL {TEST_RUN_LABEL}={run_tag}", 'CMD ["/bin/sh"]'],
    )
    return f"{repository}:{tag}"


@pytest.fixture(scope="session")
def registry(tmp_path_factory: pytest.TempPathFactory) -> Iterator[str]:
    """Debian's docker-registry serving ``127.0.0.1:<free port>`` from a temporary directory
    (deletes enabled); its address. Stopped at the end of the session."""
    with running_registry(tmp_path_factory.mktemp("registry")) as address:
        yield address


class PushImage:
    """Builds small images from the busybox image and pushes them to the test registry."""

    def __init__(
        self,
        client: docker.DockerClient,
        base_image: str,
        registry: str,
        run_tag: str,
        workspace: Path,
    ) -> None:
        self.client = client
        self.base_image = base_image
        self.registry = registry
        self.run_tag = run_tag
        self.workspace = workspace

    def __call__(self, tag_suffix: str, marker_bytes: int = 0) -> str:
        """Build an image holding ``/marker`` (``marker_bytes`` random bytes, so no two images
        share that layer), push it as ``<registry>/epcore-test-<run_tag>/<tag_suffix>:1``,
        remove the local copy and return that name, ready to be pulled."""
        if not _IMAGE_NAME_PART.fullmatch(tag_suffix):
            raise ValueError(f"{tag_suffix!r} is not a valid image name part ([a-z0-9._-])")
        repository = f"{self.registry}/epcore-test-{self.run_tag}/{tag_suffix}"
        context = self.workspace / tag_suffix
        context.mkdir(exist_ok=True)
        (context / "marker").write_bytes(os.urandom(marker_bytes))
        (context / "Dockerfile").write_text(
            f"FROM {self.base_image}\nCOPY marker /marker\nLABEL epcore.test_image={tag_suffix}\n"
        )
        self.client.images.build(
            path=str(context), tag=f"{repository}:1", network_mode="none", rm=True, forcerm=True
        )
        for report in self.client.images.push(repository, tag="1", stream=True, decode=True):
            if "error" in report:
                raise AssertionError(f"pushing {repository}:1 failed: {report['error']}")
        self.client.images.remove(f"{repository}:1")
        return f"{repository}:1"


@pytest.fixture(scope="session")
def push_image(
    docker_client: docker.DockerClient,
    busybox_image: str,
    registry: str,
    run_tag: str,
    tmp_path_factory: pytest.TempPathFactory,
) -> PushImage:
    """``push_image(tag_suffix, marker_bytes=0) -> name``: an image in the test registry that
    is not on the daemon (see :class:`PushImage`); pulled copies are removed with the session."""
    return PushImage(
        docker_client, busybox_image, registry, run_tag, tmp_path_factory.mktemp("images")
    )
