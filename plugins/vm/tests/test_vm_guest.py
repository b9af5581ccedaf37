"""The tests' guest boots under the private libvirtd, reads its input disk, writes its output
disk and powers off (the machine recipe the VM universe's job path will use)."""

from __future__ import annotations

import time
from pathlib import Path

import pytest
from vm_guest import DONE_LINE, UP_LINE, Guest

#: Boot to power-off takes about 13 s under TCG on a quiet machine; the CI machine is shared.
BOOT_DEADLINE = 180.0


def _domain_xml(name: str, guest: Guest, work: Path) -> str:
    disks = "".join(
        f"<disk type='file' device='disk'><driver name='qemu' type='raw'/>"
        f"<source file='{work / image}'/><target dev='{dev}' bus='virtio'/></disk>"
        for image, dev in (("in.img", "vda"), ("out.img", "vdb"))
    )
    # <acpi/> is what lets the guest's poweroff stop the machine instead of halting it.
    return (
        f"<domain type='qemu'><name>{name}</name><memory unit='MiB'>128</memory><vcpu>1</vcpu>"
        f"<os><type arch='x86_64' machine='pc'>hvm</type><kernel>{guest.kernel}</kernel>"
        f"<initrd>{guest.initrd}</initrd><cmdline>console=ttyS0 quiet panic=-1</cmdline></os>"
        "<features><acpi/></features><on_poweroff>destroy</on_poweroff>"
        "<on_reboot>destroy</on_reboot><on_crash>destroy</on_crash>"
        f"<devices>{disks}<serial type='file'><source path='{work / 'console.log'}'/></serial>"
        "<memballoon model='none'/></devices></domain>"
    )


# One libvirtd per machine holds /run/libvirt: its tests share one worker.
@pytest.mark.xdist_group("libvirtd")
def test_the_guest_copies_its_input_disk_to_its_output_disk(
    libvirt_uri: str, vm_guest: Guest, tmp_path: Path
) -> None:
    """The guest upper-cases its input disk's first bytes onto its output disk, prints its
    lines on the serial console and powers off, leaving no domain behind."""
    import libvirt

    (tmp_path / "in.img").write_bytes(b"hello from the input disk\n".ljust(1 << 20, b"\0"))
    (tmp_path / "out.img").write_bytes(b"\0" * (1 << 20))
    name = f"epcore-test-guest-{tmp_path.name}"
    connection = libvirt.open(libvirt_uri)
    try:
        domain = connection.createXML(_domain_xml(name, vm_guest, tmp_path), 0)
        deadline = time.monotonic() + BOOT_DEADLINE
        while name in [d.name() for d in connection.listAllDomains()]:
            if time.monotonic() > deadline:
                domain.destroy()
                raise AssertionError(f"the guest did not power off in {BOOT_DEADLINE:.0f} s")
            time.sleep(0.2)
    finally:
        connection.close()
    console = (tmp_path / "console.log").read_text(errors="replace")
    assert UP_LINE in console and DONE_LINE in console, console[-2000:]
    assert (tmp_path / "out.img").read_bytes()[:26] == b"HELLO FROM THE INPUT DISK\n"
