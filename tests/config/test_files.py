"""Which files a configuration reads, in which order, and what the machine contributes."""

from __future__ import annotations

from pathlib import Path

import pytest
from param_oracle import ParamOracle

from epcore.builtin.host import LocalHost
from epcore.config import CommandOutput, Config, ConfigError, HostFacts, MemoryHost


def _host(files: dict[str, str], **environment: str) -> MemoryHost:
    return MemoryHost(files=files, environment=dict(environment))


def test_condor_config_variable_names_the_root_file() -> None:
    """Without paths, CONDOR_CONFIG from the environment is the root file."""
    host = _host({"/site/condor_config": "A = site\n"}, CONDOR_CONFIG="/site/condor_config")
    cfg = Config.load(host=host)
    assert cfg.get("A") == "site"
    assert cfg.sources == ("/site/condor_config",)


def test_usual_places_are_searched_in_order() -> None:
    """/etc/condor/condor_config wins over /usr/local/etc and ~condor."""
    host = _host(
        {
            "/etc/condor/condor_config": "A = etc\n",
            "/usr/local/etc/condor_config": "A = local\n",
        }
    )
    assert Config.load(host=host).get("A") == "etc"
    del host.files["/etc/condor/condor_config"]
    assert Config.load(host=host).get("A") == "local"


def test_only_env_reads_no_file() -> None:
    """CONDOR_CONFIG=ONLY_ENV reads no file; _CONDOR_ variables still apply."""
    host = _host({}, CONDOR_CONFIG="ONLY_ENV", _CONDOR_START="False")
    cfg = Config.load(host=host)
    assert cfg.sources == ()
    assert cfg.get("START") == "False"


def test_local_config_file_list_is_read_in_order() -> None:
    """LOCAL_CONFIG_FILE is a comma and/or space separated list read left to right."""
    host = _host({"/l/one": "A = one\nB = one\n", "/l/two": "B = two\n"})
    cfg = Config.from_text("LOCAL_CONFIG_FILE = /l/one, /l/two\n", host=host)
    assert (cfg.get("A"), cfg.get("B")) == ("one", "two")
    assert cfg.sources == ("/l/one", "/l/two")


def test_local_file_that_changes_the_list_redirects_reading() -> None:
    """A local file that redefines LOCAL_CONFIG_FILE makes the new list the one read."""
    host = _host(
        {"/l/one": "LOCAL_CONFIG_FILE = /l/three\n", "/l/two": "B = 2\n", "/l/three": "C = 3\n"}
    )
    cfg = Config.from_text("LOCAL_CONFIG_FILE = /l/one /l/two\n", host=host)
    assert (cfg.get("B"), cfg.get("C")) == (None, "3")


def test_local_config_dir_is_sorted_and_filtered() -> None:
    """LOCAL_CONFIG_DIR files are read in sorted order, minus the excluded names."""
    files = {
        "/d/20-b.conf": "ORDER = $(ORDER) b\n",
        "/d/10-a.conf": "ORDER = $(ORDER) a\n",
        "/d/30-c.conf~": "ORDER = $(ORDER) backup\n",
        "/d/.hidden": "ORDER = $(ORDER) hidden\n",
        "/d/40-d.rpmnew": "ORDER = $(ORDER) rpmnew\n",
    }
    cfg = Config.from_text("LOCAL_CONFIG_DIR = /d\n", host=_host(files))
    assert cfg.get("ORDER") == " a b"


def test_local_config_dir_is_read_before_local_config_file() -> None:
    """HTCondor reads the directory first, then the local file list."""
    files = {"/d/a.conf": "X = dir\n", "/l/file": "X = $(X) file\n"}
    cfg = Config.from_text(
        "LOCAL_CONFIG_DIR = /d\nLOCAL_CONFIG_FILE = /l/file\n", host=_host(files)
    )
    assert cfg.get("X") == "dir file"


def test_environment_overrides_files() -> None:
    """_CONDOR_NAME (any case of the prefix) overrides what the files say."""
    host = _host({}, _CONDOR_A="env", _condor_B="lower")
    cfg = Config.from_text("A = file\nB = file\n", host=host)
    assert (cfg.get("A"), cfg.get("B")) == ("env", "lower")
    origin = cfg.origin("A")
    assert origin is not None and origin.source == "<Environment>"


def test_detected_values_may_be_overridden_but_specials_may_not() -> None:
    """DETECTED_CORES yields to a file; USERNAME and HOSTNAME do not."""
    facts = HostFacts(
        hostname="node",
        full_hostname="node.example.org",
        detected={"DETECTED_CORES": "8"},
        specials={"USERNAME": "condor"},
    )
    host = MemoryHost(host_facts=facts)
    cfg = Config.from_text("DETECTED_CORES = 2\nUSERNAME = me\nHOSTNAME = other\n", host=host)
    assert (cfg.get("DETECTED_CORES"), cfg.get("USERNAME"), cfg.get("HOSTNAME")) == (
        "2",
        "condor",
        "node",
    )
    assert cfg.get("FULL_HOSTNAME") == "node.example.org"


def test_default_domain_name_completes_a_short_full_hostname() -> None:
    """DEFAULT_DOMAIN_NAME is appended to a host name that has no domain."""
    host = MemoryHost(host_facts=HostFacts(hostname="vm", full_hostname="vm"))
    cfg = Config.from_text("DEFAULT_DOMAIN_NAME = example.org\n", host=host)
    assert cfg.get("FULL_HOSTNAME") == "vm.example.org"


