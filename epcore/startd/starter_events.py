"""What the startd does with its starters: start one for an activated claim, pass the
engine's actions on to it, take its messages and its end, and hand each result on.

Functions of a :class:`~epcore.startd.startd.Startd` (kept apart from its building, ads
and control requests, which is all the class itself holds).
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import TYPE_CHECKING

from epcore.classad import ClassAd, format_old
from epcore.runtime import persist
from epcore.runtime.forkserver import ForkServerError
from epcore.startd import kept_starters, offline, recovery
from epcore.startd.starters import StarterHandle
from epcore.startd.zygote import Spawned
from epcore.starter import protocol
from epcore.starter.claim_loop import keeps_starter
from epcore.starter.sandbox import sandbox_path
from epcore.starter.starter import StarterOrder, cgroup_key
from epcore.state.records import Action, ActionKind
from epcore.state.restore import SavedClaim
from epcore.transfer import plan
from epcore.types import JobFinished, JobStarted

if TYPE_CHECKING:
    from epcore.startd.startd import Startd

#: The engine's actions that the startd passes on to the slot's starter, as its commands.
_STARTER_COMMANDS: Mapping[ActionKind, str] = {
    ActionKind.SOFT_KILL: protocol.SOFT_KILL,
    ActionKind.HARD_KILL: protocol.HARD_KILL,
    ActionKind.SUSPEND: protocol.SUSPEND,
    ActionKind.CONTINUE: protocol.CONTINUE,
}


def act(startd: Startd, action: Action, now: float) -> None:
    """Carry out one of the engine's actions."""
    kind, claim_id = action.kind, action.claim_id
    if kind == ActionKind.SPAWN_STARTER and claim_id is not None:
        spawn_starter(startd, action.slot, claim_id, now)
        return
    handle = handle_of(startd, action.slot)
    command = _STARTER_COMMANDS.get(kind)
    if command is not None:
        if handle is None:
            startd.log.warning("%s: %s, but no starter runs there", action.slot, kind)
            if kind == ActionKind.HARD_KILL:
                startd.take(startd.engine.job_gone(startd.state, action.slot, now), now)
            return
        payload = ClassAd()
        payload["Why"] = f"{kind.replace('_', ' ')} of {action.slot} by the startd's policy"
        record = startd.state.slot(action.slot)
        why = record.vacate_reason if record is not None else None
        if why is not None:
            # HTCondor's startd gives the claim's vacate reason to the starter, which
            # reports it with the job's end; the schedd writes it into the job ad.
            payload["Why"] = why.reason
            payload["VacateReason"] = why.reason
            payload["VacateReasonCode"] = why.code
            payload["VacateReasonSubCode"] = why.subcode
        if record is not None and record.removed:
            # epcore's own: HTCondor's shadow and starter know a removal themselves; here the
            # schedd's release says it, so that a VM checkpoint is not saved for nothing.
            payload[protocol.REMOVED] = True
        if startd.starters.send(handle.claim_id, command, payload):
            startd.log.info("%s: told the starter to %s", action.slot, kind.replace("_", " "))
        else:
            startd.log.warning("%s: the starter is not connected to %s", action.slot, kind)
            if kind == ActionKind.HARD_KILL:
                startd.starters.kill(handle.claim_id)
    elif kind == ActionKind.KILL_STARTER:
        if handle is not None:
            startd.log.warning("%s: KILLING_TIMEOUT ran out: killing the starter", action.slot)
            startd.starters.kill(handle.claim_id)
    elif kind == ActionKind.EVICT_BACKFILL:
        startd.backfill.evict_slot(action.slot, now)
    elif kind == ActionKind.START_BACKFILL:
        startd.backfill.start_slot(action.slot, now)
    elif kind == ActionKind.RUN_BENCHMARKS:
        startd.cron.request_benchmarks()
    elif kind == ActionKind.DELETE_SLOT:
        startd.sink.invalidate([f"{action.slot}@{startd.host_name}"], now)


