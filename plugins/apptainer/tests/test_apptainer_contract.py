"""The apptainer plugin honours epcore's contract for container runtimes (epcore.testing): the
structural part with a runtime that does not exist, and all of it with the test runtime."""

from __future__ import annotations

import os
import tempfile
from collections.abc import Iterator
from pathlib import Path
from types import ModuleType

import epcore_apptainer.plugin
import pytest
from apptainer_helpers import NOBODY

from epcore.classad import ClassAd
from epcore.config import Config
from epcore.testing.contracts import ContainerRuntimeContract


class TestApptainerRuntimeContract(ContainerRuntimeContract):
    """The plugin's runtime, built for a configuration whose runtime does not exist."""

    config_text = "SINGULARITY = /nonexistent/epcore-contract/runtime\n"

    @pytest.fixture
    def plugin(self) -> ModuleType:
        """The plugin module, as its entry point names it."""
        return epcore_apptainer.plugin


@pytest.mark.system
class TestApptainerRuntimeContractRunning(ContainerRuntimeContract):
    """The plugin's runtime runs the contract's job in the session's sandbox image."""

    runtime_name = "apptainer"

    @pytest.fixture
    def plugin(self) -> ModuleType:
        """The plugin module, as its entry point names it."""
        return epcore_apptainer.plugin

    @pytest.fixture
    def config(self, runtime_program: str, tmp_path: Path, as_root: None) -> Config:
        """The test runtime, and a SPOOL for its probe's images."""
        return Config.from_text(f"SINGULARITY = {runtime_program}\nSPOOL = {tmp_path}\n")

    @pytest.fixture
    def job_ad(self, sandbox_image: str) -> ClassAd:
        """A container job whose image is the session's sandbox image."""
        return ClassAd(
            {"WantContainer": True, "WantSandboxImage": True, "ContainerImage": sandbox_image}
        )

    @pytest.fixture
    def container_sandbox(self) -> Iterator[Path]:
        """A sandbox the job's account (nobody) owns, outside pytest's private tree."""
        with tempfile.TemporaryDirectory(prefix="ep_apptainer_contract_") as directory:
            os.chown(directory, NOBODY, NOBODY)
            yield Path(directory)
