"""The stand-in (or a real apptainer) answers the calls spython makes: it is a runtime other
tools can drive, not one shaped around the plugin."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

pytestmark = pytest.mark.system


@pytest.fixture
def spython_client(runtime_dir: Path, monkeypatch: pytest.MonkeyPatch) -> object:
    """spython's client, finding the runtime as ``singularity`` on PATH (its one name)."""
    client_module = pytest.importorskip("spython.main")
    monkeypatch.setenv("PATH", f"{runtime_dir}:{os.environ['PATH']}")
    return client_module.Client


def test_spython_version_exec_and_inspect(spython_client: object, sandbox_image: str) -> None:
    """spython's version, execute (with a bind) and inspect work against the runtime."""
    client = spython_client
    assert " version " in client.version()  # type: ignore[attr-defined]
    result = client.execute(  # type: ignore[attr-defined]
        sandbox_image, ["cat", "/etc/os-release"], bind=["/tmp:/mnt"], return_result=True
    )
    assert result["return_code"] == 0
    assert "epcore test image" in result["message"]
    inspected = client.inspect(sandbox_image, quiet=True)  # type: ignore[attr-defined]
    assert isinstance(inspected, dict)
