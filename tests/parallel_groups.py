"""Which tests share a pytest-xdist worker: a pytest plugin module, loaded through
``pytest_plugins`` by tests/conftest.py.

The suite runs in parallel (``-n 4 --dist loadgroup``, README's test command). Most tests are
independent and go to whichever worker is free. Tests that use the machine itself are grouped
(pytest-xdist's ``xdist_group`` marker), and a group runs whole on one worker, one test after the
other, so that they do not fight over it:

- ``docker``: every test of a running dockerd (one image store, one disk);
- ``venv``: real virtual environments and pip installs;
- ``system:<directory>``: the real jobs, startds and pools run as root (slot users, cgroups, PID
  namespaces), one group per test directory, so that a directory's real jobs run one at a
  time while the directories' groups run side by side. A group named after the directory rather
  than a marker on each module survives moves of test modules between directories.

Every group runs side by side with the others, so what a test makes on the machine stays unique
to its worker process (epcore.testing.system: run tags, slot users, cgroups, tracking ids).
"""

from __future__ import annotations

from pathlib import Path

import pytest

#: A test using this fixture (directly or through another) talks to the real dockerd: the
#: docker plugin's tests/docker_fixtures.py builds every docker fixture on it.
DOCKER_FIXTURE = "docker_client"
#: A test using this fixture does things only root may on the machine (epcore.testing.system).
ROOT_FIXTURE = "as_root"


def group_of(item: pytest.Item, root: Path) -> str | None:
    """The xdist group ``item`` belongs to, or None for a test any worker may take."""
    fixtures = getattr(item, "fixturenames", ())
    if DOCKER_FIXTURE in fixtures or item.get_closest_marker("docker") is not None:
        return "docker"
    if item.get_closest_marker("venv") is not None:
        return "venv"
    if ROOT_FIXTURE not in fixtures and item.get_closest_marker("system") is None:
        return None
    directory = item.path.parent
    where = directory.relative_to(root) if directory.is_relative_to(root) else directory
    return f"system:{where.as_posix()}"


# First: pytest-xdist's own hook reads the groups to name the tests for its scheduler, and the
# plugins' hooks that add markers (the docker marker) may run after it, hence fixtures above.
@pytest.hookimpl(tryfirst=True)
def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    """Put every test of the machine in its xdist group."""
    if not config.pluginmanager.hasplugin("xdist"):
        return
    for item in items:
        if item.get_closest_marker("xdist_group") is not None:
            continue
        group = group_of(item, config.rootpath)
        if group is not None:
            item.add_marker(pytest.mark.xdist_group(group))
