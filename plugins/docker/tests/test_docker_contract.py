"""The docker plugin honours epcore's contract for container runtimes (epcore.testing): the
part that needs no daemon with a configuration pointing nowhere, and all of it with dockerd."""

from __future__ import annotations

from pathlib import Path
from types import ModuleType

import epcore_docker.plugin
import pytest
from runtime_helpers import run_label

from epcore.classad import ClassAd
from epcore.config import Config
from epcore.testing.contracts import ContainerRuntimeContract


class TestDockerRuntimeContract(ContainerRuntimeContract):
    """The plugin's runtime, built for a configuration with no docker daemon."""

    config_text = "DOCKER_URL = unix:///nonexistent/epcore-contract.sock\n"

    @pytest.fixture
    def plugin(self) -> ModuleType:
        """The plugin module, as its entry point names it."""
        return epcore_docker.plugin


@pytest.mark.docker
class TestDockerRuntimeContractWithDaemon(ContainerRuntimeContract):
    """The plugin's runtime runs the contract's container in the local dockerd."""

    runtime_name = "docker"

    @pytest.fixture
    def plugin(self) -> ModuleType:
        """The plugin module, as its entry point names it."""
        return epcore_docker.plugin

    @pytest.fixture
    def config(self, spool: Path, run_tag: str) -> Config:
        """SPOOL of this module, and this run's label on every container made."""
        text = f"SPOOL = {spool}\nDOCKER_EXTRA_ARGUMENTS = {run_label(run_tag)}\n"
        return Config.from_text(text, defaults=epcore_docker.plugin.ep_config_defaults())

    @pytest.fixture
    def job_ad(self, busybox_image: str) -> ClassAd:
        """A job asking for docker with the session's busybox image."""
        return ClassAd({"WantDocker": True, "DockerImage": busybox_image, "Owner": "smith"})

    @pytest.fixture
    def container_sandbox(self, sandbox: Path) -> Path:
        """A sandbox the job's account (nobody) owns, outside pytest's private tmp tree."""
        return sandbox
