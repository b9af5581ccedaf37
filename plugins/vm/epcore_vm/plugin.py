"""The VM plugin's hooks: epcore finds this module through the ``epcore`` entry point.

It adds one epcore knob, VM_LIBVIRT_URI, and the VM universe's slot attributes (HasVM and
friends, :mod:`epcore_vm.detect`). HTCondor's own VM_* knobs are already in epcore's default
table. Running VM jobs is not part of this plugin yet (see its README).
"""

from __future__ import annotations

from collections.abc import Sequence

from epcore import hookimpl
from epcore.config import Config, KnobDefault
from epcore.types import MachineAttribute, MachineInventory
from epcore_vm.detect import probe, vm_attributes
from epcore_vm.settings import read_settings


@hookimpl
def ep_config_defaults() -> Sequence[KnobDefault]:
    """VM_LIBVIRT_URI: which libvirt connection the VM universe uses."""
    return [
        KnobDefault(
            "VM_LIBVIRT_URI",
            None,
            "string",
            "epcore: the libvirt connection of the VM universe; unset: qemu:///system for "
            "kvm, xen:/// for xen (a private libvirtd: qemu:///system?socket=<path>).",
        )
    ]


@hookimpl
def ep_machine_attributes(
    config: Config, inventory: MachineInventory
) -> Sequence[MachineAttribute]:
    """HasVM, VM_Type, VM_Memory, VM_AvailNum, VM_Networking... or HasVM = false and
    VMOfflineReason when the configuration or libvirt rules the universe out."""
    del inventory  # VM_MEMORY is the VMs' own share, not the slots'
    settings = read_settings(config)
    facts = None if settings.problem is not None else probe(settings.uri)
    return vm_attributes(settings, facts)
