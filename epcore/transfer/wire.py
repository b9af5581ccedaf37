"""The file-transfer conversations of HTCondor's FILETRANS_UPLOAD and FILETRANS_DOWNLOAD.

As in HTCondor (file_transfer.cpp), the execute side is the client: it connects to the
job's TransferSocket, starts FILETRANS_UPLOAD (61000: "server, upload the input to me") or
FILETRANS_DOWNLOAD (61001: "server, download the output from me") at the WRITE level and
sends the job's TransferKey (put as a secret). A key the server does not hold is answered
with the integer 0, and the connection ends. Then the sending side sends one message per
item, each opening with HTCondor's transfer command number:

- ``1`` (XferFile): the name relative to the sandbox, the permission bits, the size, then
  the contents in messages of at most :data:`CHUNK` bytes (each an integer length and the
  bytes);
- ``6`` (Mkdir): the name and the permission bits;
- ``0`` (Finished): then the sender's report ad.

The receiver answers with its own report ad. A report holds ``Result`` (0 on success),
``HoldReasonCode``, ``HoldReasonSubCode`` (the errno), ``HoldReason`` (what failed, naming
the file, HTCondor's "reading from file /x: (errno 2) No such file or directory") and
``Bytes`` (the bytes of file contents it moved). A receiver that cannot write a file reads
and drops the rest of it and goes on to the end, so the report names the first failure.

Where epcore differs: the file contents travel in length-prefixed CEDAR messages rather
than put_file's raw block; the receiver acknowledges every :data:`WINDOW` bytes (an integer
message) so a sender served by the non-blocking listener never queues more than that in
memory; no transfer queue (the go-ahead exchange), URL plugins, checksums or encryption
switch commands (a whole session is sealed with AES-GCM when the security policy says so).
"""

from __future__ import annotations

import errno
import os
from collections.abc import Callable, Generator, Iterator
from typing import Final, Protocol

import attrs

from epcore.classad import ClassAd
from epcore.net.commands import Command
from epcore.net.conversation import Refused, Step, Stream, receive, send

FILETRANS_UPLOAD: Final = Command(61000, "FILETRANS_UPLOAD", "WRITE")
FILETRANS_DOWNLOAD: Final = Command(61001, "FILETRANS_DOWNLOAD", "WRITE")
#: HTCondor's TransferCommand numbers.
FINISHED: Final = 0
XFER_FILE: Final = 1
MKDIR: Final = 6
#: The most file bytes in one message.
CHUNK: Final = 256 * 1024
#: Bytes after which the sender waits for the receiver's acknowledgement.
WINDOW: Final = 4 * 1024 * 1024


@attrs.frozen
class Failure:
    """The first thing that went wrong: ``action`` ("reading from", "writing to") the file
    ``path``, with its errno; or a refusal of the plan (``code`` 0)."""

    action: str
    path: str
    code: int
    message: str

    @classmethod
    def of(cls, action: str, path: str, error: OSError) -> Failure:
        code = error.errno or errno.EIO
        return cls(action, path, code, error.strerror or os.strerror(code))

    def details(self) -> str:
        return f"{self.action} file {self.path}: (errno {self.code}) {self.message}"


@attrs.frozen
class Outgoing:
    """One item to send: a directory (``directory``) or a file ``open`` gives (descriptor,
    permission bits; OSError when it cannot), under ``name``; ``path`` names it in errors."""

    name: str
    path: str
    mode: int = 0o755
    directory: bool = False
    opener: Callable[[], tuple[int, int]] | None = None


class Sink(Protocol):
    """Where received items go; each method raises OSError (or an EpError refusing the
    name) and says what path it meant, for the report."""

    def target(self, name: str) -> str: ...

    def mkdir(self, name: str, mode: int) -> None: ...

    def create(self, name: str, mode: int) -> int: ...


@attrs.frozen
class Outcome:
    """How a transfer went: the bytes moved and the first failure (None when none)."""

    bytes: int
    failure: Failure | None = None
    peer: ClassAd = attrs.field(factory=ClassAd)


def report_ad(outcome_bytes: int, failure: Failure | None, hold_code: int) -> ClassAd:
    """The report a side sends at the end (module docstring)."""
    ad = ClassAd()
    ad["Result"] = 0 if failure is None else 1
    ad["Bytes"] = outcome_bytes
    if failure is not None:
        ad["HoldReasonCode"] = hold_code
        ad["HoldReasonSubCode"] = failure.code
        ad["HoldReason"] = failure.details()
    return ad


def _write_all(fd: int, data: bytes) -> None:
    view = memoryview(data)
    while view:
        view = view[os.write(fd, view) :]


