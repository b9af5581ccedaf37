"""Making and removing cgroup directories (on a plain directory tree standing in for cgroupfs)."""

from __future__ import annotations

from pathlib import Path, PurePosixPath

import pytest

from epcore.errors import IsolationError
from epcore.starter.cgroups.files import make_dirs, remove_tree


def test_make_dirs_makes_only_what_is_missing(tmp_path: Path) -> None:
    """make_dirs returns the directories it made, top down: all of them in an empty tree,
    only the job's own once its parents exist, none when all exist."""
    relative = PurePosixPath("base/sub/job1")
    assert make_dirs(tmp_path, relative) == [
        tmp_path / "base",
        tmp_path / "base" / "sub",
        tmp_path / "base" / "sub" / "job1",
    ]
    assert make_dirs(tmp_path, PurePosixPath("base/sub/job2")) == [tmp_path / "base/sub/job2"]
    assert make_dirs(tmp_path, relative) == []
    assert (tmp_path / "base" / "sub" / "job2").is_dir()


def test_make_dirs_refuses_what_cannot_be_made_and_leaves_nothing(tmp_path: Path) -> None:
    """A file where a directory should be, or a name the kernel refuses, is an
    IsolationError naming the path, and the directories made before it are removed."""
    (tmp_path / "base").mkdir()
    (tmp_path / "base" / "sub").write_text("")
    with pytest.raises(IsolationError, match="sub: it exists and is no directory"):
        make_dirs(tmp_path, PurePosixPath("base/sub/job"))
    with pytest.raises(IsolationError, match=r"cannot create cgroup .*/new/x+: "):
        make_dirs(tmp_path, PurePosixPath("new") / ("x" * 300))
    assert sorted(p.name for p in tmp_path.iterdir()) == ["base"]


def test_remove_tree_removes_a_group_and_the_groups_below_it(tmp_path: Path) -> None:
    """remove_tree removes an empty group at once, a group with groups below it deepest
    first, and does nothing for a group already gone."""
    (tmp_path / "alone").mkdir()
    remove_tree(tmp_path / "alone")
    (tmp_path / "job" / "a" / "b").mkdir(parents=True)
    (tmp_path / "job" / "c").mkdir()
    remove_tree(tmp_path / "job")
    remove_tree(tmp_path / "gone")
    assert list(tmp_path.iterdir()) == []


def test_remove_tree_names_a_group_that_cannot_go(tmp_path: Path) -> None:
    """A group that cannot be removed (here: a plain file in it, as a busy group refuses
    rmdir) is an OSError for the caller to report."""
    (tmp_path / "job").mkdir()
    (tmp_path / "job" / "file").write_text("")
    with pytest.raises(OSError):
        remove_tree(tmp_path / "job")
