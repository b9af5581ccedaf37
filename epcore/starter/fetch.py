"""The execute side of file transfer: input from the submit host before the job, output after.

A job whose ad carries TransferKey and TransferSocket (the schedd's offer) and whose files
must travel here (:func:`epcore.transfer.plan.wants_transfer` with this host's
FILESYSTEM_DOMAIN) runs in its sandbox: :meth:`RemoteTransfer.fetch` pulls its input
(FILETRANS_UPLOAD) and gives the ad the job runs with (Iwd the sandbox, stdout and stderr
under their sandbox names); :meth:`RemoteTransfer.send_back` pushes the output when it
exits (FILETRANS_DOWNLOAD). Other jobs run in place, as before.

The sandbox is the job's: every file in it is opened as its user, one component at a time
from a descriptor of the sandbox, never through a link (a job that links ``out`` to
``/etc/shadow`` sends nothing). Failures hold the job as HTCondor's shadow words them:
code 13 (TransferInputError) or 12 (TransferOutputError), the errno as the subcode, and
"Transfer input files failure at ... Details: reading from file /x: (errno 2) ...".
A submit side that cannot be reached (its schedd restarting) is tried again, with pauses
doubling to RETRY_PAUSE_MAX, until the job's lease (JobLeaseDuration) has passed, as
HTCondor's starter waits that long for its shadow to come back.
"""

from __future__ import annotations

import errno
import os
import posixpath
import stat
import time
from collections.abc import Callable, Generator, Iterator
from typing import Final

import attrs

from epcore.classad import ClassAd
from epcore.config import Config
from epcore.errors import EpError, JobSetupError
from epcore.jobs.codes import HoldCode
from epcore.net.client import CLIENT_TIMEOUT, connect, start_command
from epcore.net.commands import Command
from epcore.net.conversation import Step, Stream, run_blocking, send
from epcore.net.keyexchange import EcdhClientKeyExchange
from epcore.net.sinful import parse_sinful
from epcore.starter.identity import JobUser
from epcore.starter.outcome import HELD, Ending, output_goes_back
from epcore.starter.privileges import as_user
from epcore.transfer import plan, wire

#: The first pause before the submit side is tried again, and the longest.
RETRY_PAUSE: Final = 1.0
RETRY_PAUSE_MAX: Final = 10.0

_DIRECTORY = os.O_RDONLY | os.O_DIRECTORY | os.O_NOFOLLOW | os.O_CLOEXEC
_READ = os.O_RDONLY | os.O_NONBLOCK | os.O_NOFOLLOW | os.O_NOCTTY | os.O_CLOEXEC
_WRITE = os.O_WRONLY | os.O_CREAT | os.O_TRUNC | os.O_NOFOLLOW | os.O_NONBLOCK | os.O_CLOEXEC


def _walk(sandbox: str, parts: tuple[str, ...]) -> int:
    """A descriptor of the sandbox's directory ``parts``, never through a link."""
    fd = os.open(sandbox, _DIRECTORY)
    for part in parts:
        try:
            following = os.open(part, _DIRECTORY, dir_fd=fd)
        finally:
            os.close(fd)
        fd = following
    return fd


def _parts(name: str) -> tuple[str, ...]:
    try:
        return plan.check_relative(name)
    except plan.TransferPlanError as error:
        raise OSError(errno.EPERM, str(error)) from None


@attrs.frozen
class _SandboxSink:
    """Input arriving into the sandbox, written as the job's user."""

    sandbox: str
    user: JobUser

    def target(self, name: str) -> str:
        return posixpath.join(self.sandbox, name)

    def mkdir(self, name: str, mode: int) -> None:
        parts = _parts(name)
        with as_user(self.user.uid, self.user.gid, self.user.groups):
            parent = _walk(self.sandbox, parts[:-1])
            try:
                os.mkdir(parts[-1], (mode & 0o777) | 0o700, dir_fd=parent)
            except FileExistsError:
                os.close(os.open(parts[-1], _DIRECTORY, dir_fd=parent))
            finally:
                os.close(parent)

    def create(self, name: str, mode: int) -> int:
        parts = _parts(name)
        with as_user(self.user.uid, self.user.gid, self.user.groups):
            parent = _walk(self.sandbox, parts[:-1])
            try:
                fd = os.open(parts[-1], _WRITE, 0o600, dir_fd=parent)
            finally:
                os.close(parent)
        try:
            if not stat.S_ISREG(os.fstat(fd).st_mode):
                raise OSError(errno.EINVAL, "not a regular file")
            os.set_blocking(fd, True)
            os.fchmod(fd, mode & 0o777)
        except BaseException:
            os.close(fd)
            raise
        return fd


