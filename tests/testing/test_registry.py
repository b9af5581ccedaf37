"""The test registry (epcore.testing.registry) serves the registry API on loopback and is gone
when its block ends."""

from __future__ import annotations

import urllib.error
import urllib.request
from pathlib import Path

import pytest

from epcore.testing.registry import running_registry


def test_registry_serves_v2_on_loopback_and_stops_after_the_block(tmp_path: Path) -> None:
    """Inside the block the registry answers /v2/ at 127.0.0.1; after it, nothing answers."""
    with running_registry(tmp_path) as address:
        assert address.startswith("127.0.0.1:")
        with urllib.request.urlopen(f"http://{address}/v2/", timeout=5) as response:
            assert response.status == 200
    with pytest.raises((urllib.error.URLError, OSError)):
        urllib.request.urlopen(f"http://{address}/v2/", timeout=2)
    assert (tmp_path / "registry.log").exists()
