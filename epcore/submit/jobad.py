"""One job ad from the submit commands in force when its ``queue`` statement ran.

Every job gets what a schedd and a startd rely on: identity (ClusterId, ProcId, Owner, User,
QDate, JobStatus, EnteredCurrentStatus, MyType, TargetType), what to run (Cmd, Arguments,
Environment, In/Out/Err as written, Iwd, UserLog), the requests and Requirements, the policy
expressions, accounting, transfer settings, and the zeroed usage counters a new job starts
with.

Attributes condor_submit 25 sets that are left out, and why: ``CondorVersion`` /
``CondorPlatform`` (they describe HTCondor's binaries, not ours); ``WantRemoteSyscalls``,
``WantCheckpoint``, ``NumCkpts`` and the other standard-universe leftovers (no such universe);
``JobSubmitMethod`` and ``SubmitEventNotes`` (the schedd and ``ep submit`` know how a job
came); credential, ``x509*`` and ``OAuth`` attributes (no credd); ``ProportionalSetSizeKb``
and ``ResidentSetSize`` (the starter reports them). condor_submit also creates the output and
error files and checks that they can be written; this pure core does no writing, the starter
reports such faults when the job runs.
"""

from __future__ import annotations

import fnmatch
import math
import posixpath
from collections.abc import Mapping
from types import MappingProxyType

import attrs

from epcore.classad import ClassAd, Expr
from epcore.classad.calls import FunctionImpl
from epcore.errors import SubmitError
from epcore.jobs.codes import HoldCode
from epcore.jobs.syntax import Environment
from epcore.submit.macros import Located, SubmitMacros
from epcore.submit.model import SubmitContext, SubmitHost
from epcore.submit.requests import (
    CONTAINER_OFFERS,
    RequirementsInputs,
    job_requirements,
    resource_requests,
)
from epcore.submit.simple_commands import apply_simple_commands
from epcore.submit.values import (
    arguments_to_v2,
    concurrency_limits,
    environment_to_v2,
    parse_bool,
    parse_environment,
    parse_expression,
    parse_integer,
)
from epcore.submit.vmjob import vm_attributes

VANILLA = 5
VM = 13
_UNIVERSES = {"vanilla": VANILLA, "docker": VANILLA, "container": VANILLA, "vm": VM}
_NOT_SUPPORTED = ("standard", "scheduler", "grid", "java", "parallel", "local", "globus", "pvm")
_NOTIFICATION = {"never": 0, "always": 1, "complete": 2, "error": 3}
_TRANSFER = ("YES", "NO", "IF_NEEDED")
_WHEN = ("ON_EXIT", "ON_EXIT_OR_EVICT", "ON_SUCCESS")

#: Policy expressions with their submit commands and the value condor_submit stores by default.
_POLICY = (
    ("on_exit_remove", "OnExitRemove", True),
    ("on_exit_hold", "OnExitHold", False),
    ("periodic_hold", "PeriodicHold", False),
    ("periodic_remove", "PeriodicRemove", False),
    ("periodic_release", "PeriodicRelease", False),
)
#: Accounting attributes every new job starts with.
_ZERO_COUNTERS = (
    "CompletionDate",
    "CurrentHosts",
    "NumJobStarts",
    "NumJobCompletions",
    "NumRestarts",
    "NumSystemHolds",
    "TotalSuspensions",
    "LastSuspensionTime",
    "CumulativeSuspensionTime",
    "CommittedTime",
    "CommittedSlotTime",
    "CommittedSuspensionTime",
    "CumulativeSlotTime",
    "ExitStatus",
)
_ZERO_TIMES = (
    "LocalUserCpu",
    "LocalSysCpu",
    "RemoteUserCpu",
    "RemoteSysCpu",
    "RemoteWallClockTime",
    "CumulativeRemoteUserCpu",
    "CumulativeRemoteSysCpu",
)


@attrs.frozen
class JobAttribute:
    """A ``+Attr = value`` line in force: the attribute, its unexpanded value, where it was."""

    name: str
    raw: str
    line: int
    source: str


