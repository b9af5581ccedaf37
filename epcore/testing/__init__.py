"""Test helpers for epcore and for plugin authors: a fake clock, fake machines, fake file trees.

The pytest fixtures (``fake_clock``, ``fake_host``, ``fake_sysfs``, ``plugins_with``) come from
:mod:`epcore.testing.fixtures`, which pytest loads by itself wherever epcore is installed; the
contract test classes plugin authors subclass are in :mod:`epcore.testing.contracts`.
:class:`Plugins` is the plugin manager ``plugins_with`` gives, for a test's annotations.

Real components, for end-to-end tests (load them with ``pytest_plugins`` in a root conftest.py):
:mod:`epcore.testing.system` (root, slot users, cgroups, and skip-or-fail under CI=true),
:mod:`epcore.testing.startd` (a real ``ep startd``, or a startd in the test's process),
:mod:`epcore.testing.pool` (a real ``ep run`` pool and ``ep`` commands run as users),
:mod:`epcore.testing.venv` (a real virtual environment to pip-install a plugin into),
:mod:`epcore.testing.guest` (a Debian 12 guest under qemu TCG, for what this kernel lacks:
device-mapper, cgroup v2 with controllers) and
:mod:`epcore.testing.hypothesis_profiles` (the project's hypothesis profiles and memory limit).

Importing this package reads nothing and starts nothing; it only makes the fakes available.
"""

from __future__ import annotations

from epcore.plugins import Plugins
from epcore.testing.clock import FakeClock
from epcore.testing.host import FakeMachineHost, FakeSysfs

__all__ = ["FakeClock", "FakeMachineHost", "FakeSysfs", "Plugins"]
