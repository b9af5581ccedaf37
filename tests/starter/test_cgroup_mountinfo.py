"""/proc/self/mountinfo read into cgroup hierarchies, and the choice of v1 or v2 per controller."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

import hypothesis.strategies as st
import pytest
from hypothesis import given

from epcore.errors import IsolationError
from epcore.starter.cgroups import (
    CgroupLayout,
    MountinfoError,
    layout_from_mounts,
    parse_mountinfo,
    read_layout,
)
from epcore.starter.cgroups.mountinfo import parse_line

Tick = Callable[[], None]

#: Copied from this test machine's /proc/self/mountinfo (a hybrid host: v1 controllers, and
#: cgroup2 at /sys/fs/cgroup/unified with only hugetlb).
HYBRID = """\
22 27 0:21 / /proc rw,relatime - proc proc rw
23 27 0:22 / /sys rw,relatime - sysfs sysfs rw
27 1 254:0 / / rw,relatime - ext4 /dev/vda rw,discard,resv_strict,resuid=65534,resgid=65534
31 23 0:28 / /sys/fs/cgroup rw,relatime - tmpfs tmpfs rw,mode=755
32 31 0:29 / /sys/fs/cgroup/cpu rw,relatime - cgroup cgroup rw,cpu
33 31 0:30 / /sys/fs/cgroup/cpuacct rw,relatime - cgroup cgroup rw,cpuacct
34 31 0:31 / /sys/fs/cgroup/cpuset rw,relatime - cgroup cgroup rw,cpuset
35 31 0:32 / /sys/fs/cgroup/memory rw,relatime - cgroup cgroup rw,memory
36 31 0:33 / /sys/fs/cgroup/devices rw,relatime - cgroup cgroup rw,devices
37 31 0:34 / /sys/fs/cgroup/freezer rw,relatime - cgroup cgroup rw,freezer
38 31 0:35 / /sys/fs/cgroup/blkio rw,relatime - cgroup cgroup rw,blkio
39 31 0:36 / /sys/fs/cgroup/pids rw,relatime - cgroup cgroup rw,pids
40 31 0:37 / /sys/fs/cgroup/systemd rw,relatime - cgroup cgroup rw,name=systemd
41 31 0:38 / /sys/fs/cgroup/unified rw,relatime - cgroup2 cgroup2 rw
"""

#: A systemd hybrid host of the RHEL 7/8 kind: cpu and cpuacct co-mounted, net_cls,net_prio too,
#: optional fields (shared:N) before the separator.
SYSTEMD_HYBRID = """\
25 18 0:21 / /sys/fs/cgroup ro,nosuid,nodev,noexec shared:8 - tmpfs tmpfs ro,mode=755
26 25 0:22 / /sys/fs/cgroup/unified rw,nosuid,nodev,noexec,relatime shared:9 - cgroup2 cgroup2 rw,nsdelegate
27 25 0:23 / /sys/fs/cgroup/systemd rw,nosuid,nodev,noexec,relatime shared:10 - cgroup cgroup rw,xattr,name=systemd
30 25 0:26 / /sys/fs/cgroup/cpu,cpuacct rw,nosuid,nodev,noexec,relatime shared:13 - cgroup cgroup rw,cpu,cpuacct
31 25 0:27 / /sys/fs/cgroup/net_cls,net_prio rw,nosuid,nodev,noexec,relatime shared:14 - cgroup cgroup rw,net_cls,net_prio
32 25 0:28 / /sys/fs/cgroup/memory rw,nosuid,nodev,noexec,relatime shared:15 - cgroup cgroup rw,memory
33 25 0:29 / /sys/fs/cgroup/freezer rw,nosuid,nodev,noexec,relatime shared:16 - cgroup cgroup rw,freezer
34 25 0:30 / /sys/fs/cgroup/pids rw,nosuid,nodev,noexec,relatime shared:17 - cgroup cgroup rw,pids
"""  # noqa: E501

#: A v2-only host (Debian 12, systemd).
V2_ONLY = """\
26 22 0:23 / /sys/fs/cgroup rw,nosuid,nodev,noexec,relatime shared:4 - cgroup2 cgroup2 rw,nsdelegate,memory_recursiveprot
"""  # noqa: E501


def _tree(tmp_path: Path, mountinfo: str, v2_controllers: dict[str, str] | None = None) -> Path:
    (tmp_path / "proc/self").mkdir(parents=True)
    (tmp_path / "proc/self/mountinfo").write_text(mountinfo)
    for where, controllers in (v2_controllers or {}).items():
        path = tmp_path / where.lstrip("/")
        path.mkdir(parents=True, exist_ok=True)
        (path / "cgroup.controllers").write_text(controllers + "\n")
    return tmp_path


def test_a_line_is_split_into_its_fields() -> None:
    """The fields of proc(5), the optional ones skipped, the options as tuples."""
    entry = parse_line(
        "36 35 98:0 /mnt1 /mnt2 rw,noatime master:1 - ext3 /dev/root rw,errors=continue"
    )
    assert (entry.mount_id, entry.parent_id, entry.device) == (36, 35, "98:0")
    assert (entry.root, entry.mount_point) == ("/mnt1", "/mnt2")
    assert entry.options == ("rw", "noatime")
    assert (entry.fstype, entry.source) == ("ext3", "/dev/root")
    assert entry.super_options == ("rw", "errors=continue")


def test_octal_escapes_in_paths_are_decoded() -> None:
    """The kernel writes a space as \\040 and a backslash as \\134."""
    entry = parse_line(r"40 31 0:37 / /mnt/my\040cgroups\134x rw - cgroup cgroup rw,pids")
    assert entry.mount_point == "/mnt/my cgroups\\x"


def test_this_machines_shape_is_a_hybrid_layout(tmp_path: Path) -> None:
    """Every controller the backend uses is on v1 here; v2 has only hugetlb, but its core
    features (freezer, cpu accounting) would be there were they not on v1."""
    root = _tree(tmp_path, HYBRID, {"/sys/fs/cgroup/unified": "hugetlb"})
    layout = read_layout(root)
    cgroup = root / "sys/fs/cgroup"
    for controller in ("memory", "cpu", "cpuacct", "freezer", "pids", "cpuset", "blkio"):
        assert layout.v1[controller].path == cgroup / controller
        assert layout.v1[controller].controllers == {controller}
        assert layout.version(controller) == 1
    assert "systemd" not in layout.v1 and "name=systemd" not in layout.v1
    assert layout.v2 == cgroup / "unified"
    assert layout.v2_controllers == {"hugetlb"}
    assert layout.version("hugetlb") == 2
    assert layout.version("io") is None
    assert "unified" in layout.describe()


def test_co_mounted_controllers_share_one_hierarchy(tmp_path: Path) -> None:
    """cpu,cpuacct is one hierarchy, at one path, for both controllers."""
    root = _tree(tmp_path, SYSTEMD_HYBRID, {"/sys/fs/cgroup/unified": ""})
    layout = read_layout(root)
    both = root / "sys/fs/cgroup/cpu,cpuacct"
    assert layout.v1["cpu"] is layout.v1["cpuacct"]
    assert layout.v1["cpu"].path == both
    assert layout.v1["cpu"].controllers == {"cpu", "cpuacct"}
    assert layout.v1["net_prio"].controllers == {"net_cls", "net_prio"}
    assert layout.v2_controllers == frozenset()
    assert layout.version("memory") == 1


def test_v2_only_host_uses_v2_for_everything(tmp_path: Path) -> None:
    """No v1 mount: controllers listed at the v2 root use v2, the freezer and cpuacct use
    v2's core files."""
    root = _tree(
        tmp_path, V2_ONLY, {"/sys/fs/cgroup": "cpuset cpu io memory hugetlb pids rdma misc"}
    )
    layout = read_layout(root)
    assert layout.v1 == {}
    assert layout.v2 == root / "sys/fs/cgroup"
    for controller in ("memory", "cpu", "pids", "freezer", "cpuacct", "io"):
        assert layout.version(controller) == 2
    assert layout.version("net_cls") is None


