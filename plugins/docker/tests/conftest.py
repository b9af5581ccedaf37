"""Pytest setup of the docker plugin's tests: the repository's test helpers and real fixtures.

pytest does not load the repository's tests/conftest.py for these tests, so the repository's
tests/ directory is put on sys.path here and its plugin modules are loaded by name: the
hypothesis profiles ("ci" when CI=true; tests/hypothesis_profiles.py), the system fixtures
(as_root, run_tag, slot_users, base_cgroup, execute_dir...; tests/system_fixtures.py, whose
``missing``, ``wait_until`` and ``SlotUser`` tests import from ``system_fixtures``) and the docker
fixtures (docker_client, busybox_image, registry, push_image, test_labels; docker_fixtures.py).
``from daemon_process import DaemonProcess`` runs ``ep startd``/``ep run`` for end-to-end tests.

No ``__init__.py`` here: test module names must differ from every ``tests/**/test_*.py`` name.
"""

from __future__ import annotations

import sys
from pathlib import Path

REPOSITORY_TESTS = Path(__file__).resolve().parents[3] / "tests"
if str(REPOSITORY_TESTS) not in sys.path:
    sys.path.insert(0, str(REPOSITORY_TESTS))

pytest_plugins = ["hypothesis_profiles", "system_fixtures", "docker_fixtures"]
