"""The VM universe's job attributes, as condor_submit's ``SetVMParams`` writes them.

The names are HTCondor's (``JobVM_VCPUS`` with an underscore, ``VMPARAM_vm_Disk``); the
execute side (plugin ``epcore-vm``) reads nothing else. Xen's ``xen_*`` commands are left out:
epcore drives kvm only and a machine with ``VM_TYPE = xen`` never matches a kvm job.
"""

from __future__ import annotations

from typing import Protocol

from epcore.classad import ClassAd, Expr
from epcore.errors import SubmitError
from epcore.submit.macros import Located

#: Job attribute names the submit side writes and the plugin reads.
VM_VCPUS = "JobVM_VCPUS"
VM_DISK = "VMPARAM_vm_Disk"
NO_OUTPUT_VM = "VMPARAM_No_Output_VM"


class VMJob(Protocol):
    """The part of the submit module's job builder this module uses."""

    @property
    def ad(self) -> ClassAd: ...

    def fault(self, message: str, found: Located | None = None) -> SubmitError: ...

    def get(self, *names: str) -> Located | None: ...

    def flag(self, command: str, default: bool) -> bool: ...

    def integer(self, command: str, found: Located) -> int | Expr: ...


def disk_entries_valid(text: str) -> bool:
    """True when every comma-separated ``vm_disk`` entry has 3 or 4 non-empty ``:`` fields
    (file, device, permission and an optional format)."""
    entries = [entry.strip() for entry in text.split(",")]
    if not entries or any(not entry for entry in entries):
        return False
    for entry in entries:
        fields = entry.split(":")
        if len(fields) not in (3, 4) or any(not field.strip() for field in fields):
            return False
    return True


def vm_attributes(job: VMJob) -> str:
    """Write the VM attributes into ``job.ad``; returns the lower-cased vm_type."""
    ad = job.ad
    vm_type = job.get("vm_type")
    if vm_type is None:
        raise job.fault("universe vm needs a vm_type (kvm or xen)")
    kind = vm_type.text.strip().lower()
    if kind == "vmware":
        raise job.fault("A vm_type of 'vmware' is no longer supported", vm_type)
    if kind not in ("kvm", "xen"):
        raise job.fault(f"vm_type {vm_type.text} is not one of kvm, xen", vm_type)
    ad["JobVMType"] = kind
    checkpoint = job.flag("vm_checkpoint", False)
    ad["JobVMCheckpoint"] = checkpoint
    networking = job.flag("vm_networking", False)
    ad["JobVMNetworking"] = networking
    when = job.get("when_to_transfer_output")
    if checkpoint and networking and (when is None or when.text.upper() != "ON_EXIT_OR_EVICT"):
        raise job.fault(
            "vm_checkpoint and vm_networking together need an explicit "
            '"when_to_transfer_output = ON_EXIT_OR_EVICT"',
            when,
        )
    # condor_submit turns file transfer on for every VM job, whatever the submit file says:
    # the disks are the output, and a checkpointed guest (its saved memory and disks) goes
    # back at eviction too, to run on from there next time.
    ad["ShouldTransferFiles"] = "YES"
    ad["WhenToTransferOutput"] = "ON_EXIT_OR_EVICT" if checkpoint else "ON_EXIT"
    network_type = job.get("vm_networking_type")
    if networking and network_type is not None:
        ad["JobVMNetworkingType"] = network_type.text
    ad["JobVMVNCConsole"] = job.flag("vm_vnc", False)
    memory = job.get("vm_memory")
    if memory is None:
        raise job.fault("vm_memory cannot be found: universe vm needs the guest's MiB")
    megabytes = job.integer("vm_memory", memory)
    if not isinstance(megabytes, int) or megabytes <= 0:
        raise job.fault("vm_memory is incorrectly specified (e.g. 128 for 128 MiB)", memory)
    ad["JobVMMemory"] = megabytes
    # A suspended guest's memory is saved to disk: HTCondor counts it as the job's size.
    ad["ExecutableSize"] = megabytes * 1024
    vcpus = job.get("vm_vcpus")
    ad[VM_VCPUS] = max(_leading_int(vcpus.text), 1) if vcpus is not None else 1
    mac = job.get("vm_macaddr")
    if mac is not None:
        ad["JobVM_MACADDR"] = mac.text
    if job.get("vm_no_output_vm") is not None:
        ad[NO_OUTPUT_VM] = job.flag("vm_no_output_vm", False)
    disk = job.get("vm_disk")
    if disk is None:
        raise job.fault("vm_disk cannot be found: a kvm or xen job needs its disk images")
    if not disk_entries_valid(disk.text):
        raise job.fault(
            "vm_disk has incorrect format: <filename>:<devicename>:<permission>[:<format>], "
            "comma-separated",
            disk,
        )
    ad[VM_DISK] = disk.text
    return kind


def _leading_int(text: str) -> int:
    # condor_submit reads vm_vcpus with strtol: leading digits count, anything else is 0.
    digits = ""
    for char in text.strip():
        if not char.isdigit():
            break
        digits += char
    return int(digits) if digits else 0
