"""The runtime, images and registry the apptainer plugin's tests use.

``runtime_program`` is a real ``apptainer`` (or ``singularity``) when one is on PATH, else the
stand-in of ``standin/`` copied where every user can run it (it needs bubblewrap, mksquashfs,
unsquashfs and siftool). The images are real: a root filesystem of a static busybox and an
``/etc/os-release`` of its own, as a sandbox directory and as a SIF the runtime builds from it,
and the same pushed to a docker-registry on 127.0.0.1. What is missing skips the tests with the
reason (fails under CI=true, see epcore.testing.system.missing).
"""

from __future__ import annotations

import gzip
import hashlib
import io
import json
import os
import shutil
import subprocess
import tarfile
import tempfile
import urllib.error
import urllib.request
from collections.abc import Iterator
from importlib.metadata import entry_points
from pathlib import Path

import pytest

from epcore.testing.registry import running_registry
from epcore.testing.system import missing

HERE = Path(__file__).resolve().parent
PLUGIN_ROOT = HERE.parent
STANDIN = HERE / "standin" / "apptainer"
STANDIN_MODULE = HERE / "standin" / "apptainer_standin.py"
#: What the test image's /etc/os-release says (the job prints it).
OS_RELEASE = 'NAME="epcore test image"\nID=epcore-test\nVERSION_ID="1"\n'
#: The busybox applets the image's /bin has.
APPLETS = ("sh", "cat", "id", "ls", "echo", "sleep", "touch", "pwd", "env", "grep", "wc", "true")


def _tools_missing() -> str | None:
    for tool in ("bwrap", "mksquashfs", "unsquashfs", "siftool"):
        if shutil.which(tool) is None:
            packages = "bubblewrap squashfs-tools siftool"
            return f"the apptainer stand-in needs {tool} (apt-get install {packages})"
    return None


def install_standin(directory: Path) -> Path:
    """Copy the stand-in into ``directory`` (its command, its module compiled for the
    interpreter it runs with, and a cache for the SIFs it unpacks, one directory per user);
    the command's path."""
    program = directory / "apptainer"
    shutil.copy(STANDIN, program)
    program.chmod(0o755)
    module = directory / STANDIN_MODULE.name
    shutil.copy(STANDIN_MODULE, module)
    module.chmod(0o644)
    interpreter = STANDIN.read_text().splitlines()[0].removeprefix("#!").split()[0]
    subprocess.run([interpreter, "-m", "py_compile", str(module)], check=True)
    (directory / ".cache").mkdir()
    (directory / ".cache").chmod(0o1777)
    return program


@pytest.fixture(scope="session")
def runtime_dir() -> Iterator[Path]:
    """A directory on no one's PATH holding ``apptainer`` and ``singularity``: links to the
    real runtime when one is installed, else copies of the stand-in, runnable by every user."""
    directory = Path(tempfile.mkdtemp(prefix="ep_apptainer_bin_"))
    directory.chmod(0o755)
    try:
        real = shutil.which("apptainer") or shutil.which("singularity")
        if real is not None:
            for name in ("apptainer", "singularity"):
                (directory / name).symlink_to(real)
        else:
            problem = _tools_missing()
            if problem is not None:
                missing(problem)
            install_standin(directory)
            (directory / "singularity").symlink_to("apptainer")
        yield directory
    finally:
        shutil.rmtree(directory, ignore_errors=True)


@pytest.fixture(scope="session")
def runtime_program(runtime_dir: Path) -> str:
    """The ``apptainer`` program the tests configure as SINGULARITY."""
    return str(runtime_dir / "apptainer")


@pytest.fixture(scope="session")
def images_dir() -> Iterator[Path]:
    """A world-readable directory for the session's images."""
    directory = Path(tempfile.mkdtemp(prefix="ep_apptainer_images_"))
    directory.chmod(0o755)
    try:
        yield directory
    finally:
        shutil.rmtree(directory, ignore_errors=True)


def write_rootfs(root: Path) -> Path:
    """A tiny root filesystem: a static busybox with :data:`APPLETS` and an os-release."""
    busybox = shutil.which("busybox")
    if busybox is None:
        missing("the test image needs busybox-static (apt-get install busybox-static)")
        raise AssertionError("unreachable")
    for name in ("bin", "etc", "tmp", "var/tmp", "proc", "dev", "sys", "srv/target"):
        (root / name).mkdir(parents=True, exist_ok=True)
    shutil.copy(busybox, root / "bin" / "busybox")
    for applet in APPLETS:
        (root / "bin" / applet).symlink_to("busybox")
    (root / "etc" / "os-release").write_text(OS_RELEASE)
    for path in [root, *root.rglob("*")]:
        if not path.is_symlink():
            path.chmod(0o755)
    return root


@pytest.fixture(scope="session")
def sandbox_image(images_dir: Path) -> str:
    """The test image as a sandbox directory."""
    return str(write_rootfs(images_dir / "sandbox"))


