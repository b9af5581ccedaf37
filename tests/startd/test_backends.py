"""The backends a startd builds from its plugins (epcore.startd.backends)."""

from __future__ import annotations

import logging

import pytest

from epcore.config import Config
from epcore.errors import ConfigError
from epcore.plugins import load_plugins
from epcore.startd.backends import container_runtimes, runtime_attributes
from epcore.testing.offers import BackendOffer
from epcore.types import ContainerRuntimeSpec, MachineAttribute


class Advertiser:
    """A runtime that only advertises (enough for the startd's side of runtimes)."""

    def __init__(self, name: str, attributes: list[MachineAttribute]) -> None:
        self.name = name
        self.attributes = attributes

    def machine_attributes(self) -> list[MachineAttribute]:
        return self.attributes

    def runs(self, job: object, machine: object | None = None) -> bool:
        return False

    def start(self, request: object, log: object) -> object:
        raise AssertionError("not started here")

    def sweep(self, keep: object, prefixes: object) -> tuple[str, ...]:
        return ()

    def reclaim(self, job_key: str) -> bool:
        return False


def _broken(config: Config) -> Advertiser:
    raise ConfigError("FAKE_RUNTIME_KNOB is broken")


def test_runtimes_are_built_and_broken_ones_left_out(caplog: pytest.LogCaptureFixture) -> None:
    """A runtime whose factory raises, or that cannot start jobs, is logged and left out;
    the others are built for the configuration."""
    good = Advertiser("good", [MachineAttribute("HasGood", True)])
    offer = BackendOffer(
        ContainerRuntimeSpec("broken", _broken),
        ContainerRuntimeSpec("startless", lambda config: object()),
        ContainerRuntimeSpec("good", lambda config: good),
    )
    plugins = load_plugins(entry_points_group=None, extra=[("offer", offer)])
    log = logging.getLogger("test.backends")
    with caplog.at_level(logging.INFO, logger="test.backends"):
        built = container_runtimes(plugins, Config.from_text(""), log)
        attributes = runtime_attributes(built, log)
    assert [runtime.name for runtime in built] == ["good"]
    assert attributes == [MachineAttribute("HasGood", True)]
    assert "FAKE_RUNTIME_KNOB is broken" in caplog.text
    assert "the factory of startless built <object" in caplog.text
    assert "HasGood = True" in caplog.text
