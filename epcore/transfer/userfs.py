"""The submitter's files, opened as their owner by a root daemon without changing its identity.

A daemon serving file transfer runs as root and several threads (the startd's cron jobs in
the same process as the schedd, in a personal pool): ``seteuid`` would change every thread's
identity at once (glibc makes it process-wide). Linux keeps credentials per thread, and the
file-system ids (``setfsuid``/``setfsgid``) and the raw ``setgroups`` system call change
only the calling thread's. :func:`as_owner` sets those three around each open, mkdir and
directory listing, so the kernel checks the owner's permissions on every path component
(a link or a directory the owner planted reaches only what the owner may reach), files made
belong to the owner, and nothing else in the process notices.

:func:`open_user_file` opens a file a job names (its event log, input, output, error) without
ever blocking: opening a FIFO blocks until its other end is opened too, and opening some
devices may wait as well, so a user who names such a file would hold the daemon, or the job's
setup the starter waits for, indefinitely. It opens with ``O_NONBLOCK``, checks with
``fstat`` that it has a regular file or a character device (``/dev/null`` is a common
output), and only then makes the descriptor blocking again for the writes and reads that
follow. The schedd's event log writes and the starter's use it alike.
"""

from __future__ import annotations

import ctypes
import ctypes.util
import errno
import os
import platform
import stat
from collections.abc import Iterator
from contextlib import contextmanager
from functools import cache

from epcore.errors import EpError

#: The raw setgroups system call's number, per machine (glibc's wrapper is process-wide).
_SETGROUPS = {"x86_64": 116, "aarch64": 159, "ppc64le": 81, "s390x": 206}
#: Opening a file to read: never blocking (a FIFO the owner names would hold the daemon).
READ_FLAGS = os.O_RDONLY | os.O_NONBLOCK | os.O_NOCTTY | os.O_CLOEXEC
#: Opening a file to write: never blocking, never a terminal.
WRITE_FLAGS = os.O_WRONLY | os.O_CREAT | os.O_TRUNC | os.O_NONBLOCK | os.O_NOCTTY | os.O_CLOEXEC


@cache
def _libc() -> ctypes.CDLL:
    return ctypes.CDLL(ctypes.util.find_library("c") or "libc.so.6", use_errno=True)


def _thread_groups(groups: list[int]) -> None:
    number = _SETGROUPS.get(platform.machine())
    if number is None:
        raise EpError(f"cannot set a thread's groups on {platform.machine()}")
    array = (ctypes.c_uint * max(len(groups), 1))(*groups)
    if _libc().syscall(number, len(groups), array) != 0:
        code = ctypes.get_errno()
        raise OSError(code, f"setgroups: {os.strerror(code)}")


def _fs_ids(uid: int, gid: int) -> None:
    libc = _libc()
    libc.setfsgid(gid)
    libc.setfsuid(uid)
    # setfsuid reports the previous id and never an error: asking again tells what holds.
    if libc.setfsuid(uid) != uid or libc.setfsgid(gid) != gid:
        raise EpError(f"cannot take the file-system identity {uid}:{gid}")


@contextmanager
def as_owner(uid: int, gid: int, groups: tuple[int, ...] = ()) -> Iterator[None]:
    """Run the block with this thread's file-system identity ``uid``/``gid`` and
    supplementary ``groups`` (module docstring); unchanged when not root or for root."""
    if os.geteuid() != 0 or uid == 0:
        yield
        return
    saved = os.getgroups()
    _thread_groups(list(groups))
    try:
        _fs_ids(uid, gid)
        try:
            yield
        finally:
            _fs_ids(0, 0)
    finally:
        _thread_groups(saved)


def open_regular(path: str, uid: int, gid: int, groups: tuple[int, ...]) -> tuple[int, int]:
    """A blocking descriptor of the owner's regular file ``path`` (links followed, as the
    owner) and its permission bits; OSError (EISDIR, EINVAL for other kinds) otherwise."""
    with as_owner(uid, gid, groups):
        fd = os.open(path, READ_FLAGS)
    try:
        info = os.fstat(fd)
        if stat.S_ISDIR(info.st_mode):
            raise OSError(errno.EISDIR, os.strerror(errno.EISDIR), path)
        if not stat.S_ISREG(info.st_mode):
            raise OSError(errno.EINVAL, "not a regular file", path)
        os.set_blocking(fd, True)
    except BaseException:
        os.close(fd)
        raise
    return fd, stat.S_IMODE(info.st_mode)


