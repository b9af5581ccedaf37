"""The submit side of file transfer: the keys the schedd hands out and the files it serves.

At activation (:meth:`TransferKeys.offer`) a job whose files may travel (ShouldTransferFiles
not NO) gets a fresh random ``TransferKey`` and the schedd's CEDAR address as
``TransferSocket`` in the ad the starter receives; the schedd keeps the key with the job's
ad as the queue had it. The starter decides whether to transfer (it alone knows its
FILESYSTEM_DOMAIN) and, if so, connects: FILETRANS_UPLOAD sends it the job's input,
FILETRANS_DOWNLOAD takes its output (:mod:`epcore.transfer.wire`). The key is the authority:
whoever holds it acts on that one job's files, and only as the job's owner.

Every path is the schedd's own reading of the queue's ad (never a path the execute host
sends): the input the ad names, the output the ad's Iwd, Out, Err, TransferOutput and
TransferOutputRemaps account for (:func:`epcore.transfer.plan.output_target`). Files are
opened, listed and made with the owner's file-system identity (:mod:`epcore.transfer.userfs`),
so a link or directory in the Iwd reaches only what the owner may reach, and what is made
belongs to the owner. A hostile execute host can write only files the ad lets it name,
only inside the Iwd (or the Out/Err paths the owner chose), at most MaxTransferOutputMB.
"""

from __future__ import annotations

import logging
import os
import posixpath
import pwd
import secrets
import time
from collections.abc import Callable, Generator, Iterator

import attrs

from epcore.classad import ClassAd
from epcore.errors import EpError
from epcore.jobs.codes import HoldCode
from epcore.net.commands import Command
from epcore.net.conversation import Refused, Step, send
from epcore.net.dispatch import CommandContext, Handler
from epcore.transfer import plan, userfs, wire

#: The most keys kept (jobs whose transfers may still come); the oldest go first.
MAX_KEYS = 100_000


@attrs.frozen
class _Offer:
    """A key's job: its id, its ad as activated, the owner's identity."""

    job_id: str
    job: ClassAd
    uid: int
    gid: int
    groups: tuple[int, ...]


def _identity(job: ClassAd) -> tuple[int, int, tuple[int, ...]] | None:
    owner = job.evaluate("Owner")
    if not isinstance(owner, str):
        return None
    try:
        entry = pwd.getpwnam(owner)
    except KeyError:
        return None
    return entry.pw_uid, entry.pw_gid, tuple(os.getgrouplist(owner, entry.pw_gid))


class TransferKeys:
    """The keys handed out and the FILETRANS handlers (module docstring)."""

    def __init__(
        self,
        address: Callable[[], str | None],
        *,
        host_name: str,
        log: logging.Logger,
        clock: Callable[[], float] = time.time,
    ) -> None:
        self.address = address
        self.host_name = host_name
        self.log = log
        self.clock = clock
        self.offers: dict[str, _Offer] = {}
        self.by_job: dict[str, str] = {}

    def offer(self, job_id: str, job: ClassAd) -> ClassAd | None:
        """``job`` with TransferKey and TransferSocket when its files may travel and the
        schedd listens for them; else None (the job runs in place)."""
        should = job.evaluate("ShouldTransferFiles")
        address = self.address()
        if not isinstance(should, str) or should.upper() == "NO" or address is None:
            return None
        identity = _identity(job)
        if identity is None:
            return None
        self.forget(job_id)
        key = secrets.token_hex(16)
        self.offers[key] = _Offer(job_id, job.copy(), *identity)
        self.by_job[job_id] = key
        while len(self.offers) > MAX_KEYS:
            oldest = next(iter(self.offers))
            self.by_job.pop(self.offers.pop(oldest).job_id, None)
        offered = job.copy()
        offered["TransferKey"] = key
        offered["TransferSocket"] = address
        return offered

    def restore(self, job_id: str, job: ClassAd, key: str) -> bool:
        """Take ``key`` again for ``job`` (the queue's ad), as a previous process of this
        schedd offered it to the job's starter (a reconnect after a restart): the starter
        sends the output with it. False when the job's owner is unknown here."""
        identity = _identity(job)
        if identity is None:
            return False
        self.forget(job_id)
        self.offers[key] = _Offer(job_id, job.copy(), *identity)
        self.by_job[job_id] = key
        return True

    def forget(self, job_id: str) -> None:
        """The job ended: its key is good no more."""
        key = self.by_job.pop(job_id, None)
        if key is not None:
            self.offers.pop(key, None)

    def handlers(self) -> dict[Command, Handler]:
        return {wire.FILETRANS_UPLOAD: self._upload, wire.FILETRANS_DOWNLOAD: self._download}

    def _offer_of(self, context: CommandContext) -> Generator[Step, bytes | None, _Offer]:
        reader = yield from context.receive("the transfer key")
        key = reader.get_string("the transfer key")
        offer = self.offers.get(key)
        if offer is None:
            # HTCondor answers 0 (and waits, against guessing); the listener never blocks.
            yield from send(context.stream.writer().put_int(0))
            raise Refused(f"a transfer key nobody was given, from {context.peer.name}")
        return offer

    def _upload(self, context: CommandContext) -> Generator[Step, bytes | None, bool | None]:
        """FILETRANS_UPLOAD: send the job's input to the starter."""
        offer = yield from self._offer_of(context)
        limit = plan.max_megabytes(offer.job, "MaxTransferInputMB", -1)
        outcome = yield from wire.send_files(
            context.stream,
            _input_items(offer),
            int(HoldCode.UPLOAD_FILE_ERROR),
            limit=None if limit is None else limit * 1024 * 1024,
        )
        self._log("input of", offer, outcome)
        return None

    def _download(self, context: CommandContext) -> Generator[Step, bytes | None, bool | None]:
        """FILETRANS_DOWNLOAD: take the job's output from the starter into its Iwd."""
        offer = yield from self._offer_of(context)
        try:
            remaps = plan.parse_remaps(_text(offer.job, "TransferOutputRemaps"))
        except plan.TransferPlanError as error:
            remaps = ()
            self.log.warning("job %s: %s", offer.job_id, error)
        limit = plan.max_megabytes(offer.job, "MaxTransferOutputMB", -1)
        outcome = yield from wire.receive_files(
            context.stream,
            _IwdSink(offer, remaps),
            int(HoldCode.DOWNLOAD_FILE_ERROR),
            limit=None if limit is None else limit * 1024 * 1024,
        )
        self._log("output of", offer, outcome)
        return None

    def _log(self, what: str, offer: _Offer, outcome: wire.Outcome) -> None:
        if outcome.failure is not None:
            self.log.warning(
                "file transfer: %s job %s failed: %s", what, offer.job_id, outcome.failure.details()
            )
        else:
            self.log.info("file transfer: %s job %s: %d bytes", what, offer.job_id, outcome.bytes)


