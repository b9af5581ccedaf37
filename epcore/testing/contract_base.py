"""What every plugin contract shares: loading the plugin strictly, a machine, a config, and
the checks of names and slot-ad attributes (:mod:`epcore.testing.contracts` re-exports them)."""

from __future__ import annotations

import math
import re
from typing import ClassVar

import pytest

from epcore.classad import ERROR, ClassAd, ClassAdSyntaxError, Expr, parse_expr
from epcore.config import Config
from epcore.plugins import Plugins
from epcore.testing.fixtures import plugins_from
from epcore.testing.host import FakeMachineHost
from epcore.types import MachineAttribute, MachineHost

#: Resource, attribute and cron job names become ClassAd attribute and knob names.
IDENTIFIER = re.compile(r"[A-Za-z_][A-Za-z0-9_]*\Z")

#: Attributes the startd computes itself; a plugin that advertised them would corrupt its ads.
RESERVED_ATTRIBUTES = frozenset(
    name.lower()
    for name in [
        "MyType",
        "TargetType",
        "Name",
        "Machine",
        "State",
        "Activity",
        "SlotID",
        "SlotType",
        "Start",
        "Requirements",
        "Rank",
        "Cpus",
        "Memory",
        "Disk",
        "Swap",
        "VirtualMemory",
        "TotalCpus",
        "TotalMemory",
        "TotalDisk",
        "TotalSlots",
        "CurrentTime",
        "MyAddress",
        "EnteredCurrentState",
        "EnteredCurrentActivity",
        "Arch",
        "OpSys",
    ]
)

PLAIN_VALUES = (bool, int, float, str)


def is_plain(value: object) -> bool:
    """A ClassAd value a plugin may hand over: a scalar, or a list of them."""
    if isinstance(value, list | tuple):
        return all(is_plain(item) for item in value)
    if isinstance(value, float):
        return math.isfinite(value)
    return isinstance(value, PLAIN_VALUES)


class PluginContract:
    """What every contract shares: loading the plugin strictly, a machine and a config."""

    #: The hooks the plugin must implement for this contract.
    hooks: ClassVar[tuple[str, ...]] = ()
    #: Configuration text read on top of the defaults (the plugin's own knobs included).
    config_text: ClassVar[str] = ""

    @pytest.fixture
    def plugin(self) -> object:
        """The plugin under test: every subclass must override this fixture."""
        pytest.fail(f"{type(self).__name__} must define a `plugin` fixture returning the plugin")

    @pytest.fixture
    def plugins(self, plugin: object) -> Plugins:
        """The plugin alone, loaded strictly (no built-in or installed plugins)."""
        return plugins_from(plugin)

    @pytest.fixture
    def host(self) -> MachineHost:
        """The machine the plugin is tested on."""
        return FakeMachineHost()

    @pytest.fixture
    def config(self, plugins: Plugins, host: MachineHost) -> Config:
        """``config_text`` read on ``host``, with the knobs the plugin adds."""
        return Config.from_text(self.config_text, host=host, defaults=plugins.config_defaults())

    def contract_hooks(self) -> tuple[str, ...]:
        """The hooks the plugin must implement (``hooks``, unless a contract computes them)."""
        return self.hooks

    def test_implements_the_contract_hooks(self, plugins: Plugins) -> None:
        """The plugin loads strictly and implements the hooks of its contract."""
        (info,) = plugins.describe()
        missing = [hook for hook in self.contract_hooks() if hook not in info.hooks]
        assert not missing, f"the plugin implements {info.hooks}, not {missing}"


def check_attribute(attribute: MachineAttribute) -> None:
    """Assert that ``attribute`` can be put into a slot ad as it is."""
    assert IDENTIFIER.match(attribute.name), f"{attribute!r}: the name is not an identifier"
    assert attribute.name.lower() not in RESERVED_ATTRIBUTES, (
        f"{attribute!r}: the startd computes {attribute.name} itself"
    )
    ad = ClassAd()
    if attribute.expression:
        assert isinstance(attribute.value, str), f"{attribute!r}: expression text expected"
        try:
            ad[attribute.name] = parse_expr(attribute.value)
        except ClassAdSyntaxError as error:
            raise AssertionError(f"{attribute!r}: the expression does not parse: {error}") from None
    else:
        assert isinstance(attribute.value, Expr) or is_plain(attribute.value), (
            f"{attribute!r}: {attribute.value!r} is not a ClassAd value"
        )
        ad[attribute.name] = attribute.value
        assert ad.evaluate(attribute.name) is not ERROR, f"{attribute!r} evaluates to error"
