"""The runtime run for real (the stand-in over bubblewrap, or a real apptainer): jobs in SIF and
sandbox images as an unprivileged user, the knobs' effects seen from inside the container,
exit codes, the pre-job test, suspend, stop and release."""

from __future__ import annotations

import os
import signal
import time
from pathlib import Path

import pytest
from apptainer_fixtures import OS_RELEASE
from apptainer_helpers import (
    LOG,
    NOBODY,
    job_ad,
    make_runtime,
    request_for,
    run_to_end,
    sandbox_dir,
    wait_for,
)

from epcore.api import HoldCode, VacateCode
from epcore.classad import ClassAd
from epcore.errors import JobSetupError
from epcore.testing.system import wait_until

pytestmark = pytest.mark.system

SHOW = "cat /etc/os-release; id -u; pwd; echo made inside > made.txt"


@pytest.mark.parametrize("kind", ["sif", "sandbox"])
def test_job_runs_in_its_image_as_its_user(
    kind: str,
    runtime_program: str,
    sif_image: str,
    sandbox_image: str,
    tmp_path: Path,
    as_root: None,
) -> None:
    """A job in a SIF or a sandbox image sees the image's /etc/os-release, runs as its own
    uid in its scratch directory, and what it writes there lands in the host's sandbox."""
    image = sif_image if kind == "sif" else sandbox_image
    runtime = make_runtime(runtime_program, tmp_path)
    with sandbox_dir() as sandbox:
        done = run_to_end(runtime, request_for(sandbox, job_ad(image), ("/bin/sh", "-c", SHOW)))
        assert (done.code, done.signal) == (0, None), done.stderr
        lines = done.stdout.splitlines()
        assert "\n".join(lines[:3]) + "\n" == OS_RELEASE
        assert lines[3:] == [str(NOBODY), str(sandbox)]
        assert (sandbox / "made.txt").read_text() == "made inside\n"
        assert (sandbox / "made.txt").stat().st_uid == NOBODY


def test_exit_code_is_the_jobs(
    runtime_program: str, sandbox_image: str, tmp_path: Path, as_root: None
) -> None:
    """The runtime passes the job's exit status on unchanged."""
    runtime = make_runtime(runtime_program, tmp_path)
    with sandbox_dir() as sandbox:
        done = run_to_end(
            runtime, request_for(sandbox, job_ad(sandbox_image), ("/bin/sh", "-c", "exit 7"))
        )
    assert done.code == 7


def test_image_root_is_read_only(
    runtime_program: str, sandbox_image: str, tmp_path: Path, as_root: None
) -> None:
    """The job cannot write into its image, only into its scratch directory and /tmp."""
    script = "touch /etc/x 2>/dev/null && echo wrote || echo refused; touch /tmp/y && echo tmp"
    runtime = make_runtime(runtime_program, tmp_path)
    with sandbox_dir() as sandbox:
        done = run_to_end(
            runtime, request_for(sandbox, job_ad(sandbox_image), ("/bin/sh", "-c", script))
        )
    assert done.stdout.split() == ["refused", "tmp"]
    assert not os.path.exists(os.path.join(sandbox_image, "etc", "x"))


def test_environment_reaches_the_job_without_home(
    runtime_program: str, sandbox_image: str, tmp_path: Path, as_root: None
) -> None:
    """The job's variables survive -C (passed with the runtime's prefix); HOME is the scratch
    directory, not the job's; the runtime's own APPTAINER_ variables from the job are dropped."""
    runtime = make_runtime(runtime_program, tmp_path)
    env = (("COLOUR", "blue"), ("HOME", "/nowhere"), ("APPTAINER_BIND", "/etc"))
    with sandbox_dir() as sandbox:
        request = request_for(
            sandbox,
            job_ad(sandbox_image),
            ("/bin/sh", "-c", 'echo "$COLOUR $HOME"'),
            environment=env,
        )
        done = run_to_end(runtime, request)
    assert done.stdout.split() == ["blue", str(sandbox)]


def test_missing_image_fails_the_pre_job_test_with_a_requeue(
    runtime_program: str, tmp_path: Path, as_root: None
) -> None:
    """With SINGULARITY_RUN_TEST_BEFORE_JOB (the default) a missing image fails the pre-job test:
    code 45, subcode -1000 (HTCondor 25.x: the job goes back to idle) and the runtime's words."""
    runtime = make_runtime(runtime_program, tmp_path)
    with sandbox_dir() as sandbox, pytest.raises(JobSetupError) as raised:
        runtime.start(request_for(sandbox, job_ad("/no/such/image.sif"), ("/bin/true",)), LOG)
    assert (raised.value.hold_code, raised.value.hold_subcode) == (
        HoldCode.SINGULARITY_TEST_FAILED,
        -1000,
    )
    assert raised.value.reason.startswith("Singularity test failed:")
    assert "/no/such/image.sif" in raised.value.reason