def _output_items(sandbox: str, names: tuple[str, ...], user: JobUser) -> Iterator[wire.Outgoing]:
    """The sandbox's outputs ``names`` as items to send (directories walked, links never
    followed nor sent)."""
    ids = (user.uid, user.gid, user.groups)

    def opener(parts: tuple[str, ...]) -> Callable[[], tuple[int, int]]:
        def open_it() -> tuple[int, int]:
            with as_user(*ids):
                parent = _walk(sandbox, parts[:-1])
                try:
                    fd = os.open(parts[-1], _READ, dir_fd=parent)
                finally:
                    os.close(parent)
            info = os.fstat(fd)
            if not stat.S_ISREG(info.st_mode):
                os.close(fd)
                raise OSError(errno.EINVAL, "not a regular file")
            os.set_blocking(fd, True)
            return fd, stat.S_IMODE(info.st_mode)

        return open_it

    for name in names:
        path = posixpath.join(sandbox, name)
        try:
            parts = _parts(name)
            with as_user(*ids):
                parent = _walk(sandbox, parts[:-1])
                try:
                    info = os.stat(parts[-1], dir_fd=parent, follow_symlinks=False)
                finally:
                    os.close(parent)
        except OSError as error:
            raise wire.item_error(wire.Failure.of("reading from", path, error)) from None
        if stat.S_ISLNK(info.st_mode):
            failure = wire.Failure("reading from", path, errno.ELOOP, "it is a symbolic link")
            raise wire.item_error(failure)
        if not stat.S_ISDIR(info.st_mode):
            yield wire.Outgoing(name, path, opener=opener(parts))
            continue
        yield wire.Outgoing(name, path, stat.S_IMODE(info.st_mode), directory=True)
        pending = [parts]
        while pending:
            where = pending.pop()
            try:
                with as_user(*ids):
                    fd = _walk(sandbox, where)
                    try:
                        entries = sorted(
                            (entry, os.stat(entry, dir_fd=fd, follow_symlinks=False))
                            for entry in os.listdir(fd)
                        )
                    finally:
                        os.close(fd)
            except OSError as error:
                failure = wire.Failure.of("reading from", posixpath.join(sandbox, *where), error)
                raise wire.item_error(failure) from None
            for child, child_info in entries:
                inside = (*where, child)
                if stat.S_ISDIR(child_info.st_mode):
                    mode = stat.S_IMODE(child_info.st_mode)
                    yield wire.Outgoing("/".join(inside), "", mode, directory=True)
                    pending.append(inside)
                elif stat.S_ISREG(child_info.st_mode):
                    yield wire.Outgoing(
                        "/".join(inside), posixpath.join(sandbox, *inside), opener=opener(inside)
                    )


def _top_files(sandbox: str) -> dict[str, tuple[int, int]]:
    """The regular files at the top of the sandbox: (size, mtime) by name."""
    found = {}
    with os.scandir(sandbox) as entries:
        for entry in entries:
            if entry.is_file(follow_symlinks=False):
                info = entry.stat(follow_symlinks=False)
                found[entry.name] = (info.st_size, info.st_mtime_ns)
    return found


