"""``ep explain``: a slot's state and policy expressions explained for a person or as JSON,
what-if overrides with --set, a job's fate with --job, and the errors it reports."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from click.testing import CliRunner, Result

from epcore.classad import parse_ad
from epcore.cli import explain_cmd
from epcore.cli.main import ep
from epcore.config import Config
from epcore.config.memory_host import MemoryHost
from epcore.plugins import load_plugins
from epcore.state.explain import explain_expression, explain_slot
from epcore.testing.host import FakeMachineHost

CONFIG_PATH = "/etc/ep/condor_config"
SEED_START = "START = KeyboardIdle > 15 * $(MINUTE)\n"


@pytest.fixture
def fake_machine(monkeypatch: pytest.MonkeyPatch) -> FakeMachineHost:
    """``ep explain`` runs against a fake 4-core machine with the built-in plugins only; the
    configuration file is the host's CONFIG_PATH."""
    host = FakeMachineHost(one_minute_load=0.25)
    host.files[CONFIG_PATH] = "EXECUTE = /\n"
    real = explain_cmd.load_machine

    def on_fake_machine(config_file: str | None, now: float) -> explain_cmd.Machine:
        plugins = load_plugins(entry_points_group=None, strict=True)
        return real(config_file, now, host=host, plugins=plugins)

    monkeypatch.setattr(explain_cmd, "load_machine", on_fake_machine)
    return host


def explain(*args: str) -> Result:
    return CliRunner().invoke(ep, ["explain", "--config", CONFIG_PATH, *args])


def test_seed_owner_start_with_keyboard_idle_34(fake_machine: FakeMachineHost) -> None:
    """With the seed's START and KeyboardIdle set to 34, START is false because
    KeyboardIdle > 900 is false; the knob's file and line are shown."""
    fake_machine.files[CONFIG_PATH] += SEED_START
    result = explain("--set", "KeyboardIdle=34")
    assert result.exit_code == 0, result.output
    lines = result.stdout.splitlines()
    assert lines[0] == "slot1@fake-ep is Owner/Idle"
    assert "START is FALSE (against the slot alone)" in lines
    assert f"  defined at {CONFIG_PATH}, line 2: KeyboardIdle > 15 * $(MINUTE)" in lines
    assert (
        "    KeyboardIdle > 15 * 60 -> KeyboardIdle > 900 is FALSE (KeyboardIdle = 34 [slot])"
        in lines
    )


def test_json_output(fake_machine: FakeMachineHost) -> None:
    """--json prints the same explanation as a document for tools."""
    fake_machine.files[CONFIG_PATH] += SEED_START
    result = explain("--json", "--set", "KeyboardIdle=34")
    assert result.exit_code == 0, result.output
    document = json.loads(result.stdout)
    assert (document["slot"], document["state"], document["activity"]) == (
        "slot1@fake-ep",
        "Owner",
        "Idle",
    )
    start = next(p for p in document["policies"] if p["name"] == "START")
    assert start["value"] is False
    assert start["origin"] == f"{CONFIG_PATH}, line 2"
    explanation = start["explanation"]
    assert explanation["reduced"] == "KeyboardIdle > 900"
    assert explanation["decided_by"] == [
        {
            "expression": "KeyboardIdle",
            "value": 34,
            "value_text": "34",
            "origin": "MY",
            "ad": "slot",
            "decided_by": [],
        }
    ]
    assert "job" not in document


def test_set_recomputes_requirements(fake_machine: FakeMachineHost) -> None:
    """An override that makes START false locally makes the slot advertise START again as
    its Requirements, as the ad builder would."""
    fake_machine.files[CONFIG_PATH] += SEED_START
    ad = explain_cmd.load_machine(CONFIG_PATH, 0.0).ads[0]
    assert ad.evaluate("Requirements") is not False
    changed = explain_cmd.apply_overrides(ad, ["KeyboardIdle=34"], 0.0)
    assert changed.evaluate("Requirements") is False
    assert ad.evaluate("KeyboardIdle") != 34


