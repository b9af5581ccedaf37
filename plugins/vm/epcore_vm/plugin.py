"""The VM plugin's hooks: epcore finds this module through the ``epcore`` entry point.

It adds epcore knobs (VM_LIBVIRT_URI...), the VM universe's slot attributes (HasVM and
friends, :mod:`epcore_vm.detect`; VM_AvailNum and VM_Memory as the running VMs leave them, a
cron job of :mod:`epcore_vm.accounting`) and the ``vm`` container runtime that runs VM
universe jobs (:mod:`epcore_vm.runtime`, each running one a :mod:`epcore_vm.running`).
HTCondor's own VM_* knobs are already in epcore's default table.
"""

from __future__ import annotations

from collections.abc import Sequence

from epcore import hookimpl
from epcore.config import Config, KnobDefault
from epcore.types import (
    ContainerRuntimeSpec,
    MachineAttribute,
    MachineInventory,
    PythonCronJob,
)
from epcore_vm.accounting import usage_job
from epcore_vm.connection import open_connection
from epcore_vm.detect import probe, vm_attributes
from epcore_vm.runtime import VmRuntime
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
        ),
        KnobDefault(
            "LIBVIRT_XML_SCRIPT",
            None,
            "string",
            "A program that reads a VM job's ad on stdin and prints its libvirt domain XML; "
            "unset: the plugin builds the XML itself.",
        ),
        KnobDefault("LIBVIRT_XML_SCRIPT_ARGS", None, "string", "Arguments of LIBVIRT_XML_SCRIPT."),
        KnobDefault(
            "VM_KVM_KERNEL",
            None,
            "string",
            "epcore: a kernel on this machine that VM jobs boot directly (guests whose disks "
            "hold no boot loader); unset: boot from the first disk.",
        ),
        KnobDefault(
            "VM_KVM_DOMAIN_TYPE",
            None,
            "string",
            "epcore: the libvirt domain type of VM jobs, kvm or qemu (TCG emulation); unset: "
            "kvm when /dev/kvm can be opened, else qemu.",
        ),
        KnobDefault("VM_KVM_INITRD", None, "string", "epcore: the initrd of VM_KVM_KERNEL."),
        KnobDefault(
            "VM_USAGE_INTERVAL",
            "10",
            "double",
            "epcore: seconds between two counts of the running VMs, which VM_AvailNum and "
            "VM_Memory follow.",
        ),
        KnobDefault(
            "VM_PERIODIC_CHECKPOINT",
            "false",
            "bool",
            "epcore: checkpoint vm_checkpoint guests when PERIODIC_CHECKPOINT says so (saved, "
            "sent to the Iwd, restored); HTCondor's starter declines it for KVM and Xen.",
        ),
        KnobDefault(
            "VM_KVM_KERNEL_PARAMS",
            "console=ttyS0",
            "string",
            "epcore: the command line of VM_KVM_KERNEL.",
        ),
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


@hookimpl
def ep_container_runtimes() -> Sequence[ContainerRuntimeSpec]:
    """The ``vm`` runtime: VM universe jobs (JobUniverse 13) as libvirt domains."""
    return [ContainerRuntimeSpec("vm", VmRuntime, starter_modules=("libvirt",))]


@hookimpl
def ep_cron_jobs(config: Config) -> Sequence[PythonCronJob]:
    """VM_AvailNum and VM_Memory as the running VMs leave them (none while the VM universe
    is off)."""
    settings = read_settings(config)
    if settings.problem is not None:
        return []
    return [usage_job(settings, config, open_connection)]
