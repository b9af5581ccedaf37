"""The startd's side of its starters: forking them, their connections, and taking them back.

A starter is forked from the startd's fork server (its zygote, :mod:`epcore.startd.zygote`:
no new interpreter, since activation to the job's first instruction must take milliseconds,
and no fork of the startd itself), puts itself in a session of its own, and connects back to
the startd's starter socket (``$(LOCK)/startd_starters``, mode 0600). Because the starter is
the client, a startd that restarts simply listens again: the starters that outlived the old
one reconnect within a second, and their Hello names the claim they run, so the new startd
*adopts* them. The zygote reaps the starters it forked and reports their ends; an adopted
one (or one whose zygote died) is watched through its PID. A new starter runs nothing until
the startd has written it down in its claims file: a startd killed in between leaves no job
running that its successor cannot find.
"""

from __future__ import annotations

import contextlib
import logging
import os
import socket
from collections.abc import Callable, Iterator

import attrs
import psutil

from epcore.classad import ClassAd
from epcore.runtime import framing
from epcore.runtime.control import listen
from epcore.starter import protocol
from epcore.starter.starter import StarterOrder


@attrs.define(eq=False)
class StarterHandle:
    """One starter the startd knows: the claim it runs, its process and its connection."""

    claim_id: str
    slot: str
    pid: int
    #: The fork server that forked it and reports its end; None: watched by its PID (a
    #: starter adopted after a restart, or one whose fork server died).
    parent: int | None
    channel: framing.Channel | None = None
    stage: str = "setup"
    usage: ClassAd = attrs.field(factory=ClassAd)
    job_start: float | None = None
    gone: bool = False
    #: Commands sent before the starter connected (just forked, or reconnecting after a
    #: startd restart), delivered when it says Hello.
    waiting: list[ClassAd] = attrs.field(factory=list)
    #: The starter's exit code, once its fork server reported it (None: not known, a
    #: starter watched by its PID or killed by a signal).
    exit_code: int | None = None
    #: True once the starter reported what its job left (protocol.BROKEN).
    broke: bool = False
    #: The starter runs the claim's next jobs (:mod:`epcore.startd.kept_starters`): it says
    #: READY after its ACK and waits (stage "ready") for NEXT or RETIRE ("retired").
    keeps: bool = False
    #: The order of the job it runs or ran last (None: an adopted starter).
    order: StarterOrder | None = None
    #: The groups it made for the claim's next job, as READY named them.
    next_key: str | None = None
    #: A next job activated before the starter said READY, sent when it does.
    pending: StarterOrder | None = None


#: What the startd writes on a new starter's pipe once the starter is recorded.
GO = b"g"


def wait_for_go(go_read: int) -> bool:
    """In a new starter: wait until the startd has recorded it (False: the startd went away
    first, and the starter must not run anything). Closes ``go_read``."""
    try:
        return os.read(go_read, 1) == GO
    finally:
        os.close(go_read)


def _alive(pid: int) -> bool:
    try:
        return psutil.Process(pid).status() != psutil.STATUS_ZOMBIE
    except psutil.Error:
        return False


