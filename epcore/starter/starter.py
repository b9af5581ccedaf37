"""One starter: runs one job for the startd, from its sandbox to its last process.

The life of a job, in order: make the sandbox (owned by the job user) and write the job and
machine ads into it; run the PREPARE_JOB_BEFORE_TRANSFER and PREPARE_JOB hooks (either may
update the job ad, hold the job or send it back to idle); work out the command from the ad;
start tracking (every isolation backend the startd enabled); launch the job; then, until its
first process exits, obey the startd (suspend, continue, soft kill with KillSig, hard kill),
report usage at STARTER_INITIAL_UPDATE_INTERVAL and every STARTER_UPDATE_INTERVAL (also to the
UPDATE_JOB_INFO hook) and watch for its memory limit. When it ends: kill whatever it left
behind, wait until no tracker sees a process, give tracking back, decide how it ended
(:mod:`epcore.starter.outcome`), run the JOB_EXIT hook, write the job event logs, tell the
startd and keep telling it (across startd restarts) until it acknowledges, then remove the
sandbox.

The starter talks to the startd as a client (:mod:`epcore.starter.protocol`), so a restarted
startd finds it again: the starter reconnects every second while it has no connection.
"""

from __future__ import annotations

import contextlib
import logging
import os
import selectors
import signal
import socket
import time
from collections.abc import Callable
from typing import TYPE_CHECKING

import psutil

from epcore.classad import ClassAd
from epcore.errors import EpError, JobSetupError, UniverseOffline
from epcore.jobs.command import JobCommand, job_environment
from epcore.jobs.syntax import Environment
from epcore.runtime import forkwire, framing
from epcore.slots.broken import STARTER_EXIT_IMMORTAL_LVM, broken_by_exit
from epcore.starter import protocol
from epcore.starter.hooks import HookRunner
from epcore.starter.identity import JobUser
from epcore.starter.outcome import HELD, REQUEUED, Ending, decide, vacates_instead
from epcore.starter.request import (
    PreparedJob,
    StarterOrder,
    StarterRequest,
    cgroup_key,
    cgroup_prefix,
    job_id,
    tracking_request,
)
from epcore.starter.sandbox import (
    Sandbox,
    SandboxError,
    disk_usage_kb,
    make_sandbox,
    remove_sandbox,
)
from epcore.starter.usage import JobUsage, combine
from epcore.types import (
    ChildSetup,
    JobTracking,
    ScratchRequest,
    ScratchVerdict,
    ScratchVolume,
    SlotBreak,
)

if TYPE_CHECKING:
    pass

#: How long the starter waits for the processes a job left behind to die after SIGKILL.
CLEANUP_SECONDS = 10.0
RECONNECT_SECONDS = 1.0
#: How long the starter keeps removing a sandbox whose user keeps changing it (the startd
#: has the job's end already: nobody waits for this).
SANDBOX_REMOVAL_PATIENCE = 60.0
#: What a volume the starter cannot remove makes of its slot (HTCondor's starter exits 15,
#: and its startd gives the slot SlotBrokenCode 5).
_UNCLEAN_VOLUME = broken_by_exit(STARTER_EXIT_IMMORTAL_LVM) or (5, "")


def _account_processes(uid: int) -> set[int]:
    """The live processes of account ``uid`` (zombies left out: PID 1 may reap them late)."""
    found = set()
    for process in psutil.process_iter(["uids", "status"]):
        uids = process.info["uids"]
        if uids is not None and uids.real == uid and process.info["status"] != "zombie":
            found.add(process.pid)
    return found


def _global_oom_kills(path: str = "/proc/vmstat") -> int:
    try:
        with open(path, encoding="ascii") as handle:
            for line in handle:
                if line.startswith("oom_kill "):
                    return int(line.split()[1])
    except (OSError, ValueError):
        pass
    return 0


