"""Backfill in a startd embedded in the test, with a plugin's backfill system whose client is a
shell script: one client shared by the slots in Backfill/Busy, resized as slots come and go,
killed when the last slot leaves, restarted with back-off when it crashes, and no backfill at
all when the system cannot run."""

from __future__ import annotations

import shutil
import tempfile
import time
from collections.abc import Callable, Iterator
from pathlib import Path

import psutil
import pytest

from epcore import hookimpl
from epcore.classad import ClassAd, parse_ad
from epcore.config import Config
from epcore.errors import ConfigError
from epcore.plugins import load_plugins
from epcore.startd.backfill import BACKFILL_CLAIM
from epcore.startd.loop import StartdLoop
from epcore.startd.main import build_startd
from epcore.state.records import Action, ActionKind
from epcore.types import BackfillBackendSpec, BackfillStatus

pytestmark = pytest.mark.system

#: The fake client: writes its PID, then waits (SIGTERM ends it at once).
CLIENT = "echo $$ > client.pid; exec sleep 600"
CRASHING = "echo crashing >&2; exit 3"


class ScriptBackend:
    """A backfill client that is a shell script run in ``directory``; records its calls."""

    name = "FAKE"

    def __init__(self, directory: Path, script: str) -> None:
        self.directory = directory
        self.script = script
        self.calls: list[tuple[str, int]] = []

    def start(self, cpus: int) -> ClassAd:
        self.calls.append(("start", cpus))
        job = ClassAd()
        job["Cmd"] = "/bin/sh"
        job["Arguments"] = f"-c '{self.script}'"
        job["Iwd"] = str(self.directory)
        job["Owner"] = "nobody"
        job["JobUniverse"] = 5
        return job

    def resize(self, cpus: int) -> None:
        self.calls.append(("resize", cpus))

    def stop(self) -> None:
        self.calls.append(("stop", 0))

    def status(self) -> BackfillStatus:
        return BackfillStatus(running=True, cpus=0, tasks=1, detail="scripted")


class BackfillPlugin:
    """A plugin offering FAKE, built by ``factory``."""

    def __init__(self, factory: Callable[[Config], ScriptBackend]) -> None:
        self.factory = factory

    @hookimpl
    def ep_backfill_backends(self) -> list[BackfillBackendSpec]:
        return [BackfillBackendSpec("FAKE", self.factory)]


BACKFILL = "ENABLE_BACKFILL = True\nBACKFILL_SYSTEM = fake\nSTART_BACKFILL = True\n"


@pytest.fixture
def embedded(
    tmp_path: Path,
) -> Iterator[Callable[[Callable[[Config], ScriptBackend], str], StartdLoop]]:
    """``embedded(factory, extra_config)``: an opened two-slot startd loop with FAKE."""
    loops: list[StartdLoop] = []

    def make(factory: Callable[[Config], ScriptBackend], extra: str = BACKFILL) -> StartdLoop:
        local = tmp_path / "local"
        local.mkdir()
        config = tmp_path / "condor_config"
        config.write_text(
            f"LOCAL_DIR = {local}\nRUNBENCHMARKS = False\nIS_OWNER = False\nNUM_CPUS = 2\n"
            f"MEMORY = 1024\nNUM_SLOTS = 2\nPOLLING_INTERVAL = 1\nKILLING_TIMEOUT = 5\n{extra}"
        )
        plugins = load_plugins(
            entry_points_group=None, extra=[("backfiller", BackfillPlugin(factory))], strict=True
        )
        loop = StartdLoop(build_startd(str(config), plugins=plugins))
        loop.open()
        loops.append(loop)
        return loop

    yield make
    for loop in loops:
        loop.startd.shutdown(fast=True)
        _turn_until(loop, loop.startd.idle, 30, "the startd to shut down")
        loop.close()


def _turn_until(loop: StartdLoop, check: Callable[[], bool], timeout: float, what: str) -> None:
    deadline = time.monotonic() + timeout
    while not check():
        assert time.monotonic() < deadline, f"timed out waiting for {what}"
        loop.turn()


