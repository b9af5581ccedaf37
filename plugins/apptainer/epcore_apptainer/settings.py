"""The SINGULARITY_* knobs, read once per configuration, and their expressions evaluated for
one job (MY is the slot ad, TARGET the job ad, as HTCondor's starter evaluates them).

Where the starter needs the file system (does a bind's source exist, is the image a
directory) it asks here too, so that :mod:`epcore_apptainer.command` stays pure.
"""

from __future__ import annotations

import os
import shlex
import shutil
import time

import attrs

from epcore.api import VacateCode, split_list
from epcore.classad import ClassAd, parse_expr
from epcore.config import Config
from epcore.errors import ClassAdError, JobSetupError

#: The job attributes by which condor_submit says a job wants an image of each kind.
IMAGE_WISHES = ("WantSIF", "WantSandboxImage", "WantDockerImage")
#: The job attributes by which a job asks for a container at all (no default one then).
CONTAINER_WISHES = ("WantContainer", "WantDocker", *IMAGE_WISHES)
#: The names the runtime goes by on PATH, in the order they are looked for.
RUNTIME_NAMES = ("apptainer", "singularity")
#: SINGULARITY_TEST_SANDBOX_TIMEOUT's fallback in HTCondor's code (seconds per probe).
PROBE_TIMEOUT = 120.0


def setup_failure(message: str) -> JobSetupError:
    """A job whose container cannot be set up: HTCondor's starter does not start it and the
    job goes back to idle (JOB_NOT_STARTED), it is not held."""
    return JobSetupError(message, VacateCode.JOB_NOT_STARTED)


def find_runtime(value: str | None) -> tuple[str | None, str | None]:
    """The runtime program SINGULARITY names and, when there is none, why.

    A bare name is looked up on PATH. epcore installs no ``$(LIBEXEC)/apptainer`` (the
    default): a path to a missing program called apptainer or singularity falls back to
    ``apptainer``, then ``singularity``, on PATH.
    """
    text = (value or "").strip()
    if not text:
        return None, "SINGULARITY is undefined"
    if "/" not in text:
        found = shutil.which(text)
        return (found, None) if found else (None, f"{text} is not on PATH")
    if os.path.exists(text):
        return text, None
    if os.path.basename(text) in RUNTIME_NAMES:
        for name in RUNTIME_NAMES:
            found = shutil.which(name)
            if found:
                return found, None
    return None, f"{text} does not exist (and neither apptainer nor singularity is on PATH)"


@attrs.frozen
class Settings:
    """The knobs of one configuration (expressions kept as text)."""

    runtime: str | None
    #: Why there is no runtime (None when there is one).
    missing: str | None
    verbosity: str = "-s"
    job_expr: str = "false"
    image_expr: str = "SingularityImage"
    bind_expr: str | None = None
    ignore_missing_bind_target: bool = False
    target_dir: str | None = None
    pid_namespaces: str = "auto"
    extra_arguments: str | None = None
    run_test: bool = True
    use_launcher: bool = False
    mount_under_scratch: str | None = '"/tmp,/var/tmp"'
    add_rocm: bool = False
    allowed_env: tuple[str, ...] = ()
    test_sandbox: str | None = None
    probe_timeout: float = PROBE_TIMEOUT
    use_default_container: str = "false"
    default_image: str | None = None


