"""Ready-made plugins for tests: offer backend specs without writing the five hooks again."""

from __future__ import annotations

from epcore import hookimpl
from epcore.types import BackendSpec


class BackendOffer:
    """A plugin offering ``specs``, each through the hook of its kind (isolation, container,
    vm, backfill, power); register it with ``load_plugins(extra=[(name, offer)])``."""

    def __init__(self, *specs: BackendSpec) -> None:
        self.specs = specs

    def _of(self, kind: str) -> list[BackendSpec]:
        return [spec for spec in self.specs if spec.kind == kind]

    @hookimpl
    def ep_isolation_backends(self) -> list[BackendSpec]:
        """The isolation specs."""
        return self._of("isolation")

    @hookimpl
    def ep_container_runtimes(self) -> list[BackendSpec]:
        """The container specs."""
        return self._of("container")

    @hookimpl
    def ep_vm_backends(self) -> list[BackendSpec]:
        """The vm specs."""
        return self._of("vm")

    @hookimpl
    def ep_backfill_backends(self) -> list[BackendSpec]:
        """The backfill specs."""
        return self._of("backfill")

    @hookimpl
    def ep_power_backends(self) -> list[BackendSpec]:
        """The power specs."""
        return self._of("power")
