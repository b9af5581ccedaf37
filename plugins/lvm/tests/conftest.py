"""Pytest setup of the lvm plugin's tests: epcore's test kit (the system fixtures, a startd in
the test's process, the qemu guest).

No ``__init__.py`` here: test module names must differ from every ``tests/**/test_*.py`` name.
"""

from __future__ import annotations

pytest_plugins = [
    "epcore.testing.hypothesis_profiles",
    "epcore.testing.system",
    "epcore.testing.startd",
    "epcore.testing.guest",
]
