"""A VM job's libvirt domain: its disks from VMPARAM_vm_Disk, the domain XML, and the user
errors that hold the job (code 6 with HTCondor's subcodes, wave-2 B.5).

The XML follows what HTCondor's ``libvirt_simple_script.awk`` describes (memory, vCPUs, the
disks, NAT / bridge / user networking, a MAC address) with two epcore additions: the guest's
serial console goes to ``vm_console.log`` in the job's sandbox (it comes back to the Iwd with
the disks), and VM_KVM_KERNEL / VM_KVM_INITRD boot a kernel the machine holds, for guests
whose disks carry no boot loader. A configured LIBVIRT_XML_SCRIPT replaces all of it.
"""

from __future__ import annotations

import os
import posixpath
import shutil
import subprocess

import attrs

from epcore.api import HoldCode, VacateCode, as_user
from epcore.classad import ClassAd, format_old
from epcore.config import Config
from epcore.errors import JobSetupError, UniverseOffline

#: Every epcore domain's name starts with this; the key that follows finds its job.
NAME_PREFIX = "epcore-"
#: The guest's serial console, in the job's sandbox.
CONSOLE_FILE = "vm_console.log"

#: HTCondor's vm_proc.cpp holdingErrors: a VM start that fails with one of these holds the
#: job with code 6 and the index as subcode; any other failure requeues it.
HOLDING_ERRORS = (
    "VMGAHP_ERR_JOBCLASSAD_NO_VM_MEMORY_PARAM",
    "VMGAHP_ERR_JOBCLASSAD_XEN_NO_KERNEL_PARAM",
    "VMGAHP_ERR_JOBCLASSAD_MISMATCHED_HARDWARE_VT",
    "VMGAHP_ERR_JOBCLASSAD_XEN_KERNEL_NOT_FOUND",
    "VMGAHP_ERR_JOBCLASSAD_XEN_INITRD_NOT_FOUND",
    "VMGAHP_ERR_JOBCLASSAD_XEN_NO_ROOT_DEVICE_PARAM",
    "VMGAHP_ERR_JOBCLASSAD_XEN_NO_DISK_PARAM",
    "VMGAHP_ERR_JOBCLASSAD_XEN_INVALID_DISK_PARAM",
    "VMGAHP_ERR_JOBCLASSAD_XEN_MISMATCHED_CHECKPOINT",
    "VMGAHP_ERR_JOBCLASSAD_KVM_NO_DISK_PARAM",
    "VMGAHP_ERR_JOBCLASSAD_KVM_INVALID_DISK_PARAM",
    "VMGAHP_ERR_JOBCLASSAD_KVM_MISMATCHED_CHECKPOINT",
    "VMGAHP_ERR_BAD_IMAGE",
)


def vm_hold(error: str, detail: str = "") -> JobSetupError:
    """The hold HTCondor's starter sends for ``error`` (one of :data:`HOLDING_ERRORS`):
    code 6, the error's index as subcode, the error's name as the reason."""
    reason = error if not detail else f"{error}: {detail}"
    return JobSetupError(reason, HoldCode.FAILED_TO_CREATE_PROCESS, HOLDING_ERRORS.index(error))


@attrs.frozen
class VmDisk:
    """One ``vm_disk`` entry: the image's host path, the guest device, writable or not, and
    its format (raw unless given)."""

    path: str
    device: str
    writable: bool
    format: str = "raw"


@attrs.frozen
class DiskUser:
    """Whose rights a disk is checked with: the job's user (the starter runs as root, which
    may open any file; HTCondor's gahp checks as the job's user too)."""

    uid: int
    gid: int
    groups: tuple[int, ...] = ()


def _may_open(path: str, mode: int, user: DiskUser | None) -> bool:
    if user is None:
        return os.access(path, mode)
    with as_user(user.uid, user.gid, user.groups):
        # effective_ids: the check uses the identity as_user took, not the real (root) one.
        return os.access(path, mode, effective_ids=True)


def parse_disks(
    text: str | None, sandbox: str, vm_type: str, user: DiskUser | None = None
) -> tuple[VmDisk, ...]:
    """The disks of VMPARAM_vm_Disk, relative names taken in ``sandbox``; holds the job
    (KVM/XEN_NO_DISK_PARAM, _INVALID_DISK_PARAM) when absent, malformed, missing, or not
    readable (writable, for a ``w`` disk) by ``user`` (None: by this process)."""
    prefix = "XEN" if vm_type == "xen" else "KVM"
    if not text or not text.strip():
        raise vm_hold(f"VMGAHP_ERR_JOBCLASSAD_{prefix}_NO_DISK_PARAM")
    invalid = f"VMGAHP_ERR_JOBCLASSAD_{prefix}_INVALID_DISK_PARAM"
    disks: list[VmDisk] = []
    for entry in text.split(","):
        fields = [field.strip() for field in entry.split(":")]
        if len(fields) not in (3, 4) or not all(fields):
            raise vm_hold(invalid, f"{entry.strip()!r} is not file:device:permission[:format]")
        name, device, permission = fields[:3]
        if permission.lower() not in ("r", "w", "rw"):
            raise vm_hold(invalid, f"permission {permission!r} of {name} is not r or w")
        path = name if posixpath.isabs(name) else posixpath.join(sandbox, name)
        writable = "w" in permission.lower()
        if not os.path.isfile(path):
            raise vm_hold(invalid, f"the disk image {name} is not in the job's sandbox")
        if not _may_open(path, os.R_OK | (os.W_OK if writable else 0), user):
            raise vm_hold(invalid, f"the disk image {name} cannot be opened as {permission}")
        disks.append(VmDisk(path, device, writable, fields[3] if len(fields) == 4 else "raw"))
    return tuple(disks)