def _text(job: ClassAd, attribute: str) -> str | None:
    value = job.evaluate(attribute)
    return value if isinstance(value, str) else None


def _input_items(offer: _Offer) -> Iterator[wire.Outgoing]:
    """The job's input as items to send: files, and directories walked (the owner's
    listings; a link to a directory is not followed, as HTCondor's transfer)."""
    ids = (offer.uid, offer.gid, offer.groups)
    for entry in plan.input_files(offer.job):
        try:
            is_dir, mode = userfs.is_directory(entry.source, *ids)
        except OSError as error:
            raise wire.item_error(wire.Failure.of("reading from", entry.source, error)) from None
        if not is_dir:
            yield _file_item(entry.name, entry.source, ids, executable=entry.is_executable)
            continue
        if entry.name:
            yield wire.Outgoing(entry.name, entry.source, mode, directory=True)
        pending = [(entry.source, entry.name)]
        while pending:
            directory, name = pending.pop()
            try:
                listing = userfs.list_directory(directory, *ids)
            except OSError as error:
                raise wire.item_error(wire.Failure.of("reading from", directory, error)) from None
            for child, child_is_dir, child_is_file in listing:
                path = posixpath.join(directory, child)
                inside = posixpath.join(name, child) if name else child
                if child_is_dir:
                    yield wire.Outgoing(inside, path, 0o755, directory=True)
                    pending.append((path, inside))
                elif child_is_file:
                    yield _file_item(inside, path, ids)


def _file_item(
    name: str, path: str, ids: tuple[int, int, tuple[int, ...]], *, executable: bool = False
) -> wire.Outgoing:
    def opener() -> tuple[int, int]:
        fd, mode = userfs.open_regular(path, *ids)
        return fd, (mode | 0o700) if executable else mode

    return wire.Outgoing(name, path, opener=opener)


@attrs.frozen
class _IwdSink:
    """Where returned output goes: the target the queue's ad gives each name."""

    offer: _Offer
    remaps: tuple[plan.Remap, ...]

    def target(self, name: str) -> str:
        try:
            return plan.output_target(self.offer.job, name, self.remaps)
        except EpError:
            return name

    def _checked(self, name: str) -> str:
        try:
            return plan.output_target(self.offer.job, name, self.remaps)
        except plan.TransferPlanError as error:
            raise OSError(1, str(error), name) from None

    def mkdir(self, name: str, mode: int) -> None:
        offer = self.offer
        userfs.make_directory(self._checked(name), mode, offer.uid, offer.gid, offer.groups)

    def create(self, name: str, mode: int) -> int:
        offer = self.offer
        return userfs.create_file(self._checked(name), mode, offer.uid, offer.gid, offer.groups)
