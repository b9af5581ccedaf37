"""The startd's FileSink: the current slot ads in one file, one line each, rewritten only
when a line changed."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from epcore.classad import ClassAd, parse_ad
from epcore.startd.publish import FileSink


def _slot(name: str, state: str, now: int) -> ClassAd:
    return parse_ad(f'[ Name = "{name}"; State = "{state}"; MyCurrentTime = {now} ]')


def _lines(path: Path) -> list[str]:
    return path.read_text().splitlines()


def test_the_file_holds_every_ad_by_name_as_its_text(tmp_path: Path) -> None:
    """Every advertised ad is one line of the file, its new-syntax text, in the order of the
    names; a later advertisement of a name replaces its line, and the file is private."""
    path = tmp_path / "startd_ads"
    sink = FileSink(str(path))
    second, first = _slot("slot2@h", "Unclaimed", 1), _slot("slot1@h", "Unclaimed", 1)
    sink.advertise([second, first], 1.0)
    assert _lines(path) == [str(first), str(second)]
    claimed = _slot("slot2@h", "Claimed", 2)
    sink.advertise([claimed], 2.0)
    assert _lines(path) == [str(first), str(claimed)]
    assert [parse_ad(line).evaluate("State") for line in _lines(path)] == ["Unclaimed", "Claimed"]
    assert path.stat().st_mode & 0o777 == 0o600


def test_invalidated_ads_leave_the_file(tmp_path: Path) -> None:
    """An invalidated name's line goes; invalidating every ad leaves an empty file."""
    path = tmp_path / "startd_ads"
    sink = FileSink(str(path))
    ads = [_slot("slot1@h", "Unclaimed", 1), _slot("slot1_1@h", "Claimed", 1)]
    sink.advertise(ads, 1.0)
    sink.invalidate(["slot1_1@h", "slot9@h"], 2.0)
    assert _lines(path) == [str(ads[0])]
    sink.invalidate(["slot1@h"], 3.0)
    assert path.read_text() == ""


def test_an_unchanged_advertisement_leaves_the_file_alone(tmp_path: Path) -> None:
    """Advertising ads whose text did not change, or invalidating unknown names, does not
    replace the file (its inode stays); a changed attribute does."""
    path = tmp_path / "startd_ads"
    sink = FileSink(str(path))
    sink.advertise([_slot("slot1@h", "Unclaimed", 1)], 1.0)
    inode = path.stat().st_ino
    sink.advertise([_slot("slot1@h", "Unclaimed", 1)], 2.0)
    sink.invalidate(["slot7@h"], 2.0)
    assert path.stat().st_ino == inode
    sink.advertise([_slot("slot1@h", "Unclaimed", 3)], 3.0)
    assert path.stat().st_ino != inode
    assert "MyCurrentTime = 3" in path.read_text()


def test_a_failed_write_is_made_by_the_next_advertisement(tmp_path: Path) -> None:
    """When the file cannot be written the error goes to the caller, and the next
    advertisement writes the lines, even when none of them changed since."""
    spool = tmp_path / "spool"
    sink = FileSink(str(spool / "startd_ads"))
    ad = _slot("slot1@h", "Unclaimed", 1)
    with pytest.raises(OSError):
        sink.advertise([ad], 1.0)
    os.mkdir(spool)
    sink.advertise([ad], 2.0)
    assert _lines(spool / "startd_ads") == [str(ad)]
