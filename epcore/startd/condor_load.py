"""CondorLoadAvg: the CPU load of each slot's own processes (its job or the backfill client).

HTCondor's startd keeps, per slot, a one-minute queue of per-second CPU figures: at each
poll it adds one figure for every second since the last poll (at least one, at most
POLLING_INTERVAL) and the slot's CondorLoadAvg is the queue's mean, scaled up when the
machine is loaded beyond its cores and never above the machine's load. TotalCondorLoadAvg is
the slots' sum, again never above the machine's load; the rest of the machine load is owner
load, which :mod:`epcore.slots.readings` hands out among the slots.

The figures here come from the job's cgroup (the CPU seconds its group has used, as the
starter's usage reports read them), or, without one, from the starter and its descendants.
The computation is pure (:class:`LoadWindow`, :func:`advance`, :func:`slot_load`); only
:class:`CondorLoad` reads files and processes.
"""

from __future__ import annotations

from collections.abc import Iterable
from pathlib import Path, PurePosixPath
from typing import TYPE_CHECKING

import attrs
import psutil

from epcore.config import Config
from epcore.errors import EpError
from epcore.slots.slot_status import SlotStatus
from epcore.starter.cgroups.backend import cgroup_name, read_base_cgroup
from epcore.starter.cgroups.mountinfo import CgroupLayout, read_layout
from epcore.starter.cgroups.v1 import V1Group
from epcore.starter.cgroups.v2 import V2Group
from epcore.types import HostReadings

if TYPE_CHECKING:
    from epcore.startd.startd import Startd

#: HTCondor's queue holds one minute of one-second figures.
WINDOW_SECONDS = 60


@attrs.frozen
class LoadWindow:
    """The last minute of one slot's CPU use, one figure (cores busy) per second."""

    samples: tuple[float, ...] = (0.0,) * WINDOW_SECONDS

    def push(self, seconds: int, value: float) -> LoadWindow:
        """The window after ``seconds`` more seconds at ``value`` (the oldest drop out)."""
        count = min(max(seconds, 0), len(self.samples))
        if count == 0:
            return self
        return LoadWindow(self.samples[count:] + (value,) * count)

    @property
    def average(self) -> float:
        """The mean over the whole window (seconds not yet seen count as 0)."""
        return sum(self.samples) / len(self.samples)


@attrs.frozen
class CpuTrack:
    """One slot's window and its last reading: whose CPU seconds (``source``), how many,
    and when (None: nothing of HTCondor's ran there)."""

    window: LoadWindow = LoadWindow()
    source: str | None = None
    cpu_seconds: float | None = None
    sampled_at: float | None = None


def advance(
    track: CpuTrack, source: str | None, cpu_seconds: float | None, now: float, polling: float
) -> CpuTrack:
    """``track`` after a reading at ``now``: the CPU rate since the last reading of the same
    source goes into the window once per elapsed second (at least 1, at most ``polling``, as
    HTCondor fills its queue); a new source, a first reading or a counter that went down
    counts as 0 (no rate can be told yet)."""
    elapsed = 0.0 if track.sampled_at is None else now - track.sampled_at
    seconds = int(min(max(elapsed, 1.0), max(polling, 1.0)))
    rate = 0.0
    if (
        source is not None
        and source == track.source
        and cpu_seconds is not None
        and track.cpu_seconds is not None
        and elapsed > 0
    ):
        rate = max(cpu_seconds - track.cpu_seconds, 0.0) / elapsed
    return CpuTrack(track.window.push(seconds, rate), source, cpu_seconds, now)


def slot_load(average: float, cpus: float, machine_load: float) -> float:
    """A slot's CondorLoadAvg from its window's mean (cores busy): scaled by the machine load
    over the machine's ``cpus`` when that is higher (HTCondor's share of the system load),
    never above the machine load."""
    cores = max(cpus, 1.0)
    scaled = average * max(cores, machine_load) / cores
    return round(max(min(scaled, machine_load), 0.0), 2)


def total_load(loads: Iterable[float], machine_load: float) -> float:
    """TotalCondorLoadAvg: the slots' loads summed, never above the machine's load."""
    return round(max(min(sum(loads), machine_load), 0.0), 2)


@attrs.frozen
class Running:
    """What runs for HTCondor now: the slots it counts for (its CPU split evenly among them),
    the key of its cgroups, and its starter's PID."""

    slots: tuple[str, ...]
    job_key: str
    starter_pid: int


