"""The startd's side of starters that run their claims' successive jobs.

A starter forked for a claim's job (no container runtime runs it, ``STARTER_KEEP_FOR_CLAIM``
is true) says READY once its job's end is acknowledged (:mod:`epcore.starter.claim_loop`).
When the schedd activates the claim again, the startd records the job in its claims file as
it records a new starter's, then sends the order to the waiting starter (NEXT) instead of
having its zygote fork one: a job the startd has not written down never runs, here as there.
An activation that comes before READY waits for it in the handle (:attr:`StarterHandle.pending`)
and is sent when READY comes, or given to a new starter when the starter exits instead. A
waiting starter whose claim is gone, or whose next job needs another starter (a container
runtime's, another StarterLog), is told RETIRE; one that dies leaves its next job's groups
(named for it: :func:`~epcore.starter.claim_loop.next_key_prefix`) to the startd to remove.

Functions of a :class:`~epcore.startd.startd.Startd`, as :mod:`epcore.startd.starter_events`.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from epcore.classad import ClassAd
from epcore.errors import EpError
from epcore.runtime import persist
from epcore.startd import recovery
from epcore.startd.starters import StarterHandle
from epcore.starter import protocol
from epcore.starter.claim_loop import next_key_prefix, next_message
from epcore.starter.sandbox import sandbox_path
from epcore.starter.starter import StarterOrder, cgroup_key
from epcore.state.restore import SavedClaim

if TYPE_CHECKING:
    from epcore.startd.startd import Startd

#: A kept starter between jobs: its last job acknowledged, READY not yet come.
ACKNOWLEDGED = "acknowledged"
#: A kept starter waiting for NEXT.
READY = "ready"
#: A kept starter told RETIRE: it exits.
RETIRED = "retired"
#: The stages in which a starter runs no job (its end is no loss).
BETWEEN_JOBS = (ACKNOWLEDGED, READY, RETIRED)


def takes(startd: Startd, handle: StarterHandle | None, order: StarterOrder) -> bool:
    """Whether the kept starter of ``handle`` can run ``order`` (a job no container runtime
    runs) on its claim: it is alive, connected, between jobs, and its log and EXECUTE are
    the order's."""
    return (
        handle is not None
        and handle.keeps
        and order.keeps
        and not handle.gone
        and handle.stage in (ACKNOWLEDGED, READY)
        and handle.order is not None
        and handle.order.starter_log == order.starter_log
        and handle.order.execute_dir == order.execute_dir
        and handle.channel is not None
        and not handle.channel.closed
        and not startd.backfill.owns(handle)
    )


def give_next(
    startd: Startd, handle: StarterHandle, order: StarterOrder, saved: SavedClaim
) -> bool:
    """Record ``order``'s job in the claims file, then send it to the kept starter of
    ``handle`` (at once when READY, else when READY comes); False when it could not be
    recorded (the job cannot start)."""
    if handle.stage != READY:
        handle.pending = order
        handle.order = order
        return True
    key = handle.next_key or cgroup_key(order.execute_dir, order.slot_name, handle.pid)
    entry = persist.SavedStarter(
        saved,
        handle.pid,
        recovery.started(handle.pid),
        key,
        sandbox_path(order.execute_dir, handle.pid),
    )
    try:
        startd.claims_file.add(entry)
    except (EpError, OSError) as error:
        startd.log.error("%s: cannot record the claim's next job: %s", handle.slot, error)
        return False
    startd.saved[handle.claim_id] = entry
    handle.order = order
    handle.pending = None
    handle.stage = "setup"
    handle.usage = ClassAd()
    handle.job_start = None
    handle.next_key = None
    startd.starters.send(handle.claim_id, protocol.NEXT, next_message(order))
    return True


def retire(startd: Startd, handle: StarterHandle, why: str) -> None:
    """Tell a kept starter between jobs to exit: at once when it waits (READY); one that
    has not said READY yet is answered RETIRE when it does (a message sent before would
    reach it while it still waits for its ACK)."""
    if handle.gone or handle.stage not in (ACKNOWLEDGED, READY):
        return
    startd.log.info("%s: retiring starter %d (%s)", handle.slot, handle.pid, why)
    was, handle.stage = handle.stage, RETIRED
    handle.pending = None
    if was == READY:
        startd.starters.send(handle.claim_id, protocol.RETIRE)


def ready(startd: Startd, handle: StarterHandle, message: ClassAd) -> StarterOrder | None:
    """READY from the starter of ``handle``: the job activated meanwhile, to be given to it
    now (None: none waits; a starter retired meanwhile, or whose claim is gone, is told
    RETIRE)."""
    key = message.evaluate(protocol.NEXT_TRACKING_KEY)
    handle.next_key = key if isinstance(key, str) and key else None
    if handle.stage != ACKNOWLEDGED or not handle.keeps or handle.order is None:
        if handle.stage != RETIRED:
            startd.log.warning(
                "%s: READY from starter %d in stage %s", handle.slot, handle.pid, handle.stage
            )
        handle.stage = RETIRED
        startd.starters.send(handle.claim_id, protocol.RETIRE)
        return None
    handle.stage = READY
    pending, handle.pending = handle.pending, None
    if pending is None and not _claim_lives(startd, handle):
        retire(startd, handle, "its claim is over")
    return pending


def _claim_lives(startd: Startd, handle: StarterHandle) -> bool:
    record = startd.state.slot(handle.slot)
    return (
        record is not None
        and record.claim is not None
        and record.claim.claim_id == handle.claim_id
        and not startd.state.shutting_down
    )


def retire_idle(startd: Startd) -> None:
    """Retire every kept starter waiting on a claim that is over (or a startd shutting down)."""
    for handle in list(startd.starters.handles.values()):
        if handle.stage == READY and not handle.gone and not _claim_lives(startd, handle):
            retire(startd, handle, "its claim is over")


def reconfigured(startd: Startd) -> None:
    """The startd read its configuration again: a kept starter holds the one it was forked
    with, so none takes another job; those waiting are retired, the others when they say
    READY, and the claims' next jobs get starters with the new configuration."""
    for handle in list(startd.starters.handles.values()):
        if handle.keeps and not handle.gone:
            handle.keeps = False
            retire(startd, handle, "the configuration changed")


def keeping(startd: Startd) -> frozenset[str]:
    """The claims whose starters make their next job ready themselves: the startd's zygote
    prepares nothing for them."""
    return frozenset(
        claim_id
        for claim_id, handle in startd.starters.handles.items()
        if handle.keeps and not handle.gone and handle.stage != RETIRED
    )


def remove_next_groups(startd: Startd, handle: StarterHandle) -> None:
    """A kept starter is gone: remove what is left of the groups it made for its claim's
    next jobs (it removes them itself when it exits; not when it was killed)."""
    if not handle.keeps or handle.order is None:
        return
    prefix = next_key_prefix(handle.order.execute_dir, handle.slot, handle.pid)
    for backend in startd.isolation:
        try:
            for key in backend.sweep((), (prefix,)):
                startd.log.info("%s: removed the groups %s", handle.slot, key)
        except EpError as error:
            startd.log.error("cannot remove the groups of starter %d: %s", handle.pid, error)
