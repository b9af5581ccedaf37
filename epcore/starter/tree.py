"""Walking a directory tree its owner can change while it is walked, as root, safely.

A job's sandbox belongs to the job's user, whose own processes may rename its directories
and plant symbolic links while the starter (or a restarted startd) measures or removes it.
Working on path strings would then let root act wherever the links point. Every step here is
relative to a directory descriptor this process opened itself: a directory is entered with
``O_NOFOLLOW | O_DIRECTORY`` relative to its parent's descriptor, files are unlinked and
directories removed by name relative to the descriptor of the directory that holds them, and
nothing is ever followed.

The walk keeps one directory open at a time, whatever the depth (no Python recursion, no
descriptor per level): it goes back up through ``..`` and checks that it arrives in the very
directory it came from (device and inode). A directory moved away during the walk stops the
walk with :class:`TreeError` rather than letting it continue somewhere else. The walk never
leaves the filesystem it started on.
"""

from __future__ import annotations

import errno
import os
import stat
from collections.abc import Callable

import attrs

from epcore.errors import EpError

#: How a directory of the tree is opened: never through a link, never kept across exec.
DIR_FLAGS = os.O_RDONLY | os.O_DIRECTORY | os.O_NOFOLLOW | os.O_CLOEXEC

#: What entering an entry fails with when it is not (or no longer) a directory.
NOT_A_DIRECTORY = (errno.ENOTDIR, errno.ELOOP)


class TreeError(EpError):
    """A tree that could not be walked or removed; names the path and the reason."""


@attrs.define
class _Level:
    """One directory on the way down: its name in its parent, its identity, and the
    subdirectories still to visit."""

    name: str
    device: int
    inode: int
    subdirs: list[str]


def open_dir(name: str, parent_fd: int) -> int:
    """Open directory ``name`` of ``parent_fd``; OSError (ELOOP or ENOTDIR) for a link or a
    non-directory.

    When the calling process owns the directory but may not read or search it (a job left it
    mode 0000 and the walk runs as the job's user), it is given u+rwx first, through a
    descriptor of the directory itself (``O_PATH``): the change lands on the directory the
    name held, never on a link's target.
    """
    try:
        return os.open(name, DIR_FLAGS, dir_fd=parent_fd)
    except PermissionError:
        if os.geteuid() == 0:
            raise
    handle = os.open(
        name, os.O_PATH | os.O_DIRECTORY | os.O_NOFOLLOW | os.O_CLOEXEC, dir_fd=parent_fd
    )
    try:
        info = os.fstat(handle)
        if info.st_uid != os.geteuid():
            raise PermissionError(errno.EACCES, os.strerror(errno.EACCES), name)
        # chmod through /proc/self/fd acts on the descriptor's own inode (fchmod refuses
        # O_PATH descriptors); the directory is then opened again and checked to be it.
        os.chmod(f"/proc/self/fd/{handle}", stat.S_IMODE(info.st_mode) | stat.S_IRWXU)
        fd = os.open(name, DIR_FLAGS, dir_fd=parent_fd)
        again = os.fstat(fd)
        if (again.st_dev, again.st_ino) != (info.st_dev, info.st_ino):
            os.close(fd)
            raise FileNotFoundError(errno.ENOENT, "replaced while it was opened", name)
        return fd
    finally:
        os.close(handle)


def make_usable(fd: int) -> None:
    """Give the walking process u+rwx on the open directory ``fd`` when it owns the directory
    and lacks them (so its entries can be listed and removed); root needs and gets nothing."""
    info = os.fstat(fd)
    mode = stat.S_IMODE(info.st_mode)
    if os.geteuid() != 0 and info.st_uid == os.geteuid() and mode & stat.S_IRWXU != stat.S_IRWXU:
        os.fchmod(fd, mode | stat.S_IRWXU)


#: Called with an open directory and its path in the tree; returns the names of the
#: subdirectories to enter (it deals with every other entry itself).
Visit = Callable[[int, str], list[str]]
#: Called with the open parent and the name of a directory whose subtree has been walked.
Leave = Callable[[int, str, str], None]


def walk(parent_fd: int, name: str, visit: Visit, leave: Leave) -> None:
    """Walk the directory ``name`` of ``parent_fd`` depth first: ``visit`` every directory
    when it is entered, ``leave`` it (given its parent's descriptor) once its subdirectories
    have all been left, the top one included.

    Raises OSError when the top cannot be opened (ELOOP/ENOTDIR: it is not a directory), and
    TreeError when a directory is moved out from under the walk. A subdirectory that cannot
    be entered is passed to ``leave`` all the same, which reports what it must.
    """
    fd = open_dir(name, parent_fd)
    try:
        top = os.fstat(fd)
        stack = [_Level(name, top.st_dev, top.st_ino, visit(fd, name))]
        while True:
            level = stack[-1]
            if level.subdirs:
                child = level.subdirs.pop()
                where = _path(stack, child)
                try:
                    child_fd = open_dir(child, fd)
                except OSError:
                    leave(fd, child, where)
                    continue
                info = os.fstat(child_fd)
                if info.st_dev != top.st_dev:
                    os.close(child_fd)
                    leave(fd, child, where)
                    continue
                os.close(fd)
                fd = child_fd
                stack.append(_Level(child, info.st_dev, info.st_ino, visit(fd, where)))
                continue
            if len(stack) == 1:
                break
            stack.pop()
            parent = stack[-1]
            up = os.open("..", DIR_FLAGS, dir_fd=fd)
            info = os.fstat(up)
            if (info.st_dev, info.st_ino) != (parent.device, parent.inode):
                os.close(up)
                raise TreeError(f"{_path(stack, level.name)} was moved while it was walked")
            os.close(fd)
            fd = up
            leave(fd, level.name, _path(stack, level.name))
    finally:
        os.close(fd)
    leave(parent_fd, name, name)


def _path(stack: list[_Level], name: str) -> str:
    """The path of ``name`` in the innermost directory of ``stack``, from the top's name."""
    return "/".join([level.name for level in stack] + [name])
