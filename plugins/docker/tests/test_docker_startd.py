"""Docker jobs through a real startd: an in-process startd (claim, activate, the loop turned by
the test) for exit codes, memory, vacate, suspension and setup failures; a real ``ep startd``
process for the containers a starter killed with ``kill -9`` leaves behind."""

from __future__ import annotations

import os
import shutil
import signal
import tempfile
import time
import uuid
from collections.abc import Callable, Iterator
from pathlib import Path

import attrs
import docker
import psutil
import pytest
from docker_fixtures import TEST_RUN_LABEL

from epcore.classad import ClassAd
from epcore.testing.startd import BASE_CONFIG, InProcessStartd, StartdProcess
from epcore.testing.system import SlotUser

pytestmark = pytest.mark.system

#: A label of this test's startd only, so one test's leftovers do not fail the next.
CASE_LABEL = "epcore.test_case"


@attrs.frozen
class EmbeddedStartd:
    """An in-process startd of the test, the label of its containers, and the job's Iwd and
    user."""

    in_process: InProcessStartd
    case: str
    iwd: Path
    user: SlotUser

    def turn_until(self, check: Callable[[], bool], timeout: float, what: str) -> None:
        """Turn the startd's loop until ``check`` holds."""
        self.in_process.turn_until(check, timeout, what)

    def run(self, job_text: str, slot: str = "slot1") -> None:
        """Claim ``slot`` for the job and activate it."""
        self.in_process.run(job_text, slot)

    def wait_gone(self, client: docker.DockerClient, run_tag: str) -> None:
        """Turn the loop until no container of this startd is left (the starter removes it
        after it reported the job's end)."""
        self.turn_until(lambda: _containers(client, run_tag, self.case) == [], 20, "no container")

    def result(self, timeout: float = 60.0) -> ClassAd:
        """The first job result (the loop turned until there is one)."""
        return self.in_process.result(timeout)


def _job(user: SlotUser, iwd: Path, image: str, script: str, memory: int = 16) -> str:
    """A docker job running ``/bin/sh -c script`` in ``image`` (no ' in ``script``)."""
    script = script.replace('"', '\\"')
    return (
        f'[ ClusterId = 7; ProcId = 0; Owner = "{user.name}"; WantDocker = true;'
        f' DockerImage = "{image}"; Cmd = "/bin/sh"; TransferExecutable = false;'
        f' Arguments = "-c \'{script}\'"; Iwd = "{iwd}"; Out = "job.out"; Err = "job.err";'
        f' UserLog = "job.log"; RequestCpus = 1; RequestMemory = {memory}; RequestDisk = 1024 ]'
    )


def _containers(client: docker.DockerClient, run_tag: str, case: str) -> list[str]:
    """The states (running, paused, exited...) of the containers of one test's startd.

    The low-level listing: the high-level one inspects each container after listing it,
    which fails for a container removed in between.
    """
    selector = {"label": [f"{TEST_RUN_LABEL}={run_tag}", f"{CASE_LABEL}={case}"]}
    return [str(entry["State"]) for entry in client.api.containers(all=True, filters=selector)]


@pytest.fixture
def embedded(
    base_cgroup: str, run_tag: str, slot_users: tuple[SlotUser, ...]
) -> Iterator[Callable[..., EmbeddedStartd]]:
    """``embedded(extra_config="", memory=512)``: an opened in-process startd of two static
    slots (each half of ``memory``) whose containers carry the run's label.

    Its directory is outside pytest's base directory (0700), which slot users cannot reach.
    """
    opened: list[EmbeddedStartd] = []
    top = Path(tempfile.mkdtemp(prefix="ep_docker_startd_"))
    top.chmod(0o711)

    def make(extra: str = "", memory: int = 512) -> EmbeddedStartd:
        local = top / f"startd{len(opened)}"
        local.mkdir()
        local.chmod(0o755)
        iwd = top / f"iwd{len(opened)}"
        iwd.mkdir()
        user = slot_users[0]
        os.chown(iwd, user.uid, user.gid)
        case = uuid.uuid4().hex[:8]
        cgroup = f"{base_cgroup}/docker_{case}"
        text = BASE_CONFIG.format(local=local, cpus=2, memory=memory, cgroup=cgroup)
        text += (
            "NUM_SLOTS = 2\n"
            f"DOCKER_EXTRA_ARGUMENTS = --label {TEST_RUN_LABEL}={run_tag}"
            f" --label {CASE_LABEL}={case}\n" + extra
        )
        (local / "condor_config").write_text(text)
        made = EmbeddedStartd(InProcessStartd.open(str(local / "condor_config")), case, iwd, user)
        opened.append(made)
        return made

    yield make
    for made in opened:
        made.in_process.close()
    shutil.rmtree(top, ignore_errors=True)


