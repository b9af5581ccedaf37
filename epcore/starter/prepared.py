"""A job made ready before it is known: its groups and a supervisor already inside them.

The startd's zygote makes one for each claim ahead of its activation
(:mod:`epcore.startd.prepare`), and a starter that runs its claim's successive jobs makes the
next one while a job runs (:mod:`epcore.starter.claim_loop`); both make and give them up the
same way, here.
"""

from __future__ import annotations

import contextlib

from epcore.errors import EpError
from epcore.starter.cgroups.home import OwnGroup, home_files
from epcore.starter.starter import PreparedJob
from epcore.starter.supervisor_server import SupervisorServer, wait_gone
from epcore.types import IsolationBackend, TrackingRequest


def prepare_job(
    backend: IsolationBackend,
    request: TrackingRequest,
    supervisors: SupervisorServer,
    groups: tuple[OwnGroup, ...],
) -> PreparedJob:
    """``backend``'s groups for ``request`` and a supervisor from ``supervisors`` inside them,
    which goes back to ``groups`` (the asking process's own) once its job runs. EpError or
    OSError when either cannot be made; nothing is left then."""
    tracking = backend.track(request)
    try:
        joins = tracking.child_setup().join_files
        supervisor = supervisors.prepare(joins, home_files(joins, groups))
    except (EpError, OSError):
        with contextlib.suppress(EpError):
            tracking.release()
        raise
    return PreparedJob(backend.name, request.job_key, tracking, supervisor)


def give_up(prepared: PreparedJob) -> None:
    """Kill the supervisor of ``prepared`` and remove its groups (EpError when they cannot
    be removed)."""
    # A group left frozen (a killer that died between its freeze and its thaw) would hold the
    # killed supervisor, and its groups, until someone thawed it: thaw it first.
    prepared.tracking.thaw()
    prepared.supervisor.abandon()
    # Its groups can be removed once it is gone (its server reaps it).
    wait_gone(prepared.supervisor.pid)
    prepared.tracking.release()
