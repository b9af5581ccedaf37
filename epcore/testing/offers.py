"""Ready-made plugins for tests: offer backend specs without writing their hooks again."""

from __future__ import annotations

from epcore import hookimpl
from epcore.types import ContainerRuntimeSpec, IsolationBackendSpec


class BackendOffer:
    """A plugin offering ``specs``, each through the hook of its kind (isolation backends,
    container runtimes); register it with ``load_plugins(extra=[(name, offer)])``."""

    def __init__(self, *specs: IsolationBackendSpec | ContainerRuntimeSpec) -> None:
        self.specs = specs

    @hookimpl
    def ep_isolation_backends(self) -> list[IsolationBackendSpec]:
        """The isolation specs."""
        return [spec for spec in self.specs if isinstance(spec, IsolationBackendSpec)]

    @hookimpl
    def ep_container_runtimes(self) -> list[ContainerRuntimeSpec]:
        """The container runtime specs."""
        return [spec for spec in self.specs if isinstance(spec, ContainerRuntimeSpec)]