def test_v2_without_a_readable_controllers_file_has_no_controllers(tmp_path: Path) -> None:
    """A cgroup2 mount whose cgroup.controllers cannot be read offers only core files."""
    layout = read_layout(_tree(tmp_path, V2_ONLY))
    assert layout.v2_controllers == frozenset()
    assert layout.version("memory") is None
    assert layout.version("freezer") == 2


def test_a_whole_tree_mount_is_preferred_to_a_sub_group(tmp_path: Path) -> None:
    """A hierarchy mounted twice (a container's view of a sub-group, then the whole tree)
    is used where its whole tree is."""
    text = (
        "50 31 0:32 /docker/abc /inner/memory rw - cgroup cgroup rw,memory\n"
        "51 31 0:32 / /sys/fs/cgroup/memory rw - cgroup cgroup rw,memory\n"
        "52 31 0:38 /sub /inner/unified rw - cgroup2 cgroup2 rw\n"
        "53 31 0:38 / /sys/fs/cgroup/unified rw - cgroup2 cgroup2 rw\n"
    )
    layout = layout_from_mounts(parse_mountinfo(text), tmp_path)
    assert layout.v1["memory"].path == tmp_path / "sys/fs/cgroup/memory"
    assert layout.v2 == tmp_path / "sys/fs/cgroup/unified"


def test_no_cgroup_mount_gives_an_empty_layout(tmp_path: Path) -> None:
    """Without cgroup file systems nothing is chosen."""
    layout = read_layout(_tree(tmp_path, HYBRID.splitlines()[0] + "\n"))
    assert layout == CgroupLayout()
    assert layout.version("memory") is None and layout.version("freezer") is None