def send_files(
    stream: Stream,
    items: Iterator[Outgoing],
    hold_code: int,
    *,
    limit: int | None = None,
) -> Generator[Step, bytes | None, Outcome]:
    """Send ``items`` (produced lazily: making the next may raise OSError, reported as a
    failure to read it), then Finished and our report; the outcome with the receiver's
    report. Stops at the first failure (or past ``limit`` bytes) and reports it."""
    sent = 0
    unacked = 0
    failure: Failure | None = None
    while failure is None:
        try:
            item = next(items)
        except StopIteration:
            break
        except _ItemError as error:
            failure = error.failure
            break
        if item.directory:
            yield from send(stream.writer().put_int(MKDIR).put_string(item.name).put_int(item.mode))
            continue
        assert item.opener is not None
        try:
            fd, mode = item.opener()
        except OSError as error:
            failure = Failure.of("reading from", item.path, error)
            break
        with os.fdopen(fd, "rb") as source:
            size = os.fstat(source.fileno()).st_size
            if limit is not None and sent + size > limit:
                failure = Failure("sending", item.path, errno.EFBIG, "over the transfer limit")
                break
            header = stream.writer().put_int(XFER_FILE).put_string(item.name)
            yield from send(header.put_int(mode).put_int(size))
            left = size
            while left > 0:
                data = source.read(min(CHUNK, left))
                if not data:
                    # The file shrank while sent: pad, so the stream stays in step, and fail.
                    data = bytes(min(CHUNK, left))
                    failure = Failure("reading from", item.path, errno.EIO, "file shrank")
                yield from send(stream.writer().put_int(len(data)).put_bytes(data))
                left -= len(data)
                sent += len(data)
                unacked += len(data)
                if unacked >= WINDOW:
                    reader = yield from receive(stream, "the receiver's acknowledgement")
                    reader.get_int("acknowledged bytes")
                    unacked = 0
    yield from send(stream.writer().put_int(FINISHED))
    yield from send(stream.writer().put_classad(report_ad(sent, failure, hold_code)))
    reader = yield from receive(stream, "the receiver's report")
    return Outcome(sent, failure, reader.get_classad("the receiver's report", literals_only=True))


class _ItemError(Exception):
    """Raised by an item producer that could not list what it sends."""

    def __init__(self, failure: Failure) -> None:
        super().__init__(failure.details())
        self.failure = failure


def item_error(failure: Failure) -> Exception:
    """What an item producer raises when it cannot go on (``failure`` says why)."""
    return _ItemError(failure)


def receive_files(
    stream: Stream,
    sink: Sink,
    hold_code: int,
    *,
    limit: int | None = None,
) -> Generator[Step, bytes | None, Outcome]:
    """Receive items into ``sink`` until Finished, read the sender's report, send ours;
    the outcome (the first failure of either side) with the sender's report."""
    received = 0
    unacked = 0
    failure: Failure | None = None
    while True:
        reader = yield from receive(stream, "the next transfer command")
        command = reader.get_int32("the transfer command")
        if command == FINISHED:
            break
        name = reader.get_string("the file's name")
        mode = reader.get_int32("the file's permissions")
        if command == MKDIR:
            if failure is None:
                try:
                    sink.mkdir(name, mode)
                except OSError as error:
                    failure = Failure.of("writing to", sink.target(name), error)
            continue
        if command != XFER_FILE:
            raise Refused(f"transfer command {command} is not one epcore knows")
        size = reader.get_int("the file's size")
        if size < 0:
            raise Refused(f"{name}: negative size {size}")
        fd = None
        if failure is None:
            if limit is not None and received + size > limit:
                failure = Failure("writing to", sink.target(name), errno.EFBIG, "over the limit")
            else:
                try:
                    fd = sink.create(name, mode)
                except OSError as error:
                    failure = Failure.of("writing to", sink.target(name), error)
        try:
            left = size
            while left > 0:
                reader = yield from receive(stream, f"the contents of {name}")
                length = reader.get_int("the chunk's length")
                if not 0 < length <= min(CHUNK, left):
                    raise Refused(f"{name}: a chunk of {length} bytes, {left} left")
                data = reader.get_bytes(length, "the file's bytes")
                left -= length
                received += length
                unacked += length
                if fd is not None:
                    try:
                        _write_all(fd, data)
                    except OSError as error:
                        failure = Failure.of("writing to", sink.target(name), error)
                        os.close(fd)
                        fd = None
                if unacked >= WINDOW:
                    yield from send(stream.writer().put_int(unacked))
                    unacked = 0
        finally:
            if fd is not None:
                os.close(fd)
    reader = yield from receive(stream, "the sender's report")
    theirs = reader.get_classad("the sender's report", literals_only=True)
    yield from send(stream.writer().put_classad(report_ad(received, failure, hold_code)))
    return Outcome(received, failure, theirs)
