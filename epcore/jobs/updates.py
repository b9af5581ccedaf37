"""Attributes a job's runtime asks to be written into its job ad, carried by the starter's
FINISHED message to the schedd.

HTCondor's starter puts such attributes in the update ad it sends the shadow, which writes them
into the job ad (the VM universe's VM_CkptMac, the MAC address a checkpointed guest keeps). An
epcore starter reports to the schedd once, with the job's result: the result names them in
:data:`JOB_UPDATES` (a comma-separated list) so that the schedd copies exactly those.
"""

from __future__ import annotations

from epcore.classad import ClassAd, Expr

#: In a job's result: the names of the attributes to write into the job's ad as they are.
JOB_UPDATES = "EpJobUpdates"
#: What a runtime may not change this way (lower-cased): who and which the job is, its state,
#: and what the schedd itself writes from the result.
PROTECTED = frozenset(
    name.lower()
    for name in (
        JOB_UPDATES,
        "ClusterId",
        "ProcId",
        "GlobalJobId",
        "Owner",
        "User",
        "JobStatus",
        "JobUniverse",
        "Iwd",
        "Cmd",
        "Requirements",
        "HoldReason",
        "HoldReasonCode",
        "HoldReasonSubCode",
        "ExitCode",
        "ExitBySignal",
        "ExitSignal",
        "CompletionDate",
    )
)


def add_job_updates(result: ClassAd, updates: ClassAd) -> None:
    """Put ``updates`` into ``result`` and list their names in :data:`JOB_UPDATES`."""
    names = list(updates)
    if not names:
        return
    for name in names:
        expr = updates.lookup(name)
        if expr is not None:
            result[name] = expr
    result[JOB_UPDATES] = ",".join(names)


def job_updates(result: ClassAd) -> dict[str, Expr]:
    """The attributes ``result`` lists in :data:`JOB_UPDATES`, by name, but those it lacks
    and the :data:`PROTECTED` ones."""
    listed = result.evaluate(JOB_UPDATES)
    if not isinstance(listed, str):
        return {}
    found: dict[str, Expr] = {}
    for name in (n.strip() for n in listed.split(",")):
        expr = result.lookup(name) if name and name.lower() not in PROTECTED else None
        if expr is not None:
            found[name] = expr
    return found
