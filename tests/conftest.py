"""Project-wide pytest setup: the hypothesis profiles and example count
(epcore.testing.hypothesis_profiles), the real system fixtures (epcore.testing.system), the seed
documents' directory (tests/seed_documents.py) and the htcondor2.param oracle."""

from __future__ import annotations

from collections.abc import Iterator

import pytest
from param_oracle import ParamOracle

pytest_plugins = [
    "epcore.testing.hypothesis_profiles",
    "epcore.testing.system",
    "epcore.testing.guest",
    "epcore.testing.netns",
    "epcore.testing.netns_pool",
    "seed_documents",
    "parallel_groups",
]


@pytest.fixture(scope="session")
def param_oracle() -> Iterator[ParamOracle]:
    """htcondor2.param in a server process; every load runs in a fresh child of it."""
    oracle = ParamOracle()
    try:
        yield oracle
    finally:
        oracle.close()
