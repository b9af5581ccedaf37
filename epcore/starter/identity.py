"""Who a job runs as.

When the startd runs as root: the job's Owner, when that account exists, is not root, and
STARTER_ALLOW_RUNAS_OWNER (true unless set otherwise, as on HTCondor's Unix) and the job's own
RunAsOwner (true when absent) allow it; otherwise the slot's dedicated account
``SLOT<N>_USER`` (N the slot's number; a dynamic slot ``slot1_3`` uses SLOT1_USER); otherwise
``nobody``. root is used only when SLOT<N>_USER names it. When the startd is not root, jobs run
as the startd's own user, whatever they ask. DEDICATED_EXECUTE_ACCOUNT_REGEXP says which
accounts are dedicated to jobs, so that the starter may kill every process of that account when
the job ends (HTCondor's "reliable tracking by account").

A job run as an account by name (its Owner, a slot account, nobody) gets that account's
supplementary groups, as initgroups gives them at login and as HTCondor's starter sets them
(it initialises the groups of every user it switches to by name, nobody included).
"""

from __future__ import annotations

import os
import pwd
import re
from collections.abc import Callable

import attrs

from epcore.classad import ClassAd
from epcore.config import Config
from epcore.errors import ConfigError, JobSetupError
from epcore.jobs.codes import HoldCode

Lookup = Callable[[str], pwd.struct_passwd]
#: The groups of an account: its name and primary group -> every group id it is in.
GroupList = Callable[[str, int], list[int]]


@attrs.frozen
class JobUser:
    """The account a job runs as, and why that one."""

    name: str
    uid: int
    gid: int
    home: str
    dedicated: bool = False
    why: str = ""
    #: The supplementary groups the job gets (the primary group among them); empty when the
    #: job keeps the startd's own identity.
    groups: tuple[int, ...] = ()


def _account(name: str, lookup: Lookup) -> pwd.struct_passwd | None:
    try:
        return lookup(name)
    except KeyError:
        return None


def _dedicated(config: Config, name: str) -> bool:
    pattern = config.get("DEDICATED_EXECUTE_ACCOUNT_REGEXP")
    if not pattern:
        return False
    try:
        return re.fullmatch(pattern, name) is not None
    except re.error as error:
        origin = config.origin("DEDICATED_EXECUTE_ACCOUNT_REGEXP")
        raise ConfigError(
            f"DEDICATED_EXECUTE_ACCOUNT_REGEXP is not a regular expression: {error}",
            origin.source if origin else None,
            origin.line if origin else None,
        ) from error


def _user(entry: pwd.struct_passwd, config: Config, why: str, grouplist: GroupList) -> JobUser:
    try:
        groups = tuple(dict.fromkeys(grouplist(entry.pw_name, entry.pw_gid)))
    except OSError as error:
        raise JobSetupError(
            f"cannot read the groups of {entry.pw_name}: {error.strerror or error}",
            HoldCode.FAILED_TO_ACCESS_USER_ACCOUNT,
        ) from error
    return JobUser(
        entry.pw_name,
        entry.pw_uid,
        entry.pw_gid,
        entry.pw_dir,
        _dedicated(config, entry.pw_name),
        why,
        groups,
    )


def job_user(
    config: Config,
    job: ClassAd,
    slot_id: int,
    *,
    as_root: bool | None = None,
    lookup: Lookup = pwd.getpwnam,
    own_uid: int | None = None,
    grouplist: GroupList = os.getgrouplist,
) -> JobUser:
    """The account the job of ``job`` runs as on slot number ``slot_id``, with its groups
    (``grouplist``) when the startd is root.

    Raises JobSetupError (hold code 23) when the configured slot account does not exist.
    """
    root = os.geteuid() == 0 if as_root is None else as_root
    if not root:
        uid = os.geteuid() if own_uid is None else own_uid
        try:
            own = pwd.getpwuid(uid)
        except KeyError:
            # No passwd entry (common in containers): the id is all there is.
            return JobUser(str(uid), uid, os.getegid(), "/", False, "the startd's own user")
        return JobUser(
            own.pw_name,
            own.pw_uid,
            own.pw_gid,
            own.pw_dir,
            _dedicated(config, own.pw_name),
            "the startd does not run as root",
        )
    owner = job.evaluate("Owner")
    wants_owner = job.evaluate("RunAsOwner")
    if (
        isinstance(owner, str)
        and owner
        and wants_owner is not False
        and config.get_bool("STARTER_ALLOW_RUNAS_OWNER", True)
    ):
        owner_entry = _account(owner, lookup)
        if owner_entry is not None and owner_entry.pw_uid != 0:
            return _user(owner_entry, config, f"the job's Owner {owner!r}", grouplist)
    knob = f"SLOT{slot_id}_USER"
    slot_account = config.get(knob)
    if slot_account:
        slot_entry = _account(slot_account.strip(), lookup)
        if slot_entry is None:
            raise JobSetupError(
                f"{knob} names account {slot_account.strip()!r}, which does not exist",
                HoldCode.FAILED_TO_ACCESS_USER_ACCOUNT,
            )
        return _user(slot_entry, config, knob, grouplist)
    nobody = _account("nobody", lookup)
    if nobody is None:
        raise JobSetupError(
            f"no account to run the job as: no Owner account, no {knob} and no 'nobody' account",
            HoldCode.FAILED_TO_ACCESS_USER_ACCOUNT,
        )
    return _user(nobody, config, "no Owner account and no slot account: nobody", grouplist)
