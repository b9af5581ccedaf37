"""What the startd keeps on disk: the claims of running jobs, and the history of finished ones.

Both files hold one ClassAd per line in new syntax, so an admin can read them (and ``ep eval``
them), and are mode 0600, as every file a daemon keeps its state in: they hold other users'
job ads and the claim ids. The claims file (``$(SPOOL)/startd_claims``) is a journal with a
line for every starter, written before that starter may run anything, and one for every
claim whose job ended: a startd that restarts (even after ``kill -9``) reads it to take its
running jobs back (:mod:`epcore.state.restore`) and to clean up after every starter it may
have forked. The history file
(``$(SPOOL)/startd_history``) gets one line appended, and flushed to disk, per job that left
a slot, with how it ended; an embedding scheduler or the pool's job queue reads results from it
or from the ``ep_job_finished`` notification.
"""

from __future__ import annotations

import errno
import math
import os
import stat
from collections.abc import Collection, Iterator, Sequence

import attrs

from epcore.classad import ClassAd, ClassAdSyntaxError, parse_ad
from epcore.errors import DaemonError
from epcore.state.restore import SavedClaim


def _number(ad: ClassAd, name: str, where: str) -> float:
    value = ad.evaluate(name)
    if isinstance(value, bool) or not isinstance(value, int | float):
        raise DaemonError(f"{where}: attribute {name} must be a number, not {value!r}")
    if not math.isfinite(value):
        raise DaemonError(f"{where}: attribute {name} must be a finite number, not {value!r}")
    return float(value)


def _integer(ad: ClassAd, name: str, where: str) -> int:
    value = _number(ad, name, where)
    if not math.isfinite(value) or value != int(value):
        raise DaemonError(f"{where}: attribute {name} must be a whole number, not {value!r}")
    return int(value)


def _text(ad: ClassAd, name: str, where: str) -> str:
    value = ad.evaluate(name)
    if not isinstance(value, str):
        raise DaemonError(f"{where}: attribute {name} must be a string, not {value!r}")
    return value


@attrs.frozen
class SavedStarter:
    """A claims-file line: the claim, and the starter running its job (its PID and the time
    the process started, which tells it from a later process given the same PID; None when
    the line does not say)."""

    claim: SavedClaim
    pid: int
    started: float | None = None
    tracking_key: str = ""
    sandbox: str = ""


def saved_claim_ad(
    saved: SavedClaim,
    starter_pid: int,
    started: float | None = None,
    *,
    tracking_key: str = "",
    sandbox: str = "",
) -> ClassAd:
    """The claims-file line for ``saved``, with the starter running its job: its PID, the
    time that process started, the key its job is tracked under and its sandbox (so that what
    a dead starter left can be cleaned up)."""
    ad = ClassAd()
    ad["SlotId"] = saved.slot_id
    ad["Partitionable"] = saved.partitionable
    ad["ClaimId"] = saved.claim_id
    ad["Job"] = saved.job
    ad["Rank"] = saved.rank
    ad["MadeAt"] = saved.made_at
    ad["Lease"] = saved.lease
    ad["ClientMachine"] = saved.client_machine
    ad["JobStart"] = saved.job_start
    ad["RunTime"] = saved.run_time
    ad["SuspendTime"] = saved.suspend_time
    ad["StarterPid"] = starter_pid
    if started is not None:
        ad["StarterStarted"] = started
    if tracking_key:
        ad["TrackingKey"] = tracking_key
    if sandbox:
        ad["Sandbox"] = sandbox
    return ad


def _saved_claim(ad: ClassAd, where: str) -> SavedStarter:
    job = ad.evaluate("Job")
    if not isinstance(job, ClassAd):
        raise DaemonError(f"{where}: attribute Job must be a ClassAd")
    partitionable = ad.evaluate("Partitionable")
    saved = SavedClaim(
        slot_id=_integer(ad, "SlotId", where),
        partitionable=partitionable is True,
        claim_id=_text(ad, "ClaimId", where),
        job=job,
        rank=_number(ad, "Rank", where),
        made_at=_number(ad, "MadeAt", where),
        lease=_integer(ad, "Lease", where),
        client_machine=_text(ad, "ClientMachine", where),
        job_start=_number(ad, "JobStart", where),
        run_time=_number(ad, "RunTime", where),
        suspend_time=_number(ad, "SuspendTime", where),
    )
    started = _number(ad, "StarterStarted", where) if "StarterStarted" in ad else None
    key = _text(ad, "TrackingKey", where) if "TrackingKey" in ad else ""
    sandbox = _text(ad, "Sandbox", where) if "Sandbox" in ad else ""
    return SavedStarter(saved, _integer(ad, "StarterPid", where), started, key, sandbox)


