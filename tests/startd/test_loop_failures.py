"""A fault in one turn of the startd's loop is logged and the loop carries on."""

from __future__ import annotations

import selectors
from pathlib import Path

from epcore.startd.loop import StartdLoop
from epcore.startd.main import build_startd


class FaultyCompanion:
    """A part of the startd's service (as its cron jobs are) whose ticks fail, then stop the
    startd."""

    def __init__(self, loop: list[StartdLoop], failures: int) -> None:
        self.loop = loop
        self.failures = failures
        self.ticks = 0

    def open(self, selector: selectors.BaseSelector) -> None:
        pass

    def ready(self, fileobj: object) -> None:
        pass

    def timeout(self) -> float:
        return 0.0

    def tick(self) -> None:
        self.ticks += 1
        if self.ticks <= self.failures:
            raise RuntimeError("a fault on one job's data")
        self.loop[0].startd.shutdown(True)

    def close(self) -> None:
        pass


def _loop(tmp_path: Path, failures: int) -> tuple[StartdLoop, FaultyCompanion, Path]:
    local = tmp_path / "local"
    local.mkdir()
    config = tmp_path / "condor_config"
    config.write_text(
        f"LOCAL_DIR = {local}\nRUNBENCHMARKS = False\nIS_OWNER = False\nNUM_CPUS = 1\n"
        "MEMORY = 512\nNUM_SLOTS = 1\n"
    )
    holder: list[StartdLoop] = []
    companion = FaultyCompanion(holder, failures)
    loop = StartdLoop(build_startd(str(config)), companions=[companion])
    holder.append(loop)
    return loop, companion, local / "log" / "StartLog"


def test_a_failing_turn_is_logged_once_and_the_loop_runs_on(tmp_path: Path) -> None:
    """Five turns failing alike (not OSError or EpError) are logged once; the loop then ends
    normally when asked."""
    loop, companion, log = _loop(tmp_path, failures=5)
    loop.run()
    assert companion.ticks == 6
    text = log.read_text()
    assert text.count("a turn of the startd's loop failed") == 1
    assert "RuntimeError: a fault on one job's data" in text
    assert "startd exiting" in text
