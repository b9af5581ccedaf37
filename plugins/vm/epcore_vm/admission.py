"""canCreateVM: whether one more guest fits at a VM job's activation.

HTCondor's startd refuses the activation of a VM universe job (ACTIVATE_CLAIM answered
NOT_OK, ActivationRefusedNoMatch, "Cannot execute a VM universe job due to insufficient
resource") when the VMs it runs already number VM_MAX_NUMBER, or when the job's memory
(JobVMMemory, else RequestMemory) is missing, zero or more than VM_MEMORY less the running
guests' memory. The slot ads carry the same figures (VM_AvailNum, VM_Memory), but only as of
their last update, so two matches can still meet the last free guest; this check cannot be
late. The startd tells the runtime the jobs it runs on the other slots (epcore's
``AdmitsActivation``), so no libvirt call is made in its loop.
"""

from __future__ import annotations

from collections.abc import Sequence

from epcore.classad import ClassAd
from epcore_vm.settings import VmSettings

#: HTCondor's reason to the schedd; what exactly was short follows it.
REFUSAL = "Cannot execute a VM universe job due to insufficient resource"


def vm_memory(job: ClassAd) -> int | None:
    """The guest's memory in MiB: JobVMMemory, else RequestMemory; None when neither is a
    number."""
    for name in ("JobVMMemory", "RequestMemory"):
        value = job.evaluate(name)
        if isinstance(value, int | float) and not isinstance(value, bool):
            return int(value)
    return None


def refuse_activation(settings: VmSettings, job: ClassAd, running: Sequence[ClassAd]) -> str | None:
    """Why ``job``'s guest may not start beside the ``running`` VM jobs, or None."""
    if settings.problem is not None:
        return f"{REFUSAL}: the VM universe is off here ({settings.problem})"
    if settings.max_number > 0 and len(running) >= settings.max_number:
        return (
            f"{REFUSAL}: {len(running)} VMs run already, VM_MAX_NUMBER allows {settings.max_number}"
        )
    wanted = vm_memory(job)
    if wanted is None:
        return f"{REFUSAL}: the job ad has no VM memory (JobVMMemory, RequestMemory)"
    used = sum(vm_memory(other) or 0 for other in running)
    free = settings.memory_mb - used
    if wanted <= 0 or wanted > free:
        return (
            f"{REFUSAL}: the job asks for {wanted} MB of VM memory, {free} MB are free "
            f"(VM_MEMORY {settings.memory_mb} MB, {used} MB used by {len(running)} running VMs)"
        )
    return None
