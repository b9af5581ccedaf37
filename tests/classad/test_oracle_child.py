"""The classad2 child of the differential suite: a crash of classad2 there costs one example
and prints nothing (no faulthandler dump inherited from the pytest worker it forks from)."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

HERE = Path(__file__).resolve().parent
#: classad2 reads freed memory evaluating this and dies with SIGSEGV (oracle_child's note).
CRASHES = 'split("a b").x'

PROBE = f"""
import faulthandler, sys
sys.path.insert(0, {str(HERE)!r})
faulthandler.enable()  # as pytest enables it in each worker
from oracle import OracleUnstable
from oracle_child import OracleProcess
process = OracleProcess()
try:
    process.call("scene", {CRASHES!r}, 0)
except OracleUnstable:
    print("unstable")
finally:
    process.close()
"""


def test_a_classad2_crash_in_the_child_is_one_unstable_example_and_silent() -> None:
    """The child dies on a known classad2 crash: the caller gets OracleUnstable and the
    process's output has no "Fatal Python error" dump."""
    done = subprocess.run(
        [sys.executable, "-c", PROBE], capture_output=True, text=True, timeout=120, check=False
    )
    assert done.returncode == 0, done.stderr
    assert done.stdout.strip() == "unstable"
    assert "Fatal Python error" not in done.stderr
