"""Fixtures of the ClassAd differential suite: the sample ads in both engines, in a fixed zone."""

from __future__ import annotations

from collections.abc import Iterator

import pytest
from oracle import ORACLE_TZ, World, fixed_timezone
from oracle_child import OracleProcess


@pytest.fixture(scope="session")
def world() -> Iterator[World]:
    """The realistic machine and job ads parsed by epcore and classad2, evaluated in ORACLE_TZ.

    The zone is set for the whole session so that classad2's local-time functions and epcore's
    ``local_offset`` agree; epcore reads it through ``oracle.local_offset``. Generated
    expressions reach classad2 in a child process (see oracle.OracleProcess).
    """
    with fixed_timezone(ORACLE_TZ):
        built = World.build()
        built.process = OracleProcess()
        try:
            yield built
        finally:
            built.process.close()
