"""Plugin ClassAd functions in the commands: ``ep eval``, ``ep simulate`` and ``ep explain``
evaluate with the installed plugins' functions (here a plugin offering isLucky)."""

from __future__ import annotations

from pathlib import Path

import pytest
from click.testing import CliRunner
from lucky_functions import LUCKY

from epcore.cli import eval_cmd, explain_cmd, simulate_cmd
from epcore.cli.main import ep
from epcore.plugins import Plugins, load_plugins
from epcore.testing.host import FakeMachineHost
from epcore.testing.offers import FunctionOffer

CONFIG_PATH = "/etc/ep/condor_config"
REQUESTS = "RequestCpus = 1\nRequestMemory = 1\nRequestDisk = 1\n"

SCENARIO = """\
config = '''
NUM_SLOTS = 1
RUNBENCHMARKS = False
START = isLucky(TARGET.N)
'''

[[event]]
at = 1
claim = { slot = "slot1", id = "c1", job = { Owner = "jones", N = 3 } }
expect = { slot1 = "Unclaimed/Idle" }

[[event]]
at = 2
claim = { slot = "slot1", id = "c2", job = { Owner = "jones", N = 14 } }
expect = { slot1 = "Claimed/Idle" }
"""


def _with_lucky(strict: bool = False) -> Plugins:
    """The built-in plugins and one offering isLucky, as if it were installed."""
    offer = [("lucky", FunctionOffer(LUCKY))]
    return load_plugins(entry_points_group=None, extra=offer, strict=strict)


@pytest.fixture
def lucky_installed(monkeypatch: pytest.MonkeyPatch) -> None:
    """Every command finds the isLucky plugin among the installed ones."""
    for module in (eval_cmd, simulate_cmd):
        monkeypatch.setattr(module, "load_plugins", _with_lucky)


def test_ep_eval_calls_installed_plugin_functions(lucky_installed: None) -> None:
    """ep eval evaluates an expression calling a plugin's function."""
    result = CliRunner().invoke(ep, ["eval", "-quiet", "isLucky(14)", "isLucky(15)"])
    assert result.exit_code == 0, result.output
    assert result.output.split() == ["true", "false"]


def test_ep_eval_without_the_plugin_gives_error(monkeypatch: pytest.MonkeyPatch) -> None:
    """Without the plugin the same expression is an error value: the function is the plugin's."""
    monkeypatch.setattr(eval_cmd, "load_plugins", lambda: load_plugins(entry_points_group=None))
    result = CliRunner().invoke(ep, ["eval", "-quiet", "isLucky(14)"])
    assert result.output.split() == ["error"]


def test_ep_simulate_runs_scenarios_calling_plugin_functions(
    lucky_installed: None, tmp_path: Path
) -> None:
    """A scenario whose START calls a plugin's function meets its expectations."""
    path = tmp_path / "lucky.toml"
    path.write_text(SCENARIO)
    result = CliRunner().invoke(ep, ["simulate", str(path)])
    assert result.exit_code == 0, result.output
    assert "Claimed/Idle" in result.output


def test_ep_explain_evaluates_start_with_plugin_functions(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    """ep explain --job shows START, calling the plugin's function, true for a lucky job."""
    host = FakeMachineHost()
    host.files[CONFIG_PATH] = "EXECUTE = /\nSTART = isLucky(TARGET.N)\n"
    real = explain_cmd.load_machine

    def on_fake_machine(config_file: str | None, now: float) -> explain_cmd.Machine:
        return real(config_file, now, host=host, plugins=_with_lucky(strict=True))

    monkeypatch.setattr(explain_cmd, "load_machine", on_fake_machine)
    outputs = {}
    for number in (14, 3):
        job = tmp_path / f"job{number}.ad"
        job.write_text(f"N = {number}\nRequirements = true\n{REQUESTS}")
        result = CliRunner().invoke(
            ep, ["explain", "--config", CONFIG_PATH, "--job", str(job), "--json"]
        )
        assert result.exit_code == 0, result.output
        outputs[number] = result.output
    assert '"would_start": true' in outputs[14]
    assert '"would_start": false' in outputs[3]
