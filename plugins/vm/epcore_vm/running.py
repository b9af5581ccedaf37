"""One VM job's running domain, as the starter holds it (:class:`RunningVm`): the watcher
that sees the guest power off, suspend (pause, or a save of its memory) and continue, vacate
(shutdown then destroy, or a checkpoint: :mod:`epcore_vm.checkpoint`), periodic checkpoints
(:mod:`epcore_vm.periodic`), the qemu process as the job's tracking, and the output.
"""

from __future__ import annotations

import contextlib
import logging
import os
import signal
import threading
import time
from typing import Any

import attrs

from epcore.classad import ClassAd, Expr
from epcore.types import ChildSetup, ContainerJob, TrackedUsage
from epcore_vm.checkpoint import forget
from epcore_vm.domain import (
    CONSOLE_FILE,
    VmInfrastructureError,
)
from epcore_vm.guestnet import guest_ips, guest_network
from epcore_vm.periodic import (
    CHECK_SECONDS,
    checkpoint_files,
    due,
    send_to_iwd,
)
from epcore_vm.qemu import alive, join_cgroups, qemu_pid, rss
from epcore_vm.status import STATUS_FAILED, StatusErrors, guest_gone

#: The saved memory of a hard-suspended guest, in the sandbox (HTCondor's working dir).
SAVE_FILE = "vm_suspended.mem"
#: How often the watcher asks libvirt whether the guest still runs (HTCondor's
#: VM_STATUS_INTERVAL is a minute: epcore reports the power-off sooner).
WATCH_SECONDS = 0.25


