"""Each knob's effect seen from inside a real container (the stand-in or a real apptainer)."""

from __future__ import annotations

import os
import uuid
from pathlib import Path

import pytest
from apptainer_helpers import (
    LOG,
    job_ad,
    make_runtime,
    request_for,
    run_to_end,
    sandbox_dir,
    wait_for,
)
from epcore_apptainer.launcher import MARKER

from epcore.api import HoldCode
from epcore.classad import ClassAd
from epcore.errors import JobSetupError

pytestmark = pytest.mark.system


def _run(runtime_program: str, spool: Path, image: str, script: str, **knobs: str) -> str:
    runtime = make_runtime(runtime_program, spool, knobs)
    with sandbox_dir() as sandbox:
        done = run_to_end(runtime, request_for(sandbox, job_ad(image), ("/bin/sh", "-c", script)))
        assert done.code == 0, done.stderr
        return done.stdout.replace(str(sandbox), "<scratch>")


def test_target_dir(
    runtime_program: str, sandbox_image: str, tmp_path: Path, as_root: None
) -> None:
    """SINGULARITY_TARGET_DIR: the job starts in that directory, which is its scratch directory."""
    out = _run(
        runtime_program, tmp_path, sandbox_image, "pwd; echo x > f; ls /srv/target | grep -v job",
        SINGULARITY_TARGET_DIR="/srv/target",
    )  # fmt: skip
    assert out.split() == ["/srv/target", "f"]


def test_bind_expr(runtime_program: str, sandbox_image: str, tmp_path: Path, as_root: None) -> None:
    """SINGULARITY_BIND_EXPR: a host directory appears in the container (read-only with :ro);
    a bind whose source is missing is skipped and the job still runs."""
    shared = Path(f"/tmp/ep_apptainer_share_{uuid.uuid4().hex[:8]}")
    shared.mkdir()
    try:
        (shared / "note").write_text("shared\n")
        shared.chmod(0o755)
        (shared / "note").chmod(0o644)
        out = _run(
            runtime_program, tmp_path, sandbox_image,
            "cat /data/note; touch /data/x 2>/dev/null || echo ro",
            SINGULARITY_BIND_EXPR=f'"{shared}:/data:ro /no/such/dir"',
        )  # fmt: skip
    finally:
        for entry in shared.iterdir():
            entry.unlink()
        shared.rmdir()
    assert out.split() == ["shared", "ro"]


def test_mount_under_scratch(
    runtime_program: str, sandbox_image: str, tmp_path: Path, as_root: None
) -> None:
    """MOUNT_UNDER_SCRATCH: the job's /tmp is its own, not the host's."""
    name = f"ep_apptainer_{uuid.uuid4().hex[:8]}"
    out = _run(
        runtime_program, tmp_path, sandbox_image, f"echo x > /tmp/{name}; ls /tmp",
        MOUNT_UNDER_SCRATCH="/tmp",
    )  # fmt: skip
    # Beside the job's file only the way to its scratch directory, which is under /tmp here.
    assert name in out.split()
    assert not os.path.exists(f"/tmp/{name}")


@pytest.mark.parametrize("use", ["true", "false"])
def test_use_pid_namespaces(
    use: str, runtime_program: str, sandbox_image: str, tmp_path: Path, as_root: None
) -> None:
    """SINGULARITY_USE_PID_NAMESPACES: with it the job sees only its own few processes,
    without it the machine's."""
    out = _run(
        runtime_program, tmp_path, sandbox_image, "ls /proc | grep -c '^[0-9]'",
        SINGULARITY_USE_PID_NAMESPACES=use,
    )  # fmt: skip
    seen = int(out.strip())
    assert (seen < 10) is (use == "true"), seen


def test_extra_arguments_reach_the_runtime(
    runtime_program: str, sandbox_image: str, tmp_path: Path, as_root: None
) -> None:
    """SINGULARITY_EXTRA_ARGUMENTS are passed to the runtime (here --env sets a variable)."""
    out = _run(
        runtime_program, tmp_path, sandbox_image, "echo $FROM_EXTRA",
        SINGULARITY_EXTRA_ARGUMENTS='"--env FROM_EXTRA=yes"',
    )  # fmt: skip
    assert out.split() == ["yes"]


