"""The backends a startd builds from its plugins (epcore.startd.backends)."""

from __future__ import annotations

import logging

import pytest

from epcore.config import Config
from epcore.errors import ConfigError
from epcore.plugins import load_plugins
from epcore.startd.backends import container_runtimes, runtime_attributes
from epcore.testing.offers import BackendOffer
from epcore.types import BackendSpec, MachineAttribute


class Advertiser:
    """A runtime that only advertises (enough for the startd's side of runtimes)."""

    def __init__(self, name: str, attributes: list[MachineAttribute]) -> None:
        self.name = name
        self.attributes = attributes

    def machine_attributes(self) -> list[MachineAttribute]:
        return self.attributes

    def start(self) -> None:
        raise AssertionError("not started here")


def _broken(config: Config) -> object:
    raise ConfigError("FAKE_RUNTIME_KNOB is broken")


def test_runtimes_are_built_and_broken_ones_left_out(caplog: pytest.LogCaptureFixture) -> None:
    """A runtime whose factory raises, or that cannot start jobs, is logged and left out;
    the others are built for the configuration."""
    good = Advertiser("good", [MachineAttribute("HasGood", True)])
    offer = BackendOffer(
        BackendSpec("container", "broken", _broken),
        BackendSpec("container", "startless", lambda config: object()),
        BackendSpec("container", "good", lambda config: good),
    )
    plugins = load_plugins(entry_points_group=None, extra=[("offer", offer)])
    log = logging.getLogger("test.backends")
    with caplog.at_level(logging.INFO, logger="test.backends"):
        built = container_runtimes(plugins, Config.from_text(""), log)
        attributes = runtime_attributes(built, log)
    assert [runtime.name for runtime in built] == ["good"]
    assert attributes == [MachineAttribute("HasGood", True)]
    assert "FAKE_RUNTIME_KNOB is broken" in caplog.text
    assert "startless offers no start()" in caplog.text
    assert "HasGood = True" in caplog.text
