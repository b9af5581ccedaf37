"""End to end: docker universe jobs submitted with ``ep submit`` by a real unprivileged user
to a real personal pool (``ep run``), run in containers and copied back (must-show 1)."""

from __future__ import annotations

import io
import os
import re
import subprocess
import tarfile
import uuid
from pathlib import Path

import pytest
from docker_fixtures import BUSYBOX, BUSYBOX_APPLETS, TEST_RUN_LABEL, busybox_rootfs

from epcore.testing.pool import PoolProcess, submit_as

pytestmark = pytest.mark.system

#: A label of this test's pool only, so one test's leftovers do not fail the next.
CASE_LABEL = "epcore.test_case"

#: What ``ls /bin`` lists in the test image.
IMAGE_BIN_ENTRIES = len(BUSYBOX_APPLETS) + 1

IN_IMAGE = """\
universe = docker
docker_image = {image}
executable = /bin/sh
transfer_executable = false
arguments = "-c 'id -u; ls /bin | wc -l; echo made in the sandbox > made.txt'"
output = job.out
error = job.err
log = job.log
request_cpus = 1
request_memory = 64
queue
"""

TRANSFERRED = """\
universe = docker
docker_image = {image}
executable = job.sh
arguments = first second
output = job.out
error = job.err
log = job.log
request_cpus = 1
request_memory = 64
queue
"""

SCRIPT = """\
#!/bin/sh
echo "script $0 ran in $(pwd) with $1 $2"
echo written by the script > from_script.txt
"""


def _docker_pool(pool_factory, run_tag: str) -> tuple[PoolProcess, str]:
    """A started pool whose containers carry the run's label and a label of its own."""
    case = uuid.uuid4().hex[:8]
    labels = f"--label {TEST_RUN_LABEL}={run_tag} --label {CASE_LABEL}={case}"
    return pool_factory(f"DOCKER_EXTRA_ARGUMENTS = {labels}\n", cpus=2, memory=1024), case


def _wait_for_history(pool: PoolProcess) -> None:
    pool.wait_for(lambda: not pool.jobs(), 90, "the job to leave the queue")


def _labelled(docker_client, run_tag: str, case: str) -> list[str]:
    """The ids of the containers of one test's pool (the low-level listing, which does not
    inspect a container that may be gone by then)."""
    selector = {"label": [f"{TEST_RUN_LABEL}={run_tag}", f"{CASE_LABEL}={case}"]}
    return [str(entry["Id"]) for entry in docker_client.api.containers(all=True, filters=selector)]


def test_docker_job_from_a_user_runs_and_its_output_comes_back(
    pool_factory, slot_users, shared_dir, busybox_image, docker_client, run_tag
) -> None:
    """A docker job a real user submits runs as that user in the image, the file it writes
    in its sandbox and its stdout arrive in its Iwd, history shows exit code 0, the slots
    advertise HasDocker = true, and no container of the pool is left."""
    pool, case = _docker_pool(pool_factory, run_tag)
    status = pool.ep("status", "-l")
    assert status.status == 0, status.stderr
    assert re.search(r"^HasDocker = true$", status.stdout, re.MULTILINE), status.stdout[:3000]
    user = slot_users[0]
    home = submit_as(pool, user, shared_dir, IN_IMAGE.format(image=busybox_image))
    _wait_for_history(pool)
    history = pool.ep("q", "-history", "-af", "Owner", "JobStatus", "ExitCode", user=user)
    assert history.status == 0, history.stderr
    assert history.stdout.split() == [user.name, "4", "0"], history.stdout
    # The image's /bin holds busybox and its applets, the host's far more.
    assert (home / "job.out").read_text().split() == [str(user.uid), str(IMAGE_BIN_ENTRIES)]
    assert (home / "made.txt").read_text() == "made in the sandbox\n"
    assert (home / "made.txt").stat().st_uid == user.uid
    pool.wait_for(lambda: _labelled(docker_client, run_tag, case) == [], 20, "no container")