def handle_of(startd: Startd, slot: str) -> StarterHandle | None:
    """The starter running on ``slot``: by the slot's claim, or (the engine may have
    ended the claim in the same step, as KILLING_TIMEOUT does) by the slot's name."""
    record = startd.state.slot(slot)
    if record is not None and record.claim is not None:
        found = startd.starters.handles.get(record.claim.claim_id)
        if found is not None:
            return found
    # Never the backfill client's: it is named after a slot that may run a job by now.
    return next(
        (
            h
            for h in startd.starters.handles.values()
            if h.slot == slot and not h.gone and not startd.backfill.owns(h)
        ),
        None,
    )


def spawn_starter(startd: Startd, slot: str, claim_id: str, now: float) -> None:
    """Have the zygote fork the starter of the job that ``claim_id`` activated on
    ``slot``."""
    record = startd.state.slot(slot)
    assert record is not None and record.claim is not None
    layout_slot = startd.state.layout.find(record.slot_id, record.sub_id)
    assert layout_slot is not None
    execute_dir = startd.config.get(f"SLOT{record.slot_id}_EXECUTE") or startd.paths.execute
    job = record.claim.job
    machine = startd.ads(startd.state, now)[slot]
    runtime = next((r.name for r in startd.containers if r.runs(job, machine)), None)
    order = StarterOrder(
        slot_name=slot,
        slot_id=record.slot_id,
        claim_id=claim_id,
        job=job,
        machine_text=format_old(machine),
        execute_dir=execute_dir,
        startd_socket=startd.paths.starter_socket,
        startd_address=startd.address,
        cpus=float(layout_slot.resources.cpus),
        memory_mb=int(layout_slot.resources.memory_mb),
        startd_memory_mb=int(startd.inventory.memory_mb),
        starter_log=f"{startd.paths.starter_log}.{slot}",
        lease=record.claim.lease,
        machine_ad=machine if runtime is not None else None,
        keeps=runtime is None and keeps_starter(startd.config),
    )
    kept = startd.starters.handles.get(claim_id)
    if runtime is None and kept is not None and kept_starters.takes(startd, kept, order):
        if kept_starters.give_next(startd, kept, order, saved_claim(startd, slot, now)):
            startd.log.info("%s: job %s goes to starter %d", slot, record.job_id, kept.pid)
        else:
            startd.take(startd.engine.job_gone(startd.state, slot, now), now)
        return
    if kept is not None and kept.keeps:
        kept_starters.retire(startd, kept, "the next job needs a starter of its own")
    startd.preparations.take(claim_id)
    # A container runtime copies a job's files itself (epcore.starter.containers).
    transfers = runtime is None and plan.travels_here(job, startd.config)
    spawned: list[Spawned] = []

    def start(go_read: int) -> int:
        spawned.append(startd.zygote.spawn(order, runtime, go_read, transfers=transfers))
        return spawned[0].pid

    def write_down(handle: StarterHandle) -> None:
        # Before the starter may run anything: a restart adopts or cleans up after every
        # starter this startd may have started (the starter waits for this).
        key = spawned[0].job_key
        entry = persist.SavedStarter(
            saved_claim(startd, slot, now),
            handle.pid,
            recovery.started(handle.pid),
            key if key is not None else cgroup_key(execute_dir, slot, handle.pid),
            sandbox_path(execute_dir, handle.pid),
        )
        startd.claims_file.add(entry)
        startd.saved[claim_id] = entry
        handle.keeps = order.keeps
        handle.order = order

    if not startd.zygote.alive:
        startd.zygote_gone()
    try:
        handle = startd.starters.spawn(claim_id, slot, start, startd.zygote.pid, write_down)
    except (OSError, ForkServerError) as error:
        # No process could be forked, or it could not be recorded: the job cannot start
        # now; the slot is freed (a prepared job the starter took goes with it).
        startd.log.error("%s: cannot start a starter: %s", slot, error)
        startd.take(startd.engine.job_gone(startd.state, slot, now), now)
        return
    startd.log.info("%s: started starter %d for job %s", slot, handle.pid, record.job_id)