def _places(loop: StartdLoop) -> dict[str, str]:
    return {r.name: str(r.place) for r in loop.startd.state.slots}


def _client_pid(directory: Path) -> int | None:
    try:
        pid = int((directory / "client.pid").read_text())
    except (OSError, ValueError):
        return None
    return pid if psutil.pid_exists(pid) else None


def _job(number: int, iwd: Path) -> ClassAd:
    """A job for a claim (the tests only claim: it never runs)."""
    return parse_ad(
        f'[ ClusterId = 1; ProcId = {number}; Owner = "nobody"; Cmd = "/bin/sleep";'
        f' Arguments = "600"; Iwd = "{iwd}"; RequestCpus = 1; RequestMemory = 64;'
        " RequestDisk = 1024 ]"
    )


@pytest.fixture
def client_dir() -> Iterator[Path]:
    """The client's directory, which nobody can reach and write (pytest's are root's only)."""
    top = Path(tempfile.mkdtemp(prefix="epcore-backfill-"))
    top.chmod(0o755)
    directory = top / "client"
    directory.mkdir()
    directory.chmod(0o777)
    yield directory
    shutil.rmtree(top, ignore_errors=True)


def test_idle_slots_share_one_client_that_a_claim_shrinks_and_the_last_one_kills(
    embedded, client_dir: Path, tmp_path: Path
) -> None:
    """Both idle slots enter Backfill/Busy with one client as nobody; a claim on one slot takes
    it at once (the client gets 1 CPU); claiming the other kills the client."""
    backend = ScriptBackend(client_dir, CLIENT)
    loop = embedded(lambda config: backend)
    both = {"slot1": "Backfill/Busy", "slot2": "Backfill/Busy"}
    _turn_until(loop, lambda: _places(loop) == both, 20, "both slots in Backfill/Busy")
    _turn_until(loop, lambda: _client_pid(client_dir) is not None, 20, "the client")
    pid = _client_pid(client_dir)
    assert pid is not None and psutil.Process(pid).username() == "nobody"
    assert backend.calls == [("start", 1), ("resize", 2)]
    handles = loop.startd.starters.handles
    assert list(handles) == [loop.startd.backfill.claim_id]
    assert loop.startd.backfill.claim_id.startswith(BACKFILL_CLAIM)

    loop.startd.claim("slot1", _job(0, tmp_path))
    assert _places(loop)["slot1"] == "Claimed/Idle"
    assert backend.calls[-1] == ("resize", 1)
    # KILLING_TIMEOUT on slot1 (named after it, no job there yet) must not hit the client.
    loop.startd.act(Action(ActionKind.KILL_STARTER, "slot1"), time.time())
    for _ in range(3):
        loop.turn()
    assert psutil.pid_exists(pid) and psutil.Process(pid).status() != psutil.STATUS_ZOMBIE

    loop.startd.claim("slot2", _job(1, tmp_path))
    assert _places(loop)["slot2"] == "Backfill/Killing"
    _turn_until(loop, lambda: _places(loop)["slot2"] == "Claimed/Idle", 20, "slot2 claimed")
    assert ("stop", 0) in backend.calls
    assert not psutil.pid_exists(pid) or psutil.Process(pid).status() == psutil.STATUS_ZOMBIE
    assert loop.startd.starters.handles == {}
    assert "the backfill client is gone" in Path(loop.startd.paths.startd_log).read_text()


