"""The sample plugin's own tests, written as a plugin author writes them.

No conftest: the fixtures (``plugins_with``, ``fake_host``) come from epcore's pytest plugin,
which installing epcore registers; the contract classes come from ``epcore.testing.contracts``.
"""

from __future__ import annotations

from collections.abc import Callable
from types import ModuleType

import epcore_sample_plugin.plugin as sample
import pytest

from epcore.classad import ERROR, ClassAd, parse_expr
from epcore.config import Config
from epcore.testing import Plugins
from epcore.testing.contracts import DetectorContract, MachineAttributesContract
from epcore.testing.host import FakeMachineHost


class TestSampleDetector(DetectorContract):
    """The Cogs detector keeps the detector contract."""

    expected_resources = ("Cogs",)

    @pytest.fixture
    def plugin(self) -> ModuleType:
        """The plugin module under test."""
        return sample


class TestSampleAttributes(MachineAttributesContract):
    """The SampleSite attribute keeps the attributes contract."""

    expected_attributes = ("SampleSite",)

    @pytest.fixture
    def plugin(self) -> ModuleType:
        """The plugin module under test."""
        return sample


def test_cogs_follow_the_knob(
    plugins_with: Callable[..., Plugins], fake_host: FakeMachineHost
) -> None:
    """SAMPLE_COGS = 7 in the configuration makes 7 cogs."""
    plugins = plugins_with(sample)
    config = Config.from_text(
        "SAMPLE_COGS = 7\n", host=fake_host, defaults=plugins.config_defaults()
    )
    (cogs,) = plugins.detect_resources(config, fake_host)
    assert (cogs.name, cogs.quantity) == ("Cogs", 7)


@pytest.mark.parametrize(("number", "start"), [(14, True), (3, False), ("x", ERROR)])
def test_sample_lucky_decides_start(
    plugins_with: Callable[..., Plugins], number: object, start: object
) -> None:
    """START = sampleLucky(TARGET.LuckyNumber) takes multiples of 7, refuses other numbers,
    and is an error for anything but an integer."""
    context = plugins_with(sample).eval_context()
    slot = ClassAd({"Start": parse_expr("sampleLucky(TARGET.LuckyNumber)")})
    job = ClassAd({"LuckyNumber": number})
    assert slot.evaluate("Start", target=job, context=context) is start
