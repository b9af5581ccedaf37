"""The process_group, pid_namespace and gid trackers (epcore.starter.trackers), on real jobs."""

from __future__ import annotations

import os
import signal
import time
from collections.abc import Callable, Iterator
from pathlib import Path

import attrs
import psutil
import pytest
from hypothesis import assume, given
from hypothesis import strategies as st

from epcore.config import Config
from epcore.errors import ConfigError, IsolationError
from epcore.starter.launch import LaunchedJob, LaunchSpec, launch
from epcore.starter.trackers import (
    GidBackend,
    GidTracking,
    PidNamespaceBackend,
    ProcessGroupBackend,
    ProcessGroupTracking,
    parse_proc_status,
    tracker_specs,
    tracking_gid_range,
)
from epcore.testing.system import SlotUser, wait_until
from epcore.types import IsolationBackend, JobTracking, TrackingRequest

PATIENCE = 10.0
MODES = ["process_group", "pid_namespace", "gid"]


def request(slot_id: int = 1) -> TrackingRequest:
    """A tracking request for slot ``slot_id``."""
    return TrackingRequest(
        job_key=f"job_{slot_id}", slot_name=f"slot{slot_id}", slot_id=slot_id, cpus=1, memory_mb=64
    )


def gid_config(low: int, high: int) -> Config:
    """A configuration turning GID tracking on for ``low``..``high``."""
    return Config.from_text(
        f"USE_GID_PROCESS_TRACKING = True\nMIN_TRACKING_GID = {low}\nMAX_TRACKING_GID = {high}\n"
    )


@attrs.define
class Running:
    """A launched job and the tracking that watches it."""

    job: LaunchedJob
    tracking: JobTracking


@pytest.fixture
def backends(tracking_gids: tuple[int, int], tmp_path: Path) -> dict[str, IsolationBackend]:
    """One backend of each kind; GID locks live in the test's own directory."""
    config = gid_config(*tracking_gids)
    config_ns = Config.from_text("USE_PID_NAMESPACES = true\n")
    return {
        "process_group": ProcessGroupBackend(config),
        "pid_namespace": PidNamespaceBackend(config_ns),
        "gid": GidBackend(config, lock_dir=str(tmp_path / "locks")),
    }


@pytest.fixture
def user_dir(execute_dir: Path, slot_users: tuple[SlotUser, ...]) -> Path:
    """A sandbox owned by the first slot user, where its jobs run."""
    path = execute_dir / "dir_1"
    path.mkdir()
    os.chown(path, slot_users[0].uid, slot_users[0].gid)
    return path


@pytest.fixture
def start(
    backends: dict[str, IsolationBackend],
    slot_users: tuple[SlotUser, ...],
    user_dir: Path,
) -> Iterator[Callable[[str, str], Running]]:
    """Start a shell job as a slot user under one tracker; every tree is killed afterwards."""
    started: list[Running] = []

    def run(mode: str, script: str) -> Running:
        tracking = backends[mode].track(request())
        user = slot_users[0]
        spec = LaunchSpec(
            argv=("/bin/sh", "-c", script),
            environment=(("PATH", "/usr/bin:/bin"),),
            cwd=str(user_dir),
            uid=user.uid,
            gid=user.gid,
            setup=tracking.child_setup(),
        )
        try:
            job = launch(spec)
        except BaseException:
            tracking.release()
            raise
        tracking.attach(job.supervisor_pid)
        running = Running(job, tracking)
        started.append(running)
        return running

    yield run
    for running in started:
        safety = ProcessGroupTracking()
        safety.attach(running.job.supervisor_pid)
        for tracking in (running.tracking, safety):
            tracking.signal_all(signal.SIGKILL)
            wait_until(lambda t=tracking: not t.pids())
        running.job.close()
        running.tracking.release()


def commands(pids: frozenset[int]) -> set[str]:
    """The command lines of ``pids``, joined by spaces (vanished processes left out)."""
    found = set()
    for pid in pids:
        try:
            found.add(" ".join(psutil.Process(pid).cmdline()))
        except psutil.Error:
            continue
    return found


def stopped(pid: int) -> bool:
    """True when ``pid`` is stopped, or is the namespace init (which freeze leaves running)."""
    try:
        process = psutil.Process(pid)
        return process.status() == psutil.STATUS_STOPPED or "python" in process.name()
    except psutil.Error:
        return True


ESCAPES = "(sleep 1001 &); (setsid sleep 1002 &); sleep 1003"
TREE = "sh -c 'sh -c \"sleep 1004 & sleep 1005\" & sleep 1006' & sleep 1007 & wait"


# -- finding and killing whole trees ----------------------------------------------------------


