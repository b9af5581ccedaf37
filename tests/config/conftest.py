"""Fixtures of the configuration tests: the local host (the oracle is in tests/conftest.py)."""

from __future__ import annotations

import pytest

from epcore.builtin.host import LocalHost


@pytest.fixture(scope="session")
def local_host() -> LocalHost:
    """The real machine, detected once per session (the oracle sees the same machine)."""
    return LocalHost()
