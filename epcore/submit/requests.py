"""Resource requests (``request_*``) and the clauses condor_submit adds to ``Requirements``."""

from __future__ import annotations

import re
from collections.abc import Callable

import attrs

from epcore.classad import Expr
from epcore.config import Config
from epcore.submit.macros import Located, SubmitMacros
from epcore.submit.values import parse_integer, parse_size

#: The request commands with their attribute, the unit power (MB: 2, KB: 1; None: a count)
#: and the configuration knob giving the default.
_STANDARD_REQUESTS = (
    ("request_cpus", "RequestCpus", None, "JOB_DEFAULT_REQUESTCPUS"),
    ("request_memory", "RequestMemory", 2, "JOB_DEFAULT_REQUESTMEMORY"),
    ("request_disk", "RequestDisk", 1, "JOB_DEFAULT_REQUESTDISK"),
    ("request_gpus", "RequestGPUs", None, None),
)
_STANDARD_NAMES = frozenset(
    {"cpus", "memory", "disk", "gpus", "cpu", "gpu", "virtualmemory", "gpu_memory"}
)

Fault = Callable[[str, Located], Exception]


@attrs.frozen
class ResourceRequests:
    """The ``Request*`` attributes of a job, and which of them the user gave explicitly."""

    values: tuple[tuple[str, int | Expr], ...]
    explicit: frozenset[str]
    custom: tuple[str, ...]


def _request_value(command: str, found: Located, unit: int | None, fault: Fault) -> int | Expr:
    try:
        if unit is None:
            return parse_integer(found.text)
        return parse_size(found.text, unit)
    except ValueError as error:
        raise fault(f"{command}: {error}", found) from error


def resource_requests(macros: SubmitMacros, config: Config, fault: Fault) -> ResourceRequests:
    """Read ``request_cpus/memory/disk/gpus`` and ``request_<name>`` (custom resources)."""
    values: list[tuple[str, int | Expr]] = []
    explicit: set[str] = set()
    for command, attribute, unit, knob in _STANDARD_REQUESTS:
        found = macros.get(command, attribute)
        if found is not None:
            values.append((attribute, _request_value(command, found, unit, fault)))
            explicit.add(attribute)
            continue
        default = config.get(knob) if knob else None
        if default is not None:
            try:
                values.append((attribute, parse_integer(default)))
            except ValueError:
                continue  # condor_submit ignores a default that is not an expression
    custom: list[str] = []
    for definition in macros.table:
        match = re.fullmatch(r"request_([A-Za-z_][A-Za-z0-9_]*)", definition.name, re.I)
        if match is None or match.group(1).lower() in _STANDARD_NAMES:
            continue
        found = macros.get(definition.name)
        if found is None:
            continue
        name = match.group(1)
        values.append((f"Request{name}", _request_value(definition.name, found, None, fault)))
        custom.append(name)
    return ResourceRequests(tuple(values), frozenset(explicit), tuple(custom))


def _mentions(expression: str, attribute: str) -> bool:
    """True when ``expression`` refers to ``attribute`` (bare, TARGET. or MY. scoped)."""
    if attribute.lower() not in expression.lower():
        # The usual answer, found without compiling two expressions per attribute: each
        # compile is paid again by every ep submit process.
        return False
    unquoted = re.sub(r'"(?:[^"\\]|\\.)*"', '""', expression)
    return (
        re.search(rf"(?<![A-Za-z0-9_]){re.escape(attribute)}(?![A-Za-z0-9_])", unquoted, re.I)
        is not None
    )


#: The slot attribute a container job needs for each kind of image it names (condor_submit's
#: clause beside TARGET.HasContainer).
CONTAINER_OFFERS = {
    "WantDockerImage": "HasDockerURL",
    "WantSIF": "HasSIF",
    "WantSandboxImage": "HasSandboxImage",
}


