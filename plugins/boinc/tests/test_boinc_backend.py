"""The client's job ad and preferences as the backend builds them, and the contract every
backfill backend must honour (epcore.testing)."""

from __future__ import annotations

import shutil
from pathlib import Path
from types import ModuleType

import epcore_boinc.plugin
import pytest
from epcore_boinc.backend import BoincBackend, preferences, v2_arguments

from epcore.config import Config
from epcore.testing.contracts import BackfillBackendContract
from epcore.testing.host import FakeMachineHost


def _backend(tmp_path: Path, extra: str = "") -> BoincBackend:
    text = (
        "BOINC_Executable = /bin/sh\nBOINC_Universe = vanilla\n"
        f"BOINC_InitialDir = {tmp_path}\nBOINC_Arguments = --attach_project http://p/ 'a key'\n"
        "BOINC_Output = boinc.out\n" + extra
    )
    return BoincBackend(Config.from_text(text, host=FakeMachineHost()), machine_cpus=4)


def test_v2_arguments_quote_only_what_needs_it() -> None:
    """Plain arguments stay as they are; blanks and quotes go in single quotes, a single
    quote doubled (HTCondor's V2 syntax)."""
    assert v2_arguments(["-c", "a b", "it's", 'say "x"', ""]) == ("-c 'a b' 'it''s' 'say \"x\"' ''")


def test_the_job_runs_the_client_with_its_gui_rpc_socket(tmp_path: Path) -> None:
    """The job is the client with the admin's arguments and --gui_rpc_unix_domain, in
    BOINC_InitialDir, vanilla, with its streams."""
    job = _backend(tmp_path).job()
    assert job.evaluate("Cmd") == "/bin/sh"
    assert job.evaluate("Arguments") == ("--attach_project http://p/ 'a key' --gui_rpc_unix_domain")
    assert job.evaluate("Iwd") == str(tmp_path)
    assert job.evaluate("JobUniverse") == 5
    assert job.evaluate("Out") == "boinc.out"
    assert "Owner" not in job


def test_loopback_runs_the_client_in_a_network_namespace_of_its_own(tmp_path: Path) -> None:
    """BOINC_NETWORK = loopback puts unshare (user and network namespaces) and the script that
    brings loopback up in front of the client."""
    job = _backend(tmp_path, "BOINC_NETWORK = loopback\n").job()
    assert job.evaluate("Cmd") == shutil.which("unshare")
    arguments = str(job.evaluate("Arguments"))
    assert arguments.startswith("--user --map-root-user --net -- /bin/sh -c '")
    assert 'link set lo up && exec "$0" "$@"\' /bin/sh --attach_project' in arguments


@pytest.mark.parametrize(
    ("cpus", "percent"), [(1, "25.00"), (3, "75.00"), (4, "100.00"), (9, "100.00")]
)
def test_preferences_give_the_client_its_share_of_the_machine(cpus: int, percent: str) -> None:
    """max_ncpus_pct is the share of the machine's CPUs, and nothing suspends the client
    because the machine is in use (the startd decides that)."""
    text = preferences(cpus, 4)
    assert f"<max_ncpus_pct>{percent}</max_ncpus_pct>" in text
    assert "<suspend_cpu_usage>0</suspend_cpu_usage>" in text
    assert "<run_if_user_active>1</run_if_user_active>" in text


def test_start_writes_the_preferences_into_the_data_directory(tmp_path: Path) -> None:
    """start(2) leaves global_prefs_override.xml for 2 of 4 CPUs, readable by the client."""
    _backend(tmp_path).start(2)
    written = tmp_path / "global_prefs_override.xml"
    assert "<max_ncpus_pct>50.00</max_ncpus_pct>" in written.read_text()
    assert written.stat().st_mode & 0o777 == 0o644


class TestBoincBackfillContract(BackfillBackendContract):
    """The plugin's BOINC backend, for a client directory of the test's own."""

    backfill_name = "BOINC"
    broken_knob = "BOINC_Executable"

    @pytest.fixture
    def plugin(self) -> ModuleType:
        """The plugin module, as its entry point names it."""
        return epcore_boinc.plugin

    @pytest.fixture
    def backfill_config_text(self, tmp_path: Path) -> str:
        """The seed's knobs, with /bin/sh standing in for the client program."""
        return (
            f"BOINC_Executable = /bin/sh\nBOINC_Universe = vanilla\nBOINC_InitialDir = {tmp_path}\n"
        )

    @pytest.fixture
    def broken_config_text(self, backfill_config_text: str) -> str:
        """The client program is not there."""
        return backfill_config_text + "BOINC_Executable = /nonexistent/boinc_client\n"