class _Job:
    """The commands of one job and the ad being built from them."""

    def __init__(
        self,
        macros: SubmitMacros,
        context: SubmitContext,
        host: SubmitHost,
        line: int,
        base: ClassAd,
    ) -> None:
        self.macros = macros
        self.context = context
        self.host = host
        self.queue_line = line
        self.ad = base.copy()

    def fault(self, message: str, found: Located | None = None) -> SubmitError:
        if found is None or found.line is None:
            return SubmitError(message, self.macros.source, self.queue_line)
        return SubmitError(message, found.source or self.macros.source, found.line)

    def get(self, *names: str) -> Located | None:
        return self.macros.get(*names)

    def flag(self, command: str, default: bool) -> bool:
        found = self.get(command)
        if found is None:
            return default
        try:
            return parse_bool(found.text)
        except ValueError as error:
            raise self.fault(f"{command}: {error}", found) from error

    def integer(self, command: str, found: Located) -> int | Expr:
        try:
            return parse_integer(found.text)
        except ValueError as error:
            raise self.fault(f"{command}: {error}", found) from error

    def expression(self, command: str, found: Located) -> Expr:
        try:
            return parse_expression(found.text)
        except ValueError as error:
            raise self.fault(f"{command}: {error}", found) from error

    def path(self, text: str, base: str) -> str:
        return text if posixpath.isabs(text) else posixpath.join(base, text)


def _universe(job: _Job) -> tuple[str, int]:
    found = job.get("universe")
    name = found.text.lower() if found is not None else "vanilla"
    if name in _UNIVERSES:
        return name, _UNIVERSES[name]
    if name in _NOT_SUPPORTED:
        raise job.fault(f"universe {name!r} is not supported by epcore", found)
    raise job.fault(f"unknown universe {name!r}", found)


def _identity(job: _Job, cluster_id: int, proc_id: int) -> None:
    context, ad = job.context, job.ad
    uid_domain = context.config.get("UID_DOMAIN") or ""
    ad["MyType"] = "Job"
    ad["TargetType"] = "Machine"
    ad["ClusterId"] = cluster_id
    ad["ProcId"] = proc_id
    ad["Owner"] = context.owner
    ad["User"] = f"{context.owner}@{uid_domain}"
    ad["QDate"] = context.now
    ad["EnteredCurrentStatus"] = context.now
    ad["FileSystemDomain"] = context.config.get("FILESYSTEM_DOMAIN") or uid_domain
    if job.flag("hold", False):
        ad["JobStatus"] = 5
        ad["HoldReason"] = "submitted on hold"
        ad["HoldReasonCode"] = int(HoldCode.SUBMITTED_ON_HOLD)
        ad["HoldReasonSubCode"] = 0
    else:
        ad["JobStatus"] = 1


