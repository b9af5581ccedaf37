"""epcore: HTCondor's Execution Point as a pip-installable Python framework.

Importing this package has no side effects: no plugin is loaded, no file is read.
"""

from __future__ import annotations

import pluggy

__version__ = "0.1.0"

#: Marks a plugin function as the implementation of a hook of :mod:`epcore.hookspecs`.
hookimpl = pluggy.HookimplMarker("epcore")

__all__ = ["__version__", "hookimpl"]
