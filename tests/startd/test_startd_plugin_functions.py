"""A startd built with plugins reads its configuration with their ClassAd functions, so its
slot ads, its queries and its policy all call them (epcore.startd.main.build_startd)."""

from __future__ import annotations

from pathlib import Path

from lucky_functions import LUCKY

from epcore.plugins import load_plugins
from epcore.startd.main import build_startd
from epcore.testing.offers import FunctionOffer

CONFIG = """
LOCAL_DIR = {local}
BASE_CGROUP =
RUNBENCHMARKS = False
NUM_CPUS = 2
NUM_SLOTS = 2
START = isLucky(7)
"""


def test_a_built_startd_evaluates_with_its_plugins_functions(tmp_path: Path) -> None:
    """The startd's configuration carries the plugin's function: a query calling it selects
    ads, and START calling it folds into Requirements = True."""
    (tmp_path / "local").mkdir()
    (tmp_path / "condor_config").write_text(CONFIG.format(local=tmp_path / "local"))
    plugins = load_plugins(entry_points_group=None, extra=[("lucky", FunctionOffer(LUCKY))])
    startd = build_startd(str(tmp_path / "condor_config"), plugins=plugins)
    functions = startd.config.eval_context.functions
    assert functions is not None and "islucky" in functions
    assert len(startd.query("isLucky(SlotID * 7)")) == 2
    assert startd.query("isLucky(SlotID)") == []
    assert all(str(ad["Requirements"]) == "true" for ad in startd.query())