def saved_claim(startd: Startd, slot: str, now: float) -> SavedClaim:
    record = startd.state.slot(slot)
    assert record is not None and record.claim is not None
    claim = record.claim
    return SavedClaim(
        slot_id=record.slot_id,
        partitionable=record.sub_id is not None,
        claim_id=claim.claim_id,
        job=claim.job,
        rank=claim.rank,
        made_at=claim.made_at,
        lease=claim.lease,
        client_machine=claim.client_machine,
        job_start=record.job_start if record.job_start is not None else now,
        run_time=claim.run_time,
        suspend_time=claim.suspend_time,
    )


def record_result(startd: Startd, result: ClassAd, now: float) -> None:
    """Write a finished job's result to the history and tell the plugins."""
    result["CompletionDate"] = int(now)
    persist.append_history(startd.paths.history_file, result)
    startd.results.append(result)
    slot = result.evaluate("SlotName")
    job_id = f"{result.evaluate('ClusterId')}.{result.evaluate('ProcId')}"
    code = result.evaluate("ExitCode")
    reason = result.evaluate("ExitReason")
    startd.plugins.job_finished(
        JobFinished(
            slot if isinstance(slot, str) else "",
            job_id,
            now,
            code if isinstance(code, int) and not isinstance(code, bool) else None,
            reason if isinstance(reason, str) else "",
        )
    )


def starter_message(startd: Startd, handle: StarterHandle, message: ClassAd, now: float) -> None:
    """A message from a known starter."""
    if startd.backfill.owns(handle):
        startd.backfill.message(handle, message, now)
        return
    command = message.evaluate("Command")
    if command == protocol.STARTED:
        start = message.evaluate("JobStartDate")
        handle.job_start = float(start) if isinstance(start, int | float) else now
        handle.stage = "running"
        job_id = message.evaluate("JobId")
        startd.plugins.job_started(
            JobStarted(handle.slot, job_id if isinstance(job_id, str) else "", now)
        )
    elif command == protocol.UPDATE:
        handle.usage = message
    elif command == protocol.FINISHED:
        finished(startd, handle, message, now)
    elif command == protocol.BROKEN:
        startd.cleanup.reported(handle, message, now)
    elif command == protocol.READY:
        pending = kept_starters.ready(startd, handle, message)
        if pending is not None:
            _give_pending(startd, handle, pending, now)


def _activated(startd: Startd, slot: str, claim_id: str) -> bool:
    """Whether ``slot`` runs a job (Claimed/Busy) on ``claim_id``."""
    record = startd.state.slot(slot)
    return (
        record is not None
        and record.claim is not None
        and record.claim.claim_id == claim_id
        and record.job_start is not None
    )


def _give_pending(startd: Startd, handle: StarterHandle, order: StarterOrder, now: float) -> None:
    """Give a job activated before its kept starter said READY to that starter now."""
    if not _activated(startd, handle.slot, handle.claim_id):
        kept_starters.retire(startd, handle, "the job it waited for is gone")
        return
    if not kept_starters.give_next(startd, handle, order, saved_claim(startd, handle.slot, now)):
        startd.take(startd.engine.job_gone(startd.state, handle.slot, now), now)


def announce(startd: Startd, result: ClassAd, now: float) -> None:
    """Send a recorded result to the schedd's link, once the engine has taken the job's
    end (so that a schedd reusing the claim finds it Claimed/Idle)."""
    if startd.job_results is not None:
        startd.job_results.job_result(result, now)


def kept_first(startd: Startd) -> bool:
    """Whether the results go to a link that keeps each on disk before ``job_result``
    returns and sends it later from a thread of its own (the results link of a startd
    whose schedds are elsewhere, :mod:`epcore.links.results`): such a link is handed the
    result before the claims file forgets the job (:func:`finished`)."""
    return bool(getattr(startd.job_results, "keeps_results", False))