def test_only_v2_drops_the_v1_hierarchies(tmp_path: Path) -> None:
    """The test switch: every controller from v2, with v2's controller list."""
    layout = read_layout(_tree(tmp_path, HYBRID, {"/sys/fs/cgroup/unified": "hugetlb"}))
    forced = layout.only_v2()
    assert forced.v1 == {}
    assert forced.v2 == layout.v2
    assert forced.version("freezer") == 2
    assert forced.version("memory") is None


@pytest.mark.parametrize(
    ("line", "reason"),
    [
        ("31 23 0:28 / /sys/fs/cgroup rw,relatime tmpfs tmpfs rw", "no '-' separator"),
        ("31 23 0:28 / /sys/fs/cgroup rw,relatime - tmpfs tmpfs", "2 fields after '-'"),
        ("31 23 0:28 / /sys/fs/cgroup rw - tmpfs tmpfs rw extra", "4 fields after '-'"),
        ("x1 23 0:28 / /sys/fs/cgroup rw - tmpfs tmpfs rw", "mount ids are not numbers"),
        ("31 23 028 / /sys/fs/cgroup rw - tmpfs tmpfs rw", "is not major:minor"),
        ("31 23 0:28 / sys/fs/cgroup rw - tmpfs tmpfs rw", "is not absolute"),
        ("31 23 0:28 / - tmpfs tmpfs rw", "no '-' separator"),
    ],
)
def test_a_malformed_line_is_an_error_naming_file_and_line(line: str, reason: str) -> None:
    """The error names the file, the 1-based line number, why, and the line itself."""
    text = HYBRID.splitlines()[0] + "\n\n" + line + "\n"
    with pytest.raises(MountinfoError) as caught:
        parse_mountinfo(text, "/proc/self/mountinfo")
    message = str(caught.value)
    assert message.startswith("/proc/self/mountinfo, line 3: ")
    assert reason in message
    assert repr(line) in message


def test_a_malformed_file_names_its_path(tmp_path: Path) -> None:
    """read_layout reports the file it read."""
    root = _tree(tmp_path, "garbage\n")
    with pytest.raises(MountinfoError, match=rf"{tmp_path}/proc/self/mountinfo, line 1: "):
        read_layout(root)


def test_a_missing_mountinfo_is_an_isolation_error(tmp_path: Path) -> None:
    """No /proc here: the error names the file it could not read."""
    with pytest.raises(IsolationError, match=r"cannot read .*proc/self/mountinfo"):
        read_layout(tmp_path)


def test_the_real_mountinfo_parses() -> None:
    """This machine's own file: every line is an entry, and the layout can be read."""
    text = Path("/proc/self/mountinfo").read_text(errors="surrogateescape")
    assert len(parse_mountinfo(text)) == len([line for line in text.splitlines() if line])
    read_layout("/")


# -- fuzzing ------------------------------------------------------------------------------

_REAL_FIELDS = sorted({field for line in HYBRID.splitlines() for field in line.split()})
_TOKENS = [
    *_REAL_FIELDS,
    "-",
    "",
    " ",
    "\t",
    "\\040",
    "\\777",
    "\\",
    "\x00",
    "é",
    "\udcff",
    "\u0661",
]
_field = st.one_of(st.sampled_from(_TOKENS), st.text(max_size=8))
_line = st.lists(_field, max_size=14).map(" ".join)
_mutated = st.builds(
    lambda line, index, token: " ".join(
        token if i == index else f for i, f in enumerate(line.split())
    ),
    st.sampled_from(HYBRID.splitlines()),
    st.integers(0, 12),
    _field,
)
_text = st.lists(st.one_of(_line, _mutated, st.text()), max_size=6).map("\n".join)


@given(text=_text)
def test_the_parser_raises_nothing_but_its_own_error(text: str, example_counter: Tick) -> None:
    """Any text is a list of entries or a MountinfoError, never another exception."""
    example_counter()
    try:
        entries = parse_mountinfo(text)
    except MountinfoError as exc:
        assert "/proc/self/mountinfo, line " in str(exc)
        return
    for entry in entries:
        assert entry.mount_point.startswith("/")


@given(text=_text)
def test_a_layout_from_any_parsed_text_is_read_without_crashing(
    text: str, tmp_path: Path, example_counter: Tick
) -> None:
    """Odd mount points (NUL bytes, escapes, long names) do not crash the layout."""
    example_counter()
    try:
        entries = parse_mountinfo(text)
    except MountinfoError:
        return
    layout = layout_from_mounts(entries, tmp_path)
    for controller in ("memory", "cpu", "freezer"):
        assert layout.version(controller) in (1, 2, None)
    layout.describe()
