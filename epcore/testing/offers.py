"""Ready-made plugins for tests: offer backend specs or ClassAd functions without writing
their hooks again."""

from __future__ import annotations

from epcore import hookimpl
from epcore.classad import EvalContext
from epcore.plugins import load_plugins
from epcore.types import ClassAdFunction, ContainerRuntimeSpec, IsolationBackendSpec


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


class FunctionOffer:
    """A plugin offering ClassAd ``functions`` (``ep_classad_functions``); its
    :meth:`eval_context` is what a daemon loading it alone evaluates with."""

    def __init__(self, *functions: ClassAdFunction) -> None:
        self.functions = functions

    @hookimpl
    def ep_classad_functions(self) -> list[ClassAdFunction]:
        """The functions."""
        return list(self.functions)

    def eval_context(self) -> EvalContext:
        """The built-in functions and these, as the plugin manager puts them together."""
        offer = [("functions", self)]
        return load_plugins(builtins=False, entry_points_group=None, extra=offer).eval_context()
