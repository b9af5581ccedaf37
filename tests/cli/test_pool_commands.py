"""The pool commands' arguments: mistakes are refused before the pool is asked, and a pool
that is not there is named."""

from __future__ import annotations

from pathlib import Path

import pytest
from click.testing import CliRunner

from epcore.cli.main import ep


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (["rm"], "name jobs (ids or owners), -constraint or -all"),
        (["hold"], "name jobs"),
        (["q", "-af"], "-af needs at least one attribute"),
        (["q", "-af", "12.0"], "-af needs at least one attribute"),
        (["userprio", "-setfactor", "alice@x", "lots"], "'lots' is not a number"),
        (["userprio", "-setfactor", "alice@x", "0.5"], "at least 1.0"),
        (["submit", "job.sub", "NOEQUALS"], "'NOEQUALS' is not NAME=VALUE"),
        (["submit", "missing.sub"], "cannot read missing.sub"),
    ],
)
def test_mistakes_are_refused_before_asking_the_pool(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, args: list[str], message: str
) -> None:
    """Each mistake exits with status 1 and says what is wrong, naming the command."""
    monkeypatch.chdir(tmp_path)
    (tmp_path / "job.sub").write_text("executable = /bin/true\nqueue\n")
    result = CliRunner().invoke(ep, [*args, "--pool", str(tmp_path / "no_pool")])
    assert result.exit_code == 1, result.output
    assert message in result.output
    assert f"ep {args[0]}:" in result.output


@pytest.mark.parametrize(
    "args",
    [["q"], ["rm", "1"], ["userprio"], ["vacate"], ["drain"], ["release", "-all"]],
)
def test_a_pool_that_does_not_answer_is_named(tmp_path: Path, args: list[str]) -> None:
    """Without a pool at the socket, the command says it cannot reach it."""
    socket = tmp_path / "no_pool"
    result = CliRunner().invoke(ep, [*args, "--pool", str(socket)])
    assert result.exit_code == 1
    assert f"cannot reach the pool at {socket}" in result.output


def test_a_missing_personal_pool_says_how_to_start_one(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """With no configuration anywhere and no personal pool, the command says to run ep run."""
    import epcore.pool.personal as personal

    monkeypatch.setattr(personal, "htcondor_config_file", lambda environ, home: None)
    monkeypatch.setattr(personal, "SYSTEM_LOCAL_DIR", str(tmp_path / "system"))
    monkeypatch.setenv("HOME", str(tmp_path / "home"))
    monkeypatch.delenv("CONDOR_CONFIG", raising=False)
    result = CliRunner().invoke(ep, ["q"])
    assert result.exit_code == 1
    assert "start one with: ep run" in result.output


@pytest.mark.parametrize(
    "command", ["run", "submit", "q", "rm", "hold", "release", "userprio", "vacate", "drain"]
)
def test_every_pool_command_has_help(command: str) -> None:
    """--help describes each pool command."""
    result = CliRunner().invoke(ep, [command, "--help"])
    assert result.exit_code == 0
    assert "Usage: ep " + command in result.output
