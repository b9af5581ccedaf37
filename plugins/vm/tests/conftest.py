"""Pytest setup of the VM plugin's tests: epcore's test kit and a private libvirtd.

No ``__init__.py`` here: test module names must differ from every ``tests/**/test_*.py`` name.
"""

from __future__ import annotations

pytest_plugins = ["epcore.testing.system", "epcore.testing.pool", "vm_fixtures"]
