"""``ep status``: the local machine's slots computed from configuration and host, as
condor_status would show them, with -l, -af, -constraint, -json, names and errors."""

from __future__ import annotations

import json
import os
import socket
from pathlib import Path

import pytest
from click.testing import CliRunner, Result

from epcore.classad import parse_ads
from epcore.cli import status_cmd
from epcore.cli.main import ep
from epcore.plugins import load_plugins
from epcore.testing.host import FakeMachineHost

CONFIG_PATH = "/etc/ep/condor_config"


@pytest.fixture
def fake_machine(monkeypatch: pytest.MonkeyPatch) -> FakeMachineHost:
    """``ep status`` runs against a fake 4-core machine with the built-in plugins only; the
    configuration file is the host's CONFIG_PATH."""
    host = FakeMachineHost(one_minute_load=0.25)
    host.files[CONFIG_PATH] = "EXECUTE = /\n"
    real = status_cmd.machine_ads

    def on_fake_machine(config_file: str | None, now: float) -> status_cmd.MachineAds:
        plugins = load_plugins(entry_points_group=None, strict=True)
        return real(config_file, now, host=host, plugins=plugins)

    monkeypatch.setattr(status_cmd, "machine_ads", on_fake_machine)
    return host


def status(*args: str) -> Result:
    return CliRunner().invoke(ep, ["status", "--config", CONFIG_PATH, *args])


def test_default_view_lists_the_partitionable_slot(fake_machine: FakeMachineHost) -> None:
    """Without slot configuration the machine is one partitionable slot, shown as a table."""
    result = status()
    assert result.exit_code == 0, result.output
    lines = result.stdout.splitlines()
    assert lines[0].split() == [
        "Name",
        "OpSys",
        "Arch",
        "State",
        "Activity",
        "LoadAv",
        "Mem",
        "ActvtyTime",
    ]
    assert lines[2].split()[:7] == [
        "slot1@fake-ep",
        "LINUX",
        "X86_64",
        "Owner",
        "Idle",
        "0.250",
        "8192",
    ]
    assert lines[-1].split() == ["Total", "1", "1", "0", "0", "0", "0", "0", "0", "0"]


def test_static_slots_each_get_a_line(fake_machine: FakeMachineHost) -> None:
    """use FEATURE : StaticSlots gives one line per core."""
    fake_machine.files[CONFIG_PATH] += "use FEATURE : StaticSlots\n"
    result = status("-af", "Name", "Cpus", "Memory", "SlotType")
    assert result.exit_code == 0, result.output
    assert result.stdout.splitlines() == [f"slot{n}@fake-ep 1 2048 Static" for n in range(1, 5)]


def test_long_view_reads_back_as_ads(fake_machine: FakeMachineHost) -> None:
    """-l prints every attribute in old syntax, one ad per slot."""
    fake_machine.files[CONFIG_PATH] += "NUM_SLOTS = 2\n"
    result = status("-l")
    assert result.exit_code == 0, result.output
    ads = list(parse_ads(result.stdout))
    assert [ad.evaluate("Name") for ad in ads] == ["slot1@fake-ep", "slot2@fake-ep"]
    assert all(ad.evaluate("TotalCpus") == 4 for ad in ads)


def test_constraint_and_names_select_slots(fake_machine: FakeMachineHost) -> None:
    """-constraint keeps the slots for which it is true; a name keeps that slot."""
    fake_machine.files[CONFIG_PATH] += "use FEATURE : StaticSlots\n"
    chosen = status("-constraint", "SlotID >= 3", "-af", "Name")
    assert chosen.stdout.splitlines() == ["slot3@fake-ep", "slot4@fake-ep"]
    named = status("slot2", "-af", "Name")
    assert named.stdout.splitlines() == ["slot2@fake-ep"]


def test_json_view(fake_machine: FakeMachineHost) -> None:
    """-json prints the ads as a JSON list (two dashes work too)."""
    result = status("--json")
    assert result.exit_code == 0, result.output
    (document,) = json.loads(result.stdout)
    assert (document["SlotType"], document["Cpus"], document["TotalMemory"]) == (
        "Partitionable",
        4,
        8192,
    )


def test_plugin_and_config_attributes_reach_the_ads(fake_machine: FakeMachineHost) -> None:
    """STARTD_ATTRS from the configuration file appear in -af output."""
    fake_machine.files[CONFIG_PATH] += "IsDesktop = True\nSTARTD_ATTRS = IsDesktop\n"
    result = status("-af", "IsDesktop")
    assert result.stdout == "true\n"