def _files(job: _Job, universe: str) -> int:
    """Iwd, Cmd, the standard streams and logs; returns the bytes to transfer in."""
    ad, context = job.ad, job.context
    found = job.get("initialdir", "initial_dir", "iwd")
    iwd = job.path(found.text, context.submit_dir) if found else context.submit_dir
    if found is not None and not job.host.is_dir(iwd):
        raise job.fault(f"initialdir {iwd} is not a directory", found)
    problem = job.host.directory_problem(iwd)
    if problem is not None:
        what = "initialdir" if found is not None else "the submit directory (the job's Iwd)"
        raise job.fault(f"{what} {iwd} cannot be entered: {problem}", found)
    ad["Iwd"] = iwd
    # A vm job's executable is only a label: condor_submit sets TransferExecutable = false.
    transfer_exe = job.flag("transfer_executable", True) and universe != "vm"
    executable = job.get("executable")
    size = 0
    if executable is None:
        if universe not in ("docker", "container", "vm"):
            raise job.fault("no executable was given (the 'executable' command)")
        ad["Cmd"] = ""
    else:
        cmd = job.path(executable.text, iwd) if universe != "vm" else executable.text
        ad["Cmd"] = cmd
        if transfer_exe:
            exe_size = job.host.file_size(cmd)
            if exe_size is None:
                raise job.fault(f"executable {cmd} does not exist", executable)
            size += exe_size
            kilobytes = math.ceil(exe_size / 1024)
            ad["ExecutableSize"] = kilobytes
            ad["ImageSize"] = kilobytes
            ad["DiskUsage"] = kilobytes
    if not transfer_exe:
        ad["TransferExecutable"] = False
    for commands, attribute in (
        (("input", "stdin"), "In"),
        (("output", "stdout"), "Out"),
        (("error", "stderr"), "Err"),
    ):
        stream = job.get(*commands)
        ad[attribute] = stream.text if stream else "/dev/null"
        if attribute == "In" and stream is not None:
            size += job.host.file_size(job.path(stream.text, iwd)) or 0
    ad["StreamOut"] = job.flag("stream_output", False)
    ad["StreamErr"] = job.flag("stream_error", False)
    log = job.get("log")
    if log is not None:
        user_log = job.path(log.text, iwd)
        problem = job.host.log_problem(user_log)
        if problem is not None:
            raise job.fault(f"log {user_log} cannot be written: {problem}", log)
        ad["UserLog"] = user_log
        if job.flag("log_xml", False):
            ad["UserLogUseXML"] = True
    return size


def _environment(job: _Job) -> Environment:
    environment: dict[str, str] = {}
    getenv = job.get("getenv")
    if getenv is not None:
        try:
            wanted = ["*"] if parse_bool(getenv.text) else []
        except ValueError:
            wanted = [word for word in getenv.text.replace(",", " ").split() if word]
        for name, value in sorted(job.context.environ.items()):
            if any(fnmatch.fnmatchcase(name, pattern) for pattern in wanted):
                environment[name] = value
    found = job.get("environment", "env")
    if found is not None:
        try:
            environment.update(parse_environment(found.text))
        except ValueError as error:
            raise job.fault(f"environment: {error}", found) from error
    return tuple(environment.items())


def _command_line(job: _Job) -> None:
    found = job.get("arguments", "args")
    try:
        job.ad["Arguments"] = arguments_to_v2(found.text) if found else ""
    except ValueError as error:
        raise job.fault(f"arguments: {error}", found) from error
    environment = _environment(job)
    try:
        job.ad["Environment"] = environment_to_v2(environment)
    except ValueError as error:
        raise job.fault(f"environment: {error}", job.get("environment", "env")) from error


def _transfer(job: _Job, input_bytes: int) -> str:
    ad = job.ad
    found = job.get("should_transfer_files")
    should = found.text.upper() if found else "IF_NEEDED"
    if should not in _TRANSFER:
        raise job.fault(f"should_transfer_files: {should!r} is not YES, NO or IF_NEEDED", found)
    ad["ShouldTransferFiles"] = should
    when = job.get("when_to_transfer_output")
    if should != "NO":
        value = when.text.upper() if when else "ON_EXIT"
        if value not in _WHEN:
            raise job.fault(f"when_to_transfer_output: {value!r} is not one of {_WHEN}", when)
        ad["WhenToTransferOutput"] = value
    inputs = job.get("transfer_input_files")
    if inputs is not None:
        ad["TransferInput"] = inputs.text
        iwd = str(ad.evaluate("Iwd"))
        for name in inputs.text.replace(",", " ").split():
            input_bytes += job.host.file_size(job.path(name, iwd)) or 0
    outputs = job.get("transfer_output_files")
    if outputs is not None:
        ad["TransferOutput"] = outputs.text
    ad["TransferInputSizeMB"] = math.ceil(input_bytes / (1024 * 1024))
    return should