def test_a_crashing_client_is_restarted_after_a_back_off_and_slots_stay_usable(
    embedded, client_dir: Path, tmp_path: Path
) -> None:
    """A client that exits by itself sends its slots back to Backfill/Idle, is logged with the
    back-off, starts again later, and a claim still takes a slot."""
    backend = ScriptBackend(client_dir, CRASHING)
    loop = embedded(lambda config: backend)
    log = Path(loop.startd.paths.startd_log)
    _turn_until(loop, lambda: "restarting it in 10 s" in log.read_text(), 30, "the crash")
    assert "the backfill client exited by itself" in log.read_text()
    assert "slot1: Changing state and activity: Backfill/Busy -> Backfill/Idle" in log.read_text()
    starts = sum(1 for call in backend.calls if call[0] == "start")
    loop.startd.claim("slot1", _job(0, tmp_path))
    _turn_until(loop, lambda: _places(loop)["slot1"] == "Claimed/Idle", 20, "slot1 claimed")
    _turn_until(loop, lambda: "restarting it in 20 s" in log.read_text(), 30, "the second crash")
    assert sum(1 for call in backend.calls if call[0] == "start") == starts + 1


def _refuses(config: Config) -> ScriptBackend:
    raise ConfigError("FAKE_PROGRAM = /nowhere: no such program")


@pytest.mark.parametrize(
    ("factory_name", "extra", "logged"),
    [
        ("refuses", BACKFILL, "backfill disabled: backfill system FAKE cannot run: FAKE_PROGRAM"),
        (
            "works",
            BACKFILL.replace("fake", "condor_dreams"),
            "BACKFILL_SYSTEM 'condor_dreams' not supported (offered: FAKE)",
        ),
        (
            "works",
            "ENABLE_BACKFILL = True\nSTART_BACKFILL = True\n",
            "BACKFILL_SYSTEM is undefined",
        ),
    ],
)
def test_a_system_that_cannot_run_leaves_backfill_off_with_the_reason(
    embedded, client_dir: Path, tmp_path: Path, factory_name: str, extra: str, logged: str
) -> None:
    """Without a backfill system that can run, the reason is in the StartLog, no slot enters
    Backfill and a claim takes a slot as usual."""
    factory = (
        _refuses if factory_name == "refuses" else (lambda c: ScriptBackend(client_dir, CLIENT))
    )
    loop = embedded(factory, extra)
    log = Path(loop.startd.paths.startd_log)
    _turn_until(loop, lambda: logged in log.read_text(), 10, "the reason in the StartLog")
    idle = {"slot1": "Unclaimed/Idle", "slot2": "Unclaimed/Idle"}
    _turn_until(loop, lambda: _places(loop) == idle, 10, "both slots Unclaimed")
    until = time.monotonic() + 3  # three policy evaluations
    while time.monotonic() < until:
        loop.turn()
    assert set(_places(loop).values()) == {"Unclaimed/Idle"}
    loop.startd.claim("slot1", _job(0, tmp_path))
    assert _places(loop)["slot1"] == "Claimed/Idle"


def test_a_reconfiguration_that_turns_backfill_off_stops_the_client(
    embedded, client_dir: Path, tmp_path: Path
) -> None:
    """ENABLE_BACKFILL = False and a reconfiguration: the slots leave Backfill (to Owner, 30),
    the client is stopped, and no slot enters Backfill again."""
    backend = ScriptBackend(client_dir, CLIENT)
    loop = embedded(lambda config: backend)
    both = {"slot1": "Backfill/Busy", "slot2": "Backfill/Busy"}
    _turn_until(loop, lambda: _places(loop) == both, 20, "both slots in Backfill/Busy")
    _turn_until(loop, lambda: _client_pid(client_dir) is not None, 20, "the client")
    config = tmp_path / "condor_config"
    config.write_text(config.read_text() + "ENABLE_BACKFILL = False\n")
    loop.startd.reconfig()
    _turn_until(loop, lambda: loop.startd.starters.handles == {}, 20, "the client to go")
    idle = {"slot1": "Unclaimed/Idle", "slot2": "Unclaimed/Idle"}
    _turn_until(loop, lambda: _places(loop) == idle, 20, "both slots Unclaimed")
    log = Path(loop.startd.paths.startd_log).read_text()
    assert "Backfill/Idle -> Owner/Idle" in log
