"""Why the plugin does not drive the runtime through spython (see the README): spython runs a
program called ``singularity`` found on PATH whatever SINGULARITY names, and without a
timeout. If a later spython offers both, these tests fail and the plugin can use it."""

from __future__ import annotations

import inspect
import os
import stat
from pathlib import Path

import pytest
from epcore_apptainer.settings import find_runtime


def test_spython_ignores_singularity_and_runs_its_own_name(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """With SINGULARITY naming one program, spython's version call runs ``singularity`` from
    PATH instead, and has no way to be told otherwise."""
    client_module = pytest.importorskip("spython.main")
    calls = tmp_path / "calls"
    for name in ("singularity", "configured"):
        program = tmp_path / name
        program.write_text(f'#!/bin/sh\necho "{name} $*" >> {calls}\necho "{name} version 9"\n')
        program.chmod(program.stat().st_mode | stat.S_IXUSR)
    monkeypatch.setenv("PATH", f"{tmp_path}:{os.environ['PATH']}")
    configured, _ = find_runtime(str(tmp_path / "configured"))
    assert configured == str(tmp_path / "configured")
    client = client_module.Client
    client.version()
    assert calls.read_text().splitlines() == ["singularity --version"]
    assert client._init_command("inspect")[0] == "singularity"


def test_spython_commands_take_no_timeout() -> None:
    """spython's one command runner has no timeout: a hung runtime would hang the startd's
    probe or the starter, which HTCondor bounds (SINGULARITY_TEST_SANDBOX_TIMEOUT)."""
    terminal = pytest.importorskip("spython.utils.terminal")
    assert "timeout" not in inspect.signature(terminal.run_command).parameters
