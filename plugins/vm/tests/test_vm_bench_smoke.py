"""benchmarks/vm_bench.py runs end to end with one round, on the tests' libvirtd (a second
libvirtd with the qemu system driver would stop this one), so that it cannot break silently
between sessions (no time is asserted)."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[3]


# One libvirtd per machine holds /run/libvirt: its tests share one worker.
@pytest.mark.xdist_group("libvirtd")
def test_vm_bench_completes_and_prints_its_figures(libvirt_uri: str) -> None:
    """vm_bench with one guest per side boots the guest through virsh create and through a
    VM job of a real pool, brings the job's output disk back, and prints both medians and
    their ratio."""
    env = dict(
        os.environ, PYTHONPATH=os.pathsep.join([str(ROOT), os.environ.get("PYTHONPATH", "")])
    )
    script = str(ROOT / "benchmarks" / "vm_bench.py")
    done = subprocess.run(
        [sys.executable, script, "--rounds", "1", "--libvirt-uri", libvirt_uri],
        cwd=ROOT,
        env=env,
        capture_output=True,
        text=True,
        timeout=600,
        check=False,
    )
    assert done.returncode == 0, done.stderr[-2000:]
    assert "virsh create -> first console line: median" in done.stdout
    assert "ep run submit -> first console line: median" in done.stdout
    assert "ratio epcore / virsh create:" in done.stdout