@pytest.mark.system
@pytest.mark.parametrize("mode", MODES)
@pytest.mark.parametrize(
    ("script", "sleepers"),
    [(ESCAPES, {"1001", "1002", "1003"}), (TREE, {"1004", "1005", "1006", "1007"})],
    ids=["escapes", "tree"],
)
def test_tracker_finds_and_kills_every_process(
    start: Callable[[str, str], Running], mode: str, script: str, sleepers: set[str]
) -> None:
    """Daemons, setsid escapees and deep trees are all in pids() and gone after SIGKILL."""
    running = start(mode, script)
    expected = {f"sleep {n}" for n in sleepers}
    assert wait_until(lambda: expected <= commands(running.tracking.pids()))
    found = running.tracking.pids()
    assert running.job.supervisor_pid not in found
    assert os.getpid() not in found
    running.tracking.signal_all(signal.SIGKILL)
    assert wait_until(lambda: not running.tracking.pids())
    status = running.job.wait(PATIENCE)
    assert status is not None and status.signal == signal.SIGKILL
    others = {p.info["pid"] for p in psutil.process_iter(["pid", "cmdline"])
              if " ".join(p.info["cmdline"] or ()) in expected}  # fmt: skip
    assert not {p for p in others if psutil.Process(p).status() != psutil.STATUS_ZOMBIE}


@pytest.mark.system
@pytest.mark.parametrize("mode", MODES)
def test_concurrent_jobs_are_kept_apart(start: Callable[[str, str], Running], mode: str) -> None:
    """Two jobs under the same kind of tracker see only their own processes, and killing one
    leaves the other running."""
    first = start(mode, "(sleep 1011 &); sleep 1012")
    second = start(mode, "(sleep 1013 &); sleep 1014")
    assert wait_until(lambda: commands(first.tracking.pids()) >= {"sleep 1011", "sleep 1012"})
    assert wait_until(lambda: commands(second.tracking.pids()) >= {"sleep 1013", "sleep 1014"})
    assert not first.tracking.pids() & second.tracking.pids()
    first.tracking.signal_all(signal.SIGKILL)
    assert wait_until(lambda: not first.tracking.pids())
    assert commands(second.tracking.pids()) >= {"sleep 1013", "sleep 1014"}
    assert second.job.poll() is None


@pytest.mark.system
@pytest.mark.parametrize("mode", MODES)
def test_freeze_stops_a_busy_loop(start: Callable[[str, str], Running], mode: str) -> None:
    """freeze() stops every process (no CPU used while frozen); thaw() lets them run again."""
    running = start(mode, "while :; do :; done & while :; do :; done")
    tracking = running.tracking
    assert wait_until(lambda: len(tracking.pids()) >= 2)

    def cpu() -> float:
        used = tracking.usage()
        return (used.user_cpu or 0.0) + (used.system_cpu or 0.0)

    assert wait_until(lambda: cpu() > 0.05)
    assert tracking.freeze()
    assert wait_until(lambda: all(stopped(p) for p in tracking.pids()))
    before = cpu()
    time.sleep(1.0)
    assert cpu() - before < 0.05
    assert tracking.thaw()
    thawed = cpu()
    assert wait_until(lambda: cpu() - thawed > 0.05)


@pytest.mark.system
@pytest.mark.parametrize("mode", MODES)
def test_usage_reports_memory_and_keeps_the_peak(
    start: Callable[[str, str], Running], mode: str
) -> None:
    """usage() sums the resident memory of the job's processes and never lowers the peak."""
    running = start(mode, "sleep 1008 & sleep 1009")
    assert wait_until(lambda: len(commands(running.tracking.pids()) & {"sleep 1009"}) == 1)
    first = running.tracking.usage()
    assert first.memory_current is not None and first.memory_current > 0
    assert first.memory_peak is not None and first.memory_peak >= first.memory_current
    running.tracking.signal_all(signal.SIGKILL)
    assert wait_until(lambda: not running.tracking.pids())
    after = running.tracking.usage()
    assert after.memory_current == 0
    assert after.memory_peak == first.memory_peak
    assert not running.tracking.out_of_memory()


@pytest.mark.system
@pytest.mark.parametrize("mode", MODES)
def test_signal_all_delivers_a_catchable_signal(
    start: Callable[[str, str], Running], user_dir: Path, mode: str
) -> None:
    """signal_all(SIGTERM) reaches the job's first process once, which traps it and exits 42."""
    ready = user_dir / "ready"
    count = user_dir / "count"
    running = start(
        mode,
        f"trap 'echo x >> {count}; exit 42' TERM; touch {ready}; while :; do sleep 0.05; done",
    )
    assert wait_until(ready.exists)
    running.tracking.signal_all(signal.SIGTERM)
    status = running.job.wait(PATIENCE)
    assert status is not None and status.code == 42
    assert count.read_text() == "x\n"


