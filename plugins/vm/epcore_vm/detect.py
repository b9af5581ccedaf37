"""Whether libvirt can run this machine's VMs: the slot attributes of the VM universe.

HTCondor's startd runs ``condor_vm-gahp -f -M 0 vmtype <VM_TYPE>`` and reads its answer; here the
plugin asks libvirt itself (libvirt-python), with a deadline, since a libvirtd that hangs must not
hang the startd. Nothing of it raises: a machine that cannot run VMs gets ``HasVM = false`` and
``VMOfflineReason``, and the startd goes on.
"""

from __future__ import annotations

import threading
from collections.abc import Callable
from typing import Any

import attrs

from epcore.types import MachineAttribute
from epcore_vm.settings import VmSettings

#: How long the first libvirt call may take. libvirtd re-probes qemu's capabilities on each
#: start, which holds the first qemu:///system call about 8 s (capabilities.md, section 4).
CONNECT_TIMEOUT = 30.0


@attrs.frozen
class HypervisorFacts:
    """What libvirt said: its version (``VM_GAHP_VERSION``) and hypervisor, or why not."""

    version: str | None
    hypervisor: str | None
    problem: str | None


def _libvirt_probe(uri: str) -> HypervisorFacts:
    import libvirt  # imported here: the startd pays for it only when VM_TYPE is set

    connection: Any = libvirt.open(uri)
    try:
        major, rest = divmod(int(libvirt.getVersion()), 1_000_000)
        minor, micro = divmod(rest, 1000)
        hypervisor = f"{connection.getType()} {connection.getVersion()}"
        return HypervisorFacts(f"{major}.{minor}.{micro}", hypervisor, None)
    finally:
        connection.close()


def probe(
    uri: str,
    timeout: float = CONNECT_TIMEOUT,
    opener: Callable[[str], HypervisorFacts] = _libvirt_probe,
) -> HypervisorFacts:
    """Ask the hypervisor at ``uri`` for its version within ``timeout`` seconds."""
    answer: list[HypervisorFacts] = []

    def run() -> None:
        try:
            answer.append(opener(uri))
        except ImportError as error:
            answer.append(HypervisorFacts(None, None, f"libvirt-python is missing: {error}"))
        except Exception as error:  # libvirt.libvirtError and whatever a broken daemon gives
            answer.append(HypervisorFacts(None, None, f"libvirt at {uri}: {error}".strip()))

    # A daemon thread: a libvirtd that never answers must not keep the startd from exiting.
    worker = threading.Thread(target=run, name="epcore-vm-probe", daemon=True)
    worker.start()
    worker.join(timeout)
    if not answer:
        return HypervisorFacts(None, None, f"libvirt at {uri} did not answer in {timeout:.0f} s")
    return answer[0]


def vm_attributes(settings: VmSettings, facts: HypervisorFacts | None) -> list[MachineAttribute]:
    """The slot attributes for ``settings`` and what the hypervisor said (None: not asked,
    because the configuration already turns the universe off)."""
    reason = settings.problem or (facts.problem if facts is not None else None)
    if facts is None and reason is None:
        reason = "the hypervisor was not asked"
    if reason is not None:
        if settings.vm_type is None:
            # No VM_TYPE: the universe is simply off, as HTCondor publishes it (no reason).
            return [MachineAttribute("HasVM", False)]
        return [MachineAttribute("HasVM", False), MachineAttribute("VMOfflineReason", reason)]
    assert facts is not None and settings.vm_type is not None
    found = [
        MachineAttribute("HasVM", True),
        MachineAttribute("VM_GAHP_VERSION", facts.version or ""),
        MachineAttribute("VM_Type", settings.vm_type),
        MachineAttribute("VM_Memory", settings.memory_mb),
        MachineAttribute("VM_AvailNum", settings.avail_num),
        MachineAttribute("VM_Networking", settings.networking),
    ]
    if settings.networking:
        found.append(MachineAttribute("VM_Networking_Types", ",".join(settings.networking_types)))
    if settings.hardware_vt:
        found.append(MachineAttribute("VM_HardwareVT", True))
    return found
