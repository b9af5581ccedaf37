"""Must-show 2 of issue 19: a plugin's ClassAd function used in START decides which jobs a real
``ep run`` pool starts; the same plugin hears of the slots' changes and the job's start and end.

The sample plugin (tests/plugin_fixtures/epcore_sample_plugin) offers ``sampleLucky(n)``, TRUE
for multiples of 7. It is made visible to the pool's interpreter as pip would install it: its
package on the path beside a ``.dist-info`` declaring its ``epcore`` entry point, so the pool
finds it through the entry points like any installed plugin.
"""

from __future__ import annotations

import os
import shutil
import tempfile
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from epcore.classad import UNDEFINED
from epcore.testing.pool import PoolProcess, submit_as
from epcore.testing.system import SlotUser

pytestmark = pytest.mark.system

SAMPLE_SOURCE = Path(__file__).resolve().parents[1] / "plugin_fixtures" / "epcore_sample_plugin"
#: How long the unlucky job is watched after the lucky one finished (NEGOTIATOR_INTERVAL is 2).
WATCH_SECONDS = 8.0


@pytest.fixture
def sample_plugin_installed(monkeypatch: pytest.MonkeyPatch) -> Iterator[Path]:
    """The sample plugin installed where the pool's interpreter finds it (PYTHONPATH)."""
    site = Path(tempfile.mkdtemp(prefix="ep_test_sample_site_"))
    try:
        site.chmod(0o755)
        shutil.copytree(SAMPLE_SOURCE / "epcore_sample_plugin", site / "epcore_sample_plugin")
        dist = site / "epcore_sample_plugin-1.2.0.dist-info"
        dist.mkdir()
        (dist / "METADATA").write_text(
            "Metadata-Version: 2.1\nName: epcore-sample-plugin\nVersion: 1.2.0\n"
        )
        (dist / "entry_points.txt").write_text("[epcore]\nsample = epcore_sample_plugin.plugin\n")
        paths = [str(site), *filter(None, [os.environ.get("PYTHONPATH")])]
        monkeypatch.setenv("PYTHONPATH", os.pathsep.join(paths))
        monkeypatch.setenv("EPCORE_SAMPLE_EVENTS", str(site / "events"))
        yield site
    finally:
        shutil.rmtree(site, ignore_errors=True)


def _job_status(pool: PoolProcess, cluster: int) -> object:
    """JobStatus of job ``cluster``.0, in the queue or in the history; None when neither."""
    for history in (False, True):
        found = pool.jobs(f"ClusterId == {cluster}", history=history)
        if found:
            return found[0].evaluate("JobStatus")
    return None


def test_a_plugin_function_in_start_decides_which_jobs_run(
    sample_plugin_installed: Path,
    pool_factory,
    slot_users: tuple[SlotUser, ...],
    shared_dir: Path,
) -> None:
    """With START = sampleLucky(TARGET.LuckyNumber), the job whose LuckyNumber is 14 runs to
    completion while the one whose LuckyNumber is 3, submitted first, stays idle; the plugin's
    notification hooks heard the lucky job start and finish, and no more."""
    pool = pool_factory("START = sampleLucky(TARGET.LuckyNumber)\n")
    user = slot_users[0]
    job = "executable = /bin/true\n+LuckyNumber = {number}\nqueue\n"
    submit_as(pool, user, shared_dir, job.format(number=3))
    submit_as(pool, user, shared_dir, job.format(number=14))
    pool.wait_for(lambda: _job_status(pool, 2) == 4, 60, "the lucky job to complete")
    deadline = time.monotonic() + WATCH_SECONDS
    while time.monotonic() < deadline:
        assert _job_status(pool, 1) == 1, "the unlucky job left the idle state"
        time.sleep(0.5)
    (unlucky,) = pool.jobs("ClusterId == 1")
    assert unlucky.evaluate("NumJobStarts") in (0, UNDEFINED)
    events = (sample_plugin_installed / "events").read_text().splitlines()
    assert [e.split(" on ")[0] for e in events if not e.startswith("slot ")] == [
        "started 2.0",
        "finished 2.0",
    ]
    assert any(e.startswith("slot ") and e.endswith(" Claimed/Busy") for e in events), events
