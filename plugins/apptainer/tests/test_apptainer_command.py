"""The command line and environment HTCondor's starter builds (pure): the order of the options,
each knob's options, exec versus run, the pre-job test, the environment transform."""

from __future__ import annotations

import attrs
import pytest
from epcore_apptainer.command import (
    ContainerPlan,
    command_line,
    inside,
    job_environment,
    pre_job_test_line,
)

PLAN = ContainerPlan(
    runtime="/usr/bin/apptainer",
    image="/images/os.sif",
    argv=("/bin/sh", "-c", "true"),
    scratch="/execute/dir_1",
    mount_under_scratch=("/tmp", "/var/tmp"),
)


def test_default_command_in_htcondors_order() -> None:
    """-S per MOUNT_UNDER_SCRATCH entry, -W, --pwd, -B scratch, --home, -C, image, command."""
    assert command_line(PLAN) == [
        "/usr/bin/apptainer", "-s", "exec",
        "-S", "/tmp", "-S", "/var/tmp",
        "-W", "/execute/dir_1",
        "--pwd", "/execute/dir_1",
        "-B", "/execute/dir_1",
        "--home", "/execute/dir_1",
        "-C",
        "/images/os.sif", "/bin/sh", "-c", "true",
    ]  # fmt: skip


def test_a_job_without_a_command_runs_the_runscript() -> None:
    """No executable: ``run`` with the image alone."""
    line = command_line(attrs.evolve(PLAN, argv=()))
    assert line[2] == "run"
    assert line[-1] == "/images/os.sif"


def test_without_pid_namespaces_contain_ipc_cleanenv() -> None:
    """SINGULARITY_USE_PID_NAMESPACES false: --contain --ipc --cleanenv instead of -C."""
    line = command_line(attrs.evolve(PLAN, pid_namespaces=False))
    assert "-C" not in line
    at = line.index("--contain")
    assert line[at : at + 3] == ["--contain", "--ipc", "--cleanenv"]


def test_target_dir_moves_the_scratch_directory_and_the_executable() -> None:
    """SINGULARITY_TARGET_DIR: the scratch directory is bound there, --pwd is there, and an
    executable in the scratch directory is named by its path there."""
    plan = attrs.evolve(PLAN, target_dir="/srv", argv=("/execute/dir_1/job.sh", "a"))
    line = command_line(plan)
    assert line[line.index("--pwd") + 1] == "/srv"
    assert "/execute/dir_1:/srv" in line
    assert line[-2:] == ["/srv/job.sh", "a"]
    assert inside(plan, "/elsewhere/x") == "/elsewhere/x"


def test_target_dir_without_file_transfer_binds_condor_scratch_too() -> None:
    """With a target and file transfer off the scratch directory is also /condor_scratch, and
    there is no --home."""
    line = command_line(attrs.evolve(PLAN, target_dir="/srv", file_transfer=False))
    assert "/execute/dir_1:/condor_scratch" in line
    assert "--home" not in line


def test_iwd_other_than_scratch_is_bound_first() -> None:
    """A job whose Iwd is not the scratch directory (no file transfer) gets -B iwd before -W."""
    line = command_line(attrs.evolve(PLAN, iwd="/home/u/run", file_transfer=False))
    assert line.index("/home/u/run") < line.index("-W")
    assert line[line.index("--pwd") + 1] == "/home/u/run"


def test_binds_gpus_and_extra_arguments_in_place() -> None:
    """GPU flags, then SINGULARITY_BIND_EXPR's binds, --home, containment, then
    SINGULARITY_EXTRA_ARGUMENTS right before the image."""
    plan = attrs.evolve(
        PLAN, nvidia=True, rocm=True, binds=("/nfs", "/data:/d:ro"), extra_arguments=("-w",)
    )
    line = command_line(plan)
    order = [line.index(x) for x in ("--nv", "--rocm", "/nfs", "/data:/d:ro", "--home", "-C")]
    assert order == sorted(order)
    assert line[line.index("/images/os.sif") - 1] == "-w"


def test_verbosity_follows_the_runtime() -> None:
    """SINGULARITY_VERBOSITY comes right after the program."""
    assert command_line(attrs.evolve(PLAN, verbosity="-d"))[:3] == [
        "/usr/bin/apptainer",
        "-d",
        "exec",
    ]


