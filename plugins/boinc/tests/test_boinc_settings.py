"""The BOINC_* knobs: what seed 000 requires, the alternate names, and errors that name the
knob the administrator must fix."""

from __future__ import annotations

from pathlib import Path

import pytest
from epcore_boinc.settings import read_settings

from epcore.config import Config
from epcore.errors import ConfigError
from epcore.testing.host import FakeMachineHost


def _config(text: str) -> Config:
    return Config.from_text(text, host=FakeMachineHost())


@pytest.fixture
def good(tmp_path: Path) -> str:
    return f"BOINC_Executable = /bin/sh\nBOINC_Universe = vanilla\nBOINC_InitialDir = {tmp_path}\n"


def test_a_complete_configuration_reads_every_value(good: str, tmp_path: Path) -> None:
    """Every knob lands in the settings; quotes around a value are dropped (seed 000: values
    are strings unless quoted) and the arguments are split like a shell."""
    settings = read_settings(
        _config(
            good + 'BOINC_Arguments = --attach_project "http://x/" key\n'
            'BOINC_Output = "boinc.out"\nBOINC_Err = boinc.err\nBOINC_Env = "A=1 B=2"\n'
        )
    )
    assert settings.executable == "/bin/sh"
    assert settings.initial_dir == str(tmp_path)
    assert settings.arguments == ("--attach_project", "http://x/", "key")
    assert (settings.output, settings.error) == ("boinc.out", "boinc.err")
    assert settings.environment == "A=1 B=2"
    assert settings.network == "host"


def test_the_alternate_names_work(tmp_path: Path) -> None:
    """BOINC_Cmd, BOINC_Iwd and BOINC_JobUniverse = 5 stand for the seed's names."""
    settings = read_settings(
        _config(f"BOINC_Cmd = /bin/sh\nBOINC_JobUniverse = 5\nBOINC_Iwd = {tmp_path}\n")
    )
    assert (settings.executable, settings.initial_dir) == ("/bin/sh", str(tmp_path))


@pytest.mark.parametrize(
    ("change", "message"),
    [
        ("BOINC_Executable =\n", "BOINC_Executable not defined"),
        ("BOINC_InitialDir =\n", "BOINC_InitialDir not defined"),
        ("BOINC_Universe =\n", "BOINC_Universe not defined"),
        ("BOINC_Executable = /nonexistent/boinc\n", "BOINC_Executable"),
        ("BOINC_Executable = boinc\n", "not an absolute path"),
        ("BOINC_InitialDir = /nonexistent/dir\n", "BOINC_InitialDir"),
        ("BOINC_InitialDir = /bin/sh\n", "not a directory"),
        ("BOINC_Universe = grid\n", "BOINC_Universe = grid.*: JobUniverse not supported"),
        ("BOINC_Owner = no_such_user_x\n", "BOINC_Owner = no_such_user_x.*: no such account"),
        ("BOINC_Owner = root\n", "never runs as root"),
        ("BOINC_NETWORK = wifi\n", "BOINC_NETWORK = wifi"),
        ("BOINC_Arguments = 'unbalanced\n", "BOINC_Arguments"),
    ],
)
def test_a_bad_value_is_a_config_error_naming_the_knob(
    good: str, change: str, message: str
) -> None:
    """Each wrong or missing value raises a ConfigError whose text names the knob."""
    with pytest.raises(ConfigError, match=message.replace("(", r"\(")):
        read_settings(_config(good + change))


def test_the_error_says_where_the_knob_was_set(tmp_path: Path, good: str) -> None:
    """A value from a file is reported with the file and line."""
    config = Config.from_text(
        good + "BOINC_Universe = java\n", host=FakeMachineHost(), source="/etc/condor/boinc"
    )
    with pytest.raises(ConfigError, match=r"BOINC_Universe = java \(/etc/condor/boinc, line 4\)"):
        read_settings(config)