def test_exit_code_is_recorded_and_the_container_removed(
    embedded, busybox_image, docker_client, run_tag
) -> None:
    """A docker job that exits with status 3 is recorded as exited with ExitCode 3, its
    stdout and its file come back to its Iwd, and its container is removed."""
    ep = embedded()
    ep.run(_job(ep.user, ep.iwd, busybox_image, "echo hello; echo made > made.txt; exit 3"))
    result = ep.result()
    assert result.evaluate("JobOutcome") == "exited"
    assert result.evaluate("ExitCode") == 3
    assert (ep.iwd / "job.out").read_text() == "hello\n"
    assert (ep.iwd / "made.txt").read_text() == "made\n"
    assert (ep.iwd / "made.txt").stat().st_uid == ep.user.uid
    assert "Job terminated." in (ep.iwd / "job.log").read_text()
    ep.wait_gone(docker_client, run_tag)


def test_job_over_its_memory_is_held_with_code_34(
    embedded, busybox_image, docker_client, run_tag
) -> None:
    """A job that touches 64 MB in a 16 MB slot is killed by the kernel, held with
    HoldReasonCode 34, and its container is removed."""
    ep = embedded(memory=32)
    ep.run(_job(ep.user, ep.iwd, busybox_image, "dd if=/dev/zero of=/dev/null bs=64M count=1"))
    result = ep.result()
    assert result.evaluate("JobOutcome") == "held", result
    assert result.evaluate("HoldReasonCode") == 34, result
    ep.wait_gone(docker_client, run_tag)


def test_vacate_stops_a_job_that_ignores_sigterm(
    embedded, busybox_image, docker_client, run_tag
) -> None:
    """A vacated job that ignores SIGTERM is killed once MachineMaxVacateTime (2 s) is up,
    recorded as evicted, and its container is removed."""
    ep = embedded("MachineMaxVacateTime = 2\nKILLING_TIMEOUT = 5\n")
    ep.run(_job(ep.user, ep.iwd, busybox_image, 'trap "" TERM; echo ready; sleep 600'))
    ep.turn_until(
        lambda: _containers(docker_client, run_tag, ep.case) == ["running"],
        30,
        "the container to run",
    )
    time.sleep(0.5)  # the shell has set its trap
    vacated = time.monotonic()
    ep.in_process.startd.vacate("slot1")
    result = ep.result()
    took = time.monotonic() - vacated
    assert result.evaluate("JobOutcome") == "evicted", result
    assert 1.5 <= took < 10, took
    ep.wait_gone(docker_client, run_tag)


def test_policy_suspension_pauses_the_container_then_continues_it(
    embedded, busybox_image, docker_client, run_tag
) -> None:
    """When the policy suspends a docker job its container is paused, and when the policy
    continues it the container runs again."""
    ep = embedded(
        "WANT_SUSPEND = True\n"
        'SUSPEND = Activity == "Busy" && (time() - EnteredCurrentActivity) > 1\n'
        'CONTINUE = Activity == "Suspended" && (time() - EnteredCurrentActivity) > 2\n'
    )
    ep.run(_job(ep.user, ep.iwd, busybox_image, "sleep 600"))

    def status() -> list[str]:
        return _containers(docker_client, run_tag, ep.case)

    ep.turn_until(lambda: status() == ["running"], 30, "the container to run")
    ep.turn_until(lambda: status() == ["paused"], 30, "the container to be paused")
    ep.turn_until(lambda: status() == ["running"], 30, "the container to continue")
    ep.in_process.startd.vacate("slot1", fast=True)
    assert ep.result().evaluate("JobOutcome") == "evicted"
    ep.wait_gone(docker_client, run_tag)


