"""epcore: HTCondor's Execution Point as a pip-installable Python framework.

The public modules, stable for plugins and embedding: ``epcore`` itself (:data:`hookimpl`),
:mod:`epcore.api` (the published API for plugins: hold and vacate codes, user files, cgroups,
host readings, list splitting), :mod:`epcore.classad`, :mod:`epcore.config`,
:mod:`epcore.errors`, :mod:`epcore.types`, :mod:`epcore.hookspecs`, and for tests
:mod:`epcore.testing`. Everything else is internal and may change in any release.

Importing this package has no side effects: no plugin is loaded, no file is read.
"""

from __future__ import annotations

import pluggy

__version__ = "0.1.0"

#: Marks a plugin function as the implementation of a hook of :mod:`epcore.hookspecs`.
hookimpl = pluggy.HookimplMarker("epcore")

__all__ = ["__version__", "hookimpl"]