def read_settings(config: Config) -> Settings:
    """The knobs as ``config`` sets them."""
    runtime, missing = find_runtime(config.get("SINGULARITY"))
    return Settings(
        runtime=runtime,
        missing=missing,
        verbosity=(config.get("SINGULARITY_VERBOSITY") or "").strip(),
        job_expr=config.get("SINGULARITY_JOB") or "false",
        image_expr=config.get("SINGULARITY_IMAGE_EXPR") or "SingularityImage",
        bind_expr=config.get("SINGULARITY_BIND_EXPR"),
        ignore_missing_bind_target=config.get_bool("SINGULARITY_IGNORE_MISSING_BIND_TARGET", False),
        target_dir=(config.get("SINGULARITY_TARGET_DIR") or "").strip() or None,
        pid_namespaces=(config.get("SINGULARITY_USE_PID_NAMESPACES") or "auto").strip().lower(),
        extra_arguments=config.get("SINGULARITY_EXTRA_ARGUMENTS"),
        run_test=config.get_bool("SINGULARITY_RUN_TEST_BEFORE_JOB", True),
        use_launcher=config.get_bool("SINGULARITY_USE_LAUNCHER", False),
        mount_under_scratch=config.get("MOUNT_UNDER_SCRATCH"),
        add_rocm=config.get_bool("SINGULARITY_ADD_ROCM_FLAG", False),
        allowed_env=tuple(split_list(config.get("SINGULARITY_ALLOWED_JOB_ENV_VARS") or "")),
        test_sandbox=(config.get("SINGULARITY_TEST_SANDBOX") or "").strip() or None,
        probe_timeout=config.get_float("SINGULARITY_TEST_SANDBOX_TIMEOUT", PROBE_TIMEOUT),
        use_default_container=config.get("USE_DEFAULT_CONTAINER") or "false",
        default_image=(config.get("DEFAULT_CONTAINER_IMAGE") or "").strip() or None,
    )


def evaluate(config: Config, text: str, machine: ClassAd, job: ClassAd) -> object:
    """``text`` evaluated with the slot as MY and the job as TARGET; None when it does not
    parse."""
    try:
        expr = parse_expr(text)
    except ClassAdError:
        return None
    return expr.evaluate(machine, job, context=config.eval_context.at(time.time()))


def wants_image(job: ClassAd) -> bool:
    """True when condor_submit marked the job as wanting an image (those always run in one)."""
    return any(job.evaluate(wish) is True for wish in IMAGE_WISHES)


def default_image(config: Config, settings: Settings, machine: ClassAd, job: ClassAd) -> str | None:
    """DEFAULT_CONTAINER_IMAGE for a job USE_DEFAULT_CONTAINER puts in it (evaluated with the
    slot as MY and the job as TARGET), else None.

    Only jobs that asked for no container get it; a ``docker:`` image goes to docker where the
    slot has it (HasDocker), as in HTCondor, so it is not this runtime's there.
    """
    image = settings.default_image
    if image is None or any(job.evaluate(wish) is True for wish in CONTAINER_WISHES):
        return None
    if evaluate(config, settings.use_default_container, machine, job) is not True:
        return None
    if image.startswith("docker:") and machine.evaluate("HasDocker") is True:
        return None
    return image


def selected(config: Config, settings: Settings, machine: ClassAd, job: ClassAd) -> bool:
    """True when the job runs in a container here: it wants an image, SINGULARITY_JOB is
    true for it, or USE_DEFAULT_CONTAINER puts it in DEFAULT_CONTAINER_IMAGE."""
    if wants_image(job):
        return True
    if evaluate(config, settings.job_expr, machine, job) is True:
        return True
    return default_image(config, settings, machine, job) is not None


def image_for(
    config: Config, settings: Settings, machine: ClassAd, job: ClassAd, sandbox: str
) -> str:
    """The image: SINGULARITY_IMAGE_EXPR when it gives a string, else the job's
    ContainerImage; a relative path is looked for in the sandbox (where a transferred image
    lands), then in the job's Iwd. Raises the setup failure when there is none."""
    value = evaluate(config, settings.image_expr, machine, job)
    if not isinstance(value, str) or not value:
        value = job.evaluate("ContainerImage")
    if not isinstance(value, str) or not value.strip():
        value = default_image(config, settings, machine, job)
    if not isinstance(value, str) or not value.strip():
        raise setup_failure(
            "Singularity enabled but setup failed: SINGULARITY_IMAGE_EXPR gives no image "
            "and the job has no ContainerImage"
        )
    image = value.strip()
    if "://" in image or os.path.isabs(image):
        return image
    if os.path.lexists(os.path.join(sandbox, image)):
        return os.path.join(sandbox, image)
    iwd = job.evaluate("Iwd")
    return os.path.join(iwd, image) if isinstance(iwd, str) else os.path.join(sandbox, image)


