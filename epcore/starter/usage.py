"""The usage attributes a starter reports for its job, from its trackers' measurements."""

from __future__ import annotations

import attrs

from epcore.classad import ClassAd
from epcore.types import TrackedUsage


@attrs.frozen
class JobUsage:
    """One measurement of a running job, in HTCondor's units (KB, MB, seconds)."""

    image_size_kb: int
    resident_set_kb: int
    memory_usage_mb: int
    user_cpu: float
    system_cpu: float
    num_pids: int
    disk_usage_kb: int

    def attributes(self) -> ClassAd:
        """ImageSize, ResidentSetSize, MemoryUsage, RemoteUserCpu, RemoteSysCpu, NumPids,
        DiskUsage."""
        ad = ClassAd()
        ad["ImageSize"] = self.image_size_kb
        ad["ResidentSetSize"] = self.resident_set_kb
        ad["MemoryUsage"] = self.memory_usage_mb
        ad["RemoteUserCpu"] = round(self.user_cpu, 3)
        ad["RemoteSysCpu"] = round(self.system_cpu, 3)
        ad["NumPids"] = self.num_pids
        ad["DiskUsage"] = self.disk_usage_kb
        return ad


def combine(
    measured: list[TrackedUsage], num_pids: int, disk_kb: int, previous: JobUsage | None
) -> JobUsage:
    """Usage from every tracker's measurement: the most precise source wins (cgroup numbers
    come before per-process sums because trackers are asked in that order), and sizes never
    go down from one report to the next for ImageSize (HTCondor's is a high-water mark)."""

    def first(values: list[float | int | None]) -> float:
        for value in values:
            if value is not None:
                return float(value)
        return 0.0

    current = int(first([m.memory_current for m in measured]))
    peak = int(first([m.memory_peak for m in measured]))
    peak = max(peak, current)
    image_kb = (peak + 1023) // 1024
    if previous is not None:
        image_kb = max(image_kb, previous.image_size_kb)
    resident_kb = (current + 1023) // 1024
    return JobUsage(
        image_size_kb=image_kb,
        resident_set_kb=resident_kb,
        memory_usage_mb=(image_kb + 1023) // 1024,
        user_cpu=first([m.user_cpu for m in measured]),
        system_cpu=first([m.system_cpu for m in measured]),
        num_pids=num_pids,
        disk_usage_kb=disk_kb,
    )
