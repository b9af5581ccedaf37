"""Recovery after a restart or a dead starter: taking back running jobs, cleaning up.

A startd that starts reads the claims its predecessor saved (:mod:`epcore.runtime.persist`).
A starter that is still the process it was (same PID, same start in ticks since boot) is
adopted and its slot is Claimed/Busy again (:func:`epcore.state.restore.restore_claim`); one
that is gone, or whose claim no longer fits, has its job recorded as lost and what it left
cleaned up (:func:`reclaim`). Job groups under BASE_CGROUP that belong to this startd's
EXECUTE directories and to no running job are then removed (IsolationBackend.sweep), and so
are the sandboxes (``dir_<N>``) in those directories that no running job holds.

A lost job's record goes to the claim's schedd too when that schedd is in another process (its
client address a TCP one): unlike the schedd beside the startd, which reads the startd's
history when it starts (``recent_results``), it would otherwise keep the job running for as
long as this startd answers its keep-alives. The claim's client is remembered for that
(:func:`client_of`), since no slot holds the claim any more.
"""

from __future__ import annotations

import os
from typing import TYPE_CHECKING

from epcore.classad import ClassAd
from epcore.errors import EpError
from epcore.runtime import persist
from epcore.starter.sandbox import Sandbox, SandboxError, remove_sandbox
from epcore.starter.starter import cgroup_prefix
from epcore.state.restore import SavedClaim, restore_claim

if TYPE_CHECKING:
    from epcore.startd.startd import Startd

#: How much of the end of the history is read for the end of a job whose starter is gone.
RECENT_HISTORY_BYTES = 4 * 1024 * 1024


def restore(startd: Startd, now: float) -> None:
    """Take back the claims whose starters outlived the previous startd."""
    for entry in persist.read_claims(startd.paths.claims_file):
        saved, pid = entry.claim, entry.pid
        if entry.started is None or started(pid) != entry.started:
            # Gone, or its PID now belongs to another process, which must be left alone.
            startd.log.warning(
                "the starter %d of claim %s is gone; its job is lost", pid, saved.claim_id[:40]
            )
            _lost(startd, saved, "the starter died while no startd ran", now)
            reclaim(startd, entry)
            continue
        outcome = restore_claim(startd.engine, startd.state, saved, now)
        if outcome.refused is not None:
            startd.log.error("cannot take back claim of starter %d: %s", pid, outcome.refused)
            startd.starters.adopt(saved.claim_id, "", pid)
            startd.starters.kill(saved.claim_id)
            startd.starters.forget(saved.claim_id)
            why = f"the restarted startd could not take the claim back: {outcome.refused}"
            _lost(startd, saved, why, now)
            reclaim(startd, entry)
            continue
        startd.take(outcome, now)
        slot = next(
            r.name
            for r in startd.state.slots
            if r.claim is not None and r.claim.claim_id == saved.claim_id
        )
        startd.starters.adopt(saved.claim_id, slot, pid)
        startd.saved[saved.claim_id] = entry
        startd.log.info("%s: took back starter %d after a restart", slot, pid)
    startd.save_claims()
    keep = {entry.tracking_key for entry in startd.saved.values()}
    executes = {startd.paths.execute} | {
        value
        for name in startd.config.names()
        if name.upper().startswith("SLOT")
        and name.upper().endswith("_EXECUTE")
        and (value := startd.config.get(name))
    }
    prefixes = {cgroup_prefix(path) for path in executes}
    for backend in startd.isolation:
        try:
            for key in backend.sweep(keep, prefixes):
                startd.log.info("%s: removed the stale job group %s", backend.name, key)
        except EpError as error:
            startd.log.error("%s: cannot sweep stale job groups: %s", backend.name, error)
    for runtime in startd.containers:
        try:
            for key in runtime.sweep(keep, prefixes):
                startd.log.info("%s: removed the container of dead job %s", runtime.name, key)
        except EpError as error:
            startd.log.error("%s: cannot sweep stale containers: %s", runtime.name, error)
    _sweep_sandboxes(startd, executes)


def _sweep_sandboxes(startd: Startd, executes: set[str]) -> None:
    """Remove the ``dir_<N>`` sandboxes no running job holds (left by a machine that went
    down, or a starter killed while no startd ran), as HTCondor's startd cleans EXECUTE when
    it starts."""
    held = {entry.sandbox for entry in startd.saved.values()}
    for execute in executes:
        try:
            entries = list(os.scandir(execute))
        except OSError:
            continue
        for entry in entries:
            name = entry.name
            if not (name.startswith("dir_") and name[4:].isdigit()) or entry.path in held:
                continue
            if entry.is_dir(follow_symlinks=False):
                _remove(startd, entry.path, "the stale sandbox")


