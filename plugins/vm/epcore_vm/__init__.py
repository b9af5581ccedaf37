"""epcore-vm: the VM universe for epcore's execution point (seed 000's VM universe).

The plugin (``epcore_vm.plugin``, registered in the ``epcore`` entry-point group) asks libvirt
whether this machine can run virtual machines of the configured VM_TYPE and advertises the
answer (HasVM, VM_Type, VM_Memory, VM_AvailNum, VM_Networking...). Importing this package does
nothing else and does not import libvirt.
"""

from __future__ import annotations

__version__ = "0.1.0"
