"""LVM_HIDE_MOUNT: the starter's own mount namespace, where the job's volume is mounted so
that only the job (which enters it, epcore.types.ChildSetup.mount_namespace) sees it."""

from __future__ import annotations

import ctypes
import os
import threading

_CLONE_NEWNS = 0x00020000
_MS_REC = 0x4000
_MS_SLAVE = 0x80000


def private_mount_namespace() -> str:
    """Move the calling thread into a new mount namespace and return the file naming it.

    ``/`` becomes a recursive slave, as HTCondor's starter makes it: mounts made on the host
    later still reach the starter, and nothing mounted here goes back. The task's file, not
    the process's: only the calling thread moves."""
    libc = ctypes.CDLL(None, use_errno=True)
    if libc.unshare(_CLONE_NEWNS) != 0:
        number = ctypes.get_errno()
        raise OSError(number, f"unshare(CLONE_NEWNS): {os.strerror(number)}")
    if libc.mount(b"none", b"/", None, ctypes.c_ulong(_MS_REC | _MS_SLAVE), None) != 0:
        number = ctypes.get_errno()
        raise OSError(number, f"making / a recursive slave: {os.strerror(number)}")
    return f"/proc/{os.getpid()}/task/{threading.get_native_id()}/ns/mnt"
