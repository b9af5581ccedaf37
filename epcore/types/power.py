"""Power backends (``ep_power_backends``): putting the machine to sleep and what waking it needs."""

from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING, Protocol, runtime_checkable

import attrs

if TYPE_CHECKING:
    from epcore.config import Config


#: Wake-on-LAN bits of the kernel's ethtool interface (``WAKE_*`` in linux/ethtool.h).
WAKE_MAGIC = 0x20


@attrs.frozen
class WakeOnLanFacts:
    """The machine's public network interface as a sleeping machine's waker needs it.

    ``supported`` and ``enabled`` are the kernel's Wake-on-LAN bit masks (``ETHTOOL_GWOL``:
    WAKE_PHY 0x1 ... WAKE_MAGIC 0x20, WAKE_MAGICSECURE 0x40); ``hardware_address`` is lower
    case hex with colons, ``subnet_mask`` and ``ip_address`` dotted quads."""

    interface: str
    hardware_address: str
    subnet_mask: str
    ip_address: str
    supported: int = 0
    enabled: int = 0


@runtime_checkable
class PowerBackend(Protocol):
    """Puts the machine to sleep (HTCondor's hibernator): built by a
    :class:`PowerBackendSpec` factory, asked once at startup and at each reconfiguration."""

    name: str

    def supported_states(self) -> tuple[str, ...]:
        """The sleep states the machine offers, as ``S1``..``S5``; PowerError when the
        backend cannot tell (a site script that fails)."""
        ...

    def enter(self, state: str) -> None:
        """Put the machine into ``state`` (``S3``...); returns once it has woken up again
        (the call blocks for as long as the machine sleeps). PowerError when it cannot."""
        ...

    def wake_on_lan(self) -> WakeOnLanFacts | None:
        """The public network interface and its Wake-on-LAN abilities; None when the
        machine has no usable interface."""
        ...


@attrs.frozen
class PowerBackendSpec:
    """A power backend a plugin offers (``ep_power_backends``): its ``name`` and the
    ``factory`` that builds it for a configuration without touching the machine."""

    name: str
    factory: Callable[[Config], PowerBackend]
