"""Acting as the job's user for a moment, inside the (root) starter.

The starter writes files the job's ad names (its event logs) into directories the job's user
controls; as root, a path or symlink planted by that user would let it create or append to any
file on the machine. Such files are opened with the job user's effective identity instead, so
the kernel checks them as it would for the job. The starter has one thread, so changing its
effective ids for the length of an open is safe.
"""

from __future__ import annotations

import os
from collections.abc import Iterator
from contextlib import contextmanager


@contextmanager
def as_user(uid: int, gid: int, groups: tuple[int, ...] = ()) -> Iterator[None]:
    """Run the block with effective uid/gid ``uid``/``gid`` and supplementary ``groups``
    (none unless given) when running as root; as the process's own identity otherwise."""
    if os.geteuid() != 0 or uid == 0:
        yield
        return
    saved = os.getgroups()
    os.setgroups(list(groups))
    os.setegid(gid)
    os.seteuid(uid)
    try:
        yield
    finally:
        os.seteuid(0)
        os.setegid(0)
        os.setgroups(saved)