@pytest.fixture(scope="session")
def sif_image(images_dir: Path, sandbox_image: str, runtime_program: str) -> str:
    """The test image as a SIF, built by the runtime from the sandbox."""
    path = images_dir / "os.sif"
    done = subprocess.run(
        [runtime_program, "build", "--force", str(path), sandbox_image],
        capture_output=True,
        text=True,
        check=False,
    )
    assert done.returncode == 0, done.stderr
    path.chmod(0o644)
    return str(path)


@pytest.fixture(scope="session")
def plugin_visible(tmp_path_factory: pytest.TempPathFactory) -> Iterator[None]:
    """Make ``ep`` processes find the plugin: when epcore-apptainer is not installed, a
    distribution record with its entry point and the plugin's directory go on PYTHONPATH."""
    if any(e.name == "apptainer" for e in entry_points(group="epcore")):
        yield
        return
    site = tmp_path_factory.mktemp("apptainer_site")
    record = site / "epcore_apptainer_tests-0.dist-info"
    record.mkdir()
    (record / "METADATA").write_text(
        "Metadata-Version: 2.1\nName: epcore-apptainer-tests\nVersion: 0\n"
    )
    (record / "entry_points.txt").write_text("[epcore]\napptainer = epcore_apptainer.plugin\n")
    for path in (site, *site.parents):
        if path == Path(tempfile.gettempdir()):
            break
        path.chmod(0o755)
    before = os.environ.get("PYTHONPATH")
    parts = [str(PLUGIN_ROOT), str(site), *(before.split(os.pathsep) if before else [])]
    os.environ["PYTHONPATH"] = os.pathsep.join(parts)
    try:
        yield
    finally:
        if before is None:
            os.environ.pop("PYTHONPATH", None)
        else:
            os.environ["PYTHONPATH"] = before


# -- a registry ------------------------------------------------------------------------


@pytest.fixture(scope="session")
def registry(tmp_path_factory: pytest.TempPathFactory) -> Iterator[str]:
    """Debian's docker-registry on ``127.0.0.1:<free port>``; its address."""
    with running_registry(tmp_path_factory.mktemp("registry")) as address:
        yield address


def _upload(address: str, repository: str, data: bytes) -> str:
    """Push one blob; its digest."""
    digest = "sha256:" + hashlib.sha256(data).hexdigest()
    start = urllib.request.Request(
        f"http://{address}/v2/{repository}/blobs/uploads/", method="POST", data=b""
    )
    with urllib.request.urlopen(start, timeout=30) as response:
        location = response.headers["Location"]
    if location.startswith("/"):
        location = f"http://{address}{location}"
    separator = "&" if "?" in location else "?"
    put = urllib.request.Request(
        f"{location}{separator}digest={digest}",
        method="PUT",
        data=data,
        headers={"Content-Type": "application/octet-stream"},
    )
    with urllib.request.urlopen(put, timeout=30):
        pass
    return digest


def push_rootfs(address: str, repository: str, tag: str, root: Path) -> str:
    """Push ``root`` as a one-layer image over the registry's HTTP API (no docker needed);
    its ``docker://`` reference."""
    layer = io.BytesIO()
    with tarfile.open(fileobj=layer, mode="w") as tar:
        tar.add(root, arcname=".")
    compressed = gzip.compress(layer.getvalue())
    config = json.dumps(
        {
            "architecture": "amd64",
            "os": "linux",
            "rootfs": {
                "type": "layers",
                "diff_ids": ["sha256:" + hashlib.sha256(layer.getvalue()).hexdigest()],
            },
            "config": {"Cmd": ["/bin/sh"]},
        }
    ).encode()
    config_digest = _upload(address, repository, config)
    layer_digest = _upload(address, repository, compressed)
    manifest = json.dumps(
        {
            "schemaVersion": 2,
            "mediaType": "application/vnd.docker.distribution.manifest.v2+json",
            "config": {
                "mediaType": "application/vnd.docker.container.image.v1+json",
                "size": len(config),
                "digest": config_digest,
            },
            "layers": [
                {
                    "mediaType": "application/vnd.docker.image.rootfs.diff.tar.gzip",
                    "size": len(compressed),
                    "digest": layer_digest,
                }
            ],
        }
    ).encode()
    put = urllib.request.Request(
        f"http://{address}/v2/{repository}/manifests/{tag}",
        method="PUT",
        data=manifest,
        headers={"Content-Type": "application/vnd.docker.distribution.manifest.v2+json"},
    )
    with urllib.request.urlopen(put, timeout=30):
        pass
    return f"docker://{address}/{repository}:{tag}"


@pytest.fixture(scope="session")
def docker_image(registry: str, sandbox_image: str) -> str:
    """The test image in the local registry, as a ``docker://`` reference."""
    return push_rootfs(registry, "epcore-test/os", "1", Path(sandbox_image))
