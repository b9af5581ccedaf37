"""Reading and writing cgroup control files, making and removing groups, process states.

Writes never create a file: a control file the kernel does not provide is an error (ENOENT),
as it would be on cgroupfs, so tests on a fake tree must create the files the kernel would
have made. Values are written whole (truncating), as a shell's ``echo X > file`` does.
"""

from __future__ import annotations

import contextlib
import os
from collections.abc import Iterable
from pathlib import Path, PurePosixPath

from epcore.errors import IsolationError


def write_value(path: Path, value: str | int) -> None:
    """Write ``value`` to the existing control file ``path``; OSError as the kernel answers."""
    fd = os.open(path, os.O_WRONLY | os.O_TRUNC | os.O_CLOEXEC)
    try:
        os.write(fd, str(value).encode())
    finally:
        os.close(fd)


def write_control(path: Path, value: str | int) -> None:
    """Write a group's control file; IsolationError naming it when refused."""
    try:
        write_value(path, value)
    except OSError as exc:
        raise IsolationError(f"cannot write {value} to {path}: {exc.strerror or exc}") from exc


def move_process(procs_file: Path, pid: int, present: Iterable[int]) -> None:
    """Move ``pid`` into the group of ``procs_file`` unless it is among ``present`` (the
    group's processes); nothing when it has exited, IsolationError when refused."""
    if pid in present:
        return
    try:
        write_value(procs_file, pid)
    except ProcessLookupError:
        return
    except OSError as exc:
        raise IsolationError(
            f"cannot move process {pid} into {procs_file}: {exc.strerror or exc}"
        ) from exc


def read_text(path: Path) -> str:
    """The whole control file (OSError when it cannot be read)."""
    with open(path, encoding="ascii", errors="replace") as handle:
        return handle.read()


def read_keyed(path: Path) -> dict[str, int] | None:
    """A ``key value`` per line file (``memory.stat``, ``cpu.stat``, ``cgroup.events``) as a
    dict of its integer values; None when the file cannot be read. Lines that are not a key
    and an integer are left out."""
    try:
        text = read_text(path)
    except (OSError, ValueError):
        return None
    values: dict[str, int] = {}
    for line in text.splitlines():
        parts = line.split()
        if len(parts) == 2 and _is_integer(parts[1]):
            values[parts[0]] = int(parts[1])
    return values


def read_int(path: Path) -> int | None:
    """A one-number control file (``memory.current``); None when absent, unreadable or
    not a number (``max``)."""
    try:
        text = read_text(path).strip()
    except (OSError, ValueError):
        return None
    return int(text) if _is_integer(text) else None


def read_pids(path: Path) -> list[int]:
    """The PIDs a ``cgroup.procs`` file lists; empty when the file cannot be read (the group
    is gone)."""
    try:
        text = read_text(path)
    except (OSError, ValueError):
        return []
    return [int(word) for word in text.split() if word.isascii() and word.isdigit()]


def _is_integer(text: str) -> bool:
    digits = text[1:] if text[:1] == "-" else text
    return digits.isascii() and digits.isdigit()


def make_dirs(top: Path, relative: PurePosixPath) -> list[Path]:
    """Create ``top/relative`` and whatever of it is missing, top down; the directories made
    (deepest last). IsolationError naming the path when one cannot be made; nothing made
    is left behind then."""
    # Usually only the last part is missing (a job's group below an existing BASE_CGROUP):
    # one mkdir then, instead of a refused mkdir and a stat for every part above it.
    if len(relative.parts) > 1:
        deepest = top.joinpath(*relative.parts)
        try:
            deepest.mkdir()
        except OSError:
            pass
        else:
            return [deepest]
    made: list[Path] = []
    path = top
    for part in relative.parts:
        path = path / part
        try:
            path.mkdir()
        except FileExistsError:
            if path.is_dir():
                continue
            remove_dirs(reversed(made))
            raise IsolationError(
                f"cannot create cgroup {path}: it exists and is no directory"
            ) from None
        except OSError as exc:
            remove_dirs(reversed(made))
            raise IsolationError(f"cannot create cgroup {path}: {exc.strerror or exc}") from exc
        made.append(path)
    return made


def remove_dirs(paths: Iterable[Path]) -> None:
    """rmdir each of ``paths`` (an iterable of Path), quietly: cleanup after a failure."""
    for path in paths:
        with contextlib.suppress(OSError):
            os.rmdir(path)


def remove_tree(path: Path) -> None:
    """rmdir ``path`` and any groups below it, deepest first (cgroupfs removes the control
    files itself). A group already gone is fine; OSError for one that cannot go (EBUSY)."""
    # Usually the group has none below it: one rmdir, without listing its control files.
    try:
        os.rmdir(path)
    except FileNotFoundError:
        return
    except OSError:
        pass
    else:
        return
    if not path.is_dir():
        return
    below: list[Path] = []
    for dirpath, _dirs, _files in os.walk(path, topdown=False):
        below.append(Path(dirpath))
    for group in below:
        with contextlib.suppress(FileNotFoundError):
            os.rmdir(group)


def process_state(root: Path, pid: int) -> str | None:
    """The state letter of ``pid`` from ``<root>/proc/<pid>/stat`` (``Z`` for a zombie);
    None when the process is gone."""
    try:
        with open(os.path.join(root, "proc", str(pid), "stat"), errors="replace") as handle:
            text = handle.read()
    except (OSError, ValueError):
        return None
    # The command name is in parentheses and may itself hold spaces and parentheses.
    after = text[text.rfind(")") + 1 :].split()
    return after[0] if after else None
