"""Moving a job's files between its Iwd and its sandbox, for jobs that run in the sandbox.

A job in a container sees only its sandbox (mounted as its working directory), as HTCondor's
docker universe jobs do, so its files travel as with ``should_transfer_files = YES`` on one
machine: before the job, its executable (unless ``TransferExecutable`` is false: then Cmd names
a program inside the image) and the ``TransferInput`` files and directories are copied from the
Iwd into the sandbox; after it, the ``TransferOutput`` files, or when it names none every file
the job made or changed at the top of the sandbox, are copied back into the Iwd.

Every copy runs with the job user's effective identity and groups (:func:`as_user`), so the
kernel checks each file as it would for that user. The submitter's side is read as HTCondor's
file transfer reads it: links to files are followed (``executable = /bin/sh`` is a link on
Debian), a link to a directory is refused unless named with a trailing ``/`` (its contents),
and FIFOs and sockets inside a directory are left out. The sandbox's side, which the job
controls, never follows a link: it is reached from a descriptor of the sandbox, one component
at a time, with ``O_NOFOLLOW``. Directories are walked with a list of pending ones, not by
recursion, so a deep tree cannot exhaust Python's stack.
"""

from __future__ import annotations

import contextlib
import errno
import os
import shutil
import stat
from collections.abc import Iterator, Sequence
from contextlib import contextmanager

import attrs

from epcore.classad import ClassAd
from epcore.errors import JobSetupError
from epcore.jobs.codes import HoldCode
from epcore.starter.privileges import as_user

#: What the sandbox holds that is the starter's, never the job's output.
_STARTER_FILES = frozenset({".job.ad", ".machine.ad"})

#: A directory inside the sandbox: never through a link.
_DIRECTORY = os.O_RDONLY | os.O_DIRECTORY | os.O_NOFOLLOW | os.O_CLOEXEC
#: A file read: never blocking (a FIFO without a writer would hold the starter for ever).
_READ = os.O_RDONLY | os.O_NONBLOCK | os.O_NOCTTY | os.O_CLOEXEC
#: A file written: never through a link, never blocking on a FIFO planted in its place.
_WRITE = os.O_WRONLY | os.O_CREAT | os.O_TRUNC | os.O_NOFOLLOW | os.O_NONBLOCK | os.O_CLOEXEC


@attrs.frozen
class FileStamp:
    """What a sandbox file looked like before the job ran."""

    size: int
    mtime_ns: int


def _names(job: ClassAd, attribute: str) -> tuple[str, ...]:
    value = job.evaluate(attribute)
    if not isinstance(value, str):
        return ()
    return tuple(part.strip() for part in value.replace("\n", ",").split(",") if part.strip())


def _refused(message: str) -> OSError:
    """An OSError whose strerror is ``message`` (the transfer's errors are reported by it)."""
    return OSError(errno.EPERM, message)


@contextmanager
def _opened(path: str, flags: int, dir_fd: int | None = None) -> Iterator[int]:
    fd = os.open(path, flags, 0o600, dir_fd=dir_fd)
    try:
        yield fd
    finally:
        os.close(fd)


def _sandbox_dir(root_fd: int, parts: Sequence[str]) -> int:
    """A descriptor of the directory ``parts`` below ``root_fd``, reached one component at a
    time without following a link (ELOOP or ENOTDIR when one is a link)."""
    fd = os.open(".", _DIRECTORY, dir_fd=root_fd)
    for part in parts:
        if part in ("", ".", ".."):
            os.close(fd)
            raise _refused(f"{'/'.join(parts)} is not a path inside the sandbox")
        try:
            following = os.open(part, _DIRECTORY, dir_fd=fd)
        finally:
            os.close(fd)
        fd = following
    return fd


class _SandboxCursor:
    """Opens directory after directory of a walk below the sandbox, each from the one opened
    before when it is its parent (a walk goes down one level at a time), else from the
    sandbox: a deep tree costs one open per directory, not one per level."""

    def __init__(self, sandbox_fd: int, *, make: bool) -> None:
        self.sandbox_fd = sandbox_fd
        self.make = make
        self.parts: tuple[str, ...] | None = None
        self.fd: int | None = None

    def open(self, parts: tuple[str, ...]) -> int:
        """The directory ``parts`` (made first when ``make``), valid until the next call."""
        if not parts:
            fd = _sandbox_dir(self.sandbox_fd, ())
        else:
            cached = self.fd if self.parts == parts[:-1] else None
            parent = cached if cached is not None else _sandbox_dir(self.sandbox_fd, parts[:-1])
            try:
                if self.make:
                    _make_directory(parent, parts[-1])
                if parts[-1] in ("", ".", ".."):
                    raise _refused(f"{'/'.join(parts)} is not a path inside the sandbox")
                fd = os.open(parts[-1], _DIRECTORY, dir_fd=parent)
            finally:
                if parent != cached:
                    os.close(parent)
        self.close()
        self.parts, self.fd = parts, fd
        return fd

    def close(self) -> None:
        if self.fd is not None:
            os.close(self.fd)
        self.parts, self.fd = None, None