#: The mode of every file a daemon keeps its state in: they hold other users' job ads
#: (environments, arguments) and the claim ids, which act as capabilities.
PRIVATE_FILE_MODE = 0o600


def open_private(path: str, flags: int) -> int:
    """A descriptor of ``path`` opened with ``flags`` (os.O_WRONLY | ...), created mode 0600 and
    made 0600 when it existed with a wider mode; never through a symbolic link."""
    descriptor = os.open(path, flags | os.O_CREAT | os.O_NOFOLLOW | os.O_CLOEXEC, PRIVATE_FILE_MODE)
    try:
        if os.fstat(descriptor).st_mode & 0o777 != PRIVATE_FILE_MODE:
            os.fchmod(descriptor, PRIVATE_FILE_MODE)
    except OSError:
        os.close(descriptor)
        raise
    return descriptor


def _write_all(descriptor: int, data: bytes) -> None:
    """Write all of ``data`` to ``descriptor`` (os.write may take only part of it)."""
    view = memoryview(data)
    while view:
        view = view[os.write(descriptor, view) :]


def append_private(path: str, data: bytes) -> None:
    """Append ``data`` to ``path`` (mode 0600) in one write, so that a process killed meanwhile
    leaves the whole of it or none of it (a cut-off line only when the disk fills)."""
    descriptor = open_private(path, os.O_WRONLY | os.O_APPEND)
    try:
        _write_all(descriptor, data)
    finally:
        os.close(descriptor)


def replace_private(path: str, data: bytes) -> None:
    """Replace ``path`` with ``data`` (mode 0600) atomically: a crash leaves the old or the
    new file."""
    temporary = f"{path}.tmp"
    descriptor = open_private(temporary, os.O_WRONLY | os.O_TRUNC)
    try:
        _write_all(descriptor, data)
    finally:
        os.close(descriptor)
    os.replace(temporary, path)


def make_private(path: str, *, directory: int | None = None) -> bool:
    """Make the regular file ``path`` (relative to the open ``directory`` when given) mode
    0600 when it is wider and owned by this process's user; never through a symbolic link,
    and without blocking on a FIFO. True when its mode was changed; OSError when it cannot be."""
    try:
        descriptor = os.open(
            path,
            os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK | os.O_CLOEXEC,
            dir_fd=directory,
        )
    except FileNotFoundError:
        return False
    except OSError as error:
        if error.errno in (errno.ELOOP, errno.ENXIO):
            return False  # a symbolic link, or a socket (the pool's socket stays reachable)
        raise
    try:
        info = os.fstat(descriptor)
        wide = info.st_mode & 0o777 & ~PRIVATE_FILE_MODE
        if not stat.S_ISREG(info.st_mode) or info.st_uid != os.geteuid() or not wide:
            return False
        os.fchmod(descriptor, info.st_mode & PRIVATE_FILE_MODE)
        return True
    finally:
        os.close(descriptor)


def make_directory_private(directory: str) -> list[str]:
    """Make every regular file directly in ``directory`` that this process's user owns mode
    0600 or stricter (files an older version left 0644); the names changed. Subdirectories,
    sockets and links are left alone. OSError when the directory cannot be read."""
    changed = []
    handle = os.open(directory, os.O_RDONLY | os.O_DIRECTORY | os.O_CLOEXEC)
    try:
        for entry in os.scandir(handle):
            if entry.is_file(follow_symlinks=False) and make_private(entry.name, directory=handle):
                changed.append(entry.name)
    finally:
        os.close(handle)
    return changed


def write_ad_lines(path: str, ads: Sequence[ClassAd]) -> None:
    """Replace ``path`` with ``ads``, one per line, atomically (a crash leaves the old or the
    new file), mode 0600.

    Not fsynced: the file must outlive the process (kill -9, a crash), which the page cache
    ensures; a machine that goes down takes its jobs with it, so flushing to disk on every
    activation would only slow job starts.
    """
    replace_private(path, "".join(f"{ad}\n" for ad in ads).encode("utf-8"))


def read_ad_lines(path: str, what: str, *, torn_tail: bool = False) -> list[tuple[int, ClassAd]]:
    """The ads of a file :func:`write_ad_lines` wrote, with their line numbers; none when it
    does not exist. ``torn_tail``: the file is appended to, and a last line without its
    newline is a write cut short (the disk filled), left out.

    Raises DaemonError naming ``what`` (the saved claims, the accountant...), the file and
    the line of an unreadable entry.
    """
    try:
        with open(path, "rb") as handle:
            data = handle.read()
    except FileNotFoundError:
        return []
    except OSError as error:
        raise DaemonError(f"cannot read {what} {path}: {error.strerror}") from error
    lines = data.split(b"\n")
    # The piece after the last newline: empty for a whole file.
    tail = lines.pop()
    if tail.strip() and not torn_tail:
        lines.append(tail)
    found = []
    for number, raw in enumerate(lines, start=1):
        where = f"{path}, line {number}"
        try:
            line = raw.decode("utf-8")
        except UnicodeDecodeError as error:
            raise DaemonError(f"{where}: not UTF-8 text: {error}") from error
        if not line.strip():
            continue
        try:
            found.append((number, parse_ad(line)))
        except ClassAdSyntaxError as error:
            raise DaemonError(f"{where}: not a ClassAd: {error}") from error
    return found