@attrs.frozen
class RequirementsInputs:
    """What the default clauses of ``Requirements`` depend on."""

    arch: str
    opsys: str
    requests: ResourceRequests
    should_transfer_files: str
    docker: bool = False
    #: docker_network_type: a network other than none or host must be one the machine offers.
    docker_network: str | None = None
    vm_type: str | None = None
    #: vm_networking was asked for; with vm_networking_type given, that type too.
    vm_networking: bool = False
    vm_networking_type: bool = False
    #: vm_checkpoint = true: the guest resumes with its MAC (VM_CkptMac), which must not
    #: meet a running guest's (VM_All_Guest_Macs).
    vm_checkpoint: bool = False
    #: A container job's image offer (HasSIF, HasSandboxImage, HasDockerURL), else None.
    container: str | None = None
    generate_custom: bool = True


#: condor_submit's clause for a vm_checkpoint job (its MAC is unknown until a run reports it).
VM_CKPT_MAC_CLAUSE = (
    "((MY.VM_CkptMac =?= UNDEFINED) || (TARGET.VM_All_Guest_Macs =?= UNDEFINED) || "
    '(stringListIMember(MY.VM_CkptMac, TARGET.VM_All_Guest_Macs, ",") == FALSE))'
)


def job_requirements(user: str | None, inputs: RequirementsInputs) -> str:
    """The user's requirements ANDed with the clauses condor_submit adds.

    A clause is left out when the user's expression already refers to its machine attribute
    (as condor_submit does, so that a user can state a different Memory test, say).
    """
    given = user or ""
    clauses: list[str] = []

    def add(attribute: str, clause: str) -> None:
        if not _mentions(given, attribute):
            clauses.append(clause)

    if inputs.vm_type is not None:
        clauses.append("(TARGET.HasVM)")
        clauses.append(f'(TARGET.VM_Type == "{inputs.vm_type}")')
        clauses.append("(TARGET.VM_AvailNum > 0)")
        if inputs.vm_type != "xen":
            clauses.append("(TARGET.TotalMemory >= MY.JobVMMemory)")
        add("VM_Memory", "(TARGET.VM_Memory >= MY.JobVMMemory)")
        if inputs.vm_networking:
            add("VM_Networking", "TARGET.VM_Networking")
            if inputs.vm_networking_type:
                clauses.append(
                    'stringListIMember(JobVMNetworkingType, TARGET.VM_Networking_Types, ",")'
                )
        if inputs.vm_checkpoint:
            # condor_submit's: two guests with one MAC cannot share a machine.
            add("VM_CkptMac", VM_CKPT_MAC_CLAUSE)
    add("Arch", f'(TARGET.Arch == "{inputs.arch}")')
    add("OpSys", f'(TARGET.OpSys == "{inputs.opsys}")')
    if inputs.docker:
        add("HasDocker", "(TARGET.HasDocker)")
        network = inputs.docker_network
        if network is not None and network.strip().lower() not in ("none", "host"):
            quoted = network.strip().replace("\\", "\\\\").replace('"', '\\"')
            add("DockerNetworks", f'stringListIMember("{quoted}", TARGET.DockerNetworks)')
    if inputs.container is not None:
        add("HasContainer", "(TARGET.HasContainer)")
        add(inputs.container, f"(TARGET.{inputs.container})")
    add("Disk", "(TARGET.Disk >= RequestDisk)")
    add("Memory", "(TARGET.Memory >= RequestMemory)")
    if "RequestCpus" in inputs.requests.explicit:
        add("Cpus", "(TARGET.Cpus >= RequestCpus)")
    if "RequestGPUs" in inputs.requests.explicit:
        add("GPUs", "(TARGET.GPUs >= RequestGPUs)")
    if inputs.generate_custom:
        for name in inputs.requests.custom:
            add(name, f"(TARGET.{name} >= Request{name})")
    transfer = inputs.should_transfer_files
    if transfer == "YES":
        add("HasFileTransfer", "(TARGET.HasFileTransfer)")
    elif transfer == "NO":
        add("FileSystemDomain", "(TARGET.FileSystemDomain == MY.FileSystemDomain)")
    elif not _mentions(given, "HasFileTransfer") and not _mentions(given, "FileSystemDomain"):
        clauses.append(
            "((TARGET.FileSystemDomain == MY.FileSystemDomain) || (TARGET.HasFileTransfer))"
        )
    parts = ([f"({given})"] if given else []) + clauses
    return " && ".join(parts) if parts else "true"
