"""One job's running container: the starter's handle on it and its tracking.

The starter waits for the container with its other descriptors, so a thread of ours waits on
dockerd (``POST /containers/{id}/wait``) and writes a byte to a pipe when the container stops.
Usage and the out-of-memory verdict come from the container's own cgroup, read directly (a
stats request takes a second, as dockerd waits for a second sample), and the numbers last
read stay: dockerd removes the cgroup with the container's last process. Suspension is
dockerd's pause (the freezer), a vacate its stop (the job's KillSig, then SIGKILL after the
vacate time), and release removes the container with its anonymous volumes.
"""

from __future__ import annotations

import contextlib
import logging
import os
import signal
import threading
import time
from collections.abc import Callable

import attrs
import docker
import docker.errors
import requests.exceptions

from epcore.api import as_user, open_user_file
from epcore.types import ChildSetup, TrackedUsage
from epcore_docker.cgroups import ContainerCgroup, find_cgroup

#: How long the waiting thread pauses before asking dockerd again after a broken wait.
WAIT_RETRY_SECONDS = 1.0
#: How long after a SIGKILL exit dockerd's "oom" event may still come (whole seconds).
OOM_EVENT_GRACE_SECONDS = 1
#: Errors from dockerd or from the connection to it.
DOCKER_ERRORS = (docker.errors.DockerException, requests.exceptions.RequestException, OSError)

ClientFactory = Callable[[], docker.APIClient]


def machine_oom_kills(vmstat: str = "/proc/vmstat") -> int:
    """The kernel's count of OOM kills since boot (``oom_kill`` in /proc/vmstat, Linux 4.13
    and later); 0 where it cannot be read."""
    try:
        with open(vmstat, encoding="ascii") as lines:
            for line in lines:
                name, _, value = line.partition(" ")
                if name == "oom_kill":
                    return int(value)
    except (OSError, ValueError):
        return 0
    return 0


@attrs.frozen
class Ended:
    """How the container stopped: dockerd's StatusCode and its OOMKilled flag."""

    status_code: int
    oom_killed: bool