class StarterPool:
    """Every starter of one startd, by ClaimId, and the socket they connect to."""

    def __init__(self, socket_path: str, log: logging.Logger) -> None:
        self.socket_path = socket_path
        self.log = log
        self.handles: dict[str, StarterHandle] = {}
        #: Starters replaced by a newer one on the same claim before they were reaped.
        self.retiring: list[StarterHandle] = []
        self.unknown: list[framing.Channel] = []
        self.server: socket.socket | None = None
        #: Starters their fork server reported gone, not yet seen by :meth:`exited`.
        self._ended: set[int] = set()

    # -- the socket -------------------------------------------------------------------------

    def listen(self) -> socket.socket:
        """Listen on the starter socket, mode 0600 (as the control socket)."""
        self.server = listen(self.socket_path, backlog=128)
        return self.server

    def accept(self) -> list[framing.Channel]:
        """Accept waiting connections; they are unknown until their Hello."""
        accepted = []
        assert self.server is not None
        while True:
            try:
                sock, _ = self.server.accept()
            except BlockingIOError:
                break
            channel = framing.Channel(sock, protocol.STARTER_COMMANDS)
            self.unknown.append(channel)
            accepted.append(channel)
        return accepted

    def introduce(self, channel: framing.Channel, hello: ClassAd) -> StarterHandle | None:
        """Bind a new connection to the starter its Hello names (None: an unknown claim)."""
        if channel in self.unknown:
            self.unknown.remove(channel)
        claim_id = hello.evaluate("ClaimId")
        handle = self.handles.get(claim_id) if isinstance(claim_id, str) else None
        if handle is None:
            self.log.warning("a starter said Hello for unknown claim %s", str(claim_id)[:40])
            return None
        if handle.channel is not None and handle.channel is not channel:
            handle.channel.close()
        handle.channel = channel
        self.log.info("%s: starter %d connected", handle.slot, handle.pid)
        for command in handle.waiting:
            channel.send(command)
        handle.waiting.clear()
        stage = hello.evaluate("StarterStage")
        handle.stage = stage if isinstance(stage, str) else handle.stage
        start = hello.evaluate("JobStartDate")
        if isinstance(start, int | float) and not isinstance(start, bool):
            handle.job_start = float(start)
        return handle

    def messages(self, channel: framing.Channel) -> Iterator[ClassAd]:
        """The messages waiting on ``channel`` (a broken one is logged and closed)."""
        try:
            yield from channel.receive()
        except framing.ProtocolError as error:
            self.log.error("bad message from a starter: %s", error)
            channel.close()

    def send(self, claim_id: str, command: str, payload: ClassAd | None = None) -> bool:
        """Send to the starter of ``claim_id``, or keep the command until it connects; False
        when there is no such starter."""
        handle = self.handles.get(claim_id)
        if handle is None or handle.gone:
            return False
        ad = framing.message(command, payload)
        if handle.channel is None or handle.channel.closed:
            handle.waiting.append(ad)
        else:
            handle.channel.send(ad)
        return True

    # -- processes --------------------------------------------------------------------------

    def spawn(
        self,
        claim_id: str,
        slot: str,
        start: Callable[[int], int],
        parent: int,
        record: Callable[[StarterHandle], None] = lambda handle: None,
    ) -> StarterHandle:
        """Start a starter: ``start`` has it forked (by the fork server whose PID is
        ``parent``, which reports its end) with the read end of a pipe, and returns its PID;
        the starter runs nothing until ``record`` (called here with it) has returned and the
        startd has written :data:`GO` on that pipe (:func:`wait_for_go`).

        A startd killed between the fork and its record closes the pipe without a word, and
        the starter exits without running anything, so that no job runs that a restarted
        startd cannot know of. When ``record`` raises, the starter is ended the same way and
        the error goes to the caller.
        """
        go_read, go_write = os.pipe()
        os.set_inheritable(go_write, False)
        try:
            pid = start(go_read)
        except BaseException:
            os.close(go_write)
            raise
        finally:
            os.close(go_read)
        handle = StarterHandle(claim_id, slot, pid, parent=parent)
        try:
            record(handle)
        except BaseException:
            os.close(go_write)
            raise
        # A starter that died already is reported and handled as any other.
        with contextlib.suppress(OSError):
            os.write(go_write, GO)
        os.close(go_write)
        self._replace(handle)
        return handle

    def _replace(self, handle: StarterHandle) -> None:
        old = self.handles.get(handle.claim_id)
        if old is not None and not old.gone:
            self.retiring.append(old)
        self.handles[handle.claim_id] = handle

    def adopt(self, claim_id: str, slot: str, pid: int) -> StarterHandle:
        """Take back a starter that outlived the previous startd."""
        handle = StarterHandle(claim_id, slot, pid, parent=None, stage="running")
        self._replace(handle)
        return handle

    def child_exited(self, pid: int, status: int | None = None) -> None:
        """Its fork server reports that the starter ``pid`` has exited (with wait status
        ``status``)."""
        for handle in self._all():
            if handle.pid == pid and handle.parent is not None:
                self._ended.add(pid)
                if status is not None and os.WIFEXITED(status):
                    handle.exit_code = os.WEXITSTATUS(status)

    def orphan(self, parent: int) -> None:
        """The fork server ``parent`` is gone: its starters are watched by their PID now."""
        for handle in self._all():
            if handle.parent == parent:
                handle.parent = None

    def _all(self) -> Iterator[StarterHandle]:
        yield from self.handles.values()
        yield from self.retiring

    def exited(self) -> list[StarterHandle]:
        """Starters whose process is gone since the last call."""
        gone = []
        for old in list(self.retiring):
            if self._done(old):
                self.retiring.remove(old)
        for handle in self.handles.values():
            if handle.gone:
                continue
            if self._done(handle):
                handle.gone = True
                gone.append(handle)
        return gone

    def _done(self, handle: StarterHandle) -> bool:
        """True once the starter's process is gone: as its fork server reported, or (an
        adopted or orphaned starter) as its PID shows."""
        if handle.parent is not None:
            if handle.pid in self._ended:
                self._ended.discard(handle.pid)
                return True
            return False
        return not _alive(handle.pid)

    def kill(self, claim_id: str) -> None:
        """SIGKILL every process below the starter of ``claim_id``, then the starter (a job
        started from a supervisor the startd prepared is not below it: the startd reclaims
        that job's cgroups when it sees the starter gone)."""
        handle = self.handles.get(claim_id)
        if handle is None or handle.gone:
            return
        try:
            starter = psutil.Process(handle.pid)
            children = starter.children(recursive=True)
        except psutil.Error:
            return
        for child in children:
            with contextlib.suppress(psutil.Error):
                child.kill()
        with contextlib.suppress(psutil.Error):
            starter.kill()

    def forget(self, claim_id: str) -> None:
        handle = self.handles.pop(claim_id, None)
        if handle is not None and handle.channel is not None:
            handle.channel.close()

    def channels(self) -> list[framing.Channel]:
        """Every open connection (known starters and those yet to say Hello)."""
        known = [h.channel for h in self.handles.values() if h.channel and not h.channel.closed]
        return known + [c for c in self.unknown if not c.closed]