@pytest.mark.system
@pytest.mark.parametrize("mode", MODES)
def test_unattached_and_released_trackings_are_harmless(
    backends: dict[str, IsolationBackend], mode: str
) -> None:
    """A tracking with no job attached sees nothing, and release() may be called twice."""
    tracking = backends[mode].track(request())
    assert tracking.pids() == frozenset()
    tracking.signal_all(signal.SIGKILL)
    assert tracking.usage().memory_current == 0
    tracking.release()
    tracking.release()


# -- the backends ------------------------------------------------------------------------------


def test_tracker_specs_build_the_three_backends() -> None:
    """tracker_specs offers the three isolation backends under their names."""
    specs = tracker_specs()
    assert [s.name for s in specs] == list(MODES)
    for spec in specs:
        assert spec.factory(Config.from_text("")).name == spec.name


@pytest.mark.parametrize(
    ("text", "wanted"),
    [("", False), ("USE_PID_NAMESPACES = false", False), ("USE_PID_NAMESPACES = True", True),
     ("USE_PID_NAMESPACES = 1", True), ("USE_PID_NAMESPACES = 0", False),
     ("X = true\nUSE_PID_NAMESPACES = $(X)", True)],
)  # fmt: skip
def test_pid_namespace_wanted_follows_the_knob(text: str, wanted: bool) -> None:
    """The PID namespace backend is wanted exactly when USE_PID_NAMESPACES is true."""
    assert PidNamespaceBackend(Config.from_text(text)).wanted() is wanted


def test_process_group_is_always_wanted_and_available() -> None:
    """The process group backend needs no configuration and no privilege."""
    backend = ProcessGroupBackend(Config.from_text(""))
    assert backend.wanted() and backend.available()
    assert backend.track(request()).child_setup().new_pid_namespace is False


@pytest.mark.system
def test_root_backends_are_available(as_root: None) -> None:
    """As root, the PID namespace and GID backends are available."""
    assert PidNamespaceBackend(Config.from_text("")).available()
    assert GidBackend(Config.from_text("")).available()


@pytest.mark.parametrize(
    ("text", "knob"),
    [
        ("", "MIN_TRACKING_GID"),
        ("MAX_TRACKING_GID = 757", "MIN_TRACKING_GID"),
        ("MIN_TRACKING_GID = 750", "MAX_TRACKING_GID"),
        ("MIN_TRACKING_GID = seven\nMAX_TRACKING_GID = 757", "MIN_TRACKING_GID"),
        ("MIN_TRACKING_GID = 750\nMAX_TRACKING_GID = 7.5", "MAX_TRACKING_GID"),
        ("MIN_TRACKING_GID = -3\nMAX_TRACKING_GID = 757", "MIN_TRACKING_GID"),
        ("MIN_TRACKING_GID = 750\nMAX_TRACKING_GID = 4294967295", "MAX_TRACKING_GID"),
        ("MIN_TRACKING_GID = 760\nMAX_TRACKING_GID = 757", "MIN_TRACKING_GID (760) is greater"),
    ],
)
def test_bad_tracking_gid_knobs_are_config_errors(text: str, knob: str, tmp_path: Path) -> None:
    """A missing, malformed or inverted GID range raises ConfigError naming the knob."""
    config = Config.from_text("USE_GID_PROCESS_TRACKING = true\n" + text)
    backend = GidBackend(config, lock_dir=str(tmp_path))
    with pytest.raises(ConfigError, match=knob.replace("(", r"\(").replace(")", r"\)")):
        backend.wanted()
    with pytest.raises(ConfigError, match=knob.split(" ")[0]):
        backend.track(request())


def test_gid_tracking_is_not_wanted_when_off(tmp_path: Path) -> None:
    """With USE_GID_PROCESS_TRACKING false the range is not even looked at."""
    config = Config.from_text("MIN_TRACKING_GID = seven\n")
    assert GidBackend(config, lock_dir=str(tmp_path)).wanted() is False


@given(low=st.integers(1, 2**32 - 2), span=st.integers(0, 1000))
def test_tracking_gid_range_round_trips(low: int, span: int) -> None:
    """Any valid range written into the configuration reads back unchanged."""
    high = min(low + span, 2**32 - 2)
    assert tracking_gid_range(gid_config(low, high)) == (low, high)


@given(st.text(alphabet=st.characters(blacklist_characters="\n\r\\$#"), max_size=20))
def test_tracking_gid_knob_fuzz(value: str) -> None:
    """Any MIN_TRACKING_GID text either gives a range or a ConfigError naming the knob."""
    try:
        config = Config.from_text(f"MIN_TRACKING_GID = {value}\nMAX_TRACKING_GID = 4294967294\n")
    except ConfigError:
        assume(False)
    try:
        low, high = tracking_gid_range(config)
    except ConfigError as exc:
        assert "MIN_TRACKING_GID" in str(exc)
        return
    assert 0 < low <= high
    assert low == int(config.get("MIN_TRACKING_GID") or "")


