"""COLLECTOR_PERSISTENT_AD_LOG: atomic writes, reading back, damaged files."""

from __future__ import annotations

import stat
from pathlib import Path

import pytest
from ad_strategies import flat_ads, text_values
from hypothesis import given
from hypothesis import strategies as st

from epcore.classad import ClassAd
from epcore.collector.collector import AdState, Collector
from epcore.collector.collector_log import (
    HEADER,
    parse_persistent_ads,
    read_persistent_ads,
    write_persistent_ads,
)
from epcore.config import Config
from epcore.errors import PoolError

T0 = 1_700_000_000


def absent_machine(name: str) -> ClassAd:
    """An absent machine ad as the collector persists it."""
    return ClassAd(
        {"MyType": "Machine", "Name": name, "Absent": True, "LastHeardFrom": T0, "Note": "a\nb"}
    )


def test_write_then_read_gives_the_same_ads(tmp_path: Path) -> None:
    """Written ads read back equal, in order, from a file of mode 0600."""
    path = tmp_path / "persistent.log"
    ads = [absent_machine("one@a"), absent_machine("two@a")]
    write_persistent_ads(path, ads)
    assert read_persistent_ads(path) == ads
    assert stat.S_IMODE(path.stat().st_mode) == 0o600
    assert path.read_text().startswith(HEADER + "\n")


def test_rewrite_replaces_the_file_and_leaves_no_temporary(tmp_path: Path) -> None:
    """A second write replaces the content whole and leaves only the log in its directory."""
    path = tmp_path / "persistent.log"
    write_persistent_ads(path, [absent_machine("one@a"), absent_machine("two@a")])
    write_persistent_ads(path, [])
    assert read_persistent_ads(path) == []
    assert [entry.name for entry in tmp_path.iterdir()] == ["persistent.log"]


def test_missing_file_reads_as_no_ads(tmp_path: Path) -> None:
    """A collector's first start finds no log: that is no ads, not an error."""
    assert read_persistent_ads(tmp_path / "never-written.log") == []


def test_collector_round_trip_through_the_file(tmp_path: Path) -> None:
    """A collector's absent ads written to the log come back as absent after a restart."""
    config = Config.from_text("ABSENT_REQUIREMENTS = True", subsystem="COLLECTOR")
    store = Collector(config)
    store.update([ClassAd({"MyType": "Machine", "Name": "gone@a"})], T0)
    store.expire(T0 + 901)
    path = tmp_path / "persistent.log"
    write_persistent_ads(path, store.persistent_ads())
    again = Collector.restore(config, read_persistent_ads(path))
    assert again.state_of("Machine", "gone@a") is AdState.ABSENT
    assert again.persistent_ads() == store.persistent_ads()


@pytest.mark.parametrize(
    ("text", "where"),
    [
        ("", "line 1: not an epcore"),
        ("[ a = 1 ]\n", "line 1: not an epcore"),
        (f"{HEADER}\n[ a = 1 ]", "line 2: the log ends in a cut-off line"),
        (f"{HEADER}\n[ a = 1 ]\n[ b = \n", "line 3: damaged ad"),
        (f"{HEADER}\n[ a = 1 ]\n\n", "line 3: empty line"),
        (f"{HEADER}\na = 1\n", "line 2: not a ClassAd in new syntax"),
        (f"{HEADER}\n[ a = 1 ] junk\n", "line 2: damaged ad"),
        (f"{HEADER}\n[ a = 1 ][ b = 2 ]\n", "line 2: damaged ad"),
    ],
)
def test_damaged_log_is_a_pool_error_naming_file_and_line(
    tmp_path: Path, text: str, where: str
) -> None:
    """A damaged log is a PoolError naming the file and the line at fault."""
    path = tmp_path / "persistent.log"
    path.write_text(text)
    with pytest.raises(PoolError) as caught:
        read_persistent_ads(path)
    assert str(caught.value).startswith(f"{path}, ")
    assert where in str(caught.value)


def test_unreadable_log_is_a_pool_error(tmp_path: Path) -> None:
    """A log path that cannot be read (a directory) is a PoolError naming it."""
    with pytest.raises(PoolError, match=str(tmp_path)):
        read_persistent_ads(tmp_path)


def test_unwritable_place_is_a_pool_error(tmp_path: Path) -> None:
    """Writing into a directory that does not exist is a PoolError naming the file."""
    path = tmp_path / "missing" / "persistent.log"
    with pytest.raises(PoolError, match="cannot write"):
        write_persistent_ads(path, [absent_machine("one@a")])


@given(st.lists(flat_ads(), max_size=5))
def test_any_ads_round_trip_through_the_log_text(ads: list[ClassAd]) -> None:
    """Any ads of literal values written as log text parse back equal."""
    lines = [HEADER, *(str(ad) for ad in ads)]
    assert parse_persistent_ads("\n".join(lines) + "\n", "log") == ads


@given(st.lists(st.one_of(text_values, st.just("[ a = 1 ]")), max_size=4))
def test_any_text_reads_as_ads_or_a_pool_error(lines: list[str]) -> None:
    """Arbitrary log bodies give ads or a PoolError naming the source, never another error."""
    text = "\n".join([HEADER, *lines]) + "\n"
    try:
        ads = parse_persistent_ads(text, "fuzzed.log")
    except PoolError as error:
        assert str(error).startswith("fuzzed.log, line ")
    else:
        assert all(isinstance(ad, ClassAd) for ad in ads)


@pytest.mark.oracle
def test_log_lines_are_classads_htcondor_reads_the_same(tmp_path: Path) -> None:
    """HTCondor's classad2 parses every ad line of the log to the same attribute values."""
    classad2 = pytest.importorskip("classad2")
    path = tmp_path / "persistent.log"
    ads = [absent_machine("one@a"), absent_machine('quote"@a')]
    ads[1]["Start"] = ClassAd({"x": 1})["x"]
    write_persistent_ads(path, ads)
    lines = path.read_text().splitlines()[1:]
    assert len(lines) == len(ads)
    for line, ours in zip(lines, ads, strict=True):
        theirs = classad2.parseOne(line)
        assert {name.lower() for name in theirs} == {name.lower() for name in ours}
        for name in ours:
            assert theirs.eval(name) == ours.evaluate(name), name