def binds_for(
    config: Config, settings: Settings, machine: ClassAd, job: ClassAd, image: str
) -> tuple[list[str], list[str]]:
    """SINGULARITY_BIND_EXPR's binds (``src[:dst[:ro]]``) that can be made, and the skipped
    ones with why: a source missing on the host, or (with
    SINGULARITY_IGNORE_MISSING_BIND_TARGET and a directory image) a target missing in it."""
    if not settings.bind_expr:
        return [], []
    value = evaluate(config, settings.bind_expr, machine, job)
    if not isinstance(value, str):
        return [], []
    kept: list[str] = []
    skipped: list[str] = []
    for bind in value.split():
        parts = bind.split(":")
        source = parts[0]
        target = parts[1] if len(parts) > 1 and parts[1] else source
        if not os.path.exists(source):
            skipped.append(f"{bind}: its source does not exist on this machine")
            continue
        missing_target = not os.path.exists(os.path.join(image, target.lstrip("/")))
        if settings.ignore_missing_bind_target and os.path.isdir(image) and missing_target:
            skipped.append(f"{bind}: its target is missing in the image")
            continue
        kept.append(bind)
    return kept, skipped


def mount_under_scratch(config: Config, settings: Settings, job: ClassAd) -> tuple[str, ...]:
    """MOUNT_UNDER_SCRATCH (an expression over the job ad, else plain text) and the job's own
    MountUnderScratch, as a list of directories."""
    entries: list[str] = []
    text = settings.mount_under_scratch
    if text:
        value = evaluate(config, text, ClassAd(), job)
        entries += split_list(value if isinstance(value, str) else text)
    own = job.evaluate("MountUnderScratch")
    if isinstance(own, str):
        entries += split_list(own)
    return tuple(dict.fromkeys(entry for entry in entries if entry))


def extra_arguments(
    config: Config, settings: Settings, machine: ClassAd, job: ClassAd
) -> tuple[str, ...]:
    """SINGULARITY_EXTRA_ARGUMENTS as arguments: an expression giving a string, or the text
    itself when it is not an expression; refused (naming the knob) when it cannot be split."""
    text = settings.extra_arguments
    if not text or not text.strip():
        return ()
    try:
        parse_expr(text)
    except ClassAdError:
        value: object = text
    else:
        value = evaluate(config, text, machine, job)
    if not isinstance(value, str):
        raise setup_failure(
            f"SINGULARITY_EXTRA_ARGUMENTS ({text.strip()}) does not give a string: {value!r}"
        )
    try:
        return tuple(shlex.split(value))
    except ValueError as error:
        raise setup_failure(
            f"SINGULARITY_EXTRA_ARGUMENTS cannot be split into arguments ({value}): {error}"
        ) from error


def use_pid_namespaces(settings: Settings, machine: ClassAd) -> bool:
    """SINGULARITY_USE_PID_NAMESPACES: true, false, or auto (what the startup probe found,
    the slot's HasPidNamespaces)."""
    if settings.pid_namespaces in ("true", "yes", "1"):
        return True
    if settings.pid_namespaces in ("false", "no", "0"):
        return False
    return machine.evaluate("HasPidNamespaces") is True


def gpu_flags(settings: Settings, machine: ClassAd) -> tuple[bool, bool]:
    """(--nv, --rocm) for a slot with GPUs assigned: --nv when the slot has an NVIDIA driver
    (25.x; 23.9 passed it for any GPU), --rocm for ROCm GPUs or SINGULARITY_ADD_ROCM_FLAG."""
    assigned = machine.evaluate("AssignedGPUs")
    if not isinstance(assigned, str) or not assigned.strip():
        return False, False
    nvidia = machine.lookup("GPUs_NvidiaDriver") is not None
    rocm_count = machine.evaluate("GPUs_Rocm")
    rocm = settings.add_rocm or (isinstance(rocm_count, int) and rocm_count > 0)
    return nvidia, rocm
