"""Where a process that joins a job's cgroups goes back to: its own group in each hierarchy.

A prepared supervisor (:mod:`epcore.starter.launch`) joins its job's groups before the job is
known and moves back to the groups of the process that made it once the job runs, so that
the job's groups hold the job alone. The zygote and a starter that runs its claim's
successive jobs both make such supervisors.
"""

from __future__ import annotations

from pathlib import Path

from epcore.starter.cgroups.mountinfo import read_layout

#: One cgroup hierarchy: where it is mounted, and this process's group in it (None: unknown).
OwnGroup = tuple[Path, str | None]


def own_groups() -> tuple[OwnGroup, ...]:
    """Every mounted cgroup hierarchy with this process's own group in it."""
    own_v1: dict[frozenset[str], str] = {}
    own_v2 = None
    with open("/proc/self/cgroup", encoding="ascii") as handle:
        for line in handle:
            _, controllers, path = line.rstrip("\n").split(":", 2)
            if controllers:
                own_v1[frozenset(controllers.split(","))] = path
            else:
                own_v2 = path
    layout = read_layout()
    mounts: list[OwnGroup] = [(h.path, own_v1.get(h.controllers)) for h in layout.v1.values()]
    if layout.v2 is not None:
        mounts.append((layout.v2, own_v2))
    return tuple(mounts)


def home_files(join_files: tuple[str, ...], groups: tuple[OwnGroup, ...]) -> tuple[str, ...]:
    """For each ``cgroup.procs`` file of a job's group, the same file of this process's own
    group in that hierarchy (where a prepared supervisor goes back once its job runs)."""
    # Plain string prefixes, not pathlib: this runs for every job the zygote prepares, and
    # the mounts are absolute, normalised paths from mountinfo.
    mounts = [
        (f"{mount}/", f"{mount}/{own.strip('/')}") for mount, own in groups if own is not None
    ]
    homes = []
    for join in join_files:
        for prefix, home in mounts:
            if join.startswith(prefix):
                homes.append(f"{home.rstrip('/')}/cgroup.procs")
                break
    return tuple(dict.fromkeys(homes))
