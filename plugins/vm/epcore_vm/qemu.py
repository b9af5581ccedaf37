"""The guest's qemu process, as the starter sees it: libvirtd (not the starter) starts it,
so it is found by the guest name on its command line and read from /proc."""

from __future__ import annotations

import os


def qemu_pid(name: str) -> int | None:
    """The pid of the qemu running domain ``name`` (its command line names the guest)."""
    needle = f"guest={name},".encode()
    for entry in os.listdir("/proc"):
        if not entry.isdigit():
            continue
        try:
            with open(f"/proc/{entry}/cmdline", "rb") as handle:
                if needle in handle.read():
                    return int(entry)
        except OSError:
            continue
    return None


def memory_limited(procs: str) -> bool:
    """True for a group (its ``cgroup.procs``) that limits memory: the slot's limit is the
    guest's memory, which qemu's own overhead always passes, so qemu stays out of it (its
    memory is read from its RSS; on cgroup v2 one group holds both, so it stays out of all)."""
    group = os.path.dirname(procs)
    return any(
        os.path.exists(os.path.join(group, name))
        for name in ("memory.limit_in_bytes", "memory.max")
    )


def join_cgroups(pid: int, files: tuple[str, ...]) -> tuple[str, ...]:
    """Move qemu process ``pid`` (all its threads: ``cgroup.procs`` moves a whole process)
    into the job's groups but the memory-limited ones, ``files`` being their
    ``cgroup.procs``; the files it could not be written to, each with the kernel's answer."""
    failed: list[str] = []
    for path in files:
        if memory_limited(path):
            continue
        try:
            fd = os.open(path, os.O_WRONLY | os.O_CLOEXEC)
            try:
                os.write(fd, str(pid).encode())
            finally:
                os.close(fd)
        except OSError as error:
            failed.append(f"{path}: {error.strerror}")
    return tuple(failed)


def alive(pid: int) -> bool:
    try:
        with open(f"/proc/{pid}/stat", "rb") as handle:
            return handle.read().rsplit(b")", 1)[1].split()[0] != b"Z"
    except (OSError, IndexError):
        return False


def rss(pid: int | None) -> int | None:
    if pid is None:
        return None
    try:
        with open(f"/proc/{pid}/statm", "rb") as handle:
            return int(handle.read().split()[1]) * os.sysconf("SC_PAGE_SIZE")
    except (OSError, IndexError, ValueError):
        return None
