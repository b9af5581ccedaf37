"""Helpers of the VM plugin's pool tests: a personal pool whose jobs boot the tests' guest."""

from __future__ import annotations

import os
from collections.abc import Callable
from pathlib import Path

import attrs
from vm_guest import Guest

from epcore.testing.pool import PoolProcess
from epcore.testing.system import SlotUser

#: The input the guest upper-cases onto its output disk.
INPUT = b"hello from the input disk\n"
#: A guest's boot to power-off is 7-13 s under TCG on a quiet machine; this one is shared.
JOB_DEADLINE = 240.0

VM_JOB = """\
universe = vm
executable = copy_guest
vm_type = kvm
vm_memory = 128
vm_disk = in.img:vda:r,out.img:vdb:w
should_transfer_files = YES
when_to_transfer_output = ON_EXIT
transfer_input_files = in.img, out.img
log = job.log
{extra}
queue
"""


def vm_config(uri: str, guest: Guest, extra: str = "") -> str:
    """The pool configuration that turns the VM universe on with the private libvirtd and
    boots the tests' kernel and initramfs."""
    return (
        f"\nVM_TYPE = kvm\nVM_MEMORY = 512\nVM_LIBVIRT_URI = {uri}\n"
        f"VM_KVM_KERNEL = {guest.kernel}\nVM_KVM_INITRD = {guest.initrd}\n"
        "VM_KVM_KERNEL_PARAMS = console=ttyS0 quiet panic=-1\n"
        # This machine's /dev/kvm opens but its guests never run: qemu's TCG.
        "VM_KVM_DOMAIN_TYPE = qemu\n" + extra
    )


def write_disks(home: Path, user: SlotUser, data: bytes = INPUT) -> None:
    """The job's input and (empty) output disks, 1 MiB each, owned by ``user``."""
    for name, content in (("in.img", data), ("out.img", b"")):
        path = home / name
        path.write_bytes(content.ljust(1 << 20, b"\0"))
        os.chown(path, user.uid, user.gid)


def submit_vm(pool: PoolProcess, user: SlotUser, home: Path, extra: str = "") -> None:
    """Submit the copying guest's job as ``user`` from ``home``."""
    path = home / "job.sub"
    path.write_text(VM_JOB.format(extra=extra))
    os.chown(path, user.uid, user.gid)
    result = pool.ep("submit", "job.sub", user=user, cwd=str(home))
    assert result.status == 0, result.stderr


def domains(uri: str, containing: str) -> list[str]:
    """The names of the libvirtd's epcore domains that contain ``containing`` (a test's
    directory name: another test's leftovers are not this test's failure)."""
    import libvirt

    connection = libvirt.open(uri)
    try:
        names = [d.name() for d in connection.listAllDomains(0)]
        return [n for n in names if n.startswith("epcore-") and containing in n]
    finally:
        connection.close()


def waiter(pool: PoolProcess) -> Callable[[Callable[[], bool], float, str], None]:
    """``pool.wait_for``, typed for the tests."""
    return pool.wait_for


@attrs.frozen
class VmPool:
    """A started pool with the VM universe on the tests' libvirtd (fixture ``vm_pool``), its
    slot user, and the user's home (the jobs' Iwd) holding the job's disks."""

    pool: PoolProcess
    user: SlotUser
    home: Path
    uri: str
    #: The test's directory name: its jobs' domain names contain it.
    tag: str

    def submit(self, extra: str = "") -> None:
        """Submit the guest's job (``extra``: more submit commands)."""
        submit_vm(self.pool, self.user, self.home, extra)

    def domains(self) -> list[str]:
        """This test's epcore domains in the libvirtd."""
        return domains(self.uri, self.tag)

    def wait_for_domain(self) -> str:
        """Wait for the job's guest to run; its domain's name."""
        self.pool.wait_for(lambda: bool(self.domains()), JOB_DEADLINE, "the VM")
        (name,) = self.domains()
        return name

    def starter_log(self) -> str:
        """Every StarterLog of the pool, one after the other."""
        logs = sorted((self.pool.directory / "log").glob("StarterLog*"))
        return "".join(self.pool.log(path.name) for path in logs)
