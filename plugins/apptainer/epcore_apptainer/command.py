"""The runtime's command line and the job's environment, built as HTCondor's starter builds
them (pure: no file system, no clock).

The order of the options is HTCondor's (25.x, ``singularity.cpp``); 23.9 differs only in the
launcher, ``--rocm`` and the job's own MountUnderScratch, which this plugin follows 25.x on
(the launcher only with SINGULARITY_USE_LAUNCHER, false by default as in HTCondor). The
environment transform is 25.x's: every ``APPTAINER_*`` and ``SINGULARITY_*`` variable of the
job is dropped (23.9 dropped only the bind ones), and each job variable is passed again with
the runtime's prefix so that it survives ``--cleanenv``.
"""

from __future__ import annotations

import posixpath
from collections.abc import Iterable, Sequence

import attrs

#: Where a job's scratch directory appears when a target directory is used and file transfer
#: is off (HTCondor binds it a second time there).
CONDOR_SCRATCH = "/condor_scratch"
#: Where SINGULARITY_USE_LAUNCHER's script appears in the container (HTCondor's path).
LAUNCHER_INSIDE = "/condor_container_launcher.sh"
#: Job variables kept although they have the runtime's prefix (registry credentials).
_KEPT = frozenset(
    f"{prefix}_DOCKER_{what}"
    for prefix in ("APPTAINER", "SINGULARITY")
    for what in ("USERNAME", "PASSWORD")
)


@attrs.frozen
class ContainerPlan:
    """Everything the command line depends on, decided from the configuration, the slot and
    the job (see :mod:`epcore_apptainer.settings`)."""

    runtime: str
    image: str
    #: The job's command inside the container; empty: the image's runscript (``run``).
    argv: tuple[str, ...]
    #: The job's scratch directory on the host (HTCondor's slot and execute directory).
    scratch: str
    verbosity: str = "-s"
    #: True when the runtime says it is Apptainer (its environment prefix is APPTAINER).
    apptainer: bool = True
    target_dir: str | None = None
    mount_under_scratch: tuple[str, ...] = ()
    binds: tuple[str, ...] = ()
    nvidia: bool = False
    rocm: bool = False
    pid_namespaces: bool = True
    extra_arguments: tuple[str, ...] = ()
    #: The job's Iwd when it is not the scratch directory (no file transfer): bound too.
    iwd: str | None = None
    file_transfer: bool = True
    #: SINGULARITY_USE_LAUNCHER's script on the host: bound at :data:`LAUNCHER_INSIDE`, and
    #: the job's command runs through it (None: no launcher).
    launcher: str | None = None

    @property
    def launches(self) -> bool:
        """True when the job's command goes through the launcher: ``exec`` only, since
        ``run`` has no command to wrap (the image's runscript is the job)."""
        return self.launcher is not None and bool(self.argv)

    @property
    def prefix(self) -> str:
        return "APPTAINER" if self.apptainer else "SINGULARITY"


def inside(plan: ContainerPlan, path: str) -> str:
    """``path`` (on the host) as the job sees it: under the target directory when one is set
    and ``path`` is in the scratch directory, else unchanged."""
    if plan.target_dir is None:
        return path
    relative = posixpath.relpath(path, plan.scratch)
    if relative == "." or not relative.startswith(".."):
        return posixpath.normpath(posixpath.join(plan.target_dir, relative))
    return path


def action_options(plan: ContainerPlan) -> list[str]:
    """The options between the action (exec, run, test) and the image, in HTCondor's order."""
    options: list[str] = []
    for directory in plan.mount_under_scratch:
        options += ["-S", directory]
    if plan.iwd is not None and plan.iwd != plan.scratch:
        options += ["-B", plan.iwd]
    if plan.launches:
        options += ["-B", f"{plan.launcher}:{LAUNCHER_INSIDE}"]
    options += ["-W", plan.scratch]
    options += ["--pwd", inside(plan, plan.iwd or plan.scratch)]
    if plan.target_dir is None:
        options += ["-B", plan.scratch]
    else:
        options += ["-B", f"{plan.scratch}:{plan.target_dir}"]
        if not plan.file_transfer:
            options += ["-B", f"{plan.scratch}:{CONDOR_SCRATCH}"]
    if plan.nvidia:
        options.append("--nv")
    if plan.rocm:
        options.append("--rocm")
    for bind in plan.binds:
        options += ["-B", bind]
    if plan.file_transfer:
        options += ["--home", plan.scratch]
    if plan.pid_namespaces:
        options.append("-C")
    else:
        options += ["--contain", "--ipc", "--cleanenv"]
    options += plan.extra_arguments
    return options


def command_line(plan: ContainerPlan) -> list[str]:
    """The job's command: ``<runtime> <verbosity> exec <options> <image> <command...>``, or
    ``run`` (the image's runscript) for a job without a command."""
    action = "exec" if plan.argv else "run"
    argv = list(plan.argv)
    if argv:
        argv[0] = inside(plan, argv[0])
    if plan.launches:
        argv.insert(0, LAUNCHER_INSIDE)
    return [plan.runtime, plan.verbosity, action, *action_options(plan), plan.image, *argv]


def pre_job_test_line(plan: ContainerPlan) -> list[str]:
    """The pre-job test: ``<runtime> <verbosity> -q test <same options> <image>``."""
    return [plan.runtime, plan.verbosity, "-q", "test", *action_options(plan), plan.image]


def job_environment(
    plan: ContainerPlan,
    variables: Iterable[tuple[str, str]],
    slot_name: str = "",
    allowed: Sequence[str] = (),
) -> list[tuple[str, str]]:
    """The runtime's environment for a job whose own environment is ``variables``.

    HOME is dropped (the runtime sets it), and so is every variable with the runtime's
    prefixes but the registry credentials and those in ``allowed``
    (SINGULARITY_ALLOWED_JOB_ENV_VARS); the cache and temporary directories are the scratch
    directory; each job variable is passed again as ``<PREFIX>ENV_<name>`` (unless the job set
    that one itself), with the target directory in place of the scratch directory.
    """
    kept = _KEPT | frozenset(allowed)
    job: dict[str, str] = {}
    for name, value in variables:
        if name == "HOME":
            continue
        if name.startswith(("APPTAINER_", "SINGULARITY_")) and name not in kept:
            continue
        job[name] = value
    prefix = plan.prefix
    result = dict(job)
    result[f"{prefix}_CACHEDIR"] = plan.scratch
    result[f"{prefix}_TMPDIR"] = plan.scratch
    passed = f"{prefix}ENV_"
    for name, value in job.items():
        if name.startswith(("APPTAINERENV_", "SINGULARITYENV_")):
            continue
        if plan.target_dir is not None and plan.scratch in value:
            value = value.replace(plan.scratch, plan.target_dir)
        result.setdefault(passed + name, value)
    if plan.target_dir is not None:
        result.setdefault(passed + "_CONDOR_SCRATCH_DIR_OUTSIDE_CONTAINER", plan.scratch)
    if slot_name:
        result.setdefault(passed + "PS1", f"{slot_name}$ ")
    return list(result.items())
