"""The VM plugin honours epcore's contract for container runtimes (epcore.testing), the part
that needs no hypervisor: libvirt is configured to a socket that does not exist."""

from __future__ import annotations

from types import ModuleType

import epcore_vm.plugin
import pytest

from epcore.testing.contracts import ContainerRuntimeContract


class TestVmRuntimeContract(ContainerRuntimeContract):
    """The plugin's runtime with the VM universe on and no libvirtd to reach."""

    config_text = (
        "VM_TYPE = kvm\nVM_MEMORY = 256\nVM_MAX_NUMBER = 1\n"
        "VM_LIBVIRT_URI = qemu:///system?socket=/nonexistent/epcore-contract.sock\n"
    )

    @pytest.fixture
    def plugin(self) -> ModuleType:
        """The plugin module, as its entry point names it."""
        return epcore_vm.plugin