def _write(source_fd: int, mode: int, dir_fd: int | None, name: str) -> None:
    """Copy the open regular file ``source_fd`` to ``name`` (in ``dir_fd``), made with
    ``mode``; a link or anything but a regular file at ``name`` is refused."""
    with _opened(name, _WRITE, dir_fd) as out_fd:
        if not stat.S_ISREG(os.fstat(out_fd).st_mode):
            raise _refused(f"{name} is not a regular file")
        os.set_blocking(out_fd, True)
        os.set_blocking(source_fd, True)
        with (
            os.fdopen(source_fd, "rb", closefd=False) as reader,
            os.fdopen(out_fd, "wb", closefd=False) as writer,
        ):
            shutil.copyfileobj(reader, writer, 1 << 20)
        os.fchmod(out_fd, mode)


def _make_directory(dir_fd: int, name: str) -> None:
    # Something already there that is not a directory is refused when _sandbox_dir opens it.
    with contextlib.suppress(FileExistsError):
        os.mkdir(name, 0o755, dir_fd=dir_fd)


# -- the submitter's side into the sandbox --------------------------------------------------


def _copy_file_in(source: str, dir_fd: int, name: str) -> None:
    """Copy the submitter's regular file ``source`` (links followed) to ``name`` in the
    sandbox's directory ``dir_fd``."""
    with _opened(source, _READ) as in_fd:
        info = os.fstat(in_fd)
        if not stat.S_ISREG(info.st_mode):
            raise _refused(f"{source} is not a regular file")
        _write(in_fd, stat.S_IMODE(info.st_mode), dir_fd, name)


def _copy_tree_in(source: str, sandbox_fd: int, parts: tuple[str, ...]) -> None:
    """Copy the submitter's directory ``source`` to ``parts`` in the sandbox: files and links
    to files, subdirectories; FIFOs, sockets and devices are left out, a link to a directory
    is refused (HTCondor's file transfer does not send those)."""
    pending = [(source, parts)]
    cursor = _SandboxCursor(sandbox_fd, make=True)
    try:
        while pending:
            directory, where = pending.pop()
            dir_fd = cursor.open(where)
            with os.scandir(directory) as entries:
                for entry in entries:
                    if entry.is_symlink():
                        target = os.stat(entry.path)
                        if stat.S_ISDIR(target.st_mode):
                            raise _refused(f"{entry.path} is a link to a directory")
                        if stat.S_ISREG(target.st_mode):
                            _copy_file_in(entry.path, dir_fd, entry.name)
                    elif entry.is_dir(follow_symlinks=False):
                        pending.append((entry.path, (*where, entry.name)))
                    elif entry.is_file(follow_symlinks=False):
                        _copy_file_in(entry.path, dir_fd, entry.name)
    finally:
        cursor.close()


def _copy_in(source: str, sandbox_fd: int) -> str:
    """Copy ``source`` (a file, a directory, or ``dir/`` for a directory's contents) into the
    sandbox; the name it has there."""
    contents_only = source.endswith("/") and len(source) > 1
    source = source.rstrip("/") or "/"
    name = os.path.basename(source)
    info = os.stat(source)
    if stat.S_ISDIR(info.st_mode):
        if contents_only:
            _copy_tree_in(source, sandbox_fd, ())
            return "."
        if os.path.islink(source):
            raise _refused(
                "it is a link to a directory (name it with a trailing / to copy its contents)"
            )
        _copy_tree_in(source, sandbox_fd, (name,))
        return name
    _copy_file_in(source, sandbox_fd, name)
    return name


def executable_into(
    executable: str, sandbox: str, uid: int, gid: int, groups: tuple[int, ...] = ()
) -> str:
    """Copy the job's executable (read as its user, links followed) into the sandbox,
    executable by its user; the path there.

    Raises JobSetupError (hold code 6, as a missing executable) when it cannot be copied.
    """
    name = os.path.basename(executable)
    try:
        with as_user(uid, gid, groups), _opened(sandbox, _DIRECTORY) as sandbox_fd:
            if name in ("", ".", ".."):
                raise _refused("it names no file")
            with _opened(executable, _READ) as in_fd:
                info = os.fstat(in_fd)
                if not stat.S_ISREG(info.st_mode):
                    raise _refused("it is not a regular file")
                _write(in_fd, stat.S_IMODE(info.st_mode) | 0o700, sandbox_fd, name)
    except OSError as error:
        message = f"cannot copy the executable {executable} into the sandbox: {error.strerror}"
        raise JobSetupError(message, HoldCode.FAILED_TO_CREATE_PROCESS) from error
    return os.path.join(sandbox, name)


