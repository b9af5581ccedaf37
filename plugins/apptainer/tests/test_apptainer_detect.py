"""The startup probe: the version, the two test containers the plugin builds, the PID namespace
retry, and what a missing or broken runtime advertises."""

from __future__ import annotations

import logging
import os
import platform
import shutil
import subprocess
import time
from pathlib import Path

import pytest
from epcore_apptainer.detect import Probe, last_line, probe
from epcore_apptainer.settings import read_settings
from epcore_apptainer.testimages import exit_program, make_sandbox, user_ns_program

from epcore.config import Config
from epcore.testing.system import missing

LOG = logging.getLogger("epcore.apptainer.test")


def _settings(runtime: str, **knobs: str) -> object:
    text = f"SINGULARITY = {runtime}\n" + "".join(f"{k} = {v}\n" for k, v in knobs.items())
    return read_settings(Config.from_text(text))


def _attributes(found: Probe) -> dict[str, object]:
    return {a.name: a.value for a in found.attributes()}


def test_exit_program_exits_37(tmp_path: Path) -> None:
    """The test sandbox's /exit_37, written byte by byte, runs on this machine and exits 37."""
    if platform.machine() not in ("x86_64", "aarch64"):
        pytest.skip(f"no exit_37 recipe for {platform.machine()}")
    sandbox = make_sandbox(tmp_path / "sandbox")
    assert subprocess.run([str(sandbox / "exit_37")], check=False).returncode == 37
    assert exit_program("x86_64")[:4] == b"\x7fELF"


@pytest.mark.system
def test_working_runtime_advertises_everything(
    runtime_program: str, tmp_path: Path, as_root: None
) -> None:
    """A working runtime: HasSingularity, HasContainer, HasSIF, HasSandboxImage, HasDockerURL,
    HasPidNamespaces and its version line; the SIF is built by the runtime."""
    found = probe(_settings(runtime_program), tmp_path, LOG)
    attributes = _attributes(found)
    assert attributes["HasSingularity"] is True
    for name in ("HasContainer", "HasSIF", "HasSandboxImage", "HasDockerURL", "HasPidNamespaces"):
        assert attributes[name] is True, name
    version = attributes["SingularityVersion"]
    assert isinstance(version, str) and " version " in version
    # True for an unprivileged runtime (the stand-in, apptainer without setuid), False for a
    # setuid installation: known either way on x86_64, where the sandbox has /get_user_ns.
    if platform.machine() == "x86_64":
        assert isinstance(attributes["SingularityUserNamespaces"], bool)
    assert (tmp_path / "exit_37.sif").stat().st_size > 0


@pytest.mark.system
def test_pid_namespace_retry(runtime_program: str, tmp_path: Path, as_root: None) -> None:
    """auto: a runtime that fails with -C is tried again without a PID namespace; both
    containers then run and HasPidNamespaces is false."""
    wrapper = tmp_path / "no-pid-ns"
    wrapper.write_text(
        "#!/bin/sh\n"
        'for a in "$@"; do [ "$a" = -C ] && '
        '{ echo "FATAL:   no PID namespace" >&2; exit 255; }; done\n'
        f'exec {runtime_program} "$@"\n'
    )
    wrapper.chmod(0o755)
    attributes = _attributes(probe(_settings(str(wrapper)), tmp_path, LOG))
    assert attributes["HasSingularity"] is True
    assert attributes["HasPidNamespaces"] is False
    assert attributes["HasSIF"] is True


def test_missing_runtime_advertises_nothing(tmp_path: Path) -> None:
    """No runtime (ENOENT, or none configured): no attribute at all, as HTCondor."""
    assert probe(_settings("/no/such/apptainer-x"), tmp_path, LOG).attributes() == []
    assert probe(_settings('""'), tmp_path, LOG).attributes() == []


def test_broken_runtime_is_offline_with_its_reason(tmp_path: Path) -> None:
    """A runtime that cannot run either container: HasSingularity = false and the reason, with
    its last words stripped of colour codes."""
    broken = tmp_path / "broken"
    broken.write_text(
        "#!/bin/sh\n"
        '[ "$1" = --version ] && { echo "apptainer version 9"; exit 0; }\n'
        "printf '\\033[31mFATAL:   kaput\\033[0m\\n' >&2; exit 255\n"
    )
    broken.chmod(0o755)
    attributes = _attributes(probe(_settings(str(broken)), tmp_path / "p", LOG))
    assert attributes == {
        "HasSingularity": False,
        "SingularityOfflineReason": "Both SIF and Sandbox tests on startup failed : FATAL:   kaput",
        "SingularityVersion": "apptainer version 9",
    }


def test_last_line_strips_colours() -> None:
    """The runtime's last non-empty line, ANSI codes removed."""
    assert last_line("a\n\x1b[31mFATAL: b\x1b[0m\n\n") == "FATAL: b"