def _accounting(job: _Job) -> None:
    ad, config = job.ad, job.context.config
    priority = job.get("priority", "prio")
    ad["JobPrio"] = 0
    if priority is not None:
        try:
            ad["JobPrio"] = int(priority.text)
        except ValueError as error:
            raise job.fault(f"priority: {priority.text!r} is not an integer", priority) from error
    group = job.get("accounting_group")
    group_user = job.get("accounting_group_user")
    nice = job.flag("nice_user", False)
    if nice:
        ad["NiceUser"] = True
        name = config.get("NICE_USER_ACCOUNTING_GROUP_NAME")
        group = Located(name, None) if name else group
    user = group_user.text if group_user else job.context.owner
    if group is not None:
        ad["AcctGroup"] = group.text
        ad["AcctGroupUser"] = user
        ad["AccountingGroup"] = f"{group.text}.{user}"
    elif group_user is not None:
        ad["AcctGroupUser"] = user
        ad["AccountingGroup"] = user
    limits = job.get("concurrency_limits")
    limits_expr = job.get("concurrency_limits_expr")
    if limits is not None and limits_expr is not None:
        raise job.fault(
            "concurrency_limits and concurrency_limits_expr cannot both be given", limits_expr
        )
    if limits is not None:
        try:
            ad["ConcurrencyLimits"] = concurrency_limits(limits.text)
        except ValueError as error:
            raise job.fault(f"concurrency_limits: {error}", limits) from error
    if limits_expr is not None:
        ad["ConcurrencyLimits"] = job.expression("concurrency_limits_expr", limits_expr)


def _policy(job: _Job) -> None:
    ad = job.ad
    for command, attribute, initial in _POLICY:
        found = job.get(command)
        ad[attribute] = job.expression(command, found) if found else initial
    notification = job.get("notification")
    fallback = job.context.config.get("JOB_DEFAULT_NOTIFICATION") or "never"
    chosen = (notification.text if notification else fallback).lower()
    if chosen not in _NOTIFICATION:
        raise job.fault(
            f"notification: {chosen!r} is not never, error, complete or always", notification
        )
    ad["JobNotification"] = _NOTIFICATION[chosen]
    notify_user = job.get("notify_user")
    if notify_user is not None:
        ad["NotifyUser"] = notify_user.text
    ad["JobLeaseDuration"] = job.context.config.get_int("JOB_DEFAULT_LEASE_DURATION", 2400)
    kill_sig = job.get("kill_sig")
    if kill_sig is not None:
        ad["KillSig"] = kill_sig.text
    vacate = job.get("job_max_vacate_time")
    if vacate is not None:
        ad["JobMaxVacateTime"] = job.expression("job_max_vacate_time", vacate)
    rank = job.get("rank")
    ad["Rank"] = job.expression("rank", rank) if rank else 0.0


def _containers(job: _Job, universe: str) -> str | None:
    """Docker, container and vm attributes; returns the vm type for the requirements."""
    ad = job.ad
    if universe == "docker":
        image = job.get("docker_image")
        if image is None:
            raise job.fault("universe docker needs a docker_image")
        ad["WantDocker"] = True
        ad["DockerImage"] = image.text
        network = job.get("docker_network_type")
        if network is not None:
            ad["DockerNetworkType"] = network.text
    image = job.get("container_image")
    if image is not None and job.get("docker_image") is not None:
        raise job.fault("cannot declare both docker_image and container_image", image)
    if universe == "container" and image is None:
        raise job.fault("universe container needs a container_image")
    if image is not None and universe != "docker":
        # A vanilla job with a container_image is a container job too, as in condor_submit.
        ad["WantContainer"] = True
        ad["ContainerImage"] = image.text
        ad[container_image_kind(image.text)] = True
        target = job.get("container_target_dir")
        if target is not None:
            ad["ContainerTargetDir"] = target.text
    scratch = job.get("mount_under_scratch")
    if scratch is not None:
        # (HTCondor 24.x+) Directories the job wants private under its scratch directory, on
        # top of the EP's MOUNT_UNDER_SCRATCH (the container runtimes read it).
        ad["MountUnderScratch"] = scratch.text
    if universe != "vm":
        return None
    return vm_attributes(job)


def container_image_kind(image: str) -> str:
    """The attribute condor_submit sets for a container image: a ``docker:`` reference, a
    ``.sif`` file, else a sandbox directory (any other path)."""
    if image.startswith("docker:"):
        return "WantDockerImage"
    if image.endswith(".sif"):
        return "WantSIF"
    return "WantSandboxImage"


