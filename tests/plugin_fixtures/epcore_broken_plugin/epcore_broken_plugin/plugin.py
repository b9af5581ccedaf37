"""A plugin module that raises at import, like one whose native library is missing."""

from __future__ import annotations

#: The text of the error, which tests look for in logs and in ``ep plugins``.
MESSAGE = "libgizmo.so.3 is not installed"

raise ImportError(MESSAGE)