def reclaim(startd: Startd, entry: persist.SavedStarter) -> None:
    """Clean up after a starter that died: the processes its job left (in tracking that
    can still find them, such as its cgroups) and its sandbox."""
    if entry.tracking_key:
        for backend in startd.isolation:
            try:
                if backend.reclaim(entry.tracking_key):
                    startd.log.info("%s: cleaned up job %s", backend.name, entry.tracking_key)
            except EpError as error:
                startd.log.error("cannot clean up job %s: %s", entry.tracking_key, error)
        for runtime in startd.containers:
            try:
                if runtime.reclaim(entry.tracking_key):
                    startd.log.info(
                        "%s: removed the container of job %s", runtime.name, entry.tracking_key
                    )
            except EpError as error:
                startd.log.error(
                    "cannot remove the container of job %s: %s", entry.tracking_key, error
                )
    if entry.sandbox and os.path.lexists(entry.sandbox):
        _remove(startd, entry.sandbox, "the sandbox of a dead starter")


def _remove(startd: Startd, path: str, what: str) -> None:
    """Remove the sandbox at ``path``; a failure is logged and never stops the startd."""
    try:
        remove_sandbox(Sandbox(path))
    except SandboxError as error:
        startd.log.error("%s", error)
        return
    startd.log.info("removed %s %s", what, path)


def _lost(startd: Startd, saved: SavedClaim, why: str, now: float) -> None:
    """Record the job of ``saved`` as lost; tell a schedd elsewhere (module docstring).
    A job whose end the previous startd recorded before it died (the history has it, the
    claims file not yet its forgetting) is not lost: that recorded end goes to the schedd
    (who applies a result once), never an eviction that would run the job again."""
    record = _recorded_end(startd, saved)
    if record is None:
        record = lost(saved, why)
        startd.record_result(record, now)
    else:
        startd.log.info("claim %s: its job's end was recorded; sent again", saved.claim_id[:40])
    client = saved.client_machine
    if client.startswith("<") and not client.startswith("<unix:"):
        startd.lost_clients[saved.claim_id] = client
        startd.announce(record, now)


def _recorded_end(startd: Startd, saved: SavedClaim) -> ClassAd | None:
    """The history's record of the end of ``saved``'s job on its claim, if any (the last
    RECENT_HISTORY_BYTES of the history: what a startd that just died wrote)."""
    found = None
    for record in persist.read_history(
        startd.paths.history_file, last_bytes=RECENT_HISTORY_BYTES, containing=[saved.claim_id]
    ):
        same_job = all(
            record.evaluate(name) == saved.job.evaluate(name) for name in ("ClusterId", "ProcId")
        )
        if record.evaluate("ClaimId") == saved.claim_id and same_job:
            found = record
    return found


def client_of(startd: Startd, claim_id: str) -> str:
    """The client of the startd's claim ``claim_id`` (its schedd's address when REQUEST_CLAIM
    made it; the claims file keeps it over a restart), that of a claim whose job was lost
    at a restart, or empty."""
    for record in startd.state.slots:
        for claim in (record.claim, record.preempting):
            if claim is not None and claim.claim_id == claim_id:
                return claim.client_machine
    return startd.lost_clients.get(claim_id, "")


def lost(saved: SavedClaim, why: str) -> ClassAd:
    """The history record of a job whose end nobody saw, for ``why``."""
    ad = ClassAd()
    ad["ClaimId"] = saved.claim_id
    ad["JobOutcome"] = "evicted"
    ad["ExitReason"] = why
    for name in ("ClusterId", "ProcId", "GlobalJobId", "Owner"):
        expr = saved.job.lookup(name)
        if expr is not None:
            ad[name] = expr
    return ad


def started(pid: int) -> float | None:
    """When process ``pid`` started, in clock ticks since boot (None when there is none):
    with the PID, it names one process for good, since PIDs are reused. Ticks since boot,
    unlike a wall-clock start time, do not move when the clock is set."""
    try:
        with open(f"/proc/{pid}/stat", encoding="ascii", errors="replace") as handle:
            fields = handle.read().rsplit(")", 1)[1].split()
        return float(fields[19])
    except (OSError, IndexError, ValueError):
        return None