def test_startd_attrs_problem_is_a_warning(fake_machine: FakeMachineHost) -> None:
    """A STARTD_ATTRS entry that does not parse is reported on stderr; the rest still prints."""
    fake_machine.files[CONFIG_PATH] += "Broken = (1 +\nSTARTD_ATTRS = Broken\n"
    result = status("-af", "Name")
    assert result.exit_code == 0
    assert result.stdout == "slot1@fake-ep\n"
    assert "ep status: warning: CONFIGURATION PROBLEM" in result.stderr
    assert "Broken" in result.stderr


@pytest.mark.parametrize(
    ("args", "extra_config", "message"),
    [
        (("-constraint", "Cpus >"), "", "ep status: constraint 'Cpus >' does not parse"),
        (("-af", "Cpus +"), "", "ep status: -af expression does not parse"),
        (("-af",), "", "ep status: -af needs at least one attribute"),
        (("-constraint",), "", "ep status: -constraint needs a value"),
        (("-bogus",), "", "ep status: unknown option -bogus"),
        ((), "SLOT_TYPE_1 = cpus=100\nNUM_SLOTS_TYPE_1 = 1\n", "SLOT_TYPE_1"),
        ((), "START = (KeyboardIdle >\n", "START = (KeyboardIdle >"),
    ],
)
def test_errors_exit_with_status_one(
    fake_machine: FakeMachineHost, args: tuple[str, ...], extra_config: str, message: str
) -> None:
    """Bad arguments and bad configurations print "ep status: <message>" and exit 1."""
    fake_machine.files[CONFIG_PATH] += extra_config
    result = status(*args)
    assert result.exit_code == 1
    assert result.stdout == ""
    assert result.stderr.startswith("ep status: ")
    assert message in result.stderr


def test_missing_configuration_file_is_an_error(fake_machine: FakeMachineHost) -> None:
    """A --config file that does not exist is an error naming it."""
    result = CliRunner().invoke(ep, ["status", "--config", "/no/such/file"])
    assert result.exit_code == 1
    assert result.stderr.startswith("ep status: ")
    assert "/no/such/file" in result.stderr


def test_on_the_real_machine(tmp_path: Path) -> None:
    """On this very machine (psutil, the installed plugins) ep status shows one partitionable
    slot with the machine's CPUs."""
    config = tmp_path / "condor_config"
    config.write_text(f"EXECUTE = {tmp_path}\n", encoding="utf-8")
    result = CliRunner().invoke(
        ep, ["status", "--config", str(config), "-af", "SlotType", "TotalCpus", "DetectedCpus"]
    )
    assert result.exit_code == 0, result.output
    slot_type, total, detected = result.stdout.split()
    assert slot_type == "Partitionable"
    assert 1 <= int(total) == int(detected) <= (os.cpu_count() or 1)


def test_pool_option_names_the_collector_that_cannot_be_asked() -> None:
    """``-pool HOST:PORT`` asks that collector over CEDAR; one that does not answer is an
    error naming it, and a malformed address is refused."""
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        port = probe.getsockname()[1]
    result = CliRunner().invoke(ep, ["status", "-pool", f"127.0.0.1:{port}"])
    assert result.exit_code == 1
    assert f"cannot query the collector at <127.0.0.1:{port}>" in result.output
    result = CliRunner().invoke(ep, ["status", "-pool", "127.0.0.1:http"])
    assert result.exit_code == 1 and "not a number" in result.output
    assert status_cmd.parse_arguments(["-pool", "cm:9620", "-schedd"]).pool == "cm:9620"


def test_defrag_option_shows_the_defrag_ads_in_a_table_and_as_json(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """-defrag asks the pool for the Defrag ads and shows condor_status -defrag's columns
    (and the whole machines and drains), or the ads as JSON."""
    ad = (
        '[ MyType = "Defrag"; Name = "DEFRAG@cm"; MachinesDraining = 1; MachinesDrainingPeak = 2;'
        " DrainedMachines = 3; WholeMachines = 4; DrainSuccesses = 5; DrainFailures = 0 ]"
    )
    asked: list[str | None] = []

    def pool_ads(request: status_cmd.StatusRequest) -> list[object]:
        asked.append(request.my_type)
        return list(parse_ads(ad))

    monkeypatch.setattr(status_cmd, "pool_ads", pool_ads)
    table = status("-defrag")
    assert table.exit_code == 0, table.output
    header, row = table.stdout.splitlines()
    assert header.split() == [
        "Name",
        "MachinesDraining",
        "MachinesDrainingPeak",
        "DrainedMachines",
        "WholeMachines",
        "DrainSuccesses",
        "DrainFailures",
    ]
    assert row.split() == ["DEFRAG@cm", "1", "2", "3", "4", "5", "0"]
    (document,) = json.loads(status("-defrag", "--json").stdout)
    assert (document["MyType"], document["DrainSuccesses"]) == ("Defrag", 5)
    assert asked == ["Defrag", "Defrag"]
