"""epcore: HTCondor's Execution Point as a pip-installable Python framework.

The public modules, stable for plugins and embedding: ``epcore`` itself (:data:`hookimpl`),
:mod:`epcore.api` (the published API for plugins: hold and vacate codes, user files, cgroups,
host readings, list splitting), :mod:`epcore.classad`, :mod:`epcore.config`,
:mod:`epcore.errors`, :mod:`epcore.types`, :mod:`epcore.hookspecs`, and for tests
:mod:`epcore.testing`. Everything else is internal and may change in any release.

Importing this package has no side effects: no plugin is loaded, no file is read.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

if TYPE_CHECKING:
    import pluggy

    #: Marks a plugin function as the implementation of a hook of :mod:`epcore.hookspecs`.
    hookimpl: pluggy.HookimplMarker

__version__ = "0.1.0"


def __getattr__(name: str) -> object:
    # hookimpl is made on first use: every ``ep`` command imports this package, and most of
    # them (``ep --version``, ``ep submit``) load no plugin and need not import pluggy.
    if name == "hookimpl":
        import pluggy

        marker = pluggy.HookimplMarker("epcore")
        globals()["hookimpl"] = marker
        return marker
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


__all__ = ["__version__", "hookimpl"]
