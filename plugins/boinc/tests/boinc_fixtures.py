"""The boinc plugin's test fixtures: ``boinc_home``, a client data directory attached to the
test project (project_server.py), which the client serves itself inside its loopback-only
network namespace: BOINC_Executable is a wrapper that starts the project on 127.0.0.1 there
and then execs the real client; and ways to find the client's processes and tasks."""

from __future__ import annotations

import pwd
import shutil
from pathlib import Path

import attrs
import psutil
import pytest
from epcore_boinc.rpc import BoincRpcError, GuiRpc, Task
from project_server import prepare_data_dir

CLIENT = "/usr/bin/boinc"
#: The project's port inside the client's own network namespace (nothing else listens there).
PORT = 31555
HERE = Path(__file__).resolve().parent

WRAPPER = """\
#!/bin/sh
# The test project, on 127.0.0.1 in the client's network namespace, then the client itself.
export PATH=/usr/bin:/bin
/usr/bin/python3 {server} {port} {state} {units} {seconds} >> {state}/project.out 2>&1 &
exec {client} "$@"
"""


@attrs.frozen
class BoincHome:
    """A client's data directory (owned by nobody) attached to the test project, the wrapper
    to run as BOINC_Executable, and the configuration that runs it as backfill."""

    data: Path
    wrapper: Path
    state: Path

    def config(self, extra: str = "") -> str:
        return (
            "ENABLE_BACKFILL = True\nBACKFILL_SYSTEM = BOINC\nSTART_BACKFILL = True\n"
            f"BOINC_HOME = {self.data}\nBOINC_Executable = {self.wrapper}\n"
            "BOINC_Universe = vanilla\nBOINC_InitialDir = $(BOINC_HOME)\nBOINC_Owner = nobody\n"
            "BOINC_Output = $(BOINC_HOME)/boinc.out\nBOINC_Error = $(BOINC_HOME)/boinc.err\n"
            "BOINC_Arguments = --no_info_fetch --no_gpus --skip_cpu_benchmarks "
            "--allow_multiple_clients\nBOINC_NETWORK = loopback\n" + extra
        )

    def project_log(self) -> str:
        path = self.state / "project.log"
        return path.read_text() if path.exists() else ""


def make_boinc_home(top: Path, *, units: int = 6, seconds: float = 600.0) -> BoincHome:
    """A BoincHome under ``top`` (a directory nobody can reach)."""
    nobody = pwd.getpwnam("nobody")
    state = top / "project"
    state.mkdir()
    shutil.copy(HERE / "project_server.py", state / "project_server.py")
    data = top / "boinc"
    data.mkdir()
    prepare_data_dir(str(data), PORT, nobody.pw_uid, nobody.pw_gid)
    wrapper = top / "boinc_wrapper.sh"
    wrapper.write_text(
        WRAPPER.format(
            server=state / "project_server.py",
            port=PORT,
            state=state,
            units=units,
            seconds=seconds,
            client=CLIENT,
        )
    )
    wrapper.chmod(0o755)
    state.chmod(0o777)
    return BoincHome(data, wrapper, state)


@pytest.fixture
def boinc_client() -> str:
    """The BOINC client program (Debian's boinc-client)."""
    # Imported here: pytest_plugins registers the module first, so its asserts are rewritten.
    from epcore.testing.system import missing

    if shutil.which("unshare") is None or not Path(CLIENT).exists():
        missing(f"no BOINC client at {CLIENT} (apt-get install boinc-client)")
    return CLIENT


@pytest.fixture
def boinc_home(shared_dir: Path, boinc_client: str, as_root: None) -> BoincHome:
    """A client data directory attached to the test project, under ``shared_dir``."""
    return make_boinc_home(shared_dir)


#: How long the client may take to fetch the project's work and start computing: the
#: master page, the first scheduler RPC (the client waits a few seconds), the downloads.
FIRST_TASK_SECONDS = 90


def running_tasks(home: BoincHome) -> list[Task]:
    """The tasks the client of ``home`` computes now (none when it does not answer)."""
    try:
        return [task for task in GuiRpc(str(home.data), timeout=1.0).tasks() if task.running]
    except BoincRpcError:
        return []


def boinc_processes(home: BoincHome) -> list[psutil.Process]:
    """The client, its tasks and the project of ``home`` (by their working directory)."""
    found = []
    for process in psutil.process_iter(["username"]):
        try:
            if process.info["username"] == "nobody" and process.cwd().startswith(
                str(home.data.parent)
            ):
                found.append(process)
        except psutil.Error:
            continue
    return found
