"""Contract tests for power backend plugins (``ep_power_backends``).

What a power backend's author must pass without putting the test machine to sleep: the plugin
offers well-named specs whose factories build a :class:`~epcore.types.PowerBackend` of that
name without touching the machine; the backend names only states S1..S5 (each once, in
order); its Wake-on-LAN facts, when it has any, are well-formed (a lower-case hardware
address, dotted-quad mask and address, masks within ethtool's bits); and entering a state it
does not offer is a :class:`~epcore.errors.PowerError`, not a crash or a sleep. ``config_text``
points the backend at a fake machine (a sysfs root, a fake ethtool answer)::

    class TestLinuxPower(PowerBackendContract):
        backend_name = "linux"
        config_text = "POWER_SYSFS_ROOT = /nonexistent\\n"

        @pytest.fixture
        def plugin(self):
            return epcore.builtin.power
"""

from __future__ import annotations

import ipaddress
import re
from typing import ClassVar

import pytest

from epcore.config import Config
from epcore.errors import PowerError
from epcore.plugins import Plugins
from epcore.testing.contract_base import PluginContract
from epcore.types import PowerBackend

_STATES = ("S1", "S2", "S3", "S4", "S5")
_MAC = re.compile(r"^[0-9a-f]{2}(:[0-9a-f]{2}){5}$")
#: Every Wake-on-LAN bit ethtool defines (WAKE_PHY .. WAKE_FILTER).
_WOL_BITS = 0xFF


class PowerBackendContract(PluginContract):
    """The contract of a power backend named ``backend_name`` (module docstring)."""

    hooks: ClassVar[tuple[str, ...]] = ("ep_power_backends",)
    backend_name: ClassVar[str] = ""

    @pytest.fixture
    def backend(self, plugins: Plugins, config: Config) -> PowerBackend:
        """The backend ``backend_name`` built for ``config``."""
        specs = {spec.name: spec for spec in plugins.power_backends()}
        assert self.backend_name in specs, f"no power backend {self.backend_name!r}: {specs}"
        return plugins.build_power_backend(specs[self.backend_name], config)

    def test_backend_is_built_under_its_name(self, backend: PowerBackend) -> None:
        """The factory builds a PowerBackend named as its spec."""
        assert isinstance(backend, PowerBackend)
        assert backend.name == self.backend_name

    def test_states_are_canonical(self, backend: PowerBackend) -> None:
        """The supported states are S1..S5 names, each once, in order (or a PowerError)."""
        try:
            states = backend.supported_states()
        except PowerError:
            return
        assert all(state in _STATES for state in states), states
        assert list(states) == sorted(set(states)), states

    def test_wake_on_lan_facts_are_well_formed(self, backend: PowerBackend) -> None:
        """The public interface's facts use HTCondor's formats and ethtool's bits."""
        facts = backend.wake_on_lan()
        if facts is None:
            return
        assert facts.interface
        assert _MAC.match(facts.hardware_address), facts.hardware_address
        ipaddress.IPv4Address(facts.subnet_mask)
        ipaddress.IPv4Address(facts.ip_address)
        assert 0 <= facts.supported <= _WOL_BITS
        assert 0 <= facts.enabled <= _WOL_BITS

    def test_entering_an_unoffered_state_is_a_power_error(self, backend: PowerBackend) -> None:
        """Asked for a state it does not offer, the backend raises PowerError (it must not
        put the machine to sleep in a way it did not announce)."""
        try:
            offered = backend.supported_states()
        except PowerError:
            offered = ()
        missing = [state for state in _STATES if state not in offered]
        if not missing:
            pytest.skip("the backend offers every state")
        with pytest.raises(PowerError):
            backend.enter(missing[0])
