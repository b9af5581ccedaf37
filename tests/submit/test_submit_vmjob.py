"""The VM universe's submit commands to job attributes, as condor_submit's SetVMParams."""

from __future__ import annotations

import pytest
from submit_support import Builder

from epcore.classad import UNDEFINED, ClassAd
from epcore.errors import SubmitError
from epcore.submit.vmjob import disk_entries_valid

VM = "universe = vm\nexecutable = label\nvm_type = kvm\nvm_memory = 128\nvm_disk = in.img:vda:r\n"

VM_CASES = [
    ("", "JobUniverse", 13),
    ("", "Cmd", "label"),
    ("", "TransferExecutable", False),
    ("", "JobVMType", "kvm"),
    ("vm_type = KVM", "JobVMType", "kvm"),
    ("", "JobVMMemory", 128),
    ("", "ExecutableSize", 128 * 1024),
    ("", "JobVM_VCPUS", 1),
    ("vm_vcpus = 2", "JobVM_VCPUS", 2),
    ("vm_vcpus = 0", "JobVM_VCPUS", 1),
    ("vm_vcpus = 3x", "JobVM_VCPUS", 3),
    ("", "JobVMVCPUs", UNDEFINED),
    ("", "JobVMCheckpoint", False),
    ("vm_checkpoint = true", "JobVMCheckpoint", True),
    ("", "WhenToTransferOutput", "ON_EXIT"),
    ("when_to_transfer_output = ON_EXIT_OR_EVICT", "WhenToTransferOutput", "ON_EXIT"),
    ("vm_checkpoint = true", "WhenToTransferOutput", "ON_EXIT_OR_EVICT"),
    ("should_transfer_files = NO", "ShouldTransferFiles", "YES"),
    (
        "vm_checkpoint = true\nvm_networking = true\nwhen_to_transfer_output = ON_EXIT_OR_EVICT",
        "WhenToTransferOutput",
        "ON_EXIT_OR_EVICT",
    ),
    ("vm_checkpoint = true", "ShouldTransferFiles", "YES"),
    ("", "JobVMNetworking", False),
    ("vm_networking = true", "JobVMNetworking", True),
    ("vm_networking = true\nvm_networking_type = nat", "JobVMNetworkingType", "nat"),
    ("vm_networking_type = nat", "JobVMNetworkingType", UNDEFINED),
    ("", "JobVMVNCConsole", False),
    ("vm_macaddr = 52:54:00:00:00:01", "JobVM_MACADDR", "52:54:00:00:00:01"),
    ("", "VMPARAM_vm_Disk", "in.img:vda:r"),
    ("vm_disk = a.img:vda:r,b.img:vdb:w:raw", "VMPARAM_vm_Disk", "a.img:vda:r,b.img:vdb:w:raw"),
    ("", "VMPARAM_No_Output_VM", UNDEFINED),
    ("vm_no_output_vm = true", "VMPARAM_No_Output_VM", True),
]


@pytest.mark.parametrize(("snippet", "attribute", "expected"), VM_CASES)
def test_vm_command_sets_attribute(
    build: Builder, snippet: str, attribute: str, expected: object
) -> None:
    """Each vm_* command yields the attribute and value condor_submit writes."""
    ad = build(f"{VM}{snippet}\nqueue\n").procs[0]
    assert ad.evaluate(attribute) == expected


VM_ERRORS = [
    ("vm_type = vmware", "no longer supported"),
    ("vm_type = hyperv", "not one of kvm, xen"),
    ("vm_memory = 0", "incorrectly specified"),
    ("vm_disk = in.img:vda", "incorrect format"),
    ("vm_disk = a:b:c:d:e", "incorrect format"),
    ("vm_disk = a:vda:r,", "incorrect format"),
    ("vm_networking = maybe", "vm_networking"),
    ("vm_checkpoint = true\nvm_networking = true", "ON_EXIT_OR_EVICT"),
]


@pytest.mark.parametrize(("snippet", "words"), VM_ERRORS)
def test_vm_mistake_is_a_submit_error(build: Builder, snippet: str, words: str) -> None:
    """A wrong vm_* command fails the submission, naming the problem."""
    with pytest.raises(SubmitError) as raised:
        build(f"{VM}{snippet}\nqueue\n")
    assert words in str(raised.value)


def test_vm_disk_is_required(build: Builder) -> None:
    """A kvm job without vm_disk is refused, as condor_submit refuses it."""
    with pytest.raises(SubmitError, match="vm_disk cannot be found"):
        build("universe = vm\nvm_type = kvm\nvm_memory = 64\nqueue\n")


def test_vm_requirements_follow_set_requirements(build: Builder) -> None:
    """A kvm job asks for TotalMemory and VM_Memory at least JobVMMemory and, with
    networking, for a machine offering it and the chosen type."""
    text = f"{VM}vm_networking = true\nvm_networking_type = nat\nqueue\n"
    requirements = str(build(text).procs[0]["Requirements"])
    for clause in (
        "(TARGET.VM_AvailNum > 0)",
        "(TARGET.TotalMemory >= MY.JobVMMemory)",
        "(TARGET.VM_Memory >= MY.JobVMMemory)",
        "TARGET.VM_Networking",
        'stringListIMember(JobVMNetworkingType,TARGET.VM_Networking_Types,",")',
    ):
        assert clause in requirements


def test_vm_requirements_leave_networking_out_when_off(build: Builder) -> None:
    """Without vm_networking no networking clause is added."""
    requirements = str(build(f"{VM}queue\n").procs[0]["Requirements"])
    assert "VM_Networking" not in requirements


@pytest.mark.parametrize(
    ("text", "valid"),
    [
        ("a:vda:r", True),
        ("a:vda:w:qcow2", True),
        (" a:vda:r , b:vdb:w ", True),
        ("a:vda", False),
        ("a::r", False),
        ("", False),
    ],
)
def test_disk_entries_valid(text: str, valid: bool) -> None:
    """vm_disk entries need three or four non-empty fields each."""
    assert disk_entries_valid(text) is valid


def test_a_checkpointing_job_keeps_off_a_machine_holding_its_mac(build: Builder) -> None:
    """vm_checkpoint = true adds condor_submit's VM_CkptMac clause: it passes while the job
    has no saved MAC or the machine lists no guest MACs, and fails when a running guest
    holds the job's MAC (case-insensitive); a job without checkpoint gets no clause."""
    job = build(f"{VM}vm_checkpoint = true\nqueue\n").procs[0]
    assert "VM_CkptMac" in str(job["Requirements"])
    assert "VM_CkptMac" not in str(build(f"{VM}queue\n").procs[0]["Requirements"])
    machine = ClassAd()
    for name, value in (
        ("HasVM", True),
        ("VM_Type", "kvm"),
        ("VM_AvailNum", 1),
        ("TotalMemory", 4096),
        ("VM_Memory", 512),
        ("Arch", "X86_64"),
        ("OpSys", "LINUX"),
        ("Disk", 10**9),
        ("Memory", 4096),
        ("HasFileTransfer", True),
    ):
        machine[name] = value

    def matches() -> object:
        return job.evaluate("Requirements", machine)

    assert matches() is True
    job["VM_CkptMac"] = "52:54:00:aa:bb:cc"
    assert matches() is True
    machine["VM_All_Guest_Macs"] = "52:54:00:11:22:33,52:54:00:AA:BB:CC"
    assert matches() is False
    machine["VM_All_Guest_Macs"] = "52:54:00:11:22:33"
    assert matches() is True
