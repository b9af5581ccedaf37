"""The checkpoint's files and XML (no libvirt): the saved guest's name and UUID carried into
the new run's domain, its copy from the Iwd into the sandbox, and its removal."""

from __future__ import annotations

import logging
from pathlib import Path

from epcore_vm.checkpoint import as_saved, bring_in, checkpoint_name, forget, restore
from test_vm_runtime import _request

from epcore.types import ContainerJob

SAVED = (
    "<domain type='qemu'><name>epcore-first</name>"
    "<uuid>0b3c8e1e-5d2a-4c1f-9a3e-2f1d0c9b8a71</uuid><description>first</description></domain>"
)


def test_the_new_domain_takes_the_saved_guest_s_name_and_uuid() -> None:
    """The new run's XML gets the saved name and UUID; its description (job key) stays."""
    xml = "<domain type='qemu'><name>epcore-second</name><description>second</description>"
    changed, name = as_saved(xml + "</domain>", SAVED)
    assert name == "epcore-first"
    assert changed == (
        "<domain type='qemu'><name>epcore-first</name>"
        "<uuid>0b3c8e1e-5d2a-4c1f-9a3e-2f1d0c9b8a71</uuid>"
        "<description>second</description></domain>"
    )


def _job_in(tmp_path: Path) -> tuple[ContainerJob, Path]:
    sandbox, iwd = tmp_path / "sandbox", tmp_path / "iwd"
    sandbox.mkdir()
    iwd.mkdir()
    request = _request(sandbox, "key")
    request.job["Iwd"] = str(iwd)
    request.job["ClusterId"] = 7
    request.job["ProcId"] = 2
    return request, iwd


def test_the_saved_guest_comes_in_from_the_iwd_and_a_completed_job_forgets_it(
    tmp_path: Path,
) -> None:
    """bring_in copies the job's own checkpoint into the sandbox (None when there is none);
    forget removes it from the Iwd."""
    request, iwd = _job_in(tmp_path)
    assert checkpoint_name(request.job) == "vm_checkpoint.7.2.mem"
    assert bring_in(request) is None
    (iwd / "vm_checkpoint.7.1.mem").write_bytes(b"another job's guest")
    assert bring_in(request) is None
    (iwd / "vm_checkpoint.7.2.mem").write_bytes(b"guest memory")
    copied = bring_in(request)
    assert copied == f"{request.sandbox}/vm_checkpoint.7.2.mem"
    assert Path(copied).read_bytes() == b"guest memory"
    forget(request)
    assert not (iwd / "vm_checkpoint.7.2.mem").exists()
    assert (iwd / "vm_checkpoint.7.1.mem").exists()


class RefusingConnection:
    """A libvirt connection whose restore fails, as for a damaged image."""

    def saveImageGetXMLDesc(self, path: str, flags: int) -> str:
        return SAVED

    def restoreFlags(self, path: str, xml: str, flags: int) -> None:
        raise RuntimeError("image is damaged")


def test_a_checkpoint_libvirt_cannot_restore_gives_a_fresh_boot(tmp_path: Path) -> None:
    """restore returns None when libvirt refuses the image, and removes the sandbox copy."""
    saved = tmp_path / "vm_checkpoint.1.0.mem"
    saved.write_bytes(b"damaged")
    domain = restore(RefusingConnection(), str(saved), "<domain/>", logging.getLogger("t"))
    assert domain is None and not saved.exists()
