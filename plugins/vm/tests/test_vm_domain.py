"""The domain a VM job asks for, without libvirt: the XML, LIBVIRT_XML_SCRIPT, and each user
error that holds the job with code 6 and HTCondor's subcode."""

from __future__ import annotations

import os
import xml.etree.ElementTree as ET
from pathlib import Path

import pytest
from epcore_vm.domain import (
    HOLDING_ERRORS,
    DiskUser,
    VmInfrastructureError,
    domain_name,
    domain_xml,
    plan_domain,
    script_xml,
)
from epcore_vm.runtime import VmRuntime

from epcore.classad import ClassAd
from epcore.config import Config
from epcore.errors import JobSetupError

BASE = "VM_TYPE = kvm\nVM_MEMORY = 512\nVM_KVM_DOMAIN_TYPE = qemu\n"


def _job(**extra: object) -> ClassAd:
    job = ClassAd()
    job["JobUniverse"] = 13
    job["JobVMType"] = "kvm"
    job["JobVMMemory"] = 64
    job["VMPARAM_vm_Disk"] = "in.img:vda:r,out.img:vdb:w:qcow2"
    for name, value in extra.items():
        job[name] = value
    return job


@pytest.fixture
def sandbox(tmp_path: Path) -> Path:
    for name in ("in.img", "out.img"):
        (tmp_path / name).write_bytes(b"\0" * 512)
    return tmp_path


def _plan_error(job: ClassAd, sandbox: Path, text: str = BASE) -> JobSetupError:
    with pytest.raises(JobSetupError) as raised:
        plan_domain(job, Config.from_text(text), "key", str(sandbox))
    return raised.value


def test_the_xml_carries_memory_vcpus_disks_console_and_key(sandbox: Path) -> None:
    """The domain has the job's memory and vCPUs, its disks in order (the read-only one
    marked), its serial console in the sandbox and the job key as description."""
    job = _job(JobVM_VCPUS=2)
    plan = plan_domain(job, Config.from_text(BASE), "/x/key", str(sandbox))
    root = ET.fromstring(domain_xml(plan))
    assert root.get("type") == "qemu"
    assert root.findtext("name") == domain_name("/x/key") == "epcore-_x_key"
    assert root.findtext("description") == "/x/key"
    assert root.findtext("memory") == "64" and root.findtext("vcpu") == "2"
    disks = root.findall("devices/disk")
    assert [d.find("source").get("file") for d in disks] == [  # type: ignore[union-attr]
        str(sandbox / "in.img"),
        str(sandbox / "out.img"),
    ]
    assert [d.find("readonly") is not None for d in disks] == [True, False]
    assert disks[1].find("driver").get("type") == "qcow2"  # type: ignore[union-attr]
    assert root.find("devices/serial/source").get("path") == str(sandbox / "vm_console.log")  # type: ignore[union-attr]
    assert root.find("devices/interface") is None
    assert root.find("os/boot") is not None


def test_attribute_values_with_markup_read_back_unchanged(tmp_path: Path) -> None:
    """A sandbox path with quotes, markup characters and a tab reaches the domain XML's
    attributes escaped: the XML parses and gives the paths back."""
    odd = tmp_path / "a\"b'c&d<e>f\tg"
    odd.mkdir()
    for name in ("in.img", "out.img"):
        (odd / name).write_bytes(b"\0" * 512)
    plan = plan_domain(_job(), Config.from_text(BASE), "key", str(odd))
    root = ET.fromstring(domain_xml(plan))
    disks = root.findall("devices/disk")
    assert [d.find("source").get("file") for d in disks] == [  # type: ignore[union-attr]
        str(odd / "in.img"),
        str(odd / "out.img"),
    ]


def test_networking_and_a_direct_kernel(sandbox: Path) -> None:
    """vm_networking gives a NAT interface with the job's MAC; VM_KVM_KERNEL boots that
    kernel with its initrd and command line."""
    text = BASE + "VM_KVM_KERNEL = /boot/k\nVM_KVM_INITRD = /boot/i\nVM_KVM_KERNEL_PARAMS = a=1\n"
    job = _job(JobVMNetworking=True, JobVM_MACADDR="52:54:00:00:00:07")
    root = ET.fromstring(domain_xml(plan_domain(job, Config.from_text(text), "k", str(sandbox))))
    interface = root.find("devices/interface")
    assert interface is not None and interface.get("type") == "network"
    assert interface.find("mac").get("address") == "52:54:00:00:00:07"  # type: ignore[union-attr]
    assert (root.findtext("os/kernel"), root.findtext("os/initrd")) == ("/boot/k", "/boot/i")
    assert root.findtext("os/cmdline") == "a=1"


@pytest.mark.parametrize(
    ("change", "error"),
    [
        ({"JobVMMemory": 0}, "VMGAHP_ERR_JOBCLASSAD_NO_VM_MEMORY_PARAM"),
        ({"JobVMHardwareVT": True}, "VMGAHP_ERR_JOBCLASSAD_MISMATCHED_HARDWARE_VT"),
        ({"VMPARAM_vm_Disk": ""}, "VMGAHP_ERR_JOBCLASSAD_KVM_NO_DISK_PARAM"),
        ({"VMPARAM_vm_Disk": "in.img:vda"}, "VMGAHP_ERR_JOBCLASSAD_KVM_INVALID_DISK_PARAM"),
        ({"VMPARAM_vm_Disk": "gone.img:vda:r"}, "VMGAHP_ERR_JOBCLASSAD_KVM_INVALID_DISK_PARAM"),
        ({"VMPARAM_vm_Disk": "in.img:vda:x"}, "VMGAHP_ERR_JOBCLASSAD_KVM_INVALID_DISK_PARAM"),
        (
            {"JobVMType": "xen", "VMPARAM_vm_Disk": ""},
            "VMGAHP_ERR_JOBCLASSAD_XEN_NO_DISK_PARAM",
        ),
    ],
)
def test_user_errors_hold_with_code_6_and_the_subcode(
    sandbox: Path, change: dict[str, object], error: str
) -> None:
    """Each user error of the job ad holds it with code 6, the error's index in HTCondor's
    holdingErrors as subcode and its name as the reason."""
    raised = _plan_error(_job(**change), sandbox)
    assert raised.hold_code == 6
    assert raised.hold_subcode == HOLDING_ERRORS.index(error)
    assert raised.reason.startswith(error)