def test_without_the_pre_job_test_a_missing_image_is_a_runtime_exit(
    runtime_program: str, tmp_path: Path, as_root: None
) -> None:
    """SINGULARITY_RUN_TEST_BEFORE_JOB = false: the job starts, the runtime fails with 255 and
    says why on the job's stderr, as in HTCondor."""
    runtime = make_runtime(runtime_program, tmp_path, {"SINGULARITY_RUN_TEST_BEFORE_JOB": "false"})
    with sandbox_dir() as sandbox:
        done = run_to_end(
            runtime, request_for(sandbox, job_ad("/no/such/image.sif"), ("/bin/true",))
        )
    assert done.code == 255
    assert "/no/such/image.sif" in done.stderr


def test_broken_runtime_requeues_with_the_reason(tmp_path: Path, as_root: None) -> None:
    """A SINGULARITY that does not exist: the job is not started and goes back to idle
    (JOB_NOT_STARTED) with the reason."""
    runtime = make_runtime("/no/such/runtime/bin/runc", tmp_path)
    with sandbox_dir() as sandbox, pytest.raises(JobSetupError) as raised:
        runtime.start(request_for(sandbox, job_ad("/x.sif"), ("/bin/true",)), LOG)
    assert raised.value.hold_code == VacateCode.JOB_NOT_STARTED
    assert "/no/such/runtime/bin/runc does not exist" in raised.value.reason


def test_suspend_continue_and_stop(
    runtime_program: str, sandbox_image: str, tmp_path: Path, as_root: None
) -> None:
    """freeze stops every process of the job, thaw lets it go on, stop ends it with the signal,
    and release leaves no process behind."""
    runtime = make_runtime(runtime_program, tmp_path)
    script = "while :; do echo tick >> ticks; sleep 0.05; done"
    with sandbox_dir() as sandbox:
        container = runtime.start(
            request_for(sandbox, job_ad(sandbox_image), ("/bin/sh", "-c", script)), LOG
        )
        try:
            ticks = sandbox / "ticks"
            assert wait_until(lambda: ticks.exists() and ticks.stat().st_size > 0, 20)
            pids = container.pids()
            assert len(pids) >= 2
            assert container.freeze()
            time.sleep(0.3)
            frozen = ticks.stat().st_size
            time.sleep(0.4)
            assert ticks.stat().st_size == frozen
            assert container.thaw()
            assert wait_until(lambda: ticks.stat().st_size > frozen, 10)
            container.stop(signal.SIGTERM, 5.0)
            code, signum = wait_for(container)
            assert code is not None or signum is not None
        finally:
            container.release()
        assert wait_until(lambda: not any(os.path.exists(f"/proc/{p}") for p in pids), 10)


def test_stop_kills_after_the_grace_time(
    runtime_program: str, sandbox_image: str, tmp_path: Path, as_root: None
) -> None:
    """A job that ignores the stop signal is killed once the grace time is over."""
    runtime = make_runtime(runtime_program, tmp_path)
    script = "trap '' TERM; echo ready > ready; while :; do sleep 0.05; done"
    with sandbox_dir() as sandbox:
        container = runtime.start(
            request_for(sandbox, job_ad(sandbox_image), ("/bin/sh", "-c", script)), LOG
        )
        try:
            assert wait_until(lambda: (sandbox / "ready").exists(), 20)
            started = time.monotonic()
            container.stop(signal.SIGTERM, 0.5)
            wait_for(container, 15)
            assert time.monotonic() - started >= 0.4
        finally:
            container.release()


def test_usage_is_measured(
    runtime_program: str, sandbox_image: str, tmp_path: Path, as_root: None
) -> None:
    """While the job runs its memory is seen; after its end its CPU time is reported."""
    runtime = make_runtime(runtime_program, tmp_path)
    with sandbox_dir() as sandbox:
        container = runtime.start(
            request_for(
                sandbox,
                job_ad(sandbox_image),
                ("/bin/sh", "-c", "i=0; while [ $i -lt 20000 ]; do i=$((i+1)); done"),
            ),
            LOG,
        )
        try:
            running = container.usage()
            wait_for(container)
            ended = container.usage()
        finally:
            container.release()
    assert running.memory_current is not None
    assert ended.user_cpu is not None and ended.user_cpu + (ended.system_cpu or 0) > 0


def test_runs_selects_image_jobs_and_singularity_job(runtime_program: str, tmp_path: Path) -> None:
    """Jobs wanting an image always run here; others only when SINGULARITY_JOB says so."""
    plain = ClassAd()
    plain["SingularityImage"] = "/x.sif"
    assert make_runtime(runtime_program, tmp_path).runs(job_ad("/x.sif"))
    assert not make_runtime(runtime_program, tmp_path).runs(plain)
    legacy = make_runtime(
        runtime_program, tmp_path, {"SINGULARITY_JOB": "!isUndefined(TARGET.SingularityImage)"}
    )
    assert legacy.runs(plain)
    assert not legacy.runs(ClassAd())


def test_runs_evaluates_singularity_job_with_the_slot(runtime_program: str, tmp_path: Path) -> None:
    """SINGULARITY_JOB sees the slot's ad as MY when the caller gives it, as in HTCondor."""
    runtime = make_runtime(
        runtime_program, tmp_path, {"SINGULARITY_JOB": "MY.ContainerSlot =?= true"}
    )
    slot = ClassAd()
    slot["ContainerSlot"] = True
    assert runtime.runs(ClassAd(), slot)
    assert not runtime.runs(ClassAd(), ClassAd())
    assert not runtime.runs(ClassAd())