def test_image_that_cannot_be_pulled_holds_the_job(
    embedded, busybox_image, registry, run_tag
) -> None:
    """A job whose image is in no registry is held with code 6 and a reason saying the image
    cannot be pulled."""
    ep = embedded()
    image = f"{registry}/epcore-test-{run_tag}/absent:1"
    ep.run(_job(ep.user, ep.iwd, image, "true"))
    result = ep.result()
    assert result.evaluate("JobOutcome") == "held", result
    assert result.evaluate("HoldReasonCode") == 6
    assert "Cannot pull docker image" in str(result.evaluate("HoldReason"))


def test_unreachable_dockerd_means_no_docker_jobs(embedded, busybox_image) -> None:
    """With DOCKER_URL pointing nowhere the slots advertise HasDocker = false with a reason,
    the startd keeps running, and a docker job activated anyway is held with code 6."""
    ep = embedded("DOCKER_URL = unix:///nonexistent/epcore/docker.sock\n")
    ads = ep.in_process.startd.query()
    assert [ad.evaluate("HasDocker") for ad in ads] == [False, False]
    assert "dockerd does not answer" in str(ads[0].evaluate("DockerOfflineReason"))
    ep.run(_job(ep.user, ep.iwd, busybox_image, "true"))
    result = ep.result()
    assert result.evaluate("JobOutcome") == "held", result
    assert result.evaluate("HoldReasonCode") == 6
    assert not ep.in_process.loop.finished
    assert len(ep.in_process.startd.query()) == 2


# -- a real ``ep startd`` and a starter killed with kill -9 -------------------------------


def _starter_of(startd: StartdProcess) -> psutil.Process:
    """The startd's one starter: the process below the startd (a child of its zygote) that
    its claims file names."""
    assert startd.process is not None
    saved = startd.saved_claims()
    assert len(saved) == 1, saved
    below = psutil.Process(startd.process.pid).children(recursive=True)
    children = {p.pid: p for p in below}
    assert saved[0].pid in children, (saved, children)
    return children[saved[0].pid]


@pytest.mark.parametrize("startd_dies_too", [False, True], ids=["starter", "starter+startd"])
def test_container_of_a_killed_starter_is_removed(
    startd_factory, slot_users, busybox_image, docker_client, run_tag, startd_dies_too
) -> None:
    """When a docker job's starter is killed with kill -9 the startd removes the job's
    container; when the startd is killed first, the startd started next removes the orphaned
    container at its start; either says so in StartLog."""
    case = uuid.uuid4().hex[:8]
    startd = startd_factory(
        f"DOCKER_EXTRA_ARGUMENTS = --label {TEST_RUN_LABEL}={run_tag} --label {CASE_LABEL}={case}\n"
    )
    user = slot_users[1]
    iwd = startd.directory / "iwd"
    iwd.mkdir()
    os.chown(iwd, user.uid, user.gid)
    startd.run_job(_job(user, iwd, busybox_image, "sleep 600", memory=64))
    startd.wait_for(
        lambda: _containers(docker_client, run_tag, case) == ["running"],
        30,
        "the job's container to run",
    )
    starter = _starter_of(startd)
    if startd_dies_too:
        startd.kill9()
    os.kill(starter.pid, signal.SIGKILL)
    if startd_dies_too:
        starter.wait(10)
        assert _containers(docker_client, run_tag, case) == ["running"]
        startd.start()
    startd.wait_for(
        lambda: _containers(docker_client, run_tag, case) == [], 30, "the container to go"
    )
    # The startd notes the removal once dockerd has answered, a moment after the container
    # is gone from the listing (longer on a loaded machine).
    startd.wait_for(
        lambda: "docker: removed the container of" in startd.log(), 10, "the removal's log line"
    )
    startd.check_alive()
