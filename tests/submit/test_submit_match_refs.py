"""``$$(...)`` references filled in from the matched slot, and LocalSubmitHost on real files."""

from __future__ import annotations

from pathlib import Path

import pytest

from epcore.classad import parse_ad
from epcore.errors import PoolError
from epcore.submit import LocalSubmitHost, expand_match_references

SLOT = parse_ad('[ Cpus = 4; Memory = 8192; OpSys = "LINUX"; Name = "slot1@ep"; Pi = 3.5 ]')

# (job attribute text, expected value after expansion, expected MATCH_ attributes)
EXPANSION_CASES = [
    ('"$$(Cpus)"', "4", {"MATCH_Cpus": 4}),
    ('"n=$$(Cpus) m=$$(Memory)"', "n=4 m=8192", {"MATCH_Cpus": 4, "MATCH_Memory": 8192}),
    ('"$$(OpSys)"', "LINUX", {"MATCH_OpSys": "LINUX"}),
    ('"$$(Pi)"', "3.5", {"MATCH_Pi": 3.5}),
    ('"$$(Missing:fallback)"', "fallback", {}),
    ('"$$(Cpus:1)"', "4", {"MATCH_Cpus": 4}),
    ('"$$([Cpus * 2])"', "8", {"MATCH_EXP_Value": "8"}),
    ('"$$([strcat(Name, \\"!\\")])"', "slot1@ep!", {"MATCH_EXP_Value": "slot1@ep!"}),
    ('"plain"', "plain", {}),
    # Inside an expression rather than a string literal: found in the expression's text.
    ('strcat("$$(OpSys)", "-", 7)', "LINUX-7", {"MATCH_OpSys": "LINUX"}),
]


@pytest.mark.parametrize(("text", "expected", "recorded"), EXPANSION_CASES)
def test_references_take_the_slots_values(
    text: str, expected: str, recorded: dict[str, object]
) -> None:
    """Each $$ form is replaced by the slot's value and recorded as HTCondor records it."""
    job = parse_ad(f"[ Value = {text}; Other = 1 ]")
    expanded = expand_match_references(job, SLOT)
    assert expanded.evaluate("Value") == expected
    for name, value in recorded.items():
        assert expanded.evaluate(name) == value
    assert job.evaluate("Value") == parse_ad(f"[ V = {text} ]").evaluate("V")


@pytest.mark.parametrize(
    ("text", "words"),
    [
        ('"$$(Missing)"', "$$(Missing)"),
        ('"$$([Missing + 1])"', "Missing + 1"),
        ('"$$([Cpus +])"', "not an expression"),
        ('"$$(Cpus"', "closing parenthesis"),
    ],
)
def test_unresolvable_reference_is_a_pool_error(text: str, words: str) -> None:
    """A reference the slot cannot satisfy raises PoolError naming the job attribute."""
    job = parse_ad(f"[ Value = {text} ]")
    with pytest.raises(PoolError) as raised:
        expand_match_references(job, SLOT)
    assert "Value" in str(raised.value)
    assert words in str(raised.value)


def test_local_host_reads_globs_and_sizes(tmp_path: Path) -> None:
    """LocalSubmitHost reports real files, directories, glob matches and sizes."""
    (tmp_path / "run.sh").write_text("#!/bin/sh\n")
    data = tmp_path / "data.txt"
    data.write_text("a\nb\n")
    (tmp_path / "sub").mkdir()
    host = LocalSubmitHost()
    assert host.read_text(str(data)) == "a\nb\n"
    assert sorted(host.glob(str(tmp_path / "*"))) == sorted(
        str(tmp_path / n) for n in ("run.sh", "data.txt", "sub")
    )
    assert (host.is_dir(str(tmp_path / "sub")), host.is_dir(str(data))) == (True, False)
    assert (host.file_size(str(data)), host.file_size(str(tmp_path / "sub"))) == (4, None)
    assert host.file_size(str(tmp_path / "nothing")) is None
    with pytest.raises(OSError):
        host.read_text(str(tmp_path / "nothing"))
