"""The VM universe's knobs as one frozen record (seed 000's VM_* knobs, wave-2 B.1)."""

from __future__ import annotations

import attrs

from epcore.config import Config

#: VM_AvailNum when VM_MAX_NUMBER leaves the count unlimited (HTCondor's vmuniverse_mgr).
UNLIMITED_AVAIL = 10000
#: The types libvirt still drives; VMware went long ago (its own refusal, below).
SUPPORTED_TYPES = ("kvm", "xen")
#: Where each type's hypervisor listens when VM_LIBVIRT_URI does not say.
DEFAULT_URIS = {"kvm": "qemu:///system", "xen": "xen:///"}
#: The networking types HTCondor knows; anything else in VM_NETWORKING_TYPE is dropped.
NETWORKING_TYPES = ("nat", "bridge", "user")


@attrs.frozen
class VmSettings:
    """What the configuration asks of the VM universe; ``problem`` says why it is off
    (None when the configuration alone does not rule it out)."""

    vm_type: str | None
    memory_mb: int
    max_number: int
    networking: bool
    networking_types: tuple[str, ...]
    hardware_vt: bool
    uri: str
    problem: str | None

    @property
    def avail_num(self) -> int:
        """VM_AvailNum with no VM running: VM_MAX_NUMBER, or 10000 when unlimited (0)."""
        return self.max_number if self.max_number > 0 else UNLIMITED_AVAIL


def _int(config: Config, name: str) -> int:
    # VM_MEMORY and VM_MAX_NUMBER are strings in the default table: a bad value counts as
    # unset, as HTCondor's param_integer falls back to its default.
    text = config.get(name)
    try:
        return int(text) if text is not None else 0
    except ValueError:
        return 0


def read_settings(config: Config) -> VmSettings:
    """The VM_* knobs of ``config``, with the first reason the universe is off, if any."""
    raw_type = config.get("VM_TYPE")
    vm_type = raw_type.strip().lower() if raw_type and raw_type.strip() else None
    memory = _int(config, "VM_MEMORY")
    wanted = [t.lower() for t in config.get_list("VM_NETWORKING_TYPE")]
    types = tuple(t for t in NETWORKING_TYPES if t in wanted)
    # Networking needs a type as well, else it is off (vmgahp_config.cpp).
    networking = config.get_bool("VM_NETWORKING", False) and bool(types)
    problem: str | None = None
    if vm_type is None:
        problem = "VM_TYPE is not defined"
    elif vm_type == "vmware":
        problem = "A vm_type of 'vmware' is no longer supported"
    elif vm_type not in SUPPORTED_TYPES:
        problem = f"VM_TYPE {vm_type!r} is not supported (kvm or xen)"
    elif memory <= 0:
        problem = "'VM_MEMORY' is not defined"
    uri = config.get("VM_LIBVIRT_URI") or DEFAULT_URIS.get(vm_type or "", "qemu:///system")
    return VmSettings(
        vm_type=vm_type,
        memory_mb=max(memory, 0),
        max_number=max(_int(config, "VM_MAX_NUMBER"), 0),
        networking=networking,
        networking_types=types if networking else (),
        hardware_vt=config.get_bool("VM_HARDWARE_VT", False),
        uri=uri,
        problem=problem,
    )