def test_transferred_script_runs_in_the_container(
    pool_factory, slot_users, shared_dir, busybox_image, docker_client, run_tag
) -> None:
    """A shell script submitted as the executable (transfer_executable left true) is copied
    into the sandbox and runs there in the container with its arguments."""
    pool, case = _docker_pool(pool_factory, run_tag)
    user = slot_users[1]
    home = shared_dir / f"home_{user.name}"
    home.mkdir()
    script = home / "job.sh"
    script.write_text(SCRIPT)
    script.chmod(0o755)
    os.chown(script, user.uid, user.gid)
    submit_as(pool, user, shared_dir, TRANSFERRED.format(image=busybox_image))
    _wait_for_history(pool)
    (job,) = pool.jobs(history=True)
    assert (job.evaluate("JobStatus"), job.evaluate("ExitCode")) == (4, 0), job
    output = (home / "job.out").read_text()
    found = re.fullmatch(r"script (\S+) ran in (\S+) with first second\n", output)
    assert found is not None, output
    ran, sandbox = found.groups()
    assert Path(ran).parent == Path(sandbox) and Path(sandbox).name.startswith("dir_"), output
    assert Path(sandbox) != home
    assert (home / "from_script.txt").read_text() == "written by the script\n"
    pool.wait_for(lambda: _labelled(docker_client, run_tag, case) == [], 20, "no container")


HOST_SHELL = """\
universe = docker
docker_image = {image}
executable = /bin/sh
arguments = "-c 'echo ran as $0; echo made by the host shell > made.txt'"
output = job.out
error = job.err
request_cpus = 1
request_memory = 64
queue
"""


def _libraries(program: str) -> list[Path]:
    """The shared objects ``program`` loads (its interpreter among them), as ldd lists them."""
    listed = subprocess.run(["ldd", program], check=True, capture_output=True, text=True).stdout
    return [Path(word) for word in listed.split() if word.startswith("/")]


@pytest.fixture
def image_with_host_libc(docker_client, run_tag: str) -> str:
    """The busybox test image plus the host shell's loader and C library, so that the host's
    (dynamically linked) /bin/sh runs in it; removed with the session's labelled images."""
    archive = io.BytesIO()
    with (
        tarfile.open(fileobj=io.BytesIO(busybox_rootfs(BUSYBOX))) as base,
        tarfile.open(fileobj=archive, mode="w") as tar,
    ):
        for member in base.getmembers():
            tar.addfile(member, base.extractfile(member) if member.isfile() else None)
        made: set[str] = set()
        for library in _libraries(os.path.realpath("/bin/sh")):
            parts = library.parts[1:]
            for depth in range(1, len(parts)):
                folder = "/".join(parts[:depth])
                if folder not in made and folder != "bin":
                    made.add(folder)
                    entry = tarfile.TarInfo(folder)
                    entry.type, entry.mode = tarfile.DIRTYPE, 0o755
                    tar.addfile(entry)
            data = library.resolve().read_bytes()
            entry = tarfile.TarInfo("/".join(parts))
            entry.mode, entry.size = 0o755, len(data)
            tar.addfile(entry, io.BytesIO(data))
    repository, tag = "epcore-test/busybox-libc", run_tag
    docker_client.api.import_image_from_data(
        archive.getvalue(),
        repository=repository,
        tag=tag,
        changes=[f"LABEL {TEST_RUN_LABEL}={run_tag}", 'CMD ["/bin/sh"]'],
    )
    return f"{repository}:{tag}"


def test_a_symlinked_executable_is_transferred_and_runs(
    pool_factory, slot_users, shared_dir, image_with_host_libc, docker_client, run_tag
) -> None:
    """``executable = /bin/sh`` (a link to dash on Debian) is read through as the user and
    copied into the sandbox as a file: the job runs it in the container, exits 0, and its
    output comes back (issue 18, finding 13: it was held with "Too many levels of symbolic
    links")."""
    assert os.path.islink("/bin/sh"), "the test needs /bin/sh to be a link, as on Debian"
    pool, case = _docker_pool(pool_factory, run_tag)
    user = slot_users[2]
    home = submit_as(pool, user, shared_dir, HOST_SHELL.format(image=image_with_host_libc))
    _wait_for_history(pool)
    (job,) = pool.jobs(history=True)
    assert (job.evaluate("JobStatus"), job.evaluate("ExitCode")) == (4, 0), job
    ran = (home / "job.out").read_text().split()
    assert ran[:2] == ["ran", "as"] and Path(ran[2]).name == "sh", ran
    assert (home / "made.txt").read_text() == "made by the host shell\n"
    pool.wait_for(lambda: _labelled(docker_client, run_tag, case) == [], 20, "no container")
