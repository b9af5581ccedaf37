"""VM_AvailNum and VM_Memory that follow the running VMs (HTCondor's VMUniverseMgr).

HTCondor's startd counts the VMs it started: every slot advertises ``VM_AvailNum =
VM_MAX_NUMBER - running`` (10000 when unlimited) and ``VM_Memory = VM_MEMORY - the running
VMs' memory``, so that the job's requirements (``TARGET.VM_AvailNum > 0``, ``TARGET.VM_Memory
>= MY.JobVMMemory``) keep a full machine from matching. Here a startd cron job written in
Python asks libvirt every VM_USAGE_INTERVAL seconds (an epcore knob, 10 s) for the running
epcore domains and their memory; its ad replaces the figures ``ep_machine_attributes``
published for an idle machine. The same count publishes the guests' MACs and IPs
(:mod:`epcore_vm.guestnet`).
"""

from __future__ import annotations

import logging
from collections.abc import Callable
from typing import Any

import attrs

from epcore.classad import ClassAd
from epcore.config import Config
from epcore.types import PythonCronJob
from epcore_vm.domain import NAME_PREFIX
from epcore_vm.guestnet import GuestNetwork, guest_network
from epcore_vm.settings import UNLIMITED_AVAIL, VmSettings

#: The cron job's name (STARTD_CRON_VM_USAGE_* knobs apply to it).
USAGE_JOB = "VM_USAGE"
#: VM_USAGE_INTERVAL's default, in seconds.
USAGE_INTERVAL = 10.0


@attrs.frozen
class RunningGuest:
    """One running epcore domain: its memory (MiB) and network identity."""

    memory_mib: int
    # A frozen record: every guest may share the empty one.
    network: GuestNetwork = GuestNetwork()  # noqa: RUF009


def usage_ad(settings: VmSettings, running_mib: list[int]) -> ClassAd:
    """The slot attributes for VMs of ``running_mib`` MiB each running now."""
    ad = ClassAd()
    if settings.max_number > 0:
        ad["VM_AvailNum"] = max(settings.max_number - len(running_mib), 0)
    else:
        ad["VM_AvailNum"] = UNLIMITED_AVAIL
    ad["VM_Memory"] = max(settings.memory_mb - sum(running_mib), 0)
    return ad


def usage_ads(settings: VmSettings, guests: list[RunningGuest]) -> list[ClassAd]:
    """Every slot's figures and the running guests' MACs and IPs (``VM_All_Guest_Macs``,
    ``VM_All_Guest_IPs``: comma-separated, as condor_submit's ``stringListIMember`` clause
    reads them), then, for each guest whose slot is known, that slot's ``VM_Guest_Mac`` and
    ``VM_Guest_IP`` (an ad aimed at the slot by ``SlotName``)."""
    every = usage_ad(settings, [guest.memory_mib for guest in guests])
    macs = [mac for guest in guests for mac in guest.network.macs]
    ips = [ip for guest in guests for ip in guest.network.ips]
    if macs:
        every["VM_All_Guest_Macs"] = ",".join(macs)
    if ips:
        every["VM_All_Guest_IPs"] = ",".join(ips)
    ads = [every]
    for guest in guests:
        network = guest.network
        if not network.slot or not network.mac:
            continue
        slot = ClassAd()
        # "slot1_1@": the '@' makes the prefix match that slot's Name only (not slot1_10).
        slot["SlotName"] = f"{network.slot}@"
        slot["VM_Guest_Mac"] = network.mac
        if network.ip:
            slot["VM_Guest_IP"] = network.ip
        ads.append(slot)
    return ads


def running_guests(connection: Any) -> list[RunningGuest]:
    """Each running epcore domain libvirt knows, with its memory and network."""
    found: list[RunningGuest] = []
    for domain in connection.listAllDomains(0):
        if domain.name().startswith(NAME_PREFIX) and domain.isActive():
            # libvirt says KiB.
            found.append(RunningGuest(int(domain.maxMemory()) // 1024, guest_network(domain)))
    return found


def usage_job(settings: VmSettings, config: Config, connect: Callable[[str], Any]) -> PythonCronJob:
    """The cron job that publishes VM_AvailNum and VM_Memory; ``connect`` opens libvirt (with
    a deadline: a libvirtd that hangs holds up only this job's thread)."""
    log = logging.getLogger("epcore.vm")

    def run() -> list[ClassAd]:
        try:
            connection = connect(settings.uri)
        except Exception as error:
            log.info("cannot count the running VMs: %s", error)
            return []  # the idle machine's figures stand
        try:
            return usage_ads(settings, running_guests(connection))
        except Exception as error:
            log.info("cannot count the running VMs: %s", error)
            return []
        finally:
            connection.close()

    interval = config.get_float("VM_USAGE_INTERVAL", USAGE_INTERVAL)
    return PythonCronJob(USAGE_JOB, run, mode="Periodic", period=max(interval, 1.0))