def transfer_in(
    job: ClassAd, iwd: str, sandbox: str, uid: int, gid: int, groups: tuple[int, ...] = ()
) -> tuple[str, ...]:
    """Copy the job's ``TransferInput`` (relative to ``iwd``) into ``sandbox``; the names
    made there. Raises JobSetupError (hold code 13) naming the file that failed."""
    made = []
    for name in _names(job, "TransferInput"):
        source = name if os.path.isabs(name) else os.path.join(iwd, name)
        try:
            with as_user(uid, gid, groups), _opened(sandbox, _DIRECTORY) as sandbox_fd:
                made.append(_copy_in(source, sandbox_fd))
        except OSError as error:
            reason = error.strerror or str(error)
            message = f"TransferInput: cannot copy {source} into the sandbox: {reason}"
            raise JobSetupError(message, HoldCode.UPLOAD_FILE_ERROR) from error
    return tuple(made)


# -- the sandbox back to the submitter ---------------------------------------------------------


def stamps(sandbox: str) -> dict[str, FileStamp]:
    """The files at the top of ``sandbox`` now, to tell later which the job made or changed."""
    found = {}
    for entry in os.scandir(sandbox):
        if entry.is_file(follow_symlinks=False):
            info = entry.stat(follow_symlinks=False)
            found[entry.name] = FileStamp(info.st_size, info.st_mtime_ns)
    return found


def _copy_file_out(dir_fd: int, name: str, target: str) -> None:
    """Copy the sandbox's regular file ``name`` (in ``dir_fd``, never through a link) to the
    path ``target``."""
    with _opened(name, _READ | os.O_NOFOLLOW, dir_fd) as in_fd:
        info = os.fstat(in_fd)
        if not stat.S_ISREG(info.st_mode):
            raise _refused(f"{name} is not a regular file")
        _write(in_fd, stat.S_IMODE(info.st_mode), None, target)


def _copy_tree_out(sandbox_fd: int, parts: tuple[str, ...], target: str) -> None:
    """Copy the sandbox's directory ``parts`` to ``target``: its regular files and
    directories; links and devices are left out."""
    pending = [(parts, target)]
    cursor = _SandboxCursor(sandbox_fd, make=False)
    try:
        while pending:
            where, destination = pending.pop()
            os.makedirs(destination, exist_ok=True)
            dir_fd = cursor.open(where)
            with os.scandir(dir_fd) as entries:
                for entry in entries:
                    inside = os.path.join(destination, entry.name)
                    if entry.is_dir(follow_symlinks=False):
                        pending.append(((*where, entry.name), inside))
                    elif entry.is_file(follow_symlinks=False):
                        _copy_file_out(dir_fd, entry.name, inside)
    finally:
        cursor.close()


def _copy_out(sandbox_fd: int, name: str, iwd: str) -> str | None:
    """Copy the sandbox's ``name`` into ``iwd``; why not, when it is not there."""
    parts = tuple(part for part in name.split("/") if part)
    if not parts:
        raise _refused(f"{name} names no file")
    parent = _sandbox_dir(sandbox_fd, parts[:-1])
    try:
        try:
            info = os.stat(parts[-1], dir_fd=parent, follow_symlinks=False)
        except FileNotFoundError:
            return f"TransferOutput: the job made no {name}"
        target = os.path.join(iwd, parts[-1])
        if stat.S_ISLNK(info.st_mode):
            raise _refused("it is a link (links in the sandbox are not followed)")
        if stat.S_ISDIR(info.st_mode):
            _copy_tree_out(sandbox_fd, parts, target)
        else:
            _copy_file_out(parent, parts[-1], target)
    finally:
        os.close(parent)
    return None


def transfer_out(
    job: ClassAd,
    sandbox: str,
    iwd: str,
    before: dict[str, FileStamp],
    uid: int,
    gid: int,
    groups: tuple[int, ...] = (),
) -> str | None:
    """Copy the job's output back into ``iwd``: the ``TransferOutput`` names (relative to the
    sandbox), else every top-level file it made or changed. None when all went back; else why
    one did not (the job is then held with code 12)."""
    names = _names(job, "TransferOutput")
    if not names:
        names = tuple(
            sorted(
                name
                for name, stamp in stamps(sandbox).items()
                if name not in _STARTER_FILES and before.get(name) != stamp
            )
        )
    for name in names:
        try:
            with as_user(uid, gid, groups), _opened(sandbox, _DIRECTORY) as sandbox_fd:
                missing = _copy_out(sandbox_fd, name, iwd)
        except OSError as error:
            reason = error.strerror or str(error)
            return f"cannot copy the output file {name} back to {iwd}: {reason}"
        if missing is not None:
            return missing
    return None
