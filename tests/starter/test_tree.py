"""Walking a tree its owner may change: never through a link, never out of the tree."""

from __future__ import annotations

import os
import stat
from pathlib import Path

import pytest

from epcore.starter.tree import NOT_A_DIRECTORY, TreeError, walk


def _outside(tmp_path: Path) -> tuple[Path, dict[str, bytes], int]:
    """A directory outside the walked tree with a file in it, and its mode."""
    victim = tmp_path / "victim"
    victim.mkdir()
    files = {"victimfile": b"keep me"}
    for name, data in files.items():
        (victim / name).write_bytes(data)
    victim.chmod(0o751)
    return victim, files, 0o751


def _untouched(victim: Path, files: dict[str, bytes], mode: int) -> None:
    assert stat.S_IMODE(victim.stat().st_mode) == mode
    for name, data in files.items():
        assert (victim / name).read_bytes() == data


def test_a_directory_moved_away_during_the_walk_stops_it(tmp_path: Path) -> None:
    """When a directory being walked is moved out of the tree, the walk stops with TreeError
    instead of going on in the directory the move put it in."""
    root = tmp_path / "top"
    (root / "a" / "b").mkdir(parents=True)
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    (elsewhere / "keep").write_text("x")
    seen: list[str] = []

    def visit(fd: int, where: str) -> list[str]:
        seen.append(where)
        if where == "top/a/b":
            # Move b's parent out of the tree: going back up must not land in `elsewhere`.
            os.rename(root / "a", elsewhere / "a")
        return sorted(e.name for e in os.scandir(fd) if e.is_dir(follow_symlinks=False))

    parent = os.open(tmp_path, os.O_RDONLY | os.O_DIRECTORY)
    try:
        with pytest.raises(TreeError, match="moved while it was walked"):
            walk(parent, "top", visit, lambda fd, name, where: None)
    finally:
        os.close(parent)
    assert seen == ["top", "top/a", "top/a/b"]
    assert (elsewhere / "keep").read_text() == "x"


def test_a_subdirectory_swapped_for_a_link_after_listing_is_not_entered(tmp_path: Path) -> None:
    """A subdirectory replaced by a link between its listing and its visit is handed to
    ``leave`` by name and never entered."""
    victim, files, mode = _outside(tmp_path)
    root = tmp_path / "top"
    (root / "x").mkdir(parents=True)
    left: list[str] = []

    def visit(fd: int, where: str) -> list[str]:
        assert where == "top", f"entered {where}"
        os.rename(root / "x", root / "y")
        os.symlink(victim, root / "x")
        return ["x"]

    parent = os.open(tmp_path, os.O_RDONLY | os.O_DIRECTORY)
    try:
        walk(parent, "top", visit, lambda fd, name, where: left.append(where))
    finally:
        os.close(parent)
    assert left == ["top/x", "top"]
    _untouched(victim, files, mode)


def test_walk_of_a_link_is_refused(tmp_path: Path) -> None:
    """A top that is a link is not entered: walk raises OSError (ENOTDIR or ELOOP) and
    visits nothing."""
    victim, _files, _mode = _outside(tmp_path)
    (tmp_path / "top").symlink_to(victim)
    parent = os.open(tmp_path, os.O_RDONLY | os.O_DIRECTORY)
    try:
        with pytest.raises(OSError) as raised:
            walk(parent, "top", lambda fd, where: pytest.fail("visited"), lambda *a: None)
    finally:
        os.close(parent)
    assert raised.value.errno in NOT_A_DIRECTORY