def create_file(path: str, mode: int, uid: int, gid: int, groups: tuple[int, ...]) -> int:
    """A blocking descriptor of ``path`` made (or emptied) by the owner with ``mode``;
    OSError when the owner may not, or when ``path`` is not a regular file."""
    with as_owner(uid, gid, groups):
        fd = os.open(path, WRITE_FLAGS, mode & 0o777)
    try:
        if not stat.S_ISREG(os.fstat(fd).st_mode):
            raise OSError(errno.EINVAL, "not a regular file", path)
        os.set_blocking(fd, True)
        os.fchmod(fd, mode & 0o777)
    except BaseException:
        os.close(fd)
        raise
    return fd


def make_directory(path: str, mode: int, uid: int, gid: int, groups: tuple[int, ...]) -> None:
    """Make the directory ``path`` as the owner (one already there is kept)."""
    with as_owner(uid, gid, groups):
        try:
            os.mkdir(path, mode & 0o777 or 0o755)
        except FileExistsError:
            if not os.path.isdir(path):
                raise


def list_directory(
    path: str, uid: int, gid: int, groups: tuple[int, ...]
) -> list[tuple[str, bool, bool]]:
    """The entries of the owner's directory ``path``: (name, is a directory, is a regular
    file), links followed to files only (a link to a directory is neither)."""
    found = []
    with as_owner(uid, gid, groups), os.scandir(path) as entries:
        for entry in entries:
            try:
                if entry.is_symlink():
                    target = os.stat(entry.path)
                    found.append((entry.name, False, stat.S_ISREG(target.st_mode)))
                else:
                    found.append((entry.name, entry.is_dir(follow_symlinks=False), entry.is_file()))
            except OSError:
                continue  # a dangling link: nothing to send
    return sorted(found)


def is_directory(path: str, uid: int, gid: int, groups: tuple[int, ...]) -> tuple[bool, int]:
    """Whether the owner's ``path`` is a directory (links followed) and its permission bits;
    OSError when the owner cannot reach it."""
    with as_owner(uid, gid, groups):
        info = os.stat(path)
    return stat.S_ISDIR(info.st_mode), stat.S_IMODE(info.st_mode)


class NotARegularFile(OSError):
    """A job's file that is a FIFO, socket, directory or block device; names the file."""

    def __init__(self, path: str, kind: str) -> None:
        super().__init__(errno.EINVAL, f"it is a {kind}, not a regular file", path)


def _kind(mode: int) -> str:
    if stat.S_ISFIFO(mode):
        return "FIFO"
    if stat.S_ISSOCK(mode):
        return "socket"
    if stat.S_ISDIR(mode):
        return "directory"
    if stat.S_ISBLK(mode):
        return "block device"
    return "special file"


def open_user_file(path: str, flags: int, mode: int = 0o666) -> int:
    """Open ``path`` with ``flags`` without blocking; a blocking descriptor of a regular file
    or a character device. Raises OSError, :class:`NotARegularFile` for anything else (a FIFO
    no process reads included)."""
    try:
        fd = os.open(path, flags | os.O_NONBLOCK | os.O_NOCTTY | os.O_CLOEXEC, mode)
    except OSError as error:
        if error.errno == errno.ENXIO:
            # What a write-only, non-blocking open of a FIFO without a reader (or of a
            # socket) fails with.
            raise NotARegularFile(path, "FIFO or socket") from error
        raise
    try:
        kind = os.fstat(fd).st_mode
        if not (stat.S_ISREG(kind) or stat.S_ISCHR(kind)):
            raise NotARegularFile(path, _kind(kind))
        os.set_blocking(fd, True)
    except BaseException:
        os.close(fd)
        raise
    return fd