def test_pre_job_test_uses_the_same_options() -> None:
    """``<runtime> -s -q test <same options> <image>``."""
    test = pre_job_test_line(PLAN)
    line = command_line(PLAN)
    assert test[:4] == ["/usr/bin/apptainer", "-s", "-q", "test"]
    assert test[4:] == line[3 : line.index("/images/os.sif") + 1]


@pytest.mark.parametrize(("apptainer", "prefix"), [(True, "APPTAINER"), (False, "SINGULARITY")])
def test_environment_prefix_follows_the_runtime(apptainer: bool, prefix: str) -> None:
    """Apptainer mode passes variables as APPTAINERENV_, Singularity's as SINGULARITYENV_;
    the cache and temporary directories are the scratch directory."""
    env = dict(job_environment(attrs.evolve(PLAN, apptainer=apptainer), [("A", "1")], "slot1@h"))
    assert env[f"{prefix}ENV_A"] == "1"
    assert env[f"{prefix}_CACHEDIR"] == env[f"{prefix}_TMPDIR"] == "/execute/dir_1"
    assert env[f"{prefix}ENV_PS1"] == "slot1@h$ "


def test_environment_drops_home_and_the_runtimes_variables() -> None:
    """HOME and every APPTAINER_*/SINGULARITY_* of the job go (25.x), but the registry
    credentials and SINGULARITY_ALLOWED_JOB_ENV_VARS stay; the job's own APPTAINERENV_ wins."""
    variables = [
        ("HOME", "/home/u"),
        ("APPTAINER_BIND", "/etc"),
        ("SINGULARITY_CACHEDIR", "/x"),
        ("APPTAINER_DOCKER_USERNAME", "me"),
        ("APPTAINER_KEEP", "yes"),
        ("APPTAINERENV_B", "mine"),
        ("B", "theirs"),
    ]
    env = dict(job_environment(PLAN, variables, allowed=["APPTAINER_KEEP"]))
    assert "HOME" not in env and "APPTAINERENV_HOME" not in env
    assert "APPTAINER_BIND" not in env and "SINGULARITY_CACHEDIR" not in env
    assert env["APPTAINER_DOCKER_USERNAME"] == "me"
    assert env["APPTAINER_KEEP"] == "yes"
    assert env["APPTAINERENV_B"] == "mine"


def test_environment_with_a_target_dir_is_rewritten() -> None:
    """Values holding the scratch directory are passed with the target directory instead, and
    _CONDOR_SCRATCH_DIR_OUTSIDE_CONTAINER keeps the host path."""
    plan = attrs.evolve(PLAN, target_dir="/srv")
    env = dict(job_environment(plan, [("_CONDOR_SCRATCH_DIR", "/execute/dir_1")]))
    assert env["APPTAINERENV__CONDOR_SCRATCH_DIR"] == "/srv"
    assert env["_CONDOR_SCRATCH_DIR"] == "/execute/dir_1"
    assert env["APPTAINERENV__CONDOR_SCRATCH_DIR_OUTSIDE_CONTAINER"] == "/execute/dir_1"


def test_launcher_is_bound_before_w_and_runs_the_command() -> None:
    """SINGULARITY_USE_LAUNCHER: -B <script>:/condor_container_launcher.sh after the Iwd bind
    and before -W, and the script comes before the job's command (the test line has the bind)."""
    plan = attrs.evolve(PLAN, launcher="/spool/l.sh", iwd="/home/u/run", file_transfer=False)
    line = command_line(plan)
    bind = line.index("/spool/l.sh:/condor_container_launcher.sh")
    assert line[bind - 1] == "-B"
    assert line.index("/home/u/run") < bind < line.index("-W")
    assert line[line.index("/images/os.sif") + 1 :] == [
        "/condor_container_launcher.sh", "/bin/sh", "-c", "true",
    ]  # fmt: skip
    assert "/spool/l.sh:/condor_container_launcher.sh" in pre_job_test_line(plan)


def test_launcher_leaves_run_alone() -> None:
    """A job without a command runs the image's runscript: there is nothing to launch, so no
    launcher bind and no script argument."""
    line = command_line(attrs.evolve(PLAN, argv=(), launcher="/spool/l.sh"))
    assert line[2] == "run"
    assert not [word for word in line if "condor_container_launcher" in word]
    assert line[-1] == "/images/os.sif"