def test_job_that_needs_too_much_memory(fake_machine: FakeMachineHost, tmp_path: Path) -> None:
    """A job asking for more memory than the slot has fails the slot's Requirements (its
    resource limits) and its own, and the memory values are shown."""
    job = tmp_path / "job.ad"
    job.write_text(
        "Requirements = TARGET.Memory >= RequestMemory\n"
        "RequestMemory = 100000\nRequestCpus = 1\nRequestDisk = 1\n"
    )
    result = explain("--job", str(job))
    assert result.exit_code == 0, result.output
    assert "The job on this slot:" in result.stdout
    assert (
        "TARGET.RequestMemory <= MY.Memory is FALSE (TARGET.RequestMemory = 100000 [job], "
        "MY.Memory = 8192 [slot])" in result.stdout
    )
    assert (
        "TARGET.Memory >= RequestMemory is FALSE (TARGET.Memory = 8192 [slot], "
        "RequestMemory = 100000 [job])" in result.stdout
    )
    assert result.stdout.splitlines()[-1] == (
        "Verdict: the job would not start because slot Requirements is FALSE; "
        "job Requirements is FALSE"
    )


def test_job_without_request_attributes(fake_machine: FakeMachineHost, tmp_path: Path) -> None:
    """A job without RequestCpus/RequestMemory/RequestDisk leaves the slot's resource limits
    UNDEFINED, and the explanation names the missing job attributes."""
    job = tmp_path / "job.ad"
    job.write_text("Requirements = true\n")
    result = explain("--job", str(job))
    assert result.exit_code == 0, result.output
    assert "TARGET.RequestCpus = UNDEFINED [in neither ad]" in result.stdout
    assert result.stdout.splitlines()[-1] == (
        "Verdict: the job would not start because slot Requirements is UNDEFINED"
    )


def test_job_that_would_start(fake_machine: FakeMachineHost, tmp_path: Path) -> None:
    """A small job in new syntax would start; its Rank is shown with the slot's value."""
    job = tmp_path / "job.ad"
    job.write_text(
        "[ Requirements = TARGET.Memory >= 1024; Rank = TARGET.Memory;"
        " RequestCpus = 1; RequestMemory = 1024; RequestDisk = 1000 ]"
    )
    result = explain("--json", "--job", str(job))
    assert result.exit_code == 0, result.output
    verdict = json.loads(result.stdout)["job"]
    assert verdict["would_start"] is True and verdict["matches"] is True
    assert verdict["verdict"] == "the job would start: both Requirements and START are TRUE"
    assert verdict["job_rank"]["value"] == 8192
    assert verdict["slot_rank"]["value"] == 0.0


def test_slot_is_chosen_by_name(fake_machine: FakeMachineHost) -> None:
    """A slot name (short or full) chooses that slot."""
    fake_machine.files[CONFIG_PATH] += "NUM_SLOTS = 2\n"
    short = explain("slot2")
    full = explain("slot2@fake-ep")
    assert short.exit_code == 0, short.output
    assert short.stdout.splitlines()[0] == "slot2@fake-ep is Owner/Idle"
    assert full.stdout == short.stdout


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (("slot9",), "ep explain: no slot named 'slot9' (the slots are slot1@fake-ep)"),
        (("--set", "KeyboardIdle"), "ep explain: --set 'KeyboardIdle': expected Attr=value"),
        (("--set", "1x=2"), "ep explain: --set '1x=2': expected Attr=value"),
    ],
)
def test_errors(fake_machine: FakeMachineHost, args: tuple[str, ...], message: str) -> None:
    """An unknown slot or a bad --set is reported as ep explain: <message>, exit status 1."""
    result = explain(*args)
    assert result.exit_code == 1
    assert result.stderr.splitlines() == [message]


def test_bad_set_expression(fake_machine: FakeMachineHost) -> None:
    """A --set value that does not parse is reported with the parser's message."""
    result = explain("--set", "KeyboardIdle=(")
    assert result.exit_code == 1
    assert result.stderr.startswith("ep explain: --set 'KeyboardIdle=(': ")


def test_bad_job_file_names_the_line(fake_machine: FakeMachineHost, tmp_path: Path) -> None:
    """A job file that does not parse is reported with its file name and line."""
    job = tmp_path / "job.ad"
    job.write_text("Requirements = true\nRequestMemory = (\n")
    result = explain("--job", str(job))
    assert result.exit_code == 1
    assert result.stderr.startswith(f"ep explain: bad job file {job}:2:")


def test_missing_job_file(fake_machine: FakeMachineHost, tmp_path: Path) -> None:
    """A job file that cannot be read is reported, exit status 1."""
    result = explain("--job", str(tmp_path / "missing.ad"))
    assert result.exit_code == 1
    assert result.stderr.startswith("ep explain: cannot read job file ")


def test_choose_slot_needs_slots() -> None:
    """A machine without slots has nothing to explain."""
    with pytest.raises(explain_cmd.ExplainFailure, match="no slots"):
        explain_cmd.choose_slot([], None)


