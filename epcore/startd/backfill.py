"""The startd's backfill: one client per startd, shared by the slots in Backfill/Busy.

Seed 000's backfill manager, with the client a plugin offers (``ep_backfill_backends``, the
system BACKFILL_SYSTEM names). The engine decides which slot enters and leaves Backfill; this
module carries out its two actions. START_BACKFILL adds the slot to the client's share: the
first slot starts the client, through a starter like any job (sandbox, cgroups, its user,
soft and hard kill), the others only tell the running client how many CPUs it may use now.
EVICT_BACKFILL takes the slot out of the share: the client keeps running for the others (the
slot leaves Backfill/Killing at once), and the last slot stops it (the backend's clean stop,
the starter's soft kill, a hard kill after KILLING_TIMEOUT) and leaves Killing once the
client's starter is gone.

A client that exits while slots still want it crashed: every slot goes back to Backfill/Idle
(transition 27) and the next client starts after a back-off that doubles with each crash in a
row (the reason goes to the StartLog). A configuration the backend refuses (a bad BOINC_*
value, no client program) leaves backfill off: the engine is built without it, so no slot
ever enters Backfill and every slot stays usable for jobs.
"""

from __future__ import annotations

import uuid
from typing import TYPE_CHECKING

from epcore.classad import ClassAd, format_old
from epcore.config import Config
from epcore.errors import EpError
from epcore.runtime.forkserver import ForkServerError
from epcore.startd.starters import StarterHandle
from epcore.startd.zygote import Spawned
from epcore.starter import protocol
from epcore.starter.starter import StarterOrder
from epcore.types import BackfillBackend, BackfillStatus

if TYPE_CHECKING:
    from epcore.startd.startd import Startd

#: What the claim id of the client's starter starts with (no schedd's claim looks like it).
BACKFILL_CLAIM = "backfill#client"
#: The first wait before a crashed client starts again, doubled per crash in a row.
FIRST_BACKOFF = 10.0
MAX_BACKOFF = 600.0
#: A client that ran this long before exiting was not crashing in a loop: the back-off
#: starts over.
STABLE_SECONDS = 300.0
#: How often the client is asked what it does.
STATUS_SECONDS = 10.0
#: How long an orphaned client's starter waits for a restarted startd before it ends.
CLIENT_LEASE = 60


def choose_backend(startd: Startd, config: Config) -> tuple[BackfillBackend | None, str]:
    """The backfill system ``config`` turns on, built; None and the reason when there is none
    (seed 000's messages: BACKFILL_SYSTEM undefined, not supported)."""
    if not config.get_bool("ENABLE_BACKFILL", False):
        return None, "ENABLE_BACKFILL is false"
    system = (config.get("BACKFILL_SYSTEM") or "").strip()
    if not system:
        return None, "ENABLE_BACKFILL is TRUE, but BACKFILL_SYSTEM is undefined"
    specs = {spec.name.lower(): spec for spec in startd.plugins.backfill_backends()}
    spec = specs.get(system.lower())
    if spec is None:
        offered = ", ".join(sorted(s.name for s in specs.values())) or "none installed"
        return None, f"BACKFILL_SYSTEM {system!r} not supported (offered: {offered})"
    try:
        return startd.plugins.build_backfill_backend(spec, config), ""
    except EpError as error:
        return None, f"backfill system {spec.name} cannot run: {error}"