class CondorLoad:
    """The per-slot windows of one startd, and the reading of its jobs' CPU seconds."""

    def __init__(self, config: Config, cpus: float) -> None:
        self.cpus = cpus
        self.tracks: dict[str, CpuTrack] = {}
        self.loads: dict[str, float] = {}
        self._layout: CgroupLayout | None = None
        self._base: PurePosixPath | None = None
        self._memo: dict[str, tuple[SlotStatus, float, SlotStatus]] = {}
        self.configure(config)

    def configure(self, config: Config) -> None:
        """Take BASE_CGROUP and the polling interval again (a reconfiguration)."""
        self.polling = config.get_float("POLLING_INTERVAL", 5.0)
        try:
            self._base = read_base_cgroup(config)
        except EpError:
            self._base = None

    def cpu_seconds(self, running: Running) -> float | None:
        """The CPU seconds of ``running``'s cgroup, else of its starter and descendants."""
        found = self._cgroup_seconds(running.job_key)
        return found if found is not None else _tree_seconds(running.starter_pid)

    def _cgroup_seconds(self, job_key: str) -> float | None:
        if self._base is None or not job_key:
            return None
        if self._layout is None:
            try:
                self._layout = read_layout()
            except EpError:
                self._layout = CgroupLayout()
        relative = self._base / cgroup_name(job_key)
        layout = self._layout
        user: float | None = None
        system: float | None = None
        if "cpuacct" in layout.v1:
            path = layout.v1["cpuacct"].path.joinpath(*relative.parts)
            user, system = V1Group(path, frozenset({"cpuacct"})).cpu_seconds()
        elif layout.v2 is not None:
            user, system = V2Group(Path(layout.v2), relative, frozenset()).cpu_seconds()
        if user is None and system is None:
            return None
        return (user or 0.0) + (system or 0.0)

    def sample(
        self, slots: Iterable[str], running: Iterable[Running], now: float, load: float
    ) -> None:
        """Read every running job's CPU and advance the window of each of ``slots`` (short
        names); ``load`` is the machine's load average."""
        readings: dict[str, tuple[str, float | None]] = {}
        for item in running:
            seconds = self.cpu_seconds(item)
            share = None if seconds is None else seconds / max(len(item.slots), 1)
            for name in item.slots:
                readings[name] = (f"{item.starter_pid}:{len(item.slots)}", share)
        tracks: dict[str, CpuTrack] = {}
        loads: dict[str, float] = {}
        for name in slots:
            source, seconds = readings.get(name, (None, None))
            track = advance(self.tracks.get(name, CpuTrack()), source, seconds, now, self.polling)
            tracks[name] = track
            loads[name] = slot_load(track.window.average, self.cpus, load)
        self.tracks = tracks
        self.loads = loads

    def readings(self, readings: HostReadings) -> HostReadings:
        """``readings`` with TotalCondorLoadAvg filled in."""
        if not self.loads:
            return readings
        total = total_load(self.loads.values(), readings.load_avg)
        return attrs.evolve(readings, condor_load_avg=total)

    def statuses(self, statuses: dict[str, SlotStatus]) -> dict[str, SlotStatus]:
        """``statuses`` with each slot's CondorLoadAvg; a slot whose status and load are
        unchanged keeps the same object, so the ad builder sees it has not moved."""
        memo: dict[str, tuple[SlotStatus, float, SlotStatus]] = {}
        result: dict[str, SlotStatus] = {}
        for name, status in statuses.items():
            load = self.loads.get(name, 0.0)
            found = self._memo.get(name)
            if found is None or found[0] is not status or found[1] != load:
                loaded = status if load == status.condor_load_avg else None
                found = (status, load, loaded or attrs.evolve(status, condor_load_avg=load))
            memo[name] = found
            result[name] = found[2]
        self._memo = memo
        return result


def sample_startd(startd: Startd, now: float, load: float) -> None:
    """Advance ``startd``'s windows from the jobs its starters run and its backfill client
    (whose CPU is split evenly among the slots it computes for)."""
    running: list[Running] = []
    backfill = startd.backfill
    for claim_id, handle in startd.starters.handles.items():
        if handle.gone or handle.stage not in ("running", "setup"):
            continue
        if backfill.owns(handle):
            slots = tuple(sorted(backfill.slots)) or (handle.slot,)
            running.append(Running(slots, "", handle.pid))
            continue
        saved = startd.saved.get(claim_id)
        key = saved.tracking_key if saved is not None else ""
        running.append(Running((handle.slot,), key, handle.pid))
    startd.condor_load.sample((record.name for record in startd.state.slots), running, now, load)


def _tree_seconds(pid: int) -> float | None:
    try:
        process = psutil.Process(pid)
        family = [process, *process.children(recursive=True)]
    except psutil.Error:
        return None
    total = 0.0
    for member in family:
        try:
            times = member.cpu_times()
        except psutil.Error:
            continue
        total += times.user + times.system + times.children_user + times.children_system
    return total
