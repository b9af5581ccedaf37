"""The guest kit (epcore.testing.guest): its cache keys and command line on their own, and a real
boot under qemu TCG (skipped outside CI where qemu or mmdebstrap is missing)."""

from __future__ import annotations

import subprocess
from pathlib import Path

import pytest

from epcore.testing import guest as guest_kit
from epcore.testing.guest import Guest, GuestImage


def _wheel(directory: Path, name: str, content: bytes) -> Path:
    path = directory / name
    path.write_bytes(content)
    return path


def test_the_image_key_follows_the_wheels_content(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Two builds with identical wheels find the same image; a changed wheel asks for a new one."""
    monkeypatch.setattr(guest_kit, "kernel_version", lambda: "6.1.0-50")
    built: list[str] = []

    def fake_tree(spec: guest_kit.GuestSpec, tree: Path) -> None:
        (tree / "boot").mkdir(parents=True)
        (tree / "boot" / "vmlinuz-6.1").write_text("kernel")
        (tree / "boot" / "initrd.img-6.1").write_text("initrd")
        built.append(tree.name)

    monkeypatch.setattr(guest_kit, "_build_tree", fake_tree)
    monkeypatch.setattr(guest_kit, "_configure", lambda tree: None)
    monkeypatch.setattr(guest_kit, "_install_venv", lambda tree, wheels: None)
    monkeypatch.setattr(
        guest_kit.subprocess,
        "run",
        lambda argv, **_: Path(argv[-2]).write_text("disk"),
    )
    first = guest_kit.build_image([_wheel(tmp_path, "a.whl", b"one")], root=tmp_path / "cache")
    again = guest_kit.build_image([_wheel(tmp_path, "a.whl", b"one")], root=tmp_path / "cache")
    changed = guest_kit.build_image([_wheel(tmp_path, "a.whl", b"two")], root=tmp_path / "cache")
    assert first == again
    assert changed.key != first.key
    assert len(built) == 1, "the Debian tree is built once for one package list and kernel"
    assert not first.disk.exists(), "the stale image is removed when a new one is made"
    assert changed.disk.read_text() == "disk"


def test_the_tree_key_follows_the_package_list_and_kernel() -> None:
    """A different package list or kernel version gives a different tree key."""
    base = guest_kit._digest("bookworm", *guest_kit.DEFAULT_PACKAGES, "6.1.0-50")
    assert guest_kit._digest("bookworm", *guest_kit.DEFAULT_PACKAGES, "6.1.0-51") != base
    assert guest_kit._digest("bookworm", *guest_kit.DEFAULT_PACKAGES, "strace", "6.1.0-50") != base


def test_qemu_runs_tcg_without_network_on_a_read_only_disk(tmp_path: Path) -> None:
    """The command line asks for TCG (KVM cannot boot a stock kernel here), no network, the
    cached disk under a snapshot, and both 9p shares."""
    image = GuestImage(kernel=tmp_path / "k", initrd=tmp_path / "i", disk=tmp_path / "d", key="x")
    argv = Guest(image=image, checkout=tmp_path).qemu_argv(tmp_path / "s", tmp_path / "c")
    assert argv[argv.index("-accel") + 1] == "tcg"
    assert argv[argv.index("-nic") + 1] == "none"
    assert f"file={tmp_path / 'd'},if=virtio,format=raw,snapshot=on" in argv
    shares = [a for a in argv if a.startswith("local,")]
    assert [s.split("mount_tag=")[1].split(",")[0] for s in shares] == ["share", "checkout"]
    assert "readonly=on" in shares[1]


def test_the_mirror_is_the_one_apt_uses() -> None:
    """The mirror is read from apt's sources, skipping the security archive."""
    found = guest_kit.mirror()
    assert found.startswith(("http://", "https://"))
    assert "security" not in found


def _qemu_running() -> list[str]:
    listing = subprocess.run(["ps", "-eo", "pid,args"], capture_output=True, text=True).stdout
    return [line for line in listing.splitlines() if "epguest-init" in line]


@pytest.mark.system
def test_a_command_runs_in_the_guest_with_its_status(guest: Guest) -> None:
    """A command runs as root under Debian's kernel with all cgroup v2 controllers; its output
    and exit status come back and no qemu is left running."""
    result = guest.run(
        "uname -r; cat /sys/fs/cgroup/cgroup.controllers; id -u; test -f /checkout/pyproject.toml"
        " && python -c 'import epcore; print(epcore.__file__)'; exit 3"
    )
    lines = result.output.splitlines()
    assert result.status == 3, result.console[-2000:]
    assert lines[0].endswith("-amd64")
    assert {"memory", "pids", "cpu"} <= set(lines[1].split())
    assert lines[2] == "0"
    assert lines[3].startswith(guest_kit.VENV)
    assert _qemu_running() == []


@pytest.mark.system
def test_a_hung_guest_is_killed_at_the_time_limit(guest: Guest) -> None:
    """A command that never ends is cut off at the time limit: no status, no qemu left."""
    result = guest.run("sleep 1000", timeout=25)
    assert result.status is None
    assert result.seconds < 40
    assert _qemu_running() == []