class DockerContainer:
    """A started container of one job (see the module docstring); ``new_client`` makes a
    docker API client for a thread of its own."""

    def __init__(
        self,
        container_id: str,
        new_client: ClientFactory,
        log: logging.Logger,
        *,
        stdout: str,
        stderr: str,
        uid: int,
        gid: int,
        oom_kills_before: int | None = None,
    ) -> None:
        self.id = container_id
        self.log = log
        self._new_client = new_client
        self._api = new_client()
        self._stdout = stdout
        self._stderr = stderr
        self._uid = uid
        self._gid = gid
        self._read_fd, self._write_fd = os.pipe2(os.O_CLOEXEC)
        self._ended: Ended | None = None
        self._signalled = False
        self._released = False
        self._last_usage = TrackedUsage()
        self._cgroup: ContainerCgroup | None = None
        self._oom_seen = False
        self._started_at = int(time.time()) - 1  # the job's container started just before
        # Counted before the container started when the runtime could: a job that runs out
        # of memory at once is killed before this object exists.
        self._oom_kills_at_start = (
            machine_oom_kills() if oom_kills_before is None else oom_kills_before
        )
        self._find_cgroup()
        # The threads' clients connect here: while the starter's main thread acts as the
        # job's user (as_user: writing its logs) a connect from any thread is refused.
        self._waiter = threading.Thread(
            target=self._wait, args=(new_client(),), name=f"wait-{self.id[:12]}", daemon=True
        )
        self._waiter.start()

    # -- waiting --------------------------------------------------------------------------

    def _find_cgroup(self) -> None:
        try:
            state = self._api.inspect_container(self.id)["State"]
        except DOCKER_ERRORS:
            return
        pid = int(state.get("Pid") or 0)
        if pid > 0:
            self._cgroup = find_cgroup(pid)

    def _wait(self, api: docker.APIClient) -> None:
        """In the waiting thread: until dockerd says the container stopped (or is gone)."""
        try:
            while True:
                try:
                    answer = api.wait(self.id, timeout=None)
                    code = int(answer.get("StatusCode", -1))
                    oom = self._oom_killed(api, code)
                    self._ended = Ended(code, oom)
                    break
                except docker.errors.NotFound:
                    self._ended = Ended(128 + signal.SIGKILL, False)
                    break
                except DOCKER_ERRORS as error:
                    self.log.warning("waiting for container %s: %s; again", self.id[:12], error)
                    threading.Event().wait(WAIT_RETRY_SECONDS)
        finally:
            api.close()
            with contextlib.suppress(OSError):
                os.write(self._write_fd, b"x")

    def _oom_killed(self, api: docker.APIClient, code: int) -> bool:
        try:
            if api.inspect_container(self.id)["State"].get("OOMKilled"):
                return True
            if self._signalled or self._released or code != 128 + signal.SIGKILL:
                return False
            # A SIGKILL none of ours sent: the container's own memory group counts its OOM
            # kills while runc has not removed it yet, and the kernel's machine-wide count
            # (as the core's starter reads it for its own jobs) rose when dockerd is too late
            # with both its flag and its event, as under heavy load.
            if self._cgroup is not None and self._cgroup.oom_kills() > 0:
                return True
            if machine_oom_kills() > self._oom_kills_at_start:
                return True
            # Under load dockerd may handle the kernel's OOM report after the exit, too late
            # for OOMKilled; its event log still gets an "oom" (waited for up to a second).
            events = api.events(
                since=self._started_at,
                until=int(time.time() + OOM_EVENT_GRACE_SECONDS) + 1,
                filters={"container": self.id, "event": "oom"},
                decode=True,
            )
            return any(True for _ in events)
        except DOCKER_ERRORS:
            return False

    def fileno(self) -> int:
        return self._read_fd

    def exit_status(self) -> tuple[int | None, int | None] | None:
        """``(code, None)`` for an exit, ``(None, signal)`` for a container that a signal of
        ours (or the OOM killer) stopped: dockerd reports both as one number, 128 + signal
        for a signal."""
        ended = self._ended
        if ended is None:
            return None
        code = ended.status_code
        if ended.oom_killed:
            return (None, int(signal.SIGKILL))
        if self._signalled and code > 128:
            return (None, code - 128)
        if code < 0:
            return (None, int(signal.SIGKILL))
        return (code, None)

    # -- tracking -------------------------------------------------------------------------

    def child_setup(self) -> ChildSetup:
        """Nothing: the job's processes are dockerd's children, not the starter's."""
        return ChildSetup()

    def attach(self, pid: int) -> None:
        """Nothing to attach: the container has its own processes."""

    def pids(self) -> frozenset[int]:
        """The container's live processes, from its cgroup (empty once it stopped)."""
        if self._cgroup is None or self._ended is not None:
            return frozenset()
        return self._cgroup.pids()

    def signal_all(self, signum: int) -> None:
        """Send ``signum`` to the container's processes (dockerd's kill)."""
        self._signalled = True
        try:
            self._api.kill(self.id, signal=signum)
        except DOCKER_ERRORS as error:
            self.log.debug("kill of container %s: %s", self.id[:12], error)

    def stop(self, signum: int, grace_seconds: float) -> None:
        """dockerd's stop in a thread of its own: the container's stop signal (the job's
        KillSig, set when it was made), then SIGKILL after ``grace_seconds``."""
        self._signalled = True

        try:
            api = self._new_client()  # connected here, as root (see __init__)
        except DOCKER_ERRORS as error:
            self.log.error("cannot stop container %s: %s", self.id[:12], error)
            return

        def stop() -> None:
            try:
                api.stop(self.id, timeout=max(int(grace_seconds), 0))
            except DOCKER_ERRORS as error:
                self.log.debug("stop of container %s: %s", self.id[:12], error)
            finally:
                api.close()

        threading.Thread(target=stop, name=f"stop-{self.id[:12]}", daemon=True).start()

    def freeze(self) -> bool:
        try:
            self._api.pause(self.id)
        except DOCKER_ERRORS as error:
            self.log.warning("cannot pause container %s: %s", self.id[:12], error)
            return False
        return True

    def thaw(self) -> bool:
        try:
            self._api.unpause(self.id)
        except DOCKER_ERRORS as error:
            self.log.warning("cannot unpause container %s: %s", self.id[:12], error)
            return False
        return True

    def usage(self) -> TrackedUsage:
        """The container's CPU and memory so far (the last numbers read once it stopped)."""
        if self._cgroup is not None and self._ended is None:
            read = self._cgroup.usage()
            if read is not None:
                self._last_usage = read
        return self._last_usage

    def out_of_memory(self) -> bool:
        """True once the kernel killed a process of the container for its memory limit."""
        if self._ended is not None:
            return self._ended.oom_killed or self._oom_seen
        if self._cgroup is not None and self._cgroup.oom_kills() > 0:
            self._oom_seen = True
        return self._oom_seen

    # -- the end --------------------------------------------------------------------------

    def collect_output(self) -> str | None:
        """Write the container's stdout and stderr into the job's files, as the job's user;
        None when both were written, else why one was not."""
        problem = None
        for path, stdout in ((self._stdout, True), (self._stderr, False)):
            if path == "/dev/null":
                continue
            try:
                chunks = self._api.logs(self.id, stdout=stdout, stderr=not stdout, stream=True)
                with as_user(self._uid, self._gid):
                    flags = os.O_WRONLY | os.O_CREAT | os.O_TRUNC | os.O_NOFOLLOW
                    with os.fdopen(open_user_file(path, flags, 0o644), "wb") as handle:
                        for chunk in chunks:
                            handle.write(chunk)
            except DOCKER_ERRORS as error:
                reason = getattr(error, "strerror", None) or str(error)
                problem = problem or f"cannot write the job's {_stream(stdout)} to {path}: {reason}"
                self.log.error("%s", problem)
        return problem

    def release(self) -> None:
        """Remove the container (forced: a container that still runs is killed first)."""
        if self._released:
            return
        self._released = True
        try:
            self._api.remove_container(self.id, v=True, force=True)
            self.log.info("removed container %s", self.id[:12])
        except docker.errors.NotFound:
            pass
        except DOCKER_ERRORS as error:
            self.log.error("cannot remove container %s: %s", self.id[:12], error)
        self._waiter.join(timeout=5.0)
        self._api.close()
        for fd in (self._read_fd, self._write_fd):
            with contextlib.suppress(OSError):
                os.close(fd)


def _stream(stdout: bool) -> str:
    return "stdout" if stdout else "stderr"
