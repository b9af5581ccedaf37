"""A container runtime's say at a claim's activation (:class:`~epcore.types.AdmitsActivation`).

HTCondor's startd asks its VMUniverseMgr (``canCreateVM``) at every VM job's activation
whether one more guest fits under VM_MAX_NUMBER and VM_MEMORY, and refuses the activation when
not: the slot ads say the same within an update interval, but two schedds' matches can meet
the last free guest at once. epcore generalises that to the runtime that runs the job, which
is told the jobs it runs on the other slots (HTCondor counts the starters it allocated VMs to,
not what the hypervisor lists: a guest whose starter is still stopping it counts).
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from epcore.classad import ClassAd
from epcore.state.states import CLAIMED_IDLE
from epcore.types import ContainerRuntime, activation_refusal

if TYPE_CHECKING:
    from epcore.startd.startd import Startd


def refusal(startd: Startd, claim_id: str, job: ClassAd | None, now: float) -> str | None:
    """Why the runtime of the job of ``claim_id`` (``job``: the next job of a reused claim)
    refuses its activation now, or None (no runtime runs it, or it admits it)."""
    checking = [r for r in startd.containers if hasattr(r, "refuse_activation")]
    if not checking:
        return None  # no runtime has a say: no slot ad is built for nothing
    record = next(
        (r for r in startd.state.slots if r.claim is not None and r.claim.claim_id == claim_id),
        None,
    )
    if record is None or record.claim is None or record.place != CLAIMED_IDLE:
        return None  # the engine refuses it with its own reason
    wanted = job if job is not None else record.claim.job
    ads = startd.ads(startd.state, now)
    runtime = _runtime_of(startd.containers, wanted, ads.get(record.name))
    if runtime is None or runtime not in checking:
        return None
    running = [
        other.claim.job
        for other in startd.state.slots
        if other is not record
        and other.claim is not None
        and other.job_start is not None
        and runtime.runs(other.claim.job, ads.get(other.name))
    ]
    return activation_refusal(runtime, wanted, running)


def _runtime_of(
    runtimes: tuple[ContainerRuntime, ...], job: ClassAd, machine: ClassAd | None
) -> ContainerRuntime | None:
    return next((r for r in runtimes if r.runs(job, machine)), None)
