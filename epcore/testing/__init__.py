"""Test helpers for epcore and for plugin authors: a fake clock, fake machines, fake file trees.

The pytest fixtures (``fake_clock``, ``fake_host``, ``fake_sysfs``, ``plugins_with``) come from
:mod:`epcore.testing.fixtures`, which pytest loads by itself wherever epcore is installed; the
contract test classes plugin authors subclass are in :mod:`epcore.testing.contracts`.

Importing this package reads nothing and starts nothing; it only makes the fakes available.
"""

from __future__ import annotations

from epcore.testing.clock import FakeClock
from epcore.testing.host import FakeMachineHost, FakeSysfs

__all__ = ["FakeClock", "FakeMachineHost", "FakeSysfs"]