def test_holding_errors_keep_htcondors_indices() -> None:
    """The subcodes are HTCondor's: NO_VM_MEMORY 0, KVM_INVALID_DISK 10, BAD_IMAGE 12."""
    assert HOLDING_ERRORS.index("VMGAHP_ERR_JOBCLASSAD_NO_VM_MEMORY_PARAM") == 0
    assert HOLDING_ERRORS.index("VMGAHP_ERR_JOBCLASSAD_KVM_INVALID_DISK_PARAM") == 10
    assert HOLDING_ERRORS.index("VMGAHP_ERR_BAD_IMAGE") == 12 == len(HOLDING_ERRORS) - 1


def test_a_disk_the_user_cannot_write_is_invalid(shared_dir: Path, slot_users) -> None:
    """A disk asked writable that the job's user cannot write holds the job (KVM invalid
    disk), though the starter (root) could write it; the user's own disk passes."""
    user = slot_users[0]
    for name in ("in.img", "out.img"):
        (shared_dir / name).write_bytes(b"\0" * 512)
        (shared_dir / name).chmod(0o644)  # root's: readable by the user, not writable
    disk_user = DiskUser(user.uid, user.gid)
    with pytest.raises(JobSetupError) as raised:
        plan_domain(_job(), Config.from_text(BASE), "key", str(shared_dir), disk_user)
    assert raised.value.hold_subcode == 10
    assert "out.img cannot be opened as w" in raised.value.reason
    os.chown(shared_dir / "out.img", user.uid, user.gid)
    plan = plan_domain(_job(), Config.from_text(BASE), "key", str(shared_dir), disk_user)
    assert [d.writable for d in plan.disks] == [False, True]


def test_a_job_without_jobvmtype_is_held(sandbox: Path) -> None:
    """No JobVMType: held with code 6 and HTCondor's message."""
    job = _job()
    del job["JobVMType"]
    raised = _plan_error(job, sandbox)
    assert (raised.hold_code, raised.reason) == (6, "JobVMType cannot be found in job classAd.")


def test_libvirt_xml_script_reads_the_ad_and_prints_the_domain(sandbox: Path) -> None:
    """LIBVIRT_XML_SCRIPT gets the job ad with VMPARAM_VM_NAME and VM_WORKING_DIR on stdin,
    its arguments from LIBVIRT_XML_SCRIPT_ARGS, and its output is the domain XML."""
    script = sandbox / "make_xml.sh"
    script.write_text(
        "#!/bin/sh\nname=$(grep '^VMPARAM_VM_NAME = ' | cut -d '\"' -f 2)\n"
        "echo \"<domain arg='$1'><name>$name</name></domain>\"\n"
    )
    script.chmod(0o755)
    text = BASE + f"LIBVIRT_XML_SCRIPT = {script}\nLIBVIRT_XML_SCRIPT_ARGS = first\n"
    config = Config.from_text(text)
    plan = plan_domain(_job(), config, "key", str(sandbox))
    made = script_xml(config, _job(), plan, str(sandbox))
    assert made is not None
    assert ET.fromstring(made).get("arg") == "first"
    assert ET.fromstring(made).findtext("name") == "epcore-key"
    assert script_xml(Config.from_text(BASE), _job(), plan, str(sandbox)) is None


def test_a_failing_script_requeues(sandbox: Path) -> None:
    """A LIBVIRT_XML_SCRIPT that fails is an infrastructure error, not a hold."""
    config = Config.from_text(BASE + "LIBVIRT_XML_SCRIPT = /bin/false\n")
    plan = plan_domain(_job(), config, "key", str(sandbox))
    with pytest.raises(VmInfrastructureError):
        script_xml(config, _job(), plan, str(sandbox))


def test_libvirtd_away_requeues_the_job(sandbox: Path) -> None:
    """With no libvirtd at VM_LIBVIRT_URI, starting the job raises VmInfrastructureError
    (the starter ends it as evicted: it goes back to the queue) rather than holding it."""
    pytest.importorskip("libvirt")
    socket = sandbox / "no-such-socket"
    runtime = VmRuntime(
        Config.from_text(BASE + f"VM_LIBVIRT_URI = qemu:///system?socket={socket}\n")
    )
    from test_vm_runtime import _request

    with pytest.raises(VmInfrastructureError, match="libvirt"):
        runtime.start(_request(sandbox, "key"), __import__("logging").getLogger("t"))


def test_runs_only_vm_universe_jobs() -> None:
    """The runtime takes JobUniverse 13 and nothing else."""
    runtime = VmRuntime(Config.from_text(BASE))
    assert runtime.runs(_job()) is True
    vanilla = _job()
    vanilla["JobUniverse"] = 5
    assert runtime.runs(vanilla) is False
