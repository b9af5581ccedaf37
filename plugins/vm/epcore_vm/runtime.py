"""The VM universe's job path: a container runtime named ``vm`` that runs a job whose
JobUniverse is 13 as a transient libvirt domain.

The starter already treats such a job as it treats a docker job: its input (the disk images
in transfer_input_files) is copied into the sandbox, the runtime starts it, the starter
waits on :meth:`RunningVm.fileno`, freezes it for suspend, stops it for vacate, and sends
back what changed in the sandbox (the written disks) once it ended. HTCondor's starter talks
to a condor_vm-gahp; here the runtime calls libvirt itself, from the starter's process.

Domains are named ``epcore-<job key>`` and carry the whole key in their description, so that
the startd removes the domain of a starter that died (:meth:`VmRuntime.reclaim`) and, at its
start, every one it no longer knows (:meth:`VmRuntime.sweep`).
"""

from __future__ import annotations

import logging
import os
from collections.abc import Collection, Sequence

from epcore.classad import ClassAd
from epcore.config import Config
from epcore.types import ContainerJob, MachineAttribute
from epcore_vm.admission import refuse_activation
from epcore_vm.checkpoint import bring_in, checkpoint_name, restore, wants_checkpoint
from epcore_vm.connection import domain_job_key, find_domain, open_connection, remove_domain
from epcore_vm.domain import (
    DiskUser,
    VmInfrastructureError,
    domain_xml,
    plan_domain,
    script_xml,
)
from epcore_vm.periodic import periodic_expression
from epcore_vm.running import RunningVm
from epcore_vm.settings import read_settings
from epcore_vm.status import status_errors

#: JobUniverse of a VM job.
VM_UNIVERSE = 13


class VmRuntime:
    """Runs VM universe jobs through libvirt (built by the startd, inherited by starters;
    every method opens its own connection)."""

    name = "vm"
    # libvirtd starts qemu, but the starter makes the job's cgroups all the same and the
    # started qemu is moved into them, so that the slot's usage and limits include it.
    tracked_by_starter = True

    def __init__(self, config: Config) -> None:
        self.config = config
        self.settings = read_settings(config)
        self.log = logging.getLogger("epcore.vm")

    def machine_attributes(self) -> Sequence[MachineAttribute]:
        """Nothing: ``ep_machine_attributes`` publishes HasVM and friends."""
        return ()

    def runs(self, job: ClassAd, machine: ClassAd | None = None) -> bool:
        """True for a VM universe job."""
        del machine
        return job.evaluate("JobUniverse") == VM_UNIVERSE

    def refuse_activation(self, job: ClassAd, running: Sequence[ClassAd]) -> str | None:
        """canCreateVM (epcore_vm.admission): VM_MAX_NUMBER and VM_MEMORY at activation."""
        return refuse_activation(self.settings, job, running)

    def start(self, request: ContainerJob, log: logging.Logger) -> RunningVm:
        """Create and start the job's domain; holds the job (code 6) for what its ad gets
        wrong, requeues it (VmInfrastructureError) when libvirt fails."""
        if self.settings.problem is not None:
            raise VmInfrastructureError(f"the VM universe is off here: {self.settings.problem}")
        user = DiskUser(request.uid, request.gid, request.extra_gids)
        plan = plan_domain(
            request.job, self.config, request.job_key, request.sandbox, user, request.slot_name
        )
        xml = script_xml(self.config, request.job, plan, request.sandbox) or domain_xml(plan)
        checkpoint = wants_checkpoint(request.job)
        saved = bring_in(request) if checkpoint else None
        connection = open_connection(self.settings.uri)
        domain = None
        if saved is not None:
            domain = restore(connection, saved, xml, log)
        try:
            if domain is None:
                domain = connection.createXML(xml, 0)
        except Exception as error:
            connection.close()
            raise VmInfrastructureError(f"libvirt cannot start {plan.name}: {error}") from error
        # A resumed guest keeps the name it was saved under (libvirt's rule).
        name = str(domain.name())
        log.info("domain %s started (%d MiB, %d vCPUs)", name, plan.memory_mb, plan.vcpus)
        soft = self.config.get_bool("VM_SOFT_SUSPEND", False)
        target = os.path.join(request.sandbox, checkpoint_name(request.job)) if checkpoint else None
        running = RunningVm(
            connection,
            domain,
            name,
            request,
            log,
            soft_suspend=soft,
            checkpoint=target,
            status=status_errors(self.config),
            periodic=periodic_expression(self.config) if checkpoint else None,
        )
        running.join_job_cgroups()
        return running

    def sweep(self, keep: Collection[str], prefixes: Collection[str]) -> tuple[str, ...]:
        """Destroy the domains of this startd's jobs that no running job holds; their keys."""
        if self.settings.problem is not None:
            return ()
        try:
            connection = open_connection(self.settings.uri)
        except VmInfrastructureError as error:
            self.log.info("cannot look for stale domains: %s", error)
            return ()
        removed: list[str] = []
        try:
            for domain in connection.listAllDomains(0):
                key = domain_job_key(domain)
                if key is None or key in keep or not any(key.startswith(p) for p in prefixes):
                    continue
                remove_domain(domain, self.log)
                removed.append(key)
        except Exception as error:
            self.log.warning("sweeping stale domains: %s", error)
        finally:
            connection.close()
        return tuple(removed)

    def reclaim(self, job_key: str) -> bool:
        """Destroy the domain of ``job_key`` after its starter died; False when none."""
        if self.settings.problem is not None:
            return False
        try:
            connection = open_connection(self.settings.uri)
        except VmInfrastructureError as error:
            self.log.error("cannot look for the domain of job %s: %s", job_key, error)
            return False
        try:
            domain = find_domain(connection, job_key)
            if domain is None:
                return False
            remove_domain(domain, self.log)
            return True
        finally:
            connection.close()