def saved_starter_ad(entry: SavedStarter) -> ClassAd:
    """The claims-file line of ``entry``."""
    return saved_claim_ad(
        entry.claim,
        entry.pid,
        entry.started,
        tracking_key=entry.tracking_key,
        sandbox=entry.sandbox,
    )


#: The attribute of a claims-file line that says a claim has gone.
DROPPED = "DroppedClaimId"


class ClaimsFile:
    """The saved claims, kept as a journal: a line for each starter started, a line
    ``[ DroppedClaimId = "..." ]`` for each claim whose job has ended, and from time to time
    the whole file rewritten with only the live claims (atomically).

    Appending costs a job two short writes; rewriting the file at every start and end of a
    job made ext4 flush it each time (a rename over an existing file does), a few
    milliseconds per job.
    """

    def __init__(self, path: str) -> None:
        self.path = path
        self.live: dict[str, str] = {}
        self.lines = 0

    def rewrite(self, entries: Sequence[SavedStarter]) -> None:
        """Replace the file with ``entries``."""
        ads = [saved_starter_ad(entry) for entry in entries]
        write_ad_lines(self.path, ads)
        self.live = {entry.claim.claim_id: str(ad) for entry, ad in zip(entries, ads, strict=True)}
        self.lines = len(ads)

    def add(self, entry: SavedStarter) -> None:
        """Record a starter started for ``entry``'s claim (OSError when it cannot be written:
        that starter must not run)."""
        line = str(saved_starter_ad(entry))
        self._append(line)
        self.live[entry.claim.claim_id] = line

    def drop(self, claim_id: str) -> None:
        """Record that ``claim_id`` no longer has a job to take back."""
        if self.live.pop(claim_id, None) is None:
            return
        if self.lines > 2 * len(self.live) + 64:
            text = "".join(f"{line}\n" for line in self.live.values())
            replace_private(self.path, text.encode("utf-8"))
            self.lines = len(self.live)
            return
        marker = ClassAd()
        marker[DROPPED] = claim_id
        self._append(str(marker))

    def _append(self, line: str) -> None:
        append_private(self.path, f"{line}\n".encode())
        self.lines += 1


def read_claims(path: str) -> list[SavedStarter]:
    """The saved claims and their starters' PIDs (the journal :class:`ClaimsFile` keeps,
    replayed); none when the file does not exist.

    Raises DaemonError naming the file and line of an unreadable entry.
    """
    found: dict[str, SavedStarter] = {}
    for number, ad in read_ad_lines(path, "the saved claims", torn_tail=True):
        where = f"{path}, line {number}"
        if DROPPED in ad:
            found.pop(_text(ad, DROPPED, where), None)
            continue
        entry = _saved_claim(ad, where)
        found[entry.claim.claim_id] = entry
    return list(found.values())


def append_history(path: str, ad: ClassAd) -> None:
    """Append one finished job's record to the history file (mode 0600: it holds the jobs'
    environments and arguments).

    Not fsynced, for the reason :func:`write_ad_lines` gives: the record must outlive the
    process, which the page cache ensures, and a flush per job would cost every job a few
    milliseconds.
    """
    append_private(path, f"{ad}\n".encode())


def read_history(
    path: str, *, last_bytes: int | None = None, containing: Collection[str] = ()
) -> Iterator[ClassAd]:
    """Every record of the history file, oldest first (a torn last line is skipped);
    ``last_bytes``: only the records within the file's last that many bytes; ``containing``:
    only the records whose line contains one of these strings."""
    wanted = [text.encode() for text in containing]
    try:
        with open(path, "rb") as handle:
            if last_bytes is not None:
                size = handle.seek(0, os.SEEK_END)
                handle.seek(max(size - last_bytes, 0))
            data = handle.read()
            lines = data.splitlines()
            if last_bytes is not None and size > last_bytes and lines:
                lines = lines[1:]  # the line the cut fell in
    except FileNotFoundError:
        return
    for raw in lines:
        if wanted and not any(text in raw for text in wanted):
            continue
        try:
            line = raw.decode("utf-8")
        except UnicodeDecodeError:
            continue
        if line.strip():
            try:
                yield parse_ad(line)
            except ClassAdSyntaxError:
                continue
