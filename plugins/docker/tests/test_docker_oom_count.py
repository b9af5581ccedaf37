"""The machine-wide OOM kill count the docker runtime falls back on when dockerd reports an
OOM kill too late (epcore_docker.container.machine_oom_kills)."""

from __future__ import annotations

from pathlib import Path

import pytest
from epcore_docker.container import machine_oom_kills


def test_the_count_is_read_from_the_oom_kill_line(tmp_path: Path) -> None:
    """The oom_kill line's number is the count, whatever lines stand around it."""
    vmstat = tmp_path / "vmstat"
    vmstat.write_text("nr_free_pages 1000\noom_kill 7\npgfault 12\n")
    assert machine_oom_kills(str(vmstat)) == 7


@pytest.mark.parametrize(
    "text",
    ["", "nr_free_pages 1000\n", "oom_kill seven\n", "oom_kill\n"],
    ids=["empty", "no-line", "not-a-number", "no-value"],
)
def test_an_unreadable_count_is_zero(tmp_path: Path, text: str) -> None:
    """A file without a readable oom_kill line gives 0 rather than an error."""
    vmstat = tmp_path / "vmstat"
    vmstat.write_text(text)
    assert machine_oom_kills(str(vmstat)) == 0


def test_a_missing_file_is_zero(tmp_path: Path) -> None:
    """A kernel without /proc/vmstat (or its oom_kill line) gives 0."""
    assert machine_oom_kills(str(tmp_path / "absent")) == 0
