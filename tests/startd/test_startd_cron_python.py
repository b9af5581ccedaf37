"""Python cron jobs from a plugin (``ep_cron_jobs``), in a startd embedded in the test: their
ads are merged like a script's output, and one that hangs holds up nothing."""

from __future__ import annotations

import threading
import time
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest

from epcore import hookimpl
from epcore.classad import ClassAd
from epcore.config import Config
from epcore.plugins import load_plugins
from epcore.startd.loop import StartdLoop
from epcore.startd.main import build_startd
from epcore.types import PythonCronJob


class CronPlugin:
    """A plugin offering the given Python cron jobs."""

    def __init__(self, jobs: list[PythonCronJob]) -> None:
        self.jobs = jobs

    @hookimpl
    def ep_cron_jobs(self, config: Config) -> list[PythonCronJob]:
        return self.jobs


def _ads() -> list[ClassAd]:
    main = ClassAd()
    main["PyValue"] = 42
    targeted = ClassAd()
    targeted["SlotId"] = 2
    targeted["PyTargeted"] = "two"
    return [main, targeted]


@pytest.fixture
def embedded(tmp_path: Path) -> Iterator[Callable[[list[PythonCronJob], str], StartdLoop]]:
    """``embedded(jobs, extra_config)``: an opened startd loop with a plugin offering ``jobs``."""
    loops: list[StartdLoop] = []

    def make(jobs: list[PythonCronJob], extra: str = "") -> StartdLoop:
        local = tmp_path / f"local{len(loops)}"
        local.mkdir()
        config = tmp_path / f"condor_config{len(loops)}"
        config.write_text(
            f"LOCAL_DIR = {local}\nRUNBENCHMARKS = False\nIS_OWNER = False\nNUM_CPUS = 2\n"
            f"MEMORY = 1024\nNUM_SLOTS = 2\nPOLLING_INTERVAL = 1\n{extra}"
        )
        plugins = load_plugins(extra=[("croner", CronPlugin(jobs))], strict=True)
        loop = StartdLoop(build_startd(str(config), plugins=plugins))
        loop.open()
        loops.append(loop)
        return loop

    yield make
    for loop in loops:
        loop.close()


def _turn_until(loop: StartdLoop, check: Callable[[], bool], timeout: float = 20.0) -> None:
    deadline = time.monotonic() + timeout
    while not check():
        assert time.monotonic() < deadline, "timed out"
        loop.turn()


def _slot(loop: StartdLoop, name: str) -> ClassAd:
    return next(ad for ad in loop.startd.query() if str(ad.evaluate("Name")).startswith(f"{name}@"))


def test_python_cron_job_ads_appear_in_the_slot_ads(embedded) -> None:
    """A plugin's Python job's first ad goes to every slot, its SlotId ad to slot 2 only, and
    the configured PREFIX applies."""
    job = PythonCronJob("pyjob", _ads, mode="OneShot")
    loop = embedded([job], "STARTD_CRON_PYJOB_PREFIX = My\n")
    _turn_until(loop, lambda: "MyPyTargeted" in _slot(loop, "slot2"))
    assert _slot(loop, "slot1").evaluate("MyPyValue") == 42
    assert _slot(loop, "slot2").evaluate("MyPyValue") == 42
    assert "MyPyTargeted" not in _slot(loop, "slot1")


def test_hanging_python_cron_job_blocks_nothing(embedded) -> None:
    """A Python job that never returns leaves the loop turning and the other jobs running."""
    release = threading.Event()

    def hang() -> list[ClassAd]:
        release.wait(60)
        return []

    loop = embedded(
        [PythonCronJob("hangs", hang, mode="OneShot"), PythonCronJob("quick", _ads, "OneShot")]
    )
    began = time.monotonic()
    _turn_until(loop, lambda: "PyValue" in _slot(loop, "slot1"))
    assert time.monotonic() - began < 15
    release.set()


def test_python_cron_job_failure_is_logged(embedded, tmp_path: Path) -> None:
    """A Python job that raises is logged with its name and changes no attribute."""

    def broken() -> list[ClassAd]:
        raise RuntimeError("no sensor")

    loop = embedded([PythonCronJob("broken", broken, mode="Periodic", period=1.0)])
    log = Path(loop.startd.paths.startd_log)
    _turn_until(loop, lambda: "cron: broken failed: RuntimeError: no sensor" in log.read_text())
    assert "PyValue" not in _slot(loop, "slot1")


@pytest.mark.parametrize(("publish", "sent_at_once"), [(True, True), (False, False)])
def test_publish_sends_a_run_at_once_or_with_the_next_update(
    embedded, tmp_path: Path, publish: bool, sent_at_once: bool
) -> None:
    """A job with ``publish`` sends its ads to the collector when its run ends; one without
    leaves them for the next UPDATE_INTERVAL, though queries see them at once."""

    def fresh() -> list[ClassAd]:
        ad = ClassAd()
        ad["PyFresh"] = 7
        return [ad]

    job = PythonCronJob("fresh", fresh, mode="OneShot", publish=publish)
    loop = embedded([job], "UPDATE_INTERVAL = 300\n")
    sink = tmp_path / "local0" / "spool" / "startd_ads"
    _turn_until(loop, lambda: _slot(loop, "slot1").evaluate("PyFresh") == 7)
    deadline = time.monotonic() + 2.0
    while time.monotonic() < deadline:
        loop.turn()
    assert ("PyFresh" in sink.read_text()) is sent_at_once