def test_read_job_reads_old_syntax(tmp_path: Path) -> None:
    """read_job reads an old-syntax job ad."""
    job = tmp_path / "job.ad"
    job.write_text("RequestMemory = 1\n")
    assert explain_cmd.read_job(str(job)) == parse_ad("[RequestMemory = 1]")


def test_desktop_policy(fake_machine: FakeMachineHost) -> None:
    """Under the Desktop policy a keyboard touched 34 s ago keeps START false, and IS_OWNER
    (START =?= False) is true because of it."""
    fake_machine.files[CONFIG_PATH] += "use POLICY : Desktop\n"
    result = explain("--set", "KeyboardIdle=34")
    assert result.exit_code == 0, result.output
    lines = result.stdout.splitlines()
    assert "IS_OWNER is TRUE (against the slot alone)" in lines
    assert "    START =?= false is TRUE" in lines
    assert "START is FALSE (against the slot alone)" in lines
    assert (
        "      KeyboardIdle > 15 * 60 -> KeyboardIdle > 900 is FALSE (KeyboardIdle = 34 [slot])"
        in lines
    )
    assert "<= 0.3" in result.stdout


def test_claimed_what_if_uses_the_job(fake_machine: FakeMachineHost, tmp_path: Path) -> None:
    """Overriding State to Claimed explains the claimed policies against the job."""
    fake_machine.files[CONFIG_PATH] += 'PREEMPT = TARGET.Owner == "bob"\n'
    job = tmp_path / "job.ad"
    job.write_text('Owner = "bob"\nRequirements = true\n')
    result = explain("--json", "--set", 'State="Claimed"', "--set", 'Activity="Busy"')
    assert result.exit_code == 0, result.output
    names = [p["name"] for p in json.loads(result.stdout)["policies"]]
    assert names == ["START", "PREEMPT", "WANT_SUSPEND", "SUSPEND", "RANK"]
    result = explain(
        "--json", "--job", str(job), "--set", 'State="Claimed"', "--set", 'Activity="Busy"'
    )
    preempt = next(p for p in json.loads(result.stdout)["policies"] if p["name"] == "PREEMPT")
    assert preempt["value"] is True
    assert preempt["against"] == "the slot and the job"


def test_configuration_error(fake_machine: FakeMachineHost) -> None:
    """A configuration that cannot be read is reported as ep explain: <message>."""
    result = CliRunner().invoke(ep, ["explain", "--config", "/no/such/file"])
    assert result.exit_code == 1
    assert result.stderr.startswith("ep explain: ")


def test_listed_by_ep_help() -> None:
    """ep --help lists the explain command."""
    result = CliRunner().invoke(ep, ["--help"])
    assert result.exit_code == 0
    assert "explain" in result.stdout


def test_render_explanation_folds_plain_names_into_the_line() -> None:
    """A comparison's plain names are shown on its own line with their values and ads."""
    slot = parse_ad("[ KeyboardIdle = 34 ]")
    node = explain_expression("KeyboardIdle > 15 * 60", slot, None, now=0.0, my_name="slot")
    assert explain_cmd.render_explanation(node) == [
        "KeyboardIdle > 15 * 60 -> KeyboardIdle > 900 is FALSE (KeyboardIdle = 34 [slot])"
    ]


def test_render_explanation_nests_attribute_expressions() -> None:
    """A name bound to an expression gets its own line, with that expression's reason below."""
    slot = parse_ad("[ KeyboardIdle = 34; Start = KeyboardIdle > 900 ]")
    node = explain_expression("Start =?= false", slot, None, now=0.0, my_name="slot")
    assert explain_cmd.render_explanation(node) == [
        "Start =?= false is TRUE",
        "  Start = FALSE (slot)",
        "    KeyboardIdle > 900 is FALSE (KeyboardIdle = 34 [slot])",
    ]


def test_constant_policy_needs_no_reason() -> None:
    """A policy that is a constant is shown with its value and origin, without a reason."""
    config = Config.from_text("", host=MemoryHost())
    slot = parse_ad('[ Name = "slot1@ep"; State = "Owner"; Activity = "Idle" ]')
    explained = explain_slot(config, slot, now=0.0)
    is_owner = next(p for p in explained.policies if p.name == "IS_OWNER")
    assert explain_cmd.render_policy(is_owner) == [
        "IS_OWNER is FALSE (against the slot alone)",
        "  defined at <Default>: False",
    ]
