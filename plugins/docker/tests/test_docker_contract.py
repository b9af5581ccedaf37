"""The docker plugin honours epcore's contract for container runtimes (epcore.testing)."""

from __future__ import annotations

from types import ModuleType

import epcore_docker.plugin
import pytest

from epcore.testing.contracts import BackendContract


class TestDockerRuntimeContract(BackendContract):
    """The plugin's container backend, built for a configuration with no docker daemon."""

    kind = "container"
    config_text = "DOCKER_URL = unix:///nonexistent/epcore-contract.sock\n"

    @pytest.fixture
    def plugin(self) -> ModuleType:
        """The plugin module, as its entry point names it."""
        return epcore_docker.plugin