class Starter:
    """The starter of one job; :meth:`run` returns when the startd has the job's ending."""

    def __init__(
        self,
        request: StarterRequest,
        log: logging.Logger,
        *,
        clock: Callable[[], float] = time.time,
        starter_id: int | None = None,
        channel: framing.Channel | None = None,
    ) -> None:
        self.request = request
        self.log = log
        self.clock = clock
        self.starter_id = os.getpid() if starter_id is None else starter_id
        self.job = request.job.copy()
        self.selector = selectors.DefaultSelector()
        #: The connection to the startd: ``channel`` is one an earlier job of the claim left
        #: open (:mod:`epcore.starter.claim_loop`); without one, :meth:`connect` makes one.
        self.channel: framing.Channel | None = None
        if channel is not None and not channel.closed:
            self.channel = channel
            self.selector.register(channel, selectors.EVENT_READ, "startd")
        #: Called once the job runs (not in a container): the claim loop prepares the claim's
        #: next job then, while this one runs.
        self.after_launch: Callable[[], None] | None = None
        #: True once the job was given to a container runtime.
        self.container_job = False
        self.stage = "setup"
        self.sandbox: Sandbox | None = None
        self.trackings: list[JobTracking] = []
        self.start_time: float | None = None
        self.usage: JobUsage | None = None
        self.measured_pids: frozenset[int] = frozenset()
        self.stopped_by: str | None = None
        #: The VacateReasonCode and SubCode the startd sent with its stop, if any.
        self.vacate_code: tuple[int, int] | None = None
        self.suspended = False
        self.acknowledged = False
        self._next_connect = 0.0
        #: When the startd was last lost (monotonic; None while connected).
        self.lost_since: float | None = None
        self.user: JobUser | None = None
        self.supervisor_pid = 0
        self.runner: HookRunner | None = None
        #: The job's own filesystem under its sandbox, and what its check found that ends it.
        self.volume: ScratchVolume | None = None
        self.scratch_verdict: ScratchVerdict | None = None
        #: What the job left that could not be cleaned up: the slot is to be broken.
        self.broken: SlotBreak | None = None
        #: What the job's file transfers recorded (BytesSent, TransferInStarted...).
        self.transfer_figures = ClassAd()
        #: The universe the machine failed for this job, reported with its end.
        self.offline: UniverseOffline | None = None
        #: What the job's container asked to be written into the job's ad (VM_CkptMac).
        self.job_updates = ClassAd()

    # -- the startd connection --------------------------------------------------------------

    def _hello(self) -> ClassAd:
        ad = ClassAd()
        ad["SlotName"] = self.request.slot_name
        ad["ClaimId"] = self.request.claim_id
        ad["JobId"] = job_id(self.job)
        ad["StarterPid"] = os.getpid()
        ad["StarterStage"] = self.stage
        if self.start_time is not None:
            ad["JobStartDate"] = int(self.start_time)
        return framing.message(protocol.HELLO, ad)

    def connect(self) -> None:
        """Connect to the startd when not connected and the retry time has come."""
        if self.channel is not None and not self.channel.closed:
            return
        now = time.monotonic()
        if now < self._next_connect:
            return
        self._next_connect = now + RECONNECT_SECONDS
        if self.channel is not None:
            self._forget_channel()
        sock = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        try:
            with framing.socket_address(self.request.startd_socket) as address:
                sock.connect(address)
        except OSError as error:
            sock.close()
            self.log.debug("startd not reachable at %s: %s", self.request.startd_socket, error)
            if self.lost_since is None:
                self.lost_since = now
            return
        self.lost_since = None
        # The startd's NEXT carries a whole job ad: as large as a job the zygote may be given.
        self.channel = framing.Channel(
            sock, protocol.STARTD_COMMANDS, max_line=forkwire.MAX_MESSAGE
        )
        self.selector.register(self.channel, selectors.EVENT_READ, "startd")
        self.channel.send(self._hello())
        self.log.info("connected to the startd at %s", self.request.startd_socket)

    def lease_expired(self) -> bool:
        """True once the startd has been gone for the whole claim lease: as HTCondor's starter
        whose shadow does not reconnect within the job lease, the starter then gives up."""
        lease = self.request.lease
        if lease <= 0 or self.lost_since is None:
            return False
        return time.monotonic() - self.lost_since >= lease

    def _forget_channel(self) -> None:
        if self.lost_since is None:
            self.lost_since = time.monotonic()
        if self.channel is None:
            return
        with contextlib.suppress(KeyError, ValueError):
            self.selector.unregister(self.channel)
        self.channel.close()
        self.channel = None

    def send(self, command: str, payload: ClassAd | None = None) -> None:
        """Send to the startd if connected; the Hello after a reconnect carries the stage."""
        if self.channel is not None and not self.channel.closed:
            self.channel.send(framing.message(command, payload))
            if self.channel.closed:
                self._forget_channel()

    def read_startd(self, on_command: Callable[[str, ClassAd], None]) -> None:
        if self.channel is None:
            return
        try:
            for ad in self.channel.receive():
                command = ad.evaluate("Command")
                assert isinstance(command, str)
                on_command(command, ad)
        except framing.ProtocolError as error:
            self.log.error("bad message from the startd, reconnecting: %s", error)
            self.channel.close()
        if self.channel is not None and self.channel.closed:
            self.log.warning("lost the connection to the startd; retrying every second")
            self._forget_channel()

    # -- setup ------------------------------------------------------------------------------

    def environment(self, command: JobCommand) -> Environment:
        """The job's whole environment for ``command`` in its sandbox on this slot."""
        sandbox = self.sandbox
        assert sandbox is not None
        return job_environment(
            command,
            scratch_dir=sandbox.path,
            slot_name=self.request.slot_name,
            job_ad_path=sandbox.job_ad_path,
            machine_ad_path=sandbox.machine_ad_path,
            cpus=self.request.cpus,
        )

    def tracking_key(self) -> str:
        """The job's tracking key, as the startd saved it: the prepared tracking's, else the
        cgroup name of this starter."""
        r = self.request
        if r.prepared is not None:
            return r.prepared.job_key
        return cgroup_key(r.execute_dir, r.slot_name, self.starter_id)

    def start_tracking(self) -> None:
        """Track the job with every backend; a backend the startd prepared for this claim
        (its tracking and a supervisor already inside it) is used as it is."""
        r = self.request
        key = cgroup_key(r.execute_dir, r.slot_name, self.starter_id)
        request = tracking_request(
            r.config, key, r.slot_name, r.slot_id, r.cpus, r.memory_mb, r.startd_memory_mb
        )
        prepared = r.prepared
        for backend in r.isolation:
            if prepared is not None and backend.name == prepared.backend:
                self.trackings.append(prepared.tracking)
                self.log.info("tracking the job with %s (prepared)", backend.name)
                continue
            self.trackings.append(backend.track(request))
            self.log.info("tracking the job with %s", backend.name)

    # -- usage ------------------------------------------------------------------------------

    def job_pids(self) -> frozenset[int]:
        """Every process of the job any tracker sees (not its supervisor, which may share
        its cgroups); when the job's account is dedicated to jobs
        (DEDICATED_EXECUTE_ACCOUNT_REGEXP), every process of that account too."""
        found: set[int] = set()
        for tracking in self.trackings:
            found |= tracking.pids()
        found.discard(self.supervisor_pid)
        if self.user is not None and self.user.dedicated and self.user.uid != 0:
            found |= _account_processes(self.user.uid)
        return frozenset(found)

    def measure(self) -> JobUsage:
        """The job's usage now (cgroup numbers before per-process sums); the processes it
        counted are kept in ``measured_pids``."""
        measured = [t.usage() for t in reversed(self.trackings)]
        disk = disk_usage_kb(self.sandbox.path) if self.sandbox is not None else 0
        self.measured_pids = self.job_pids()
        self.usage = combine(measured, len(self.measured_pids), disk, self.usage)
        return self.usage

    # -- the end ----------------------------------------------------------------------------

    def kill_everything(self, seen: frozenset[int] | None = None) -> None:
        """SIGKILL every process of the job until no tracker sees one (bounded). ``seen``:
        the job's processes as a look just before found them, used instead of a first look
        of its own (when it found none, no process of the job was left to start another in
        its groups or its session)."""
        deadline = time.monotonic() + CLEANUP_SECONDS
        if self.suspended:
            # A frozen cgroup's processes cannot die; a stopped process dies of SIGKILL.
            for tracking in self.trackings:
                tracking.thaw()
        while True:
            left = self.job_pids() if seen is None else seen
            seen = None
            if not left:
                return
            for tracking in self.trackings:
                tracking.signal_all(signal.SIGKILL)
            if self.user is not None and self.user.dedicated and self.user.uid != 0:
                for pid in _account_processes(self.user.uid):
                    with contextlib.suppress(ProcessLookupError, PermissionError):
                        os.kill(pid, signal.SIGKILL)
            if time.monotonic() > deadline:
                self.log.error("processes %s of the job survive SIGKILL", sorted(left))
                return
            time.sleep(0.01)

    def release_tracking(self) -> None:
        for tracking in reversed(self.trackings):
            try:
                tracking.release()
            except EpError as error:
                self.log.error("could not release job tracking: %s", error)

    def wait_for_ack(self, finished: ClassAd) -> None:
        """Send ``finished`` until the startd acknowledges it, reconnecting as needed."""
        self.stage = "finished"
        sent_on: framing.Channel | None = None

        def on_command(command: str, ad: ClassAd) -> None:
            if command == protocol.ACK:
                self.acknowledged = True

        while not self.acknowledged:
            if self.lease_expired():
                self.log.error(
                    "no reconnect from the startd for %d s (the claim's lease): exiting "
                    "without reporting the job's end",
                    self.request.lease,
                )
                return
            self.connect()
            if self.channel is not None and self.channel is not sent_on:
                self.send(protocol.FINISHED, finished)
                sent_on = self.channel
            for _key, _events in self.selector.select(timeout=RECONNECT_SECONDS):
                self.read_startd(on_command)
            if self.channel is not None and self.channel.pending:
                self.channel.flush()

    def setup_failure(self, error: JobSetupError) -> Ending:
        """The ending of a job that could not be started (requeued for the codes HTCondor's
        shadow vacates for)."""
        if vacates_instead(error.hold_code, error.hold_subcode):
            return Ending(REQUEUED, error.reason, None, None, error.hold_code, error.hold_subcode)
        return Ending(HELD, error.reason, None, None, error.hold_code, error.hold_subcode)

    def ending(self, exit_code: int | None, exit_signal: int | None, oom_before: int) -> Ending:
        """How the job ended, from what the trackers and the kernel say."""
        usage = self.usage or self.measure()
        verdict = self.scratch_verdict
        if verdict is not None:
            # The starter killed the job for its disk: that, not the signal, is its ending.
            outcome = HELD if verdict.hold else REQUEUED
            return Ending(outcome, verdict.reason, None, None, verdict.code, verdict.subcode)
        memory_hit = any(t.out_of_memory() for t in self.trackings)
        return decide(
            exit_code=exit_code,
            exit_signal=exit_signal,
            stopped_by_startd=self.stopped_by,
            vacate_code=self.vacate_code,
            memory_limit_hit=memory_hit,
            # Only a SIGKILL can be the machine's OOM killer's: /proc/vmstat is read then.
            global_oom=exit_signal == signal.SIGKILL and _global_oom_kills() > oom_before,
            memory_mb=self.request.memory_mb,
            peak_memory_mb=usage.memory_usage_mb,
        )

    def remove_sandbox(self) -> None:
        """Remove the sandbox, if one was made (what cannot be removed is logged; the startd
        sweeps EXECUTE again when it next starts). The job's scratch filesystem goes first:
        what the job wrote goes with it and the sandbox is an empty directory again."""
        scratch, volume = self.request.scratch, self.volume
        if scratch is not None and volume is not None:
            try:
                scratch.remove(volume)
            except EpError as error:
                self.log.error("cannot remove the job's scratch filesystem: %s", error)
                if self.request.config.get_bool("LVM_CLEANUP_FAILURE_MAKES_BROKEN_SLOT", True):
                    code, reason = _UNCLEAN_VOLUME
                    self.broken = SlotBreak(int(code), reason, scratch.name, volume.name)
            self.volume = None
        if (
            self.sandbox is not None
            and self.broken is not None
            and os.path.ismount(self.sandbox.path)
        ):
            # The volume left is still mounted there (busy): removing its files would take the
            # patience below for nothing; the startd's clean-up takes the volume, its next
            # start the directory.
            self.sandbox = None
        if self.sandbox is not None:
            try:
                remove_sandbox(self.sandbox, patience=SANDBOX_REMOVAL_PATIENCE)
            except SandboxError as error:
                self.log.error("%s", error)
            self.sandbox = None

    def make_sandbox(self) -> Sandbox:
        user = self.user
        assert user is not None
        self.sandbox = make_sandbox(
            self.request.execute_dir,
            self.starter_id,
            user.uid,
            user.gid,
            (self.job, self.request.machine_text),
            mount=None if self.request.scratch is None else self._mount_scratch,
        )
        return self.sandbox

    def _mount_scratch(self, path: str) -> None:
        """Have the scratch filesystem made and mounted on the empty sandbox ``path``."""
        scratch, user = self.request.scratch, self.user
        assert scratch is not None and user is not None
        disk = self.request.machine().evaluate("Disk")
        request = ScratchRequest(
            path=path,
            slot_name=self.request.slot_name,
            slot_id=self.request.slot_id,
            starter_id=self.starter_id,
            disk_kib=disk if isinstance(disk, int) and not isinstance(disk, bool) else 0,
            uid=user.uid,
            gid=user.gid,
            job=self.job,
        )
        self.volume = scratch.prepare(request)
        self.log.info(
            "scratch filesystem %s (%d KiB) on %s", self.volume.name, self.volume.size_kib, path
        )

    def scratch_setup(self) -> ChildSetup:
        """What the job's first process needs for its scratch filesystem: the starter's
        private mount namespace when the volume is hidden there (LVM_HIDE_MOUNT)."""
        if self.volume is None or not self.volume.mount_namespace:
            return ChildSetup()
        return ChildSetup(mount_namespace=self.volume.mount_namespace)

    def check_scratch(self) -> ScratchVerdict | None:
        """Ask the scratch filesystem about the job's volume; a verdict is kept for
        :meth:`ending`."""
        scratch, volume = self.request.scratch, self.volume
        if scratch is None or volume is None or self.scratch_verdict is not None:
            return None
        try:
            self.scratch_verdict = scratch.check(volume)
        except EpError as error:
            self.log.error("cannot check the job's scratch filesystem: %s", error)
        return self.scratch_verdict


__all__ = [
    "PreparedJob",
    "Starter",
    "StarterOrder",
    "StarterRequest",
    "cgroup_key",
    "cgroup_prefix",
    "job_id",
    "tracking_request",
]
