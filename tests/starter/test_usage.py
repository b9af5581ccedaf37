"""The usage a starter reports: combining trackers' measurements into HTCondor's attributes."""

from __future__ import annotations

import pytest
from hypothesis import given
from hypothesis import strategies as st

from epcore.starter.usage import JobUsage, combine
from epcore.types import TrackedUsage

MB = 1024 * 1024


def _usage(image_kb: int) -> JobUsage:
    return JobUsage(image_kb, 0, 0, 0.0, 0.0, 0, 0)


@pytest.mark.parametrize(
    ("measured", "image_kb", "resident_kb", "memory_mb", "user", "system"),
    [
        ([], 0, 0, 0, 0.0, 0.0),
        ([TrackedUsage()], 0, 0, 0, 0.0, 0.0),
        # The first tracker that knows a number wins, even over a larger later one.
        (
            [TrackedUsage(1.5, 0.5, 10 * MB, 20 * MB), TrackedUsage(9.0, 9.0, 90 * MB, 99 * MB)],
            20 * 1024,
            10 * 1024,
            20,
            1.5,
            0.5,
        ),
        # A tracker that cannot tell (None) is skipped, field by field.
        (
            [TrackedUsage(None, 0.25, None, 30 * MB), TrackedUsage(2.0, 7.0, 5 * MB, 6 * MB)],
            30 * 1024,
            5 * 1024,
            30,
            2.0,
            0.25,
        ),
        # A zero is a measurement, not "unknown".
        ([TrackedUsage(0.0, 0.0, 0, 0), TrackedUsage(5.0, 5.0, MB, MB)], 0, 0, 0, 0.0, 0.0),
        # The peak is never below the current size.
        ([TrackedUsage(memory_current=8 * MB, memory_peak=2 * MB)], 8 * 1024, 8 * 1024, 8, 0, 0),
        # Bytes round up to whole KB, KB up to whole MB.
        ([TrackedUsage(memory_current=1, memory_peak=1)], 1, 1, 1, 0.0, 0.0),
        ([TrackedUsage(memory_current=1025, memory_peak=MB + 1)], 1025, 2, 2, 0.0, 0.0),
    ],
    ids=[
        "nothing",
        "unknown",
        "first-wins",
        "skips-none",
        "zero-counts",
        "peak-at-least-current",
        "round-up-bytes",
        "round-up-mb",
    ],
)
def test_combine_precedence_and_units(
    measured: list[TrackedUsage],
    image_kb: int,
    resident_kb: int,
    memory_mb: int,
    user: float,
    system: float,
) -> None:
    """combine() takes each number from the first tracker that has it, in KB / MB / seconds."""
    usage = combine(measured, num_pids=3, disk_kb=44, previous=None)
    assert usage.image_size_kb == image_kb
    assert usage.resident_set_kb == resident_kb
    assert usage.memory_usage_mb == memory_mb
    assert (usage.user_cpu, usage.system_cpu) == (user, system)
    assert (usage.num_pids, usage.disk_usage_kb) == (3, 44)


@given(
    sizes=st.lists(st.integers(0, 64 * 1024 * MB), min_size=1, max_size=8),
)
def test_image_size_never_decreases(sizes: list[int]) -> None:
    """ImageSize is a high-water mark over the reports, while ResidentSetSize follows now."""
    previous: JobUsage | None = None
    for size in sizes:
        usage = combine([TrackedUsage(memory_current=size)], 1, 0, previous)
        if previous is not None:
            assert usage.image_size_kb >= previous.image_size_kb
        assert usage.resident_set_kb == (size + 1023) // 1024
        previous = usage
    assert previous is not None
    assert previous.image_size_kb == (max(sizes) + 1023) // 1024


def test_previous_image_size_is_kept_when_memory_drops() -> None:
    """A smaller measurement after a large one keeps the earlier ImageSize and MemoryUsage."""
    usage = combine([TrackedUsage(memory_current=MB, memory_peak=MB)], 1, 0, _usage(500 * 1024))
    assert usage.image_size_kb == 500 * 1024
    assert usage.memory_usage_mb == 500
    assert usage.resident_set_kb == 1024


def test_attributes_names_and_rounding() -> None:
    """attributes() publishes HTCondor's names, CPU seconds rounded to milliseconds."""
    ad = JobUsage(2048, 1024, 2, 1.23456, 0.0004, 5, 77).attributes()
    assert {name: ad.evaluate(name) for name in ad} == {
        "ImageSize": 2048,
        "ResidentSetSize": 1024,
        "MemoryUsage": 2,
        "RemoteUserCpu": 1.235,
        "RemoteSysCpu": 0.0,
        "NumPids": 5,
        "DiskUsage": 77,
    }