def constant_attributes() -> ClassAd:
    """The attributes every new job starts with, whatever its commands (built once per
    submission and copied into each job)."""
    ad = ClassAd()
    for name in _ZERO_COUNTERS:
        ad[name] = 0
    for name in _ZERO_TIMES:
        ad[name] = 0.0
    ad["MinHosts"] = 1
    ad["MaxHosts"] = 1
    ad["ExitBySignal"] = False
    ad["LeaveJobInQueue"] = False
    ad["WantRemoteIO"] = True
    ad["RootDir"] = "/"
    ad["EncryptExecuteDirectory"] = False
    return ad


def build_job_ad(
    macros: SubmitMacros,
    context: SubmitContext,
    host: SubmitHost,
    *,
    cluster_id: int,
    proc_id: int,
    queue_line: int,
    attributes: tuple[JobAttribute, ...],
    base: ClassAd,
) -> ClassAd:
    """The complete ad of job ``cluster_id.proc_id``; ``attributes`` are the ``+Attr`` lines in
    force, applied last as condor_submit does; ``base`` is :func:`constant_attributes`."""
    job = _Job(macros, context, host, queue_line, base)
    name, universe = _universe(job)
    _identity(job, cluster_id, proc_id)
    job.ad["JobUniverse"] = universe
    input_bytes = _files(job, name)
    _command_line(job)
    should_transfer = _transfer(job, input_bytes)
    requests = resource_requests(macros, context.config, job.fault)
    for attribute, value in requests.values:
        job.ad[attribute] = value
    vm_type = _containers(job, name)
    if vm_type is not None:
        should_transfer = "YES"  # as the VM universe sets it (vmjob.vm_attributes)
    _accounting(job)
    _policy(job)
    apply_simple_commands(job.ad, job.get, job.fault)
    requirements = job.get("requirements")
    if requirements is not None:
        job.expression("requirements", requirements)
    inputs = RequirementsInputs(
        arch=context.config.get("ARCH") or "X86_64",
        opsys=context.config.get("OPSYS") or "LINUX",
        requests=requests,
        should_transfer_files=should_transfer,
        docker=name == "docker",
        container=_container_kind(job.ad),
        docker_network=_text_of(job.get("docker_network_type")) if name == "docker" else None,
        vm_type=vm_type,
        vm_networking=vm_type is not None and job.flag("vm_networking", False),
        vm_networking_type="JobVMNetworkingType" in job.ad,
        # Only a VM job evaluates it: evaluating loads the function library, which a plain
        # submit does not need (tests/cli/test_submit_cmd.py).
        vm_checkpoint=vm_type is not None and job.ad.evaluate("JobVMCheckpoint") is True,
        generate_custom=context.config.get_bool(
            "SUBMIT_GENERATE_CUSTOM_RESOURCE_REQUIREMENTS", True
        ),
    )
    text = job_requirements(requirements.text if requirements else None, inputs)
    job.ad["Requirements"] = job.expression("requirements", Located(text, queue_line))
    for extra in attributes:
        expanded = macros.expand(extra.raw, extra.name, extra.line).strip()
        where = Located(expanded, extra.line, extra.source)
        job.ad[extra.name] = job.expression(f"+{extra.name}", where)
    return job.ad


def _container_kind(ad: ClassAd) -> str | None:
    # The Want* attributes are literals submit itself wrote (or a user's +WantSIF = true): no
    # function table, so that a submission does not load the ClassAd function library for
    # them (a function call in a user's own Want* gives ERROR here, so no offer is asked).
    for wish, offer in CONTAINER_OFFERS.items():
        if ad.evaluate(wish, functions=_NO_FUNCTIONS) is True:
            return offer
    return None


_NO_FUNCTIONS: Mapping[str, FunctionImpl] = MappingProxyType({})


def _text_of(found: Located | None) -> str | None:
    return None if found is None else found.text