def test_subsystem_and_local_name_are_published() -> None:
    """SUBSYSTEM and LOCALNAME say which daemon reads the configuration."""
    cfg = Config.from_text("", host=MemoryHost(), subsystem="negotiator", local_name="NEG2")
    assert (cfg.get("SUBSYSTEM"), cfg.get("LOCALNAME")) == ("NEGOTIATOR", "NEG2")


def test_config_root_is_the_directory_of_the_root_file() -> None:
    """CONFIG_ROOT is the directory holding the root configuration file."""
    host = _host({"/site/etc/condor_config": "A = $(CONFIG_ROOT)/x\n"})
    assert Config.load("/site/etc/condor_config", host=host).get("A") == "/site/etc/x"


def test_include_command_output_is_read() -> None:
    """``include command : cmd`` reads the command's output as configuration."""
    host = MemoryHost(commands={"gen --site x": CommandOutput("FROM_CMD = yes\n", 0)})
    cfg = Config.from_text("include command : gen --site x\n", host=host)
    assert cfg.get("FROM_CMD") == "yes"


def test_include_command_runs_a_real_program(local_host: LocalHost, tmp_path: Path) -> None:
    """LocalHost runs the command without a shell and reads its standard output."""
    script = tmp_path / "gen.sh"
    script.write_text('#!/bin/sh\necho "GENERATED = $1"\n')
    script.chmod(0o755)
    cfg = Config.from_text(f"include command : {script} hello\n", host=local_host)
    assert cfg.get("GENERATED") == "hello"


@pytest.mark.oracle
def test_real_files_read_like_htcondor(
    tmp_path: Path, local_host: LocalHost, param_oracle: ParamOracle
) -> None:
    """Includes, LOCAL_CONFIG_FILE and LOCAL_CONFIG_DIR on disk give HTCondor's values."""
    confd = tmp_path / "config.d"
    confd.mkdir()
    (confd / "10-first").write_text("ORDER = $(ORDER) dir10\n")
    (confd / "20-second.conf").write_text("ORDER = $(ORDER) dir20\n")
    (confd / "skip.py").write_text("ORDER = $(ORDER) python\n")
    (tmp_path / "local").write_text("ORDER = $(ORDER) local\nLOCAL_ONLY = 1\n")
    (tmp_path / "inc").write_text("ORDER = $(ORDER) inc\n")
    root = tmp_path / "condor_config"
    root.write_text(
        "ORDER = root\n"
        f"include : {tmp_path}/inc\n"
        f"include ifexist : {tmp_path}/missing\n"
        f"LOCAL_CONFIG_DIR = {confd}\n"
        f"LOCAL_CONFIG_FILE = {tmp_path}/local\n"
        "HERE = $(CONFIG_ROOT)\n"
    )
    names = ["ORDER", "LOCAL_ONLY", "HERE"]
    answer = param_oracle.load(root, names)
    cfg = Config.load(root, host=local_host)
    assert {n: cfg.get(n) for n in names} == {n: answer.values[n].text for n in names}
    assert cfg.get("ORDER") == "root inc dir10 dir20 local"


@pytest.mark.oracle
def test_detected_values_match_htcondor(local_host: LocalHost, param_oracle: ParamOracle) -> None:
    """LocalHost detects what HTCondor detects on this machine (cores, memory, platform, host)."""
    names = [
        "DETECTED_CORES",
        "DETECTED_CPUS",
        "DETECTED_PHYSICAL_CPUS",
        "DETECTED_CPUS_LIMIT",
        "DETECTED_MEMORY",
        "ARCH",
        "OPSYS",
        "OPSYSANDVER",
        "OPSYSNAME",
        "OPSYSLONGNAME",
        "OPSYSMAJORVER",
        "OPSYSVER",
        "OPSYSSHORTNAME",
        "OPSYSLEGACY",
        "UNAME_ARCH",
        "UNAME_OPSYS",
        "HOSTNAME",
        "FULL_HOSTNAME",
        "USERNAME",
        "IP_ADDRESS",
        "IPV4_ADDRESS",
        "IPV6_ADDRESS",
        "IP_ADDRESS_IS_IPV6",
        "REAL_UID",
        "REAL_GID",
        "SUBSYSTEM",
        "LOCALNAME",
        "TILDE",
    ]
    answer = param_oracle.load("", names)
    cfg = Config.from_text("", host=local_host)
    assert {n: cfg.get(n) for n in names} == {n: answer.values[n].text for n in names}


def test_include_command_into_keeps_the_output_and_reuses_it() -> None:
    """``include command into FILE`` runs the command once, keeps its output in FILE, and later
    loads read FILE without running the command."""
    host = MemoryHost(commands={"gen": CommandOutput("FROM_CMD = first\n", 0)})
    text = "include command into /cache/gen.conf : gen\n"
    assert Config.from_text(text, host=host).get("FROM_CMD") == "first"
    assert host.files["/cache/gen.conf"] == "FROM_CMD = first\n"
    host.commands["gen"] = CommandOutput("FROM_CMD = second\n", 0)
    assert Config.from_text(text, host=host).get("FROM_CMD") == "first"


def test_include_into_needs_a_file_name() -> None:
    """``include command into : cmd`` without a file name is refused at that line."""
    with pytest.raises(ConfigError, match="expected filename after keyword 'into'"):
        Config.from_text("A = 1\ninclude command into : gen\n", host=MemoryHost())
