"""epcore's pytest plugin for these tests, also where its entry point is not installed.

Installed epcore registers ``epcore.testing.fixtures`` through the ``pytest11`` entry point;
a checkout imported without installing does not, so the fixtures are imported here too (a
conftest's fixture of the same name simply takes precedence over the plugin's).
"""

from __future__ import annotations

from epcore.testing.fixtures import fake_clock, fake_host, fake_sysfs, plugins_with

__all__ = ["fake_clock", "fake_host", "fake_sysfs", "plugins_with"]