@attrs.define
class RemoteTransfer:
    """One job's transfers (module docstring); the figures go into its result."""

    job: ClassAd
    host: str
    port: int
    key: str
    config: Config
    slot_name: str
    user: JobUser
    sandbox: str
    clock: Callable[[], float]
    before: dict[str, tuple[int, int]] = attrs.field(factory=dict)
    figures: ClassAd = attrs.field(factory=ClassAd)
    sleep: Callable[[float], None] = time.sleep
    monotonic: Callable[[], float] = time.monotonic

    @property
    def access_point(self) -> str:
        global_id = self.job.evaluate("GlobalJobId")
        if isinstance(global_id, str) and "#" in global_id:
            return global_id.split("#", 1)[0]
        return f"<{self.host}:{self.port}>"

    def _run(
        self,
        command: Command,
        body: Callable[[Stream], Generator[Step, bytes | None, wire.Outcome]],
    ) -> wire.Outcome:
        """``command`` with ``body``; tried again while the submit side cannot be reached
        (or goes away before its first answer after the key) and the job's lease lasts
        (module docstring): the transfer is done again whole, which is safe."""
        lease = self.job.evaluate("JobLeaseDuration")
        number = isinstance(lease, int | float) and not isinstance(lease, bool)
        seconds = float(lease) if isinstance(lease, int | float) and number else 0.0
        deadline = self.monotonic() + max(seconds, 0.0)
        pause = RETRY_PAUSE
        while True:
            begun: list[bool] = []
            try:
                return self._once(command, body, begun)
            except (OSError, EpError):
                if begun or self.monotonic() + pause > deadline:
                    raise
            self.sleep(pause)
            pause = min(pause * 2, RETRY_PAUSE_MAX)

    def _once(
        self,
        command: Command,
        body: Callable[[Stream], Generator[Step, bytes | None, wire.Outcome]],
        begun: list[bool],
    ) -> wire.Outcome:
        sock, stream = connect(self.host, self.port, CLIENT_TIMEOUT)

        def conversation() -> Generator[Step, bytes | None, wire.Outcome]:
            yield from start_command(
                stream,
                command.number,
                self.config,
                key_exchange=EcdhClientKeyExchange(),
                subsystem="STARTER",
            )
            yield from send(stream.writer().put_string(self.key))
            return (yield from _marking(body(stream), begun))

        with sock:
            return run_blocking(sock, stream, conversation())

    def fetch(self) -> ClassAd:
        """Pull the input into the sandbox; the ad the job runs with. JobSetupError (code
        13) naming the file when something could not come."""
        started = self.clock()
        self.figures["TransferInStarted"] = int(started)
        sink = _SandboxSink(self.sandbox, self.user)
        code = int(HoldCode.UPLOAD_FILE_ERROR)
        try:
            outcome = self._run(
                wire.FILETRANS_UPLOAD, lambda stream: wire.receive_files(stream, sink, code)
            )
        except (OSError, EpError) as error:
            raise JobSetupError(
                self._reason("input", True, _unreachable(self, error)), code
            ) from error
        self.figures["TransferInFinished"] = int(self.clock())
        self.figures["BytesRecvd"] = outcome.bytes
        if outcome.failure is not None:
            raise JobSetupError(
                self._reason("input", True, outcome.failure.details()), code, outcome.failure.code
            )
        theirs = _failure_of(outcome.peer)
        if theirs is not None:
            raise JobSetupError(self._reason("input", False, theirs[0]), code, theirs[1])
        self.before = _top_files(self.sandbox)
        return plan.sandbox_ad(self.job, self.sandbox)

    def send_back(self, ending: Ending) -> Ending:
        """Push the output after the job (when it exited, or was evicted and the job asks
        for ON_EXIT_OR_EVICT); the ending, made a hold (code 12) when it could not go."""
        if not output_goes_back(self.job, ending):
            return ending
        self.figures["TransferOutStarted"] = int(self.clock())
        code = int(HoldCode.DOWNLOAD_FILE_ERROR)
        try:
            now = _top_files(self.sandbox)
            changed = [name for name, seen in now.items() if self.before.get(name) != seen]
            names = plan.output_names(self.job, changed)
            outcome = self._run(
                wire.FILETRANS_DOWNLOAD,
                lambda stream: wire.send_files(
                    stream, _output_items(self.sandbox, names, self.user), code
                ),
            )
        except (OSError, EpError) as error:
            return self._held(ending, self._reason("output", True, _unreachable(self, error)), 0)
        self.figures["TransferOutFinished"] = int(self.clock())
        self.figures["BytesSent"] = outcome.bytes
        if outcome.failure is not None:
            reason = self._reason("output", True, outcome.failure.details())
            return self._held(ending, reason, outcome.failure.code)
        theirs = _failure_of(outcome.peer)
        if theirs is not None:
            return self._held(ending, self._reason("output", False, theirs[0]), theirs[1])
        return ending

    def _held(self, ending: Ending, reason: str, subcode: int) -> Ending:
        code = int(HoldCode.DOWNLOAD_FILE_ERROR)
        return Ending(HELD, reason, ending.exit_code, ending.exit_signal, code, subcode)

    def _reason(self, direction: str, here: bool, details: str) -> str:
        """HTCondor's shadow's wording (baseshadow.cpp), ``here`` when this side failed."""
        receiving = direction == "input"
        ep = f"execution point {self.slot_name}"
        if here:
            verb, towards = ("receiving", "from") if receiving else ("sending", "to")
            where = f"{ep} while {verb} files {towards} access point {self.access_point}"
        else:
            verb, towards = ("sending", "to") if receiving else ("receiving", "from")
            where = f"access point {self.access_point} while {verb} files {towards} {ep}"
        return f"Transfer {direction} files failure at {where}. Details: {details}"


def _marking(
    inner: Generator[Step, bytes | None, wire.Outcome], begun: list[bool]
) -> Generator[Step, bytes | None, wire.Outcome]:
    """``inner``'s conversation, ``begun`` marked at the first message the peer sends in it:
    the peer took the key then (what is sent before may sit in a buffer when it goes)."""
    try:
        step = next(inner)
        while True:
            received = yield step
            if received is not None and not begun:
                begun.append(True)
            step = inner.send(received)
    except StopIteration as done:
        outcome: wire.Outcome = done.value
        return outcome


def _failure_of(report: ClassAd) -> tuple[str, int] | None:
    if report.evaluate("Result") == 0:
        return None
    reason = report.evaluate("HoldReason")
    subcode = report.evaluate("HoldReasonSubCode")
    return (
        reason if isinstance(reason, str) else "the peer reported a failure",
        subcode if isinstance(subcode, int) else 0,
    )


def _unreachable(transfer: RemoteTransfer, error: Exception) -> str:
    return (
        f"FileTransfer: Unable to transfer with server <{transfer.host}:{transfer.port}>: {error}"
    )


def remote_transfer(
    job: ClassAd,
    config: Config,
    *,
    slot_name: str,
    user: JobUser,
    sandbox: str,
    clock: Callable[[], float],
) -> RemoteTransfer | None:
    """The job's transfers when its files travel to this host (module docstring); None
    when it runs in place."""
    key, address = job.evaluate("TransferKey"), job.evaluate("TransferSocket")
    if not isinstance(key, str) or not isinstance(address, str):
        return None
    if not plan.travels_here(job, config):
        return None
    sinful = parse_sinful(address)
    return RemoteTransfer(
        job, sinful.host, sinful.port, key, config, slot_name, user, sandbox, clock
    )
