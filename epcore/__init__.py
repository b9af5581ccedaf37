"""epcore: HTCondor's Execution Point as a pip-installable Python framework.

Importing this package has no side effects: no plugin is loaded, no file is read.
"""

from __future__ import annotations

__version__ = "0.1.0"

__all__ = ["__version__"]