@attrs.frozen
class DomainPlan:
    """Everything the domain XML is made of, from the job ad and the configuration."""

    name: str
    job_key: str
    domain_type: str
    memory_mb: int
    vcpus: int
    disks: tuple[VmDisk, ...]
    console: str
    network: str | None = None
    bridge: str | None = None
    mac: str | None = None
    kernel: str | None = None
    initrd: str | None = None
    kernel_params: str = "console=ttyS0"
    #: The slot the job runs in (the domain's title: the startd's count of the running VMs
    #: publishes each guest's MAC and IP in its slot's ad).
    slot: str = ""
    #: passt is installed: user networking uses it (HTCondor 25's), else qemu's own (slirp).
    passt: bool = False


def domain_name(job_key: str) -> str:
    """The domain of job ``job_key``: the prefix, then the key with what libvirt's names
    cannot carry replaced (the whole key is kept in the domain's description)."""
    safe = "".join(c if c.isalnum() or c in "-_." else "_" for c in job_key)
    return NAME_PREFIX + safe[-180:]


def _int_attribute(job: ClassAd, name: str) -> int | None:
    value = job.evaluate(name)
    return value if isinstance(value, int) and not isinstance(value, bool) else None


def plan_domain(
    job: ClassAd,
    config: Config,
    job_key: str,
    sandbox: str,
    user: DiskUser | None = None,
    slot: str = "",
) -> DomainPlan:
    """The domain the job asks for; holds the job (code 6, B.5 subcodes) when its ad cannot
    make one, its disks checked with ``user``'s rights."""
    vm_type = job.evaluate("JobVMType")
    if not isinstance(vm_type, str) or not vm_type:
        raise JobSetupError(
            "JobVMType cannot be found in job classAd.", HoldCode.FAILED_TO_CREATE_PROCESS
        )
    memory = _int_attribute(job, "JobVMMemory")
    if memory is None or memory <= 0:
        raise vm_hold("VMGAHP_ERR_JOBCLASSAD_NO_VM_MEMORY_PARAM")
    if job.evaluate("JobVMHardwareVT") is True and not config.get_bool("VM_HARDWARE_VT", False):
        raise vm_hold("VMGAHP_ERR_JOBCLASSAD_MISMATCHED_HARDWARE_VT")
    disk_text = job.evaluate("VMPARAM_vm_Disk")
    disks = parse_disks(disk_text if isinstance(disk_text, str) else None, sandbox, vm_type, user)
    vcpus = _int_attribute(job, "JobVM_VCPUS") or _int_attribute(job, "RequestCpus") or 1
    network = bridge = None
    if job.evaluate("JobVMNetworking") is True:
        wanted = job.evaluate("JobVMNetworkingType")
        default = config.get("VM_NETWORKING_DEFAULT_TYPE") or "nat"
        network = (wanted if isinstance(wanted, str) and wanted else default).strip().lower()
        bridge = config.get("VM_NETWORKING_BRIDGE_INTERFACE")
    # A checkpointed guest comes back with the MAC it had (VM_CkptMac, which its last run
    # reported): its saved network state and any lease name that address.
    mac = job.evaluate("JobVM_MACADDR")
    if not isinstance(mac, str) or not mac:
        mac = job.evaluate("VM_CkptMac")
    # Without /dev/kvm, qemu's TCG emulation: the same guest, only slower. A /dev/kvm that
    # opens but does not work (nested virtualisation on this CI machine) needs the knob.
    domain_type = (config.get("VM_KVM_DOMAIN_TYPE") or "").strip().lower()
    if domain_type not in ("kvm", "qemu"):
        usable = vm_type == "kvm" and os.access("/dev/kvm", os.R_OK | os.W_OK)
        domain_type = "kvm" if usable else "qemu"
    return DomainPlan(
        name=domain_name(job_key),
        job_key=job_key,
        domain_type=domain_type,
        memory_mb=memory,
        vcpus=max(vcpus, 1),
        disks=disks,
        console=posixpath.join(sandbox, CONSOLE_FILE),
        network=network,
        bridge=bridge,
        mac=mac if isinstance(mac, str) and mac else None,
        kernel=config.get("VM_KVM_KERNEL") or None,
        initrd=config.get("VM_KVM_INITRD") or None,
        kernel_params=config.get("VM_KVM_KERNEL_PARAMS") or "console=ttyS0",
        slot=slot,
        passt=network == "user" and shutil.which("passt") is not None,
    )


