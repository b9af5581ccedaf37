"""The scratch filesystem contract kit, run on its own tmpfs backend (root only)."""

from __future__ import annotations

import os

import pytest

from epcore.testing.scratch_contracts import ScratchFilesystemContract, TmpfsScratchPlugin

pytestmark = pytest.mark.skipif(os.geteuid() != 0, reason="mounting a tmpfs needs root")


class TestTmpfsScratchContract(ScratchFilesystemContract):
    backend_name = "tmpfs"
    config_text = "TMPFS_SCRATCH = True\n"

    @pytest.fixture
    def plugin(self) -> object:
        return TmpfsScratchPlugin()