class Backfill:
    """The backfill client of one startd (module docstring); a companion of its loop."""

    def __init__(self, startd: Startd) -> None:
        self.startd = startd
        self.log = startd.log
        #: Unique per startd: the starter of a client a previous startd left running says
        #: Hello with its own and is not taken for this one's.
        self.claim_id = f"{BACKFILL_CLAIM}#{uuid.uuid4().hex[:12]}"
        self.backend: BackfillBackend | None = None
        #: The slots the client computes for (Backfill/Busy), and those waiting for it to go.
        self.slots: set[str] = set()
        self.leaving: set[str] = set()
        self.handle: StarterHandle | None = None
        self.stopping = False
        self.kill_at: float | None = None
        self.started_at = 0.0
        self.crashes = 0
        self.restart_at: float | None = None
        self.last_status = BackfillStatus(running=False)
        self.next_status = 0.0
        self.cpus = 0

    # -- configuration ------------------------------------------------------------------------

    def configure(self, config: Config) -> bool:
        """Build the backend ``config`` asks for; whether backfill can run (the reason it
        cannot is logged, at error level when the administrator asked for backfill)."""
        backend, reason = choose_backend(self.startd, config)
        old = self.backend
        self.backend = backend
        if backend is None:
            if config.get_bool("ENABLE_BACKFILL", False):
                self.log.error("backfill disabled: %s", reason)
            return False
        if old is None or old.name != backend.name:
            self.log.info("backfill system %s ready", backend.name)
        return True

    def reconfigured(self, now: float) -> None:
        """After a reconfiguration that turned backfill off (seed 000: destroy the manager):
        the slots in Backfill leave it for Owner (30), which stops the client."""
        if self.backend is not None:
            return
        startd = self.startd
        for record in startd.state.slots:
            if record.place.names[0] == "Backfill":
                startd.take(startd.engine.vacate(startd.state, record.name, True, now), now)

    # -- the engine's actions -----------------------------------------------------------------

    def start_slot(self, slot: str, now: float) -> None:
        """START_BACKFILL: ``slot`` entered Backfill/Busy; the client computes for it too."""
        self.slots.add(slot)
        self.leaving.discard(slot)
        if self.handle is None:
            self._start_if_due(now)
        elif not self.stopping:
            self.log.info("%s: the backfill client runs for this slot too", slot)
            self._resize()

    def evict_slot(self, slot: str, now: float) -> None:
        """EVICT_BACKFILL: ``slot`` is in Backfill/Killing; it leaves the client's share."""
        self.slots.discard(slot)
        if self.handle is None:
            self._gone(slot, now)
        elif self.slots:
            # Seed 000: only the last slot kills the shared client; the others leave at once.
            self._resize()
            self._gone(slot, now)
        else:
            self.leaving.add(slot)
            self._stop(now, f"{slot} leaves Backfill")

    def _gone(self, slot: str, now: float) -> None:
        startd = self.startd
        record = startd.state.slot(slot)
        if record is not None and record.backfill_running:
            startd.take(startd.engine.backfill_exit(startd.state, slot, now), now)

    # -- the client ---------------------------------------------------------------------------

    def _share(self) -> int:
        """The CPUs of the slots the client computes for (at least 1)."""
        state = self.startd.state
        total = 0.0
        for name in self.slots:
            record = state.slot(name)
            slot = None if record is None else state.layout.find(record.slot_id, record.sub_id)
            total += slot.resources.cpus if slot is not None else 1.0
        return max(1, int(total))

    def _resize(self) -> None:
        if self.backend is None:
            return  # backfill was turned off: the client is on its way out
        cpus = self._share()
        if cpus == self.cpus:
            return
        self.cpus = cpus
        try:
            self.backend.resize(cpus)
        except EpError as error:
            self.log.warning("backfill client: cannot set its CPUs to %d: %s", cpus, error)
            return
        self.log.info("backfill client: may use %d CPUs", cpus)

    def _start_if_due(self, now: float) -> None:
        if self.restart_at is not None and now < self.restart_at:
            return
        self.restart_at = None
        backend = self.backend
        if backend is None or not self.slots:
            return
        first = min(self.slots)
        self.cpus = self._share()
        try:
            job = backend.start(self.cpus)
            self.handle = self._spawn(first, job, now)
        except (EpError, OSError, ForkServerError) as error:
            self._crashed(now, f"cannot start the backfill client: {error}")
            return
        self.started_at = now
        self.stopping = False
        self.kill_at = None
        self.log.info(
            "%s: started the backfill client (%s, starter %d) for %d CPUs",
            first,
            backend.name,
            self.handle.pid,
            self.cpus,
        )

    def _spawn(self, slot: str, job: ClassAd, now: float) -> StarterHandle:
        startd = self.startd
        record = startd.state.slot(slot)
        assert record is not None
        layout_slot = startd.state.layout.find(record.slot_id, record.sub_id)
        assert layout_slot is not None
        for name, default in (("ClusterId", 0), ("ProcId", 0)):
            if name not in job:
                job[name] = default
        order = StarterOrder(
            slot_name=slot,
            slot_id=record.slot_id,
            claim_id=self.claim_id,
            job=job,
            machine_text=format_old(startd.ads(startd.state, now)[slot]),
            execute_dir=startd.config.get(f"SLOT{record.slot_id}_EXECUTE") or startd.paths.execute,
            startd_socket=startd.paths.starter_socket,
            startd_address=startd.address,
            cpus=float(self.cpus),
            memory_mb=int(layout_slot.resources.memory_mb),
            startd_memory_mb=int(startd.inventory.memory_mb),
            starter_log=f"{startd.paths.starter_log}.backfill",
            lease=CLIENT_LEASE,
        )
        spawned: list[Spawned] = []

        def start(go_read: int) -> int:
            spawned.append(startd.zygote.spawn(order, None, go_read))
            return spawned[0].pid

        if not startd.zygote.alive:
            startd.zygote_gone()
        return startd.starters.spawn(self.claim_id, slot, start, startd.zygote.pid)

    def _stop(self, now: float, why: str) -> None:
        if self.handle is None or self.stopping:
            return
        self.stopping = True
        self.kill_at = now + self.startd.engine.policy(1).number("KILLING_TIMEOUT")
        if self.backend is not None:
            try:
                self.backend.stop()
            except EpError as error:
                self.log.warning("backfill client: no clean stop: %s", error)
        payload = ClassAd()
        payload["Why"] = why
        self.startd.starters.send(self.claim_id, protocol.SOFT_KILL, payload)
        self.log.info("stopping the backfill client: %s", why)

    def _crashed(self, now: float, reason: str) -> None:
        """The client is gone although slots wanted it: log why, wait, start it again."""
        if now - self.started_at >= STABLE_SECONDS:
            self.crashes = 0
        self.crashes += 1
        wait = min(FIRST_BACKOFF * 2 ** (self.crashes - 1), MAX_BACKOFF)
        self.restart_at = now + wait
        self.log.error("%s; restarting it in %.0f s (failure %d)", reason, wait, self.crashes)
        # Seed 000 (27): every slot goes back to Backfill/Idle; the policy brings them back
        # at once (START_BACKFILL adds them again), and they wait for the back-off.
        slots, self.slots = sorted(self.slots), set()
        for slot in slots:
            self._gone(slot, now)

    # -- the starter's events -----------------------------------------------------------------

    def owns(self, handle: StarterHandle) -> bool:
        """Whether ``handle`` is the backfill client's starter."""
        return handle.claim_id == self.claim_id

    def message(self, handle: StarterHandle, message: ClassAd, now: float) -> None:
        """A message from the client's starter."""
        command = message.evaluate("Command")
        if command == protocol.STARTED:
            handle.stage = "running"
            handle.job_start = now
        elif command == protocol.UPDATE:
            handle.usage = message
        elif command == protocol.FINISHED:
            handle.stage = "acknowledged"
            self.startd.starters.send(self.claim_id, protocol.ACK)
            reason = message.evaluate("ExitReason")
            code = message.evaluate("ExitCode")
            self.last_status = BackfillStatus(
                running=False, detail=f"ended: {reason} (exit code {code})"
            )

    def exited(self, handle: StarterHandle, now: float) -> None:
        """The client's starter is gone: the slots that waited for it leave Killing; if
        slots still wanted it, it crashed."""
        self.handle = None
        self.kill_at = None
        stopping, self.stopping = self.stopping, False
        self.startd.starters.forget(handle.claim_id)
        for slot in sorted(self.leaving):
            self._gone(slot, now)
        self.leaving.clear()
        if not self.slots:
            self.log.info("the backfill client is gone")
            self.last_status = BackfillStatus(running=False, detail="stopped")
        elif stopping:
            # Slots came back while it stopped: a new client for them, at once.
            self._start_if_due(now)
        else:
            self._crashed(now, f"the backfill client exited by itself ({self.last_status.detail})")

    # -- the loop (a companion of the startd's service) -----------------------------------------

    def open(self, selector: object) -> None:
        """Nothing to watch: the client's starter talks over the starter socket."""

    def ready(self, fileobj: object) -> None:
        """Never called: :meth:`open` registers nothing."""

    def timeout(self) -> float:
        if self.restart_at is not None or self.kill_at is not None or self.handle is not None:
            return 1.0
        return 3600.0

    def tick(self) -> None:
        """Kill a client that outlived KILLING_TIMEOUT, start one whose back-off is over, and
        ask the running client what it does."""
        now = self.startd.clock()
        if self.kill_at is not None and now >= self.kill_at:
            self.kill_at = None
            self.log.warning("the backfill client outlived KILLING_TIMEOUT: killing it")
            self.startd.starters.kill(self.claim_id)
        if self.handle is None and self.slots and self.restart_at is not None:
            self._start_if_due(now)
        if self.handle is not None and not self.stopping and now >= self.next_status:
            self.next_status = now + STATUS_SECONDS
            self._ask_status()

    def _ask_status(self) -> None:
        if self.backend is None:
            return
        try:
            status = self.backend.status()
        except EpError as error:
            status = BackfillStatus(running=False, detail=str(error))
        if (status.tasks, status.running) != (self.last_status.tasks, self.last_status.running):
            self.log.info(
                "backfill client: %s, %d tasks, %.0f CPU seconds, %s",
                "running" if status.running else "not answering",
                status.tasks,
                status.cpu_seconds,
                status.detail,
            )
        self.last_status = status

    def close(self) -> None:
        """The loop ends: a client still running is killed with its starter."""
        if self.handle is not None and not self.handle.gone:
            self.startd.starters.kill(self.claim_id)
