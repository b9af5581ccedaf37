"""HasUserNamespaces: can an unprivileged process on this machine make a user namespace?

HTCondor's startd puts ``HasUserNamespaces = true`` in every slot's ad (container jobs or not)
when a child it clones with a new user namespace starts, and leaves the attribute out when
not; it probes once per process. Jobs and admins match on it: Apptainer without setuid, and
any rootless container tool a job brings, needs unprivileged user namespaces.

HTCondor's startd makes that clone as its condor user, not as root; epcore's startd is root,
whose privileges would answer yes where a job's user gets no, so the probe (util-linux's
``unshare --user true``) runs as nobody.
"""

from __future__ import annotations

import functools
import logging
import os
import pwd
import subprocess

from epcore.types import MachineAttribute

#: The program that makes the namespace (util-linux, essential on Debian).
UNSHARE = "unshare"
#: The unprivileged account the probe runs as when the startd is root.
PROBE_USER = "nobody"
PROBE_SECONDS = 10.0


def _probe_ids() -> tuple[int, int] | None:
    """(uid, gid) to probe as: nobody's when this process is root, else None (as itself)."""
    if os.geteuid() != 0:
        return None
    try:
        entry = pwd.getpwnam(PROBE_USER)
    except KeyError:
        return 65534, 65534
    return entry.pw_uid, entry.pw_gid


def has_user_namespaces(program: str = UNSHARE, timeout: float = PROBE_SECONDS) -> bool:
    """True when ``program --user true``, run unprivileged, succeeds (a user namespace was
    made and a program ran in it); False when it fails, is missing or hangs."""
    ids = _probe_ids()
    try:
        done = subprocess.run(
            [program, "--user", "true"],
            stdin=subprocess.DEVNULL,
            stdout=subprocess.DEVNULL,
            stderr=subprocess.DEVNULL,
            timeout=timeout,
            check=False,
            user=None if ids is None else ids[0],
            group=None if ids is None else ids[1],
            extra_groups=None if ids is None else [],
        )
    except (OSError, subprocess.SubprocessError):
        return False
    return done.returncode == 0


@functools.cache
def _probed() -> bool:
    return has_user_namespaces()


def host_attributes(log: logging.Logger) -> tuple[MachineAttribute, ...]:
    """The attributes of every slot this probe gives: HasUserNamespaces = true, or nothing.
    Probed once per process, as HTCondor's startd does (a reconfiguration does not ask
    again)."""
    if _probed():
        log.info("unprivileged user namespaces: yes (HasUserNamespaces = true)")
        return (MachineAttribute("HasUserNamespaces", True),)
    log.info("unprivileged user namespaces: no (HasUserNamespaces left out)")
    return ()
