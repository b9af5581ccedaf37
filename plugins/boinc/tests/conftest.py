"""Pytest setup of the boinc plugin's tests: epcore's test kit and the boinc fixtures.

From epcore's published test kit, as for any plugin: the hypothesis profiles, the system
fixtures (as_root, slot_users, base_cgroup...; :mod:`epcore.testing.system`), a startd in the
test's process (:mod:`epcore.testing.startd`) and a real ``ep run`` pool (``pool_factory``,
``shared_dir``; :mod:`epcore.testing.pool`); and ours (``boinc_client``, ``boinc_home``;
boinc_fixtures.py).

No ``__init__.py`` here: test module names must differ from every ``tests/**/test_*.py`` name.
"""

from __future__ import annotations

pytest_plugins = [
    "epcore.testing.hypothesis_profiles",
    "epcore.testing.system",
    "epcore.testing.startd",
    "epcore.testing.pool",
    "boinc_fixtures",
]