class RunningVm:
    """One job's domain, from its start until :meth:`release`: the job's handle and its
    tracking (the qemu process, pause for suspend, usage)."""

    def __init__(
        self,
        connection: Any,
        domain: Any,
        name: str,
        request: ContainerJob,
        log: logging.Logger,
        *,
        soft_suspend: bool = False,
        checkpoint: str | None = None,
        status: StatusErrors | None = None,
        periodic: Expr | None = None,
    ) -> None:
        self.connection = connection
        self.domain = domain
        self.name = name
        self.request = request
        self.log = log
        self.destroyed = False
        self.soft_suspend = soft_suspend
        #: Where a vacate saves the guest (vm_checkpoint); None: the job does not checkpoint.
        self.checkpoint = checkpoint
        #: True while the checkpoint is written (the domain stops when it is done).
        self.checkpointing = False
        #: The job is removed, not vacated (:meth:`removing`): nothing is kept for a next run.
        self.removed = False
        #: The startd asked the guest to stop (a power-off is then no completion).
        self.stopping = False
        #: Failed status checks in a row (VM_STATUS_MAX_ERROR), and libvirt's last error
        #: once they ended the job.
        self.status = status or StatusErrors(5, 60.0)
        self.status_failure: str | None = None
        #: Where a hard suspend saved the guest's memory, until it is restored.
        self.saved: str | None = None
        self.released = False
        self._ended = threading.Event()
        self._lock = threading.Lock()
        self._read, self._write = os.pipe()
        self._qemu = qemu_pid(name)
        #: The guest's MACs (libvirt's choice when the job named none) and known IPs.
        self.network = guest_network(domain)
        self._killer: threading.Timer | None = None
        self._watcher = threading.Thread(target=self._watch, name="epcore-vm-watch", daemon=True)
        self._watcher.start()
        #: PERIODIC_CHECKPOINT when this job checkpoints periodically (periodic.py), and
        #: when the last periodic checkpoint was (the start before the first).
        self.periodic = periodic if checkpoint is not None else None
        self.last_checkpoint = time.time()
        if self.periodic is not None:
            threading.Thread(
                target=self._periodic_checkpoints, name="epcore-vm-pckpt", daemon=True
            ).start()

    def _watch(self) -> None:
        # Polled: libvirt's event loop would need a thread of its own all the same.
        while not self._ended.wait(WATCH_SECONDS):
            if self.saved is not None or self.checkpointing:
                continue  # saved for a suspend, or being saved: not ended yet
            try:
                active = bool(self.domain.isActive())
            except Exception as error:
                # A transient domain that stopped is gone from libvirt; anything else is
                # libvirt failing, which ends the job only VM_STATUS_MAX_ERROR times in a row.
                active = False
                if not guest_gone(error):
                    if not self.status.failed(time.monotonic()):
                        continue
                    self.status_failure = str(error)
                    self.log.error("%s: %s: %s", self.name, STATUS_FAILED, error)
                    with contextlib.suppress(Exception):
                        self.domain.destroy()
            else:
                self.status.succeeded()
            if self.saved is not None:
                continue  # the save began while libvirt was asked
            if not active:
                self._ended.set()
        os.write(self._write, b"x")

    # RunningContainer

    def fileno(self) -> int:
        """Readable once the domain has stopped."""
        return self._read

    def exit_status(self) -> tuple[int | None, int | None] | None:
        """(0, None) once the guest powered off by itself; (None, SIGKILL) when it was
        destroyed; None while it runs. HTCondor has no guest exit code either."""
        if not self._ended.is_set():
            return None
        return (None, int(signal.SIGKILL)) if self.destroyed else (0, None)

    def stop(self, signum: int, grace_seconds: float) -> None:
        """Ask the guest to shut down (ACPI), and destroy it after ``grace_seconds``; a
        checkpointing job's guest is saved instead (the save stops it)."""
        del signum  # a guest gets no signal: the power button is HTCondor's graceful stop
        self.stopping = True
        if self.checkpoint is not None and not self.removed and not self._ended.is_set():
            # virDomainSave takes seconds: the starter's loop must not wait for it.
            saver = threading.Thread(target=self._save_checkpoint, name="epcore-vm-ckpt")
            saver.daemon = True
            saver.start()
        else:
            self._shutdown()
        if self._killer is None:
            self._killer = threading.Timer(grace_seconds, self._destroy)
            self._killer.daemon = True
            self._killer.start()

    def removing(self) -> None:
        """The job is removed (``ep rm``), not vacated: a checkpointing guest is not saved,
        and the checkpoint an earlier vacate left in the Iwd goes. HTCondor saves such a
        guest into the job's spool, which the removal then deletes; epcore keeps it in the
        Iwd, where it would stay, so it is neither made nor kept."""
        self.removed = True
        if self.checkpoint is not None:
            forget(self.request)

    def _save_checkpoint(self) -> None:
        """Save the guest to the checkpoint file (a hard-suspended one is saved already);
        shut it down as any other when that fails."""
        assert self.checkpoint is not None
        with self._lock:
            if self.saved is not None:
                try:
                    os.replace(self.saved, self.checkpoint)
                except OSError as error:
                    self.log.warning("keeping %s's suspended memory failed: %s", self.name, error)
                else:
                    self.log.info("domain %s checkpointed (it was suspended)", self.name)
                    self.saved = None
                    self._ended.set()
                    return
            self.checkpointing = True
            try:
                if self._save_guest("checkpointing %s failed (%s): shutting it down"):
                    self.log.info("domain %s checkpointed to %s", self.name, self.checkpoint)
                    return
            finally:
                self.checkpointing = False
        self._shutdown()

    def _save_guest(self, failed: str) -> bool:
        """Save the guest to the checkpoint file (it stops), its addresses read first: the
        last ones it had go to the job ad with its MAC (VM_CkptIP). False, logged with
        ``failed`` (name and error), when libvirt cannot."""
        assert self.checkpoint is not None
        ips = guest_ips(self.domain) if self.network.macs else ()
        self.network = attrs.evolve(self.network, ips=ips or self.network.ips)
        try:
            self.domain.save(self.checkpoint)
        except Exception as error:
            self.log.warning(failed, self.name, error)
            return False
        return True

    def _periodic_checkpoints(self) -> None:
        assert self.periodic is not None
        while not self._ended.wait(CHECK_SECONDS):
            now = time.time()
            if self.stopping or self.saved is not None:
                continue  # vacating, or hard-suspended: HTCondor's only while the job runs
            try:
                wanted = due(
                    self.periodic, self.request.machine, self.request.job, self.last_checkpoint, now
                )
            except Exception as error:  # an expression that fails: no checkpoint
                self.log.warning("PERIODIC_CHECKPOINT: %s", error)
                wanted = False
            if wanted:
                # As HTCondor's claim: the time of the attempt, so a failing one is not
                # retried at every check.
                self.last_checkpoint = now
                self.periodic_checkpoint()

    def periodic_checkpoint(self) -> bool:
        """Save the running guest, send the saved memory, writable disks and console to
        the Iwd, and restore the guest (it goes on where it was); False when nothing was
        sent. A guest libvirt cannot restore ends the job as a libvirt failure (requeued:
        the next run resumes from what reached the Iwd)."""
        assert self.checkpoint is not None
        with self._lock:
            if self.stopping or self.saved is not None or self._ended.is_set():
                return False
            self.checkpointing = True
            try:
                if not self._save_guest("periodic checkpoint of %s failed: %s"):
                    return False
                problem = send_to_iwd(
                    self.request, checkpoint_files(self.request.job, self.checkpoint)
                )
                if problem is not None:
                    self.log.warning("periodic checkpoint of %s: %s", self.name, problem)
                else:
                    self.log.info("periodic checkpoint of %s sent to the Iwd", self.name)
                try:
                    self.connection.restore(self.checkpoint)
                    self.domain = self.connection.lookupByName(self.name)
                except Exception as error:
                    self.status_failure = f"restoring after a periodic checkpoint: {error}"
                    self.log.error("%s: %s", self.name, self.status_failure)
                    self._ended.set()
                    return problem is None
                self._qemu = qemu_pid(self.name)
                self.join_job_cgroups()
            finally:
                self.checkpointing = False
        with contextlib.suppress(OSError):
            os.unlink(self.checkpoint)  # in the Iwd now; a vacate writes a new one
        return problem is None

    def collect_output(self) -> str | None:
        """With vm_no_output_vm, remove the disks and console from the sandbox so that
        nothing of the VM goes back; else give the console and a checkpoint to the job's user
        (the disks, copied in as the user, are the output). A guest that powered off by
        itself completed the job: a checkpoint of an earlier run is forgotten."""
        if self.status_failure is not None:
            # HTCondor's VMError: requeued, and the startd marks the universe offline.
            raise VmInfrastructureError(f"{STATUS_FAILED}: {self.status_failure}")
        if self.checkpoint is not None and self.removed:
            # A save that a vacate began before the removal came: its file is not kept.
            with contextlib.suppress(OSError):
                os.unlink(self.checkpoint)
            forget(self.request)
        elif self.checkpoint is not None and not self.stopping and not self.destroyed:
            forget(self.request)
        if self.request.job.evaluate("VMPARAM_No_Output_VM") is not True:
            # qemu and libvirtd (root) made these files: the job's user sends them back.
            console = os.path.join(self.request.sandbox, CONSOLE_FILE)
            for path, mode in ((console, 0o644), (self.checkpoint, 0o600)):
                if path is None:
                    continue
                with contextlib.suppress(OSError):
                    os.chown(path, self.request.uid, self.request.gid)
                    os.chmod(path, mode)
            return None
        disks = self.request.job.evaluate("VMPARAM_vm_Disk")
        names = [CONSOLE_FILE]
        if isinstance(disks, str):
            names += [entry.split(":")[0].strip() for entry in disks.split(",")]
        for name in names:
            path = os.path.join(self.request.sandbox, name)
            if os.path.dirname(os.path.abspath(path)) == os.path.abspath(self.request.sandbox):
                with contextlib.suppress(OSError):
                    os.unlink(path)
        return None

    def job_attributes(self) -> ClassAd | None:
        """For a checkpointing job, its guest's MAC as ``VM_CkptMac`` (and its IP as
        ``VM_CkptIP``) for the job's ad, as HTCondor's starter reports them: the next run gives
        the resumed guest the same MAC, and condor_submit's clause keeps the job off a
        machine where a running guest holds it. None otherwise."""
        if self.checkpoint is None or not self.network.mac:
            return None
        ad = ClassAd()
        ad["VM_CkptMac"] = self.network.mac
        if self.network.ip:
            ad["VM_CkptIP"] = self.network.ip
        return ad

    def join_job_cgroups(self) -> None:
        """Move the guest's qemu into the job's cgroups (libvirtd made it in its own
        machine.slice); a move that fails leaves the usage to libvirt's numbers."""
        files = self.request.child_setup.join_files
        if self._qemu is None or not files:
            return
        for failure in join_cgroups(self._qemu, files):
            self.log.warning(
                "qemu %d of %s stays out of a job cgroup: %s", self._qemu, self.name, failure
            )
        self.log.info("qemu %d of %s moved into the job's cgroups", self._qemu, self.name)

    # JobTracking

    def child_setup(self) -> ChildSetup:
        return ChildSetup()

    def attach(self, pid: int) -> None:
        del pid  # libvirtd starts qemu, not the starter

    def pids(self) -> frozenset[int]:
        """The guest's qemu process while it lives."""
        pid = self._qemu
        if pid is None or (self._ended.is_set() and not alive(pid)):
            return frozenset()
        return frozenset({pid}) if alive(pid) else frozenset()

    def signal_all(self, signum: int) -> None:
        """SIGKILL destroys the guest, SIGSTOP / SIGCONT pause and resume it, any other
        signal asks it to shut down."""
        if signum == signal.SIGKILL:
            self.stopping = True
            self._destroy()
        elif signum == signal.SIGSTOP:
            self.freeze()
        elif signum == signal.SIGCONT:
            self.thaw()
        else:
            self.stopping = True
            self._shutdown()

    def freeze(self) -> bool:
        """Suspend the guest as HTCondor does: with VM_SOFT_SUSPEND pause it (its memory
        stays), else save its memory to a file in the sandbox and free it (virDomainSave),
        pausing it instead when the save fails."""
        if self.soft_suspend or self.saved is not None:
            return self.saved is not None or self._call("suspend")
        path = os.path.join(self.request.sandbox, SAVE_FILE)
        with self._lock:
            self.saved = path
            try:
                self.domain.save(path)
            except Exception as error:
                self.saved = None
                self.log.warning("saving %s failed (%s): pausing it", self.name, error)
            else:
                self.log.info("domain %s saved to %s", self.name, path)
                return True
        return self._call("suspend")

    def thaw(self) -> bool:
        """Resume a paused guest, or restore a saved one (its file then removed)."""
        path = self.saved
        if path is None:
            return self._call("resume")
        with self._lock:
            try:
                self.connection.restore(path)
                self.domain = self.connection.lookupByName(self.name)
            except Exception as error:
                self.log.warning("restoring %s failed: %s", self.name, error)
                return False
            self.saved = None
            # The restore started a new qemu, in libvirt's groups again.
            self._qemu = qemu_pid(self.name)
            self.join_job_cgroups()
        with contextlib.suppress(OSError):
            os.unlink(path)
        self.log.info("domain %s restored", self.name)
        return True

    def usage(self) -> TrackedUsage:
        """The guest's CPU time (libvirt's) and its qemu's resident memory."""
        cpu: float | None = None
        try:
            cpu = int(self.domain.info()[4]) / 1e9
        except Exception:
            cpu = None
        return TrackedUsage(user_cpu=cpu, memory_current=rss(self._qemu))

    def out_of_memory(self) -> bool:
        return False

    def release(self) -> None:
        """Destroy the domain if it still runs, stop watching, close the connection."""
        if self.released:
            return
        self.released = True
        if not self._ended.is_set():
            self._destroy()
        if self._killer is not None:
            self._killer.cancel()
        self._ended.set()
        self._watcher.join(5.0)
        with contextlib.suppress(Exception):
            self.connection.close()
        for fd in (self._read, self._write):
            with contextlib.suppress(OSError):
                os.close(fd)

    def _call(self, method: str) -> bool:
        with self._lock:
            try:
                getattr(self.domain, method)()
            except Exception as error:
                self.log.warning("%s of %s failed: %s", method, self.name, error)
                return False
        self.log.info("domain %s: %s", self.name, method)
        return True

    def _shutdown(self) -> None:
        if self.saved is not None:
            self._destroy()  # a saved guest cannot hear the power button
        elif not self._ended.is_set():
            self._call("shutdown")

    def _destroy(self) -> None:
        if self._ended.is_set():
            return
        self.destroyed = True
        if self.saved is not None:
            # Nothing runs: forgetting the saved memory is the destroy.
            with contextlib.suppress(OSError):
                os.unlink(self.saved)
            self.saved = None
            self._ended.set()
            return
        self._call("destroy")
