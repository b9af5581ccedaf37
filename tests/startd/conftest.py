"""Fixtures of the daemon tests: a real startd in a subprocess, or one built in this process."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest

from epcore.startd.main import build_startd
from epcore.startd.startd import Startd
from epcore.testing.startd import startd_factory

__all__ = ["startd", "startd_factory"]


@pytest.fixture
def startd(tmp_path: Path) -> Iterator[Startd]:
    """A startd of two static slots built in this process (no loop: only what a test calls),
    its slots Unclaimed."""
    local = tmp_path / "local"
    local.mkdir()
    config = tmp_path / "condor_config"
    config.write_text(
        f"LOCAL_DIR = {local}\nRUNBENCHMARKS = False\nIS_OWNER = False\nNUM_CPUS = 2\n"
        "MEMORY = 512\nNUM_SLOTS = 2\nSTART = True\n"
    )
    made = build_startd(str(config))
    now = made.clock()
    made.take(made.engine.poll(made.state, now), now)  # Owner -> Unclaimed, as the loop does
    try:
        yield made
    finally:
        # No loop reaps what a test activated: its starters would outlive the test.
        for claim_id in list(made.starters.handles):
            made.starters.kill(claim_id)
        made.close()