def test_extra_arguments_the_runtime_refuses(
    runtime_program: str, sandbox_image: str, tmp_path: Path, as_root: None
) -> None:
    """Extra arguments the runtime cannot honour fail the pre-job test: the job is requeued
    with the runtime's words about them."""
    runtime = make_runtime(
        runtime_program, tmp_path, {"SINGULARITY_EXTRA_ARGUMENTS": '"--no-such-option"'}
    )
    with sandbox_dir() as sandbox, pytest.raises(JobSetupError) as raised:
        runtime.start(request_for(sandbox, job_ad(sandbox_image), ("/bin/true",)), runtime.log)
    assert raised.value.hold_code == HoldCode.SINGULARITY_TEST_FAILED
    assert "--no-such-option" in raised.value.reason


def test_singularity_named_by_its_name(
    runtime_dir: Path,
    sandbox_image: str,
    tmp_path: Path,
    as_root: None,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """SINGULARITY = singularity is looked up on PATH; the job's variables reach the job with
    whichever prefix the runtime's version says."""
    monkeypatch.setenv("PATH", f"{runtime_dir}:{os.environ['PATH']}")
    runtime = make_runtime("singularity", tmp_path)
    assert runtime.settings.runtime == str(runtime_dir / "singularity")
    attributes = {a.name: a.value for a in runtime.machine_attributes()}
    assert attributes["HasSingularity"] is True
    with sandbox_dir() as sandbox:
        request = request_for(
            sandbox, job_ad(sandbox_image), ("/bin/sh", "-c", "echo $COLOUR"),
            machine=ClassAd(), environment=(("COLOUR", "green"),),
        )  # fmt: skip
        done = run_to_end(runtime, request)
    assert done.stdout.split() == ["green"]


def test_use_launcher_runs_the_job_through_the_script(
    runtime_program: str, sandbox_image: str, tmp_path: Path, as_root: None
) -> None:
    """SINGULARITY_USE_LAUNCHER: the job's command runs through /condor_container_launcher.sh,
    whose marker is in the scratch directory while the job runs and taken away after it, and
    the job's own exit code stands."""
    script = "ls -a .; test -x /condor_container_launcher.sh && echo bound; exit 3"
    with sandbox_dir() as sandbox:
        # The script is read by the job's user: SPOOL is world-searchable, as a startd's is.
        spool = sandbox.parent / "spool"
        runtime = make_runtime(runtime_program, spool, {"SINGULARITY_USE_LAUNCHER": "true"})
        request = request_for(
            sandbox,
            job_ad(sandbox_image),
            ("/bin/sh", "-c", script),
            environment=(("_CONDOR_SCRATCH_DIR", str(sandbox)),),
        )
        container = runtime.start(request, LOG)
        try:
            assert wait_for(container) == (3, None), (sandbox / "job.err").read_text()
            assert container.collect_output() is None
            assert not (sandbox / MARKER).exists()
        finally:
            container.release()
        out = (sandbox / "job.out").read_text().split()
    assert MARKER in out
    assert "bound" in out


@pytest.mark.parametrize("stop", [False, True])
def test_use_launcher_requeues_a_runtime_that_never_started_the_job(
    stop: bool, runtime_program: str, tmp_path: Path, as_root: None
) -> None:
    """With the launcher and no pre-job test, a runtime that fails before the job's command
    (a missing image) ends without the marker: the job goes back to idle with vacate code
    1021 and "Apptainer runtime failed to start", not exit code 255; a job the starter
    stopped is not one of those."""
    knobs = {"SINGULARITY_USE_LAUNCHER": "true", "SINGULARITY_RUN_TEST_BEFORE_JOB": "false"}
    with sandbox_dir() as sandbox:
        runtime = make_runtime(runtime_program, sandbox.parent / "spool", knobs)
        request = request_for(sandbox, job_ad("/no/such/image.sif"), ("/bin/true",))
        container = runtime.start(request, LOG)
        try:
            if stop:
                container.stop(15, 5.0)
            code = wait_for(container)[0]
            if stop:
                assert container.collect_output() is None
            else:
                assert code == 255
                with pytest.raises(JobSetupError) as raised:
                    container.collect_output()
                assert raised.value.hold_code == 1021
                assert raised.value.reason.startswith("Apptainer runtime failed to start")
        finally:
            container.release()
        if not stop:
            assert "/no/such/image.sif" in (sandbox / "job.err").read_text()
