"""The SINGULARITY_* knobs read and evaluated for a job (MY = slot, TARGET = job)."""

from __future__ import annotations

import stat
from pathlib import Path

import pytest
from epcore_apptainer.settings import (
    binds_for,
    extra_arguments,
    find_runtime,
    gpu_flags,
    image_for,
    mount_under_scratch,
    read_settings,
    selected,
    use_pid_namespaces,
)

from epcore.api import VacateCode
from epcore.classad import ClassAd
from epcore.config import Config
from epcore.errors import JobSetupError


def _config(text: str = "") -> Config:
    return Config.from_text(text)


def _ad(**values: object) -> ClassAd:
    ad = ClassAd()
    for name, value in values.items():
        ad[name] = value
    return ad


def _program(path: Path) -> str:
    path.write_text("#!/bin/sh\n")
    path.chmod(path.stat().st_mode | stat.S_IXUSR)
    return str(path)


def test_singularity_names_the_runtime(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """SINGULARITY: a path is used as it is; a bare name is looked up on PATH; a missing
    default-style path falls back to apptainer, then singularity, on PATH; empty turns it off."""
    program = _program(tmp_path / "singularity")
    monkeypatch.setenv("PATH", str(tmp_path))
    assert find_runtime(program) == (program, None)
    assert find_runtime("singularity") == (program, None)
    assert find_runtime("/usr/libexec/apptainer") == (program, None)
    assert find_runtime("") == (None, "SINGULARITY is undefined")
    runtime, why = find_runtime("/opt/x/runc")
    assert runtime is None and why is not None and "/opt/x/runc does not exist" in why


def test_singularity_job_selects_vanilla_jobs() -> None:
    """SINGULARITY_JOB (false by default) selects jobs; WantSIF and friends always run."""
    off = read_settings(_config("SINGULARITY = /bin/true\n"))
    on = read_settings(_config('SINGULARITY_JOB = TARGET.Owner == "ann"\n'))
    assert not selected(_config(), off, ClassAd(), _ad(Owner="ann"))
    assert selected(_config(), off, ClassAd(), _ad(WantSIF=True))
    assert selected(_config(), on, ClassAd(), _ad(Owner="ann"))
    assert not selected(_config(), on, ClassAd(), _ad(Owner="bob"))


def test_image_expr_then_container_image(tmp_path: Path) -> None:
    """SINGULARITY_IMAGE_EXPR when it gives a string, else ContainerImage; a relative image is
    found in the sandbox first, then in the Iwd; none at all is a setup failure (requeue)."""
    config = _config('SINGULARITY_IMAGE_EXPR = strcat("/img/", TARGET.Flavour, ".sif")\n')
    settings = read_settings(config)
    sandbox = str(tmp_path)
    assert image_for(config, settings, ClassAd(), _ad(Flavour="el9"), sandbox) == "/img/el9.sif"
    assert image_for(config, settings, ClassAd(), _ad(ContainerImage="/c.sif"), sandbox) == "/c.sif"
    (tmp_path / "local.sif").write_text("")
    job = _ad(ContainerImage="local.sif", Iwd="/home/u")
    assert image_for(config, settings, ClassAd(), job, sandbox) == str(tmp_path / "local.sif")
    job = _ad(ContainerImage="other.sif", Iwd="/home/u")
    assert image_for(config, settings, ClassAd(), job, sandbox) == "/home/u/other.sif"
    with pytest.raises(JobSetupError) as raised:
        image_for(config, settings, ClassAd(), ClassAd(), sandbox)
    assert raised.value.hold_code == VacateCode.JOB_NOT_STARTED


def test_singularity_job_and_image_expr_see_the_slot(tmp_path: Path) -> None:
    """SINGULARITY_JOB and SINGULARITY_IMAGE_EXPR are evaluated with the slot as MY."""
    config = _config(
        'SINGULARITY_JOB = MY.ContainerSlot && TARGET.Owner == "ann"\n'
        'SINGULARITY_IMAGE_EXPR = strcat(MY.ImageDir, "/", TARGET.Flavour, ".sif")\n'
    )
    settings = read_settings(config)
    slot = _ad(ContainerSlot=True, ImageDir="/cvmfs/img")
    assert selected(config, settings, slot, _ad(Owner="ann"))
    assert not selected(config, settings, ClassAd(), _ad(Owner="ann"))
    job = _ad(Flavour="el9")
    assert image_for(config, settings, slot, job, str(tmp_path)) == "/cvmfs/img/el9.sif"


def test_bind_expr_skips_missing_sources_and_targets(tmp_path: Path) -> None:
    """SINGULARITY_BIND_EXPR: space-separated binds; a source missing on the host is skipped;
    with SINGULARITY_IGNORE_MISSING_BIND_TARGET a target missing in a directory image too."""
    (tmp_path / "data").mkdir()
    image = tmp_path / "image"
    (image / "present").mkdir(parents=True)
    text = f'"{tmp_path}/data:/present {tmp_path}/nothing {tmp_path}/data:/absent:ro"'
    for ignore, expected in (("false", 2), ("true", 1)):
        config = _config(
            f"SINGULARITY_BIND_EXPR = {text}\nSINGULARITY_IGNORE_MISSING_BIND_TARGET = {ignore}\n"
        )
        kept, skipped = binds_for(config, read_settings(config), ClassAd(), ClassAd(), str(image))
        assert kept[0] == f"{tmp_path}/data:/present"
        assert len(kept) == expected
        assert len(skipped) == 3 - expected


def test_bind_expr_sees_slot_and_job() -> None:
    """The expression is evaluated with the slot as MY and the job as TARGET."""
    config = _config('SINGULARITY_BIND_EXPR = ifThenElse(TARGET.Owner == "ann", MY.Share, "")\n')
    settings = read_settings(config)
    kept, _ = binds_for(config, settings, _ad(Share="/tmp"), _ad(Owner="ann"), "/x.sif")
    assert kept == ["/tmp"]
    kept, _ = binds_for(config, settings, _ad(Share="/tmp"), _ad(Owner="bob"), "/x.sif")
    assert kept == []


@pytest.mark.parametrize(
    ("knob", "job", "expected"),
    [
        (None, {}, ("/tmp", "/var/tmp")),
        ("/scratch1, /scratch2", {}, ("/scratch1", "/scratch2")),
        ('ifThenElse(TARGET.Big, "/big", "/small")', {"Big": True}, ("/big",)),
        ('""', {"MountUnderScratch": "/own"}, ("/own",)),
    ],
)
def test_mount_under_scratch(
    knob: str | None, job: dict[str, object], expected: tuple[str, ...]
) -> None:
    """MOUNT_UNDER_SCRATCH: an expression over the job, else plain text; the job's
    MountUnderScratch is added (24.x and later)."""
    config = _config("" if knob is None else f"MOUNT_UNDER_SCRATCH = {knob}\n")
    assert mount_under_scratch(config, read_settings(config), _ad(**job)) == expected


def test_extra_arguments_expression_raw_and_refused() -> None:
    """SINGULARITY_EXTRA_ARGUMENTS: an expression giving a string, raw text when it is not an
    expression, and a setup failure naming the knob when it cannot be split or is no string."""
    cases = [
        ('"--nv -B /x"', ("--nv", "-B", "/x")),
        ('ifThenElse(TARGET.W, "-w", "")', ("-w",)),
        ("--writable-tmpfs --env A=1", ("--writable-tmpfs", "--env", "A=1")),
    ]
    for text, expected in cases:
        config = _config(f"SINGULARITY_EXTRA_ARGUMENTS = {text}\n")
        assert extra_arguments(config, read_settings(config), ClassAd(), _ad(W=True)) == expected
    for text in ('"--env \'unclosed"', "42"):
        config = _config(f"SINGULARITY_EXTRA_ARGUMENTS = {text}\n")
        with pytest.raises(JobSetupError) as raised:
            extra_arguments(config, read_settings(config), ClassAd(), ClassAd())
        assert "SINGULARITY_EXTRA_ARGUMENTS" in raised.value.reason
        assert raised.value.hold_code == VacateCode.JOB_NOT_STARTED


@pytest.mark.parametrize(
    ("knob", "probe", "expected"),
    [("true", False, True), ("false", True, False), ("auto", True, True), ("auto", False, False)],
)
def test_use_pid_namespaces(knob: str, probe: bool, expected: bool) -> None:
    """SINGULARITY_USE_PID_NAMESPACES: true, false, or auto (the slot's HasPidNamespaces)."""
    settings = read_settings(_config(f"SINGULARITY_USE_PID_NAMESPACES = {knob}\n"))
    assert use_pid_namespaces(settings, _ad(HasPidNamespaces=probe)) is expected


def test_gpu_flags() -> None:
    """--nv for assigned GPUs with an NVIDIA driver (25.x), --rocm for ROCm GPUs or
    SINGULARITY_ADD_ROCM_FLAG; nothing without assigned GPUs."""
    settings = read_settings(_config())
    assert gpu_flags(settings, ClassAd()) == (False, False)
    assert gpu_flags(settings, _ad(AssignedGPUs="GPU-1", GPUs_NvidiaDriver="550")) == (True, False)
    assert gpu_flags(settings, _ad(AssignedGPUs="GPU-1", GPUs_Rocm=1)) == (False, True)
    rocm = read_settings(_config("SINGULARITY_ADD_ROCM_FLAG = true\n"))
    assert gpu_flags(rocm, _ad(AssignedGPUs="GPU-1")) == (False, True)


def test_run_test_and_target_dir_knobs() -> None:
    """SINGULARITY_RUN_TEST_BEFORE_JOB defaults to true; SINGULARITY_TARGET_DIR is read."""
    assert read_settings(_config()).run_test is True
    settings = read_settings(
        _config("SINGULARITY_RUN_TEST_BEFORE_JOB = false\nSINGULARITY_TARGET_DIR = /srv\n")
    )
    assert (settings.run_test, settings.target_dir) == (False, "/srv")


def test_use_launcher_knob() -> None:
    """SINGULARITY_USE_LAUNCHER defaults to false (HTCondor's table) and is read as a boolean."""
    assert read_settings(_config()).use_launcher is False
    assert read_settings(_config("SINGULARITY_USE_LAUNCHER = true\n")).use_launcher is True


def test_default_container_puts_plain_jobs_in_the_default_image(tmp_path: Path) -> None:
    """USE_DEFAULT_CONTAINER (an expression, slot as MY, job as TARGET) with
    DEFAULT_CONTAINER_IMAGE: a job that asked for no container runs in that image; one that
    asked for its own keeps it; a docker: default is docker's where the slot has HasDocker;
    off by default."""
    sandbox = str(tmp_path)
    config = _config(
        'USE_DEFAULT_CONTAINER = TARGET.Owner != "root"\nDEFAULT_CONTAINER_IMAGE = /img/el9.sif\n'
    )
    settings = read_settings(config)
    plain = _ad(Owner="ann")
    assert selected(config, settings, ClassAd(), plain)
    assert image_for(config, settings, ClassAd(), plain, sandbox) == "/img/el9.sif"
    assert not selected(config, settings, ClassAd(), _ad(Owner="root"))
    own = _ad(Owner="ann", WantContainer=True, WantSIF=True, ContainerImage="/mine.sif")
    assert image_for(config, settings, ClassAd(), own, sandbox) == "/mine.sif"
    assert not selected(config, settings, ClassAd(), _ad(Owner="ann", WantDocker=True))
    off = _config("DEFAULT_CONTAINER_IMAGE = /img/el9.sif\n")
    assert not selected(off, read_settings(off), ClassAd(), plain)
    docker = _config("USE_DEFAULT_CONTAINER = true\nDEFAULT_CONTAINER_IMAGE = docker://r/i:1\n")
    docker_settings = read_settings(docker)
    assert not selected(docker, docker_settings, _ad(HasDocker=True), plain)
    assert selected(docker, docker_settings, _ad(HasDocker=False), plain)
    assert image_for(docker, docker_settings, ClassAd(), plain, sandbox) == "docker://r/i:1"