def finished(startd: Startd, handle: StarterHandle, message: ClassAd, now: float) -> None:
    """The starter of ``handle`` reports its job's end: record it, acknowledge, and tell
    the engine the job is gone.

    The steps are ordered so that no crash between two of them loses the result or has it
    applied twice: the result is in the history, then (for a schedd elsewhere) in the
    results journal before the claims file forgets the job; until then a restarted startd
    still holds the claim and its starter, unacknowledged, reports the end again (a schedd
    acknowledges a result it applied before without applying it twice). Only then is the
    starter acknowledged (it forgets the result) and the engine told. A schedd in this
    process hears the result last, once the slot is Claimed/Idle for its next job."""
    result: ClassAd | None = None
    if handle.stage != kept_starters.ACKNOWLEDGED:
        result = message.copy()
        del result["Command"]
        offline_report(startd, handle, result, now)
        result["SlotName"] = handle.slot
        result["ClaimId"] = handle.claim_id
        record_result(startd, result, now)
    handle.stage = kept_starters.ACKNOWLEDGED
    early = kept_first(startd)
    if result is not None and early:
        announce(startd, result, now)
    # A startd that dies after this must not see the job as lost: its result is kept.
    startd.saved.pop(handle.claim_id, None)
    startd.claims_file.drop(handle.claim_id)
    startd.starters.send(handle.claim_id, protocol.ACK)
    job_left(startd, handle, message, now)
    if result is not None and not early:
        announce(startd, result, now)


def offline_report(startd: Startd, handle: StarterHandle, result: ClassAd, now: float) -> None:
    """Turn off, on every slot, a universe the starter says the machine failed; the report
    is the startd's, not the job's result."""
    mark = offline.reported(result, now)
    for name in protocol.OFFLINE_ATTRIBUTES:
        if result.lookup(name) is not None:
            del result[name]
    if mark is None:
        return
    startd.log.error("%s: the %s universe is offline: %s", handle.slot, mark.universe, mark.reason)
    startd.offline.mark(mark)
    startd.attributes_changed(now, publish=True)


def job_left(startd: Startd, handle: StarterHandle, message: ClassAd | None, now: float) -> None:
    """Tell the engine that the job of ``handle`` is no longer running."""
    record = startd.state.slot(handle.slot)
    if record is None or record.job_start is None:
        return
    code = message.evaluate("ExitCode") if message is not None else None
    if record.claim is not None and record.claim.claim_id == handle.claim_id:
        exit_code = code if isinstance(code, int) and not isinstance(code, bool) else -1
        startd.take(startd.engine.job_exit(startd.state, handle.claim_id, exit_code, now), now)
    else:
        startd.take(startd.engine.job_gone(startd.state, handle.slot, now), now)


def starter_exited(startd: Startd, handle: StarterHandle, now: float) -> None:
    """A starter process is gone; if its job's end was never reported, it is lost."""
    if startd.backfill.owns(handle):
        startd.backfill.exited(handle, now)
        return
    if handle.stage not in kept_starters.BETWEEN_JOBS:
        saved = startd.saved.pop(handle.claim_id, None)
        startd.log.error("%s: starter %d died before reporting", handle.slot, handle.pid)
        if saved is not None:
            lost = recovery.lost(saved.claim, "the starter died before reporting the job's end")
            lost["SlotName"] = handle.slot
            lost["ClaimId"] = handle.claim_id
            record_result(startd, lost, now)
            early = kept_first(startd)
            if early:
                announce(startd, lost, now)  # kept before the claims file forgets the job
            startd.claims_file.drop(handle.claim_id)
            startd.reclaim(saved)
            job_left(startd, handle, None, now)
            if not early:
                announce(startd, lost, now)
        else:
            job_left(startd, handle, None, now)
    if handle.exit_code:
        startd.log.info(
            "%s: starter %d exited with status %d", handle.slot, handle.pid, handle.exit_code
        )
    startd.cleanup.exited(handle, now)
    startd.starters.forget(handle.claim_id)
    kept_starters.remove_next_groups(startd, handle)
    if handle.pending is not None and _activated(startd, handle.slot, handle.claim_id):
        # The starter exited instead of saying READY: the job activated meanwhile gets a
        # starter of its own.
        spawn_starter(startd, handle.slot, handle.claim_id, now)