X86_ONLY = pytest.mark.skipif(
    platform.machine() != "x86_64", reason="/get_user_ns is written for x86_64 only"
)
#: A runtime that runs the image's program itself (a sandbox only), through $WRAP.
FAKE_RUNTIME = """#!/bin/sh
case "$1" in
--version) echo "apptainer version 9.9-fake"; exit 0 ;;
build) : > "$3"; exit 0 ;;
esac
for program; do :; done
eval "image=\\${$(($# - 1))}"
{extra}
exec {wrap} "$image$program"
"""
#: A line of the fake runtime that makes /get_user_ns fail (the sandbox test still passes).
REFUSE_USER_NS = '[ "$program" = /get_user_ns ] && exit 1'


@X86_ONLY
@pytest.mark.skipif(shutil.which("unshare") is None, reason="util-linux's unshare is missing")
def test_get_user_ns_prints_the_namespace_it_runs_in(tmp_path: Path) -> None:
    """The sandbox's /get_user_ns, written byte by byte, prints this process's user namespace
    link, and another one when started in a new user namespace."""
    sandbox = make_sandbox(tmp_path / "sandbox")
    program = str(sandbox / "get_user_ns")
    assert (sandbox / "get_user_ns").read_bytes() == user_ns_program()
    here = subprocess.run([program], capture_output=True, text=True, check=True).stdout
    assert here == os.readlink("/proc/self/ns/user") + "\n"
    other = subprocess.run(
        ["unshare", "--user", program], capture_output=True, text=True, check=True
    ).stdout
    assert other.startswith("user:[") and other != here


@X86_ONLY
@pytest.mark.parametrize(
    ("wrap", "extra", "expected"),
    [("", "", False), ("unshare --user", "", True), ("", REFUSE_USER_NS, None)],
    ids=["setuid-like", "user-namespace", "unknown"],
)
def test_singularity_user_namespaces(
    wrap: str, extra: str, expected: bool | None, tmp_path: Path, as_root: None
) -> None:
    """SingularityUserNamespaces (HTCondor 24.x+): false when the runtime's job shares the
    startd's user namespace (setuid), true when it has its own, left out when /get_user_ns
    gives no answer."""
    if wrap and shutil.which(wrap.split()[0]) is None:
        missing(f"{wrap} is missing (util-linux)")
    runtime = tmp_path / "fake-apptainer"
    runtime.write_text(FAKE_RUNTIME.replace("{wrap}", wrap).replace("{extra}", extra))
    runtime.chmod(0o755)
    attributes = _attributes(probe(_settings(str(runtime)), tmp_path / "p", LOG))
    assert attributes["HasSandboxImage"] is True
    assert attributes.get("SingularityUserNamespaces") is expected
    assert ("SingularityUserNamespaces" in attributes) is (expected is not None)


def test_test_sandbox_knob_names_the_sandbox(tmp_path: Path, as_root: None) -> None:
    """SINGULARITY_TEST_SANDBOX: an existing directory is the sandbox the probe runs /exit_37
    in (instead of the one the plugin makes), and the SIF is built from it."""
    own = make_sandbox(tmp_path / "site_sandbox")
    used = tmp_path / "used"
    runtime = tmp_path / "fake-apptainer"
    runtime.write_text(
        FAKE_RUNTIME.replace("{wrap}", "").replace("{extra}", f'echo "$image" >> {used}')
    )
    runtime.chmod(0o755)
    settings = _settings(str(runtime), SINGULARITY_TEST_SANDBOX=str(own))
    attributes = _attributes(probe(settings, tmp_path / "p", LOG))
    assert attributes["HasSandboxImage"] is True
    assert str(own) in used.read_text().split()
    assert not (tmp_path / "p" / "sandbox").exists()


def test_test_sandbox_timeout_bounds_each_test(tmp_path: Path) -> None:
    """SINGULARITY_TEST_SANDBOX_TIMEOUT: a runtime whose tests hang is given up on after that
    many seconds and the machine says why, instead of the startd waiting."""
    runtime = tmp_path / "hanging-apptainer"
    runtime.write_text(FAKE_RUNTIME.replace("{wrap}", "").replace("{extra}", "exec sleep 60"))
    runtime.chmod(0o755)
    settings = _settings(str(runtime), SINGULARITY_TEST_SANDBOX_TIMEOUT="1")
    started = time.monotonic()
    attributes = _attributes(probe(settings, tmp_path / "p", LOG))
    # The --version and build answers are immediate; the three tests (sandbox, the retry
    # without a PID namespace, SIF) take a second each.
    assert time.monotonic() - started < 10
    assert attributes["HasSingularity"] is False
    reason = attributes["SingularityOfflineReason"]
    assert isinstance(reason, str) and reason.endswith("did not finish within 1 s"), reason
