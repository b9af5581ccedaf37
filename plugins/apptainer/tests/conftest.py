"""Pytest setup of the apptainer plugin's tests: epcore's test kit and the apptainer fixtures.

Everything comes from epcore's published test kit, as it would for any plugin (the system
fixtures, a real ``ep run`` pool), plus apptainer_fixtures.py: the runtime the tests use (a
real ``apptainer`` on PATH, else the stand-in in ``standin/``), the test images and a local
registry. No ``__init__.py`` here: test module names must differ from every other
``test_*.py`` name.
"""

from __future__ import annotations

pytest_plugins = [
    "epcore.testing.hypothesis_profiles",
    "epcore.testing.system",
    "epcore.testing.startd",
    "epcore.testing.pool",
    "apptainer_fixtures",
]