def _bus(device: str) -> str:
    if device.startswith("vd"):
        return "virtio"
    if device.startswith("sd"):
        return "scsi"
    return "ide"


def domain_xml(plan: DomainPlan) -> str:
    """The libvirt domain XML of ``plan``."""
    q = _attribute
    boot = "<boot dev='hd'/>"
    if plan.kernel is not None:
        boot = f"<kernel>{_text(plan.kernel)}</kernel>"
        if plan.initrd is not None:
            boot += f"<initrd>{_text(plan.initrd)}</initrd>"
        boot += f"<cmdline>{_text(plan.kernel_params)}</cmdline>"
    disks = "".join(
        f"<disk type='file' device='disk'><driver name='qemu' type={q(disk.format)}/>"
        f"<source file={q(disk.path)}/><target dev={q(disk.device)} bus={q(_bus(disk.device))}/>"
        + ("" if disk.writable else "<readonly/>")
        + "</disk>"
        for disk in plan.disks
    )
    interface = ""
    if plan.network is not None:
        mac = f"<mac address={q(plan.mac)}/>" if plan.mac else ""
        if plan.network == "bridge":
            interface = f"<interface type='bridge'><source bridge={q(plan.bridge or '')}/>"
        elif plan.network == "user":
            backend = "<backend type='passt'/>" if plan.passt else ""
            interface = f"<interface type='user'>{backend}"
        else:
            interface = "<interface type='network'><source network='default'/>"
        interface += f"{mac}<model type='virtio'/></interface>"
    # <acpi/> lets the guest's poweroff (and virDomainShutdown) stop the machine; without it
    # the guest only halts and the domain never ends.
    return (
        f"<domain type={q(plan.domain_type)}><name>{_text(plan.name)}</name>"
        + (f"<title>{_text(plan.slot)}</title>" if plan.slot else "")
        + f"<description>{_text(plan.job_key)}</description>"
        f"<memory unit='MiB'>{plan.memory_mb}</memory><vcpu>{plan.vcpus}</vcpu>"
        f"<os><type arch='x86_64' machine='pc'>hvm</type>{boot}</os>"
        "<features><acpi/></features><on_poweroff>destroy</on_poweroff>"
        "<on_reboot>restart</on_reboot><on_crash>destroy</on_crash>"
        f"<devices>{disks}{interface}"
        # append: a guest restored after a hard suspend keeps what it printed before.
        f"<serial type='file'><source path={q(plan.console)} append='on'/></serial>"
        "<memballoon model='none'/></devices></domain>"
    )


def _text(value: str) -> str:
    return value.replace("&", "&amp;").replace("<", "&lt;").replace(">", "&gt;")


def _attribute(value: str) -> str:
    """``value`` as a double-quoted XML attribute value. Not ``xml.sax.saxutils.quoteattr``:
    that module imports ``urllib.request`` and so ``ssl``, about 6 MB in every startd that
    loads this plugin."""
    escaped = _text(value).replace('"', "&quot;")
    return '"' + escaped.replace("\n", "&#10;").replace("\r", "&#13;").replace("\t", "&#9;") + '"'


def script_xml(config: Config, job: ClassAd, plan: DomainPlan, sandbox: str) -> str | None:
    """The domain XML LIBVIRT_XML_SCRIPT prints for the job (its ad on stdin, with the
    attributes HTCondor's gahp adds: VMPARAM_VM_NAME, VM_WORKING_DIR...); None when no
    script is configured. A script that fails is an infrastructure error (requeue)."""
    script = config.get("LIBVIRT_XML_SCRIPT")
    if not script:
        return None
    ad = job.copy()
    ad["VMPARAM_VM_NAME"] = plan.name
    ad["VM_WORKING_DIR"] = sandbox
    if plan.bridge:
        ad["VMPARAM_Bridge_Interface"] = plan.bridge
    argv = [script, *config.get_list("LIBVIRT_XML_SCRIPT_ARGS")]
    try:
        done = subprocess.run(
            argv, input=format_old(ad), capture_output=True, text=True, timeout=60, check=False
        )
    except (OSError, subprocess.TimeoutExpired) as error:
        raise VmInfrastructureError(f"LIBVIRT_XML_SCRIPT {script}: {error}") from error
    if done.returncode != 0 or not done.stdout.strip():
        raise VmInfrastructureError(
            f"LIBVIRT_XML_SCRIPT {script} exited {done.returncode}: {done.stderr.strip()[-300:]}"
        )
    return done.stdout


class VmInfrastructureError(UniverseOffline):
    """libvirt or the machine failed, not the job: the job goes back to the queue with
    HTCondor's VMError (1020) and its message, and the startd marks the VM universe offline
    on every slot (HasVM = false, VMOfflineReason = ``reason``)."""

    def __init__(self, reason: str) -> None:
        message = (
            "An internal error prevented HTCondor from starting the VM.  "
            f"This job will be rescheduled.  ({reason})."
        )
        super().__init__(message, "VM", 13, VacateCode.VM_ERROR, reason)
