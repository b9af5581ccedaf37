"""HasUserNamespaces: the startd's probe of unprivileged user namespaces, and the slot ads."""

from __future__ import annotations

import logging
import os
import pwd
import shutil
import tempfile
from pathlib import Path

import pytest

from epcore.startd import namespaces
from epcore.startd.main import build_startd

LOG = logging.getLogger("epcore.test.namespaces")


def _machine_allows_them() -> bool:
    try:
        return int(Path("/proc/sys/user/max_user_namespaces").read_text()) > 0
    except (OSError, ValueError):
        return False


@pytest.mark.skipif(shutil.which("unshare") is None, reason="util-linux's unshare is missing")
@pytest.mark.skipif(not _machine_allows_them(), reason="user namespaces are off on this machine")
def test_probe_says_yes_where_nobody_can_make_one() -> None:
    """On a machine whose kernel allows user namespaces the probe, run as nobody by a root
    startd, succeeds."""
    assert namespaces.has_user_namespaces() is True


def test_probe_says_no_for_a_failing_missing_or_hanging_program(tmp_path: Path) -> None:
    """A probe program that fails, is not there or does not finish in time means no user
    namespaces (never an error)."""
    tmp_path.chmod(0o755)
    failing = tmp_path / "unshare-fails"
    failing.write_text("#!/bin/sh\necho 'unshare: Operation not permitted' >&2\nexit 1\n")
    hanging = tmp_path / "unshare-hangs"
    hanging.write_text("#!/bin/sh\nexec sleep 30\n")
    for program in (failing, hanging):
        program.chmod(0o755)
    assert namespaces.has_user_namespaces(str(failing)) is False
    assert namespaces.has_user_namespaces(str(tmp_path / "missing")) is False
    assert namespaces.has_user_namespaces(str(hanging), timeout=0.5) is False


@pytest.mark.skipif(os.geteuid() != 0, reason="the probe runs as nobody only for root")
def test_probe_runs_unprivileged() -> None:
    """A root startd probes as nobody: root's privileges do not answer for the jobs' users."""
    # Outside pytest's 0700 temporary root: nobody runs the program and writes beside it.
    directory = Path(tempfile.mkdtemp(prefix="ep_test_userns_"))
    try:
        directory.chmod(0o777)
        seen = directory / "uid"
        program = directory / "unshare-records"
        program.write_text(f"#!/bin/sh\nid -u > {seen}\n")
        program.chmod(0o755)
        assert namespaces.has_user_namespaces(str(program)) is True
        assert seen.read_text().strip() == str(pwd.getpwnam("nobody").pw_uid)
    finally:
        shutil.rmtree(directory, ignore_errors=True)


@pytest.mark.parametrize("can", [True, False])
def test_slot_ads_carry_it_only_when_the_probe_says_yes(
    can: bool, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Every slot ad has HasUserNamespaces = true when the probe succeeds, and none has the
    attribute when it fails (HTCondor leaves it out rather than saying false)."""
    monkeypatch.setattr(namespaces, "_probed", lambda: can)
    local = tmp_path / "local"
    local.mkdir()
    config = tmp_path / "condor_config"
    config.write_text(
        f"LOCAL_DIR = {local}\nRUNBENCHMARKS = False\nNUM_CPUS = 2\nMEMORY = 512\nNUM_SLOTS = 2\n"
    )
    startd = build_startd(str(config))
    try:
        ads = startd.ads(startd.state, startd.clock(), published=True)
    finally:
        startd.close()
    assert len(ads) == 2
    for ad in ads.values():
        if can:
            assert ad.evaluate("HasUserNamespaces") is True
        else:
            assert "HasUserNamespaces" not in ad