@pytest.mark.system
def test_gids_are_distinct_until_exhausted(tracking_gids: tuple[int, int], tmp_path: Path) -> None:
    """Concurrent jobs get distinct GIDs of the range (the slot's own first); then it runs out."""
    low = tracking_gids[0]
    config = gid_config(low, low + 2)
    lock_dir = str(tmp_path / "locks")
    # Two backends stand for two starters sharing the lock directory.
    first, second = GidBackend(config, lock_dir), GidBackend(config, lock_dir)
    taken = [first.track(request(slot_id=2)), second.track(request(slot_id=2))]
    taken.append(first.track(request(slot_id=9)))
    gids = [t.gid for t in taken if isinstance(t, GidTracking)]
    assert gids[0] == low + 1
    assert sorted(gids) == [low, low + 1, low + 2]
    assert [t.child_setup().extra_groups for t in taken] == [(g,) for g in gids]
    with pytest.raises(IsolationError, match="no more tracking GIDs"):
        second.track(request())
    taken[1].release()
    again = first.track(request(slot_id=3))
    assert isinstance(again, GidTracking) and again.gid == gids[1]
    for tracking in (*taken, again):
        tracking.release()


@pytest.mark.system
def test_gid_carried_by_a_live_process_is_skipped(
    tracking_gids: tuple[int, int], tmp_path: Path, execute_dir: Path
) -> None:
    """A GID some live process still carries (a job of a dead starter) is not handed out."""
    low = tracking_gids[0]
    backend = GidBackend(gid_config(low, low + 1), str(tmp_path / "locks"))
    stray = backend.track(request())
    assert isinstance(stray, GidTracking) and stray.gid == low
    job = launch(
        LaunchSpec(
            argv=("/bin/sleep", "1010"),
            environment=(),
            cwd=str(execute_dir),
            setup=stray.child_setup(),
        )
    )
    try:
        stray.attach(job.supervisor_pid)
        assert wait_until(lambda: len(stray.pids()) == 1)
        stray.release()  # the lock is free, but the GID is not
        fresh = backend.track(request())
        assert isinstance(fresh, GidTracking) and fresh.gid == low + 1
        fresh.release()
    finally:
        stray.signal_all(signal.SIGKILL)
        wait_until(lambda: not stray.pids())
        job.close()


# -- /proc status parsing ----------------------------------------------------------------------


@pytest.mark.parametrize(
    ("text", "state", "groups"),
    [
        ("Name:\tsh\nState:\tS (sleeping)\nGroups:\t4 24 750 \n", "S", {4, 24, 750}),
        ("State:\tZ (zombie)\nGroups:\t\n", "Z", set()),
        ("Name:\tx\n", "", set()),
        ("Groups:\t61000\nState:\tR (running)\n", "R", {61000}),
        ("Name:\ta\u2028State: b\nState:\tT (stopped)\n", "T", set()),
    ],
)
def test_proc_status_is_parsed(text: str, state: str, groups: set[int]) -> None:
    """The state letter and the supplementary groups are read from a /proc status text."""
    assert parse_proc_status(text) == (state, frozenset(groups))


@pytest.mark.parametrize(
    "text",
    ["State:\t\n", "State:\tsleeping\n", "Groups:\t4 x\n", "Groups:\t1.5\n", "Groups:\t٣\n"],
)
def test_malformed_proc_status_is_refused(text: str) -> None:
    """A State or Groups line that does not parse raises ValueError."""
    with pytest.raises(ValueError):
        parse_proc_status(text)


@given(
    state=st.sampled_from("RSDZTtXIW"),
    groups=st.frozensets(st.integers(0, 2**32 - 1), max_size=30),
    name=st.text(alphabet=st.characters(blacklist_characters="\n\r"), max_size=15),
)
def test_proc_status_round_trips(state: str, groups: frozenset[int], name: str) -> None:
    """A status text built from a state and groups parses back to them."""
    text = (
        f"Name:\t{name}\nState:\t{state} (whatever)\nTgid:\t1\n"
        f"Groups:\t{' '.join(str(g) for g in sorted(groups))} \nVmRSS:\t1 kB\n"
    )
    assert parse_proc_status(text) == (state, groups)


def test_own_status_parses() -> None:
    """The test's own /proc status parses, showing it running with its own groups."""
    state, groups = parse_proc_status(Path("/proc/self/status").read_text())
    assert state == "R"
    assert groups == frozenset(os.getgroups())
