"""Which configuration a pool command reads, and the personal pool's own configuration.

A command given ``--config FILE`` reads FILE. Otherwise it reads what HTCondor would read
(CONDOR_CONFIG, /etc/condor/condor_config, /usr/local/etc/condor_config,
~condor/condor_config) and, when there is none, the personal pool's file:
``/var/lib/epcore/condor_config`` for root, ``~/.epcore/condor_config`` for anyone else (who
also finds root's personal pool there when they have none of their own). ``ep run`` writes
that file the first time it runs without one, so that an admin can read and edit it like
any condor_config.
"""

from __future__ import annotations

import os
from collections.abc import Mapping

#: Where root's personal pool lives.
SYSTEM_LOCAL_DIR = "/var/lib/epcore"

#: HTCondor's places for the root configuration file, after CONDOR_CONFIG.
ROOT_CONFIG_FILES = ("/etc/condor/condor_config", "/usr/local/etc/condor_config")

PERSONAL_CONFIG = """\
# The personal pool of epcore, written by `ep run`. It is an ordinary condor_config: edit it
# and run `kill -HUP` on `ep run` (or restart it) to apply the changes.
LOCAL_DIR = {local_dir}
LOG = $(LOCAL_DIR)/log
SPOOL = $(LOCAL_DIR)/spool
EXECUTE = $(LOCAL_DIR)/execute
LOCK = $(LOCAL_DIR)/lock
CONDOR_HOST = $(FULL_HOSTNAME)
# IDTOKENS: the pool's signing key (made 0600 on the first start) and the tokens root reads.
SEC_PASSWORD_DIRECTORY = $(LOCAL_DIR)/passwords.d
SEC_TOKEN_SYSTEM_DIRECTORY = $(LOCAL_DIR)/tokens.d

# One partitionable slot with the whole machine. Its consumption policy lets the negotiator
# match several jobs into it in one cycle, so that users share it by their priorities.
NUM_SLOTS = 1
NUM_SLOTS_TYPE_1 = 1
SLOT_TYPE_1 = 100%
SLOT_TYPE_1_PARTITIONABLE = True
SLOT_TYPE_1_CONSUMPTION_POLICY = True

# Run every job, never suspend or preempt it for the machine's owner.
START = True
SUSPEND = False
CONTINUE = True
PREEMPT = False
KILL = False
WANT_SUSPEND = False
RANK = 0

# A personal pool answers quickly: jobs are matched a second after they are submitted.
NEGOTIATOR_INTERVAL = 20
NEGOTIATOR_MIN_INTERVAL = 1
UPDATE_INTERVAL = 30
COLLECTOR_PERSISTENT_AD_LOG = $(SPOOL)/collector_persistent.ads

# HTCondor's own tools (htcondor2, condor_status) reach the pool over CEDAR on 127.0.0.1.
# Port 0: `ep run` takes a free port and writes it to COLLECTOR_ADDRESS_FILE, where the
# tools read it; name a port here (and NETWORK_INTERFACE) to open the pool to other hosts.
COLLECTOR_HOST = $(CONDOR_HOST):0
COLLECTOR_ADDRESS_FILE = $(LOG)/.collector_address
# Anyone may read and submit; the pool's own users administer it and advertise to it. The
# tools authenticate by FS (root's tools are the pool's user, condor).
SEC_DEFAULT_AUTHENTICATION = REQUIRED
SEC_READ_AUTHENTICATION = PREFERRED
SEC_CLIENT_AUTHENTICATION = PREFERRED
ALLOW_READ = *
ALLOW_WRITE = *
ALLOW_NEGOTIATOR = {owners}
ALLOW_ADMINISTRATOR = {owners}
ALLOW_DAEMON = {owners}
"""


def personal_local_dir(uid: int, home: str | None) -> str:
    """The personal pool's directory for the user ``uid`` whose home is ``home``."""
    if uid == 0 or not home:
        return SYSTEM_LOCAL_DIR
    return os.path.join(home, ".epcore")


def personal_config_text(local_dir: str, owner: str | None = None) -> str:
    """The personal pool's configuration, for a pool kept in ``local_dir`` and run by
    ``owner`` (the user running it, by default), who administers it with root and condor."""
    if owner is None:
        owner = _user_name(os.getuid())
    names = dict.fromkeys(["condor", "root", owner])
    owners = ", ".join(f"{name}@$(UID_DOMAIN)" for name in names)
    return PERSONAL_CONFIG.format(local_dir=local_dir, owners=owners)


def _user_name(uid: int) -> str:
    import pwd

    try:
        return pwd.getpwuid(uid).pw_name
    except KeyError:
        return str(uid)


def htcondor_config_file(environ: Mapping[str, str], condor_home: str | None) -> str | None:
    """The root configuration file HTCondor would read, or None when there is none."""
    named = environ.get("CONDOR_CONFIG")
    if named:
        return named
    candidates = [*ROOT_CONFIG_FILES]
    if condor_home:
        candidates.append(os.path.join(condor_home, "condor_config"))
    return next((path for path in candidates if os.path.isfile(path)), None)


def config_file_for(
    given: str | None, environ: Mapping[str, str], *, uid: int, home: str | None
) -> tuple[str, bool]:
    """The configuration file a pool command reads, and whether it is the personal pool's
    (which ``ep run`` writes when it is missing)."""
    if given:
        return given, False
    condor_home = _home_of("condor")
    found = htcondor_config_file(environ, condor_home)
    if found is not None:
        return found, False
    mine = os.path.join(personal_local_dir(uid, home), "condor_config")
    system = os.path.join(SYSTEM_LOCAL_DIR, "condor_config")
    if uid != 0 and not os.path.exists(mine) and os.path.exists(system):
        return system, True
    return mine, True


def write_personal_config(path: str) -> None:
    """Write the personal pool's configuration to ``path`` (its directory holds the pool)."""
    local_dir = os.path.dirname(os.path.abspath(path))
    os.makedirs(local_dir, mode=0o755, exist_ok=True)
    temporary = f"{path}.tmp"
    with open(temporary, "w", encoding="utf-8") as handle:
        handle.write(personal_config_text(local_dir))
    os.replace(temporary, path)


def _home_of(user: str) -> str | None:
    import pwd

    try:
        return pwd.getpwnam(user).pw_dir
    except KeyError:
        return None
