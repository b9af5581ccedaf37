"""Fixtures of the configuration tests: HTCondor's reader as an oracle, and hosts."""

from __future__ import annotations

from collections.abc import Iterator

import pytest
from param_oracle import ParamOracle

from epcore.builtin.host import LocalHost


@pytest.fixture(scope="session")
def param_oracle() -> Iterator[ParamOracle]:
    """htcondor2.param in a server process; every load runs in a fresh child of it."""
    oracle = ParamOracle()
    try:
        yield oracle
    finally:
        oracle.close()


@pytest.fixture(scope="session")
def local_host() -> LocalHost:
    """The real machine, detected once per session (the oracle sees the same machine)."""
    return LocalHost()
