"""Pytest setup of the docker plugin's tests: epcore's test kit and the docker fixtures.

Everything comes from epcore's published test kit, as it would for any plugin: the hypothesis
profiles ("ci" when CI=true; :mod:`epcore.testing.hypothesis_profiles`), the system fixtures
(as_root, run_tag, slot_users, base_cgroup, execute_dir...; :mod:`epcore.testing.system`, whose
``missing``, ``wait_until`` and ``SlotUser`` tests import), a real ``ep startd``
(``startd_factory``, :mod:`epcore.testing.startd`) and a real ``ep run`` pool
(``pool_factory``, ``shared_dir``, :mod:`epcore.testing.pool`); and the docker fixtures
(docker_client, busybox_image, registry, push_image, test_labels; docker_fixtures.py).

No ``__init__.py`` here: test module names must differ from every ``tests/**/test_*.py`` name.
"""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import docker
import pytest

pytest_plugins = [
    "epcore.testing.hypothesis_profiles",
    "epcore.testing.system",
    "epcore.testing.startd",
    "epcore.testing.pool",
    "docker_fixtures",
]

# The runtime tests' shared fixtures. runtime_helpers is imported inside them: at import time
# here it would load the plugin modules above before pytest can rewrite their asserts.


@pytest.fixture(scope="module")
def spool(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The SPOOL of a module's runtimes."""
    return tmp_path_factory.mktemp("spool")


@pytest.fixture(scope="module")
def jobs_dir(run_tag: str, as_root: None) -> Iterator[Path]:
    """Where a module's sandboxes and volume directories are made."""
    from runtime_helpers import jobs_root

    with jobs_root(run_tag) as root:
        yield root


@pytest.fixture
def sandbox(jobs_dir: Path) -> Path:
    """A job sandbox owned by nobody."""
    from runtime_helpers import make_sandbox

    return make_sandbox(jobs_dir)


@pytest.fixture
def no_container_left(run_tag: str, docker_client: docker.DockerClient) -> Iterator[None]:
    """After the test no container of this run is left (release, reclaim and refusals
    leave nothing behind)."""
    from runtime_helpers import containers_of_run

    yield
    assert containers_of_run(docker_client, run_tag) == []
