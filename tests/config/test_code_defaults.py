"""The fallbacks daemons apply in code for knobs the configuration table leaves unset."""

from __future__ import annotations

import pytest
from param_oracle import ParamOracle

from epcore.config import Config, HostFacts, MemoryHost
from epcore.config.code_defaults import CODE_DEFAULTS, CodeDefault, code_default
from epcore.config.defaults import KNOB_DEFAULTS


def _host() -> MemoryHost:
    facts = HostFacts("vm", "vm", detected={"DETECTED_MEMORY": "4096"})
    return MemoryHost(host_facts=facts)


@pytest.mark.parametrize("entry", CODE_DEFAULTS, ids=lambda entry: entry.name)
def test_fallback_applies_only_when_unset(entry: CodeDefault) -> None:
    """daemon_value gives the code fallback for an unset knob and the file's value otherwise."""
    unset = Config.from_text("", host=_host())
    assert unset.get(entry.name) is None
    expected = unset.expand(entry.value) or None
    assert unset.daemon_value(entry.name) == expected
    configured = Config.from_text(f"{entry.name} = 7\n", host=_host())
    assert configured.daemon_value(entry.name) == "7"


@pytest.mark.oracle
def test_htcondor_has_no_table_value_for_any_fallback(param_oracle: ParamOracle) -> None:
    """Every knob with a code fallback is one HTCondor's configuration leaves without a value."""
    names = [entry.name for entry in CODE_DEFAULTS]
    for subsystem in ("STARTD", "NEGOTIATOR", "SCHEDD"):
        answer = param_oracle.load("", names, subsystem=subsystem)
        assert {n: answer.values[n].typed for n in names} == dict.fromkeys(names)


def test_fallbacks_do_not_shadow_the_default_table() -> None:
    """No knob has both a table default and a code fallback."""
    table = {k.name.lower() for k in KNOB_DEFAULTS if k.default is not None}
    assert not table & {entry.name.lower() for entry in CODE_DEFAULTS}


def test_memory_fallback_subtracts_reserved_memory() -> None:
    """MEMORY falls back to detected memory less RESERVED_MEMORY, an expression the startd reads."""
    cfg = Config.from_text("RESERVED_MEMORY = 512\n", host=_host())
    assert cfg.daemon_value("MEMORY") == "4096 - 512"
    assert code_default("memory") is code_default("MEMORY")
