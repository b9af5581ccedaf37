"""The VM universe's knobs and slot attributes (HasVM and friends), against a real libvirtd."""

from __future__ import annotations

import time

import pytest
from epcore_vm.detect import HypervisorFacts, probe, vm_attributes
from epcore_vm.plugin import ep_machine_attributes
from epcore_vm.settings import UNLIMITED_AVAIL, read_settings

from epcore.config import Config
from epcore.types import MachineAttribute

KVM = "VM_TYPE = kvm\nVM_MEMORY = 256\n"


def _attrs(found: list[MachineAttribute] | tuple[MachineAttribute, ...]) -> dict[str, object]:
    return {a.name: a.value for a in found}


def test_no_vm_type_turns_the_universe_off_without_a_reason() -> None:
    """Without VM_TYPE a slot says HasVM = false and nothing else."""
    settings = read_settings(Config.from_text(""))
    assert settings.problem == "VM_TYPE is not defined"
    assert _attrs(vm_attributes(settings, None)) == {"HasVM": False}


@pytest.mark.parametrize(
    ("text", "reason"),
    [
        ("VM_TYPE = vmware\nVM_MEMORY = 256\n", "A vm_type of 'vmware' is no longer supported"),
        ("VM_TYPE = kvm\n", "'VM_MEMORY' is not defined"),
        ("VM_TYPE = kvm\nVM_MEMORY = 0\n", "'VM_MEMORY' is not defined"),
        ("VM_TYPE = hyperv\nVM_MEMORY = 256\n", "VM_TYPE 'hyperv' is not supported (kvm or xen)"),
    ],
)
def test_configuration_problems_give_an_offline_reason(text: str, reason: str) -> None:
    """A VM_TYPE of vmware or an unknown type, or no VM_MEMORY, is HasVM = false with why."""
    found = _attrs(ep_machine_attributes(Config.from_text(text), None))  # type: ignore[arg-type]
    assert found == {"HasVM": False, "VMOfflineReason": reason}


def test_networking_needs_a_known_type() -> None:
    """VM_NETWORKING without a known VM_NETWORKING_TYPE leaves networking off; types are
    lower-cased and unknown ones dropped."""
    assert read_settings(Config.from_text(KVM + "VM_NETWORKING = true\n")).networking is False
    on = read_settings(
        Config.from_text(KVM + "VM_NETWORKING = true\nVM_NETWORKING_TYPE = NAT, tunnel, bridge\n")
    )
    assert on.networking is True
    assert on.networking_types == ("nat", "bridge")


def test_attributes_of_a_working_hypervisor() -> None:
    """A hypervisor that answers gives HasVM, VM_Type, VM_Memory, VM_AvailNum (10000 when
    VM_MAX_NUMBER is unset), networking and VM_HardwareVT as configured."""
    facts = HypervisorFacts("9.0.0", "QEMU 7002022", None)
    text = KVM + "VM_NETWORKING = true\nVM_NETWORKING_TYPE = nat\nVM_HARDWARE_VT = true\n"
    found = _attrs(vm_attributes(read_settings(Config.from_text(text)), facts))
    assert found == {
        "HasVM": True,
        "VM_GAHP_VERSION": "9.0.0",
        "VM_Type": "kvm",
        "VM_Memory": 256,
        "VM_AvailNum": UNLIMITED_AVAIL,
        "VM_Networking": True,
        "VM_Networking_Types": "nat",
        "VM_HardwareVT": True,
    }
    limited = read_settings(Config.from_text(KVM + "VM_MAX_NUMBER = 2\n"))
    assert _attrs(vm_attributes(limited, facts))["VM_AvailNum"] == 2


def test_a_hypervisor_that_does_not_answer_is_offline_in_time() -> None:
    """A libvirt call that hangs is given up after the timeout and reported as the reason."""

    def hang(uri: str) -> HypervisorFacts:
        time.sleep(5)
        return HypervisorFacts("1", "x", None)

    started = time.monotonic()
    facts = probe("qemu:///system", timeout=0.2, opener=hang)
    assert time.monotonic() - started < 2
    assert facts.problem == "libvirt at qemu:///system did not answer in 0 s"


def test_a_libvirtd_that_hangs_is_given_up_after_the_timeout(hanging_libvirtd: str) -> None:
    """A real libvirt connection to a daemon that never answers is given up after the
    probe's timeout (the startd's re-test runs it in a worker besides: tests/startd)."""
    pytest.importorskip("libvirt")
    started = time.monotonic()
    facts = probe(hanging_libvirtd, timeout=1.0)
    assert 0.9 <= time.monotonic() - started < 5
    assert facts.problem == f"libvirt at {hanging_libvirtd} did not answer in 1 s"


def test_a_missing_libvirtd_is_offline_with_libvirts_error(tmp_path: object) -> None:
    """A socket where no libvirtd listens gives HasVM = false and libvirt's own error."""
    pytest.importorskip("libvirt")
    text = KVM + f"VM_LIBVIRT_URI = qemu:///system?socket={tmp_path}/nobody\n"
    found = _attrs(ep_machine_attributes(Config.from_text(text), None))  # type: ignore[arg-type]
    assert found["HasVM"] is False
    reason = found["VMOfflineReason"]
    assert isinstance(reason, str) and f"{tmp_path}/nobody" in reason


# One libvirtd per machine holds /run/libvirt: its tests share one worker.
@pytest.mark.xdist_group("libvirtd")
def test_a_real_libvirtd_offers_the_vm_universe(libvirt_uri: str) -> None:
    """A private libvirtd driving qemu makes the slot say HasVM = true with its version."""
    text = KVM + f"VM_LIBVIRT_URI = {libvirt_uri}\n"
    found = _attrs(ep_machine_attributes(Config.from_text(text), None))  # type: ignore[arg-type]
    assert found["HasVM"] is True, found
    assert found["VM_Type"] == "kvm"
    assert isinstance(found["VM_GAHP_VERSION"], str) and found["VM_GAHP_VERSION"].count(".") == 2
