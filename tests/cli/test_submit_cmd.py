"""``ep submit`` in a process of its own: what it sends, and what its start-up imports."""

from __future__ import annotations

import json
import socket
import subprocess
import sys
import threading
from collections.abc import Iterator
from pathlib import Path

import pytest

from epcore.classad import ClassAd, parse_ad
from epcore.runtime import framing
from epcore.runtime.control import answer

#: Modules ``ep submit`` must not import (unless the bare interpreter already has): each
#: costs every submission's start-up and none is needed to submit a job.
NOT_IMPORTED = (
    "psutil",  # host facts are read from the kernel directly
    "subprocess",  # only an ``include command`` line of a configuration runs one
    "epcore.classad.functions",  # answers are data; the job ads are not evaluated here
    "hashlib",
    "epcore.config.memory_host",  # the fake hosts of tests and the simulator
    "epcore.submit.match_refs",  # the schedd's, when a job matches
    "epcore.config.code_defaults",  # the fallbacks daemons apply to unset knobs
    "sqlite3",
    "logging",
    "pluggy",
    "regex",
    "epcore.views",
    "epcore.schedd",
    "epcore.interfaces",
    "epcore.plugins",
)

#: Runs ``ep submit`` as the ep script does, then reports the process's modules.
SCRIPT = """\
import json, sys
from epcore.cli.main import main
seen = {}
try:
    main(sys.argv[1:])
except SystemExit as stop:
    status = stop.code
print(json.dumps({"status": status, "modules": sorted(sys.modules), **seen}))
"""


class FakePool:
    """A pool socket that answers NewCluster and Submit, and keeps the requests it got."""

    def __init__(self, path: Path) -> None:
        self.path = str(path)
        self.requests: list[ClassAd] = []
        self._server = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        self._server.bind(self.path)
        self._server.listen(8)
        self._thread = threading.Thread(target=self._serve, daemon=True)
        self._thread.start()

    def _serve(self) -> None:
        while True:
            try:
                connection, _ = self._server.accept()
            except OSError:
                return
            with connection:
                request = parse_ad(framing.read_line(connection).decode())
                self.requests.append(request)
                if request.evaluate("Command") == "NewCluster":
                    reply = answer(True, ClusterId=7)
                else:
                    reply = answer(True, JobIds=["7.0"])
                connection.sendall(framing.encode(reply))

    def close(self) -> None:
        self._server.shutdown(socket.SHUT_RDWR)
        self._server.close()
        self._thread.join(10)


@pytest.fixture
def pool(tmp_path: Path) -> Iterator[FakePool]:
    """A fake pool listening in ``tmp_path``."""
    fake = FakePool(tmp_path / "pool.sock")
    yield fake
    fake.close()


def _run(code: str, args: list[str], cwd: Path) -> dict[str, object]:
    done = subprocess.run(
        [sys.executable, "-c", code, *args],
        cwd=cwd,
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
    )
    assert done.returncode == 0, done.stderr
    report = json.loads(done.stdout.splitlines()[-1])
    assert isinstance(report, dict)
    return report


#: SCRIPT, also reporting the collector's state while the command runs: when it first
#: connects to the pool, after start-up.
WATCHING_SCRIPT = SCRIPT.replace(
    "seen = {}",
    """seen = {}
import gc
def audit(event, args):
    if event == "socket.connect" and not seen:
        seen.update(gc_enabled=gc.isenabled(), frozen=gc.get_freeze_count())
sys.addaudithook(audit)""",
)


def _submit(tmp_path: Path, pool: FakePool, script: str = SCRIPT) -> dict[str, object]:
    (tmp_path / "job.sub").write_text("executable = /bin/true\narguments = a b\nqueue\n")
    config = tmp_path / "condor_config"
    config.write_text("JOB_DEFAULT_REQUESTMEMORY = 64\n")
    args = ["submit", "job.sub", "--config", str(config), "--pool", pool.path]
    return _run(script, args, tmp_path)


def test_submit_sends_one_new_cluster_and_the_jobs(tmp_path: Path, pool: FakePool) -> None:
    """The process asks for a cluster, then sends the job of it, built with the defaults of
    the configuration --config names (read although --pool names the socket)."""
    report = _submit(tmp_path, pool)
    assert report["status"] == 0
    assert [r.evaluate("Command") for r in pool.requests] == ["NewCluster", "Submit"]
    cluster_ad = pool.requests[1].evaluate("ClusterAd")
    assert isinstance(cluster_ad, ClassAd)
    assert cluster_ad.evaluate("ClusterId") == 7
    assert cluster_ad.evaluate("RequestMemory") == 64


def test_submit_start_up_imports_nothing_it_does_not_need(tmp_path: Path, pool: FakePool) -> None:
    """A whole submission imports none of the modules a submission has no use for (psutil,
    the ClassAd function library, sqlite3, the roles...), beyond what the bare interpreter
    itself loaded."""
    bare = _run(
        "import json, sys\nprint(json.dumps({'modules': sorted(sys.modules)}))", [], tmp_path
    )
    report = _submit(tmp_path, pool)
    assert report["status"] == 0
    modules, bare_modules = report["modules"], bare["modules"]
    assert isinstance(modules, list) and isinstance(bare_modules, list)
    loaded = set(modules) - set(bare_modules)
    assert "epcore.submit" in loaded
    unwanted = {
        name
        for name in loaded
        for prefix in NOT_IMPORTED
        if name == prefix or name.startswith(prefix + ".")
    }
    assert not unwanted


def test_the_collector_runs_again_once_the_command_is_loaded(
    tmp_path: Path, pool: FakePool
) -> None:
    """main() pauses the cyclic garbage collector only while start-up loads the command: the
    command itself runs with it enabled, start-up's objects frozen out of its passes."""
    report = _submit(tmp_path, pool, WATCHING_SCRIPT)
    assert report["status"] == 0
    assert report["gc_enabled"] is True
    assert isinstance(report["frozen"], int) and report["frozen"] > 10_000
