"""A standalone startd (no negotiator, no schedd) fed only by fetch-work hooks (seed 000, "Job
Hooks That Fetch Work"): real hook scripts over a SQLite table of work, the seed's DATABASE/WEB
two-keyword configuration, REPLY_FETCH's accept and reject, EVICT_CLAIM on vacate and when the
work runs out, and hooks that misbehave while the startd keeps serving."""

from __future__ import annotations

import re
import shutil
import tempfile
import time
from collections.abc import Iterator
from pathlib import Path

import psutil
import pytest
from fetch_work_support import EVICT, FETCH, REPLY, add_work, make_table, rows, script

pytestmark = pytest.mark.system

#: The seed's example, with its hook directories pointing at the test's scripts and an
#: EVICT_CLAIM hook added to the database system.
SEED_CONFIG = """
NUM_SLOTS = 4
# Most slots fetch and run work from the database system.
STARTD_JOB_HOOK_KEYWORD = DATABASE
# Slot4 fetches and runs work from a web service.
SLOT4_JOB_HOOK_KEYWORD = WEB
DATABASE_HOOK_DIR = {hooks}/database
DATABASE_HOOK_FETCH_WORK = $(DATABASE_HOOK_DIR)/fetch_work.py
DATABASE_HOOK_REPLY_FETCH = $(DATABASE_HOOK_DIR)/reply_fetch.py
DATABASE_HOOK_EVICT_CLAIM = $(DATABASE_HOOK_DIR)/evict_claim.py
# The web system only needs to fetch work.
WEB_HOOK_DIR = {hooks}/web
WEB_HOOK_FETCH_WORK = $(WEB_HOOK_DIR)/fetch_work.py
FetchWorkDelay = ifThenElse(State == "Claimed" && Activity == "Idle", 0, 1)
START = TARGET.Poison =!= True
"""

JOB = """Cmd = "/bin/sh"
Arguments = "-c 'grep ^HookKeyword $_CONDOR_JOB_AD; echo job {id}'"
Owner = "nobody"
Out = "{out}/{id}.out"
"""

DATABASE_JOBS = 85
WEB_JOBS = 15


def _hooks(tmp_path: Path, db: Path, log: Path) -> Path:
    hooks = tmp_path / "hooks"
    for system in ("database", "web"):
        (hooks / system).mkdir(parents=True)
        script(hooks / system / "fetch_work.py", FETCH, db=str(db), queue=system)
    script(hooks / "database" / "reply_fetch.py", REPLY, db=str(db), log=str(log))
    script(hooks / "database" / "evict_claim.py", EVICT, db=str(db), log=str(log))
    return hooks


def _until(startd, check, timeout: float, what: str) -> None:
    """Wait for ``check``, failing at once with the startd's output if it exits."""

    def alive_and(check=check) -> bool:
        startd.check_alive()
        return bool(check())

    startd.wait_for(alive_and, timeout, what)


def _outputs(out: Path) -> dict[int, str]:
    return {int(path.stem): path.read_text() for path in out.glob("*.out")}


@pytest.fixture
def open_dir() -> Iterator[Path]:
    """A directory every user may write, outside pytest's base directory (which a concurrent
    pytest session makes private again): the jobs, run as nobody, write their output here."""
    top = Path(tempfile.mkdtemp(prefix="ep_fetch_work_"))
    top.chmod(0o777)
    yield top
    shutil.rmtree(top, ignore_errors=True)


def test_database_and_web_hooks_run_100_jobs(
    startd_factory, tmp_path: Path, open_dir: Path
) -> None:
    """100 jobs from a SQLite table run across 4 slots through the seed's two keywords (slots
    1-3 DATABASE, slot 4 WEB) with HookKeyword in their ads; REPLY_FETCH hears accept for each
    and reject for the job START refuses; EVICT_CLAIM runs when the work runs out and when a
    fetched job is vacated."""
    db, log, out = tmp_path / "work.db", tmp_path / "hooks.log", open_dir
    make_table(db)
    hooks = _hooks(tmp_path, db, log)
    for work_id in range(1, DATABASE_JOBS + WEB_JOBS + 1):
        queue = "database" if work_id <= DATABASE_JOBS else "web"
        add_work(db, work_id, queue, JOB.format(id=work_id, out=out))
    add_work(db, 500, "database", 'Cmd = "/bin/true"\nOwner = "nobody"\nPoison = true', poison=True)
    started = time.monotonic()
    startd = startd_factory(SEED_CONFIG.format(hooks=hooks))
    _until(
        startd, lambda: len(_outputs(out)) == DATABASE_JOBS + WEB_JOBS, 240, "every job's output"
    )
    elapsed = time.monotonic() - started
    _until(
        startd,
        lambda: "reject 500" in (log.read_text() if log.exists() else ""),
        30,
        "the rejection",
    )
    outputs = _outputs(out)
    for work_id, text in outputs.items():
        keyword = "DATABASE" if work_id <= DATABASE_JOBS else "WEB"
        assert text == f'HookKeyword = "{keyword}"\njob {work_id}\n', (work_id, text)
    table = {work_id: (queue, state, slot) for work_id, queue, state, slot in rows(db)}
    assert table[500][1] == "rejected"
    slots_used = {"database": set(), "web": set()}
    for work_id in outputs:
        queue, state, slot = table[work_id]
        assert state == "taken"
        assert slot is not None
        slots_used[queue].add(slot.split("@", 1)[0])
    assert slots_used["web"] == {"slot4"}
    assert slots_used["database"] <= {"slot1", "slot2", "slot3"}
    assert len(slots_used["database"]) >= 2  # the work was shared
    # Every reply came with the job ad, the separator and the slot ad; WEB has no reply hook.
    _until(
        startd,
        lambda: (
            sum(line.startswith("accept") for line in log.read_text().splitlines()) >= DATABASE_JOBS
        ),
        30,
        "every accept reply",
    )
    replies = [
        line.split() for line in log.read_text().splitlines() if not line.startswith("evict")
    ]
    accepted = {int(r[1]) for r in replies if r[0] == "accept"}
    assert accepted == set(range(1, DATABASE_JOBS + 1))
    assert all(r[3] == "True" for r in replies)
    assert not any(r[2].startswith("slot4") for r in replies)
    assert ["reject", "500"] in [r[:2] for r in replies]
    assert "fetched work rejected: slot" in startd.log()
    assert "START is not TRUE for the job" in startd.log()
    # No work is left: the DATABASE claims are evicted (EVICT_CLAIM with the last job's ad).
    _until(startd, lambda: "evict " in log.read_text(), 30, "the claims' eviction")
    _until(
        startd,
        lambda: all(p.startswith("Unclaimed") for p in startd.places().values()),
        30,
        "the slots to be free again",
    )
    # A long fetched job, vacated: EVICT_CLAIM hears of it.
    add_work(db, 600, "database", 'Cmd = "/bin/sleep"\nArgs = "300"\nOwner = "nobody"\n')
    _until(startd, lambda: table_state(db, 600)[0] == "taken", 30, "the long job's fetch")
    slot = str(table_state(db, 600)[1]).split("@", 1)[0]
    _until(startd, lambda: startd.places()[slot] == "Claimed/Busy", 30, "the long job to run")
    startd.client.vacate(slot)
    _until(startd, lambda: "evict 600 " in log.read_text(), 30, "EVICT_CLAIM for the vacated job")
    line = next(x for x in log.read_text().splitlines() if x.startswith("evict 600 "))
    assert line.split()[2:] == ["Preempting", "True", "1"], line
    _until(startd, lambda: table_state(db, 600)[0] == "evicted", 30, "the row marked evicted")
    startd.check_alive()
    print(f"100 fetched jobs in {elapsed:.1f} s")


def table_state(db: Path, work_id: int) -> tuple[str, str | None]:
    for row_id, _queue, state, slot in rows(db):
        if row_id == work_id:
            return state, slot
    raise AssertionError(f"no row {work_id}")


BAD_HOOKS = {
    "GARBAGE": (
        "#!/bin/sh\ncat > /dev/null\necho 'garbage hook says hi' >&2\n"
        "echo 'this is { not a job ad'\n"
    ),
    "NOCMD": "#!/bin/sh\ncat > /dev/null\necho 'Owner = \"nobody\"'\necho 'WorkId = 7'\n",
    "HANG": "#!/bin/sh\necho $$ > {record}/hang.pid\nexec sleep 600\n",
}


def test_misbehaving_hooks_are_rejected_and_the_startd_keeps_serving(
    startd_factory, tmp_path: Path
) -> None:
    """Garbage output, a job ad without Cmd (REPLY_FETCH hears reject) and a hook that hangs
    (killed at STARTD_JOB_HOOK_TIMEOUT) are each logged with the reason; the startd answers a
    query right after each, and every slot stays free."""
    record = tmp_path / "record"
    record.mkdir()
    hooks = tmp_path / "hooks"
    hooks.mkdir()
    config = "NUM_SLOTS = 3\nSTARTD_JOB_HOOK_TIMEOUT = 2\nFetchWorkDelay = 1\n"
    for slot_id, (keyword, text) in enumerate(BAD_HOOKS.items(), start=1):
        path = _shell(hooks / f"{keyword.lower()}.sh", text.replace("{record}", str(record)))
        config += (
            f"SLOT{slot_id}_JOB_HOOK_KEYWORD = {keyword}\n{keyword}_HOOK_FETCH_WORK = {path}\n"
        )
    reply = _shell(
        hooks / "reply.sh", f'#!/bin/sh\ncat > {record}/reply.in\necho "$1" >> {record}/reply.log\n'
    )
    config += f"NOCMD_HOOK_REPLY_FETCH = {reply}\n"
    startd = startd_factory(config)

    def logged(pattern: str) -> bool:
        startd.check_alive()
        return re.search(pattern, startd.log()) is not None

    _until(
        startd,
        lambda: logged(r"fetched work rejected: slot1: the output is not a job ClassAd"),
        30,
        "the garbage to be rejected",
    )
    assert "hook stderr: garbage hook says hi" in startd.log()
    assert len(startd.client.query()) == 3
    _until(
        startd,
        lambda: logged(r"fetched work rejected: slot2: the job ad lacks Cmd"),
        30,
        "the job without Cmd to be rejected",
    )
    _until(startd, lambda: (record / "reply.log").exists(), 30, "REPLY_FETCH")
    assert (record / "reply.log").read_text().splitlines()[0] == "reject"
    job_text = (record / "reply.in").read_text().split("\n-----\n")[0]
    assert 'HookKeyword = "NOCMD"' in job_text
    assert len(startd.client.query()) == 3
    _until(
        startd,
        lambda: logged(r"slot3 HANG_HOOK_FETCH_WORK hook \(pid \d+\) ran past its time limit"),
        30,
        "the hanging hook to be killed",
    )
    assert logged(r"fetched work rejected: slot3: the hook ran past its time limit")
    hang_pid = int((record / "hang.pid").read_text())
    _until(startd, lambda: not _running(hang_pid), 10, "the hanging hook to be gone")
    assert len(startd.client.query()) == 3
    assert set(startd.places().values()) == {"Unclaimed/Idle"}
    # The slots keep asking (FetchWorkDelay = 1): the startd is not stuck on any of them.
    count = startd.log().count("ran past its time limit and was killed")
    _until(
        startd,
        lambda: startd.log().count("ran past its time limit and was killed") > count,
        30,
        "the next attempt of the hanging hook",
    )


def _shell(path: Path, text: str) -> Path:
    path.write_text(text)
    path.chmod(0o755)
    return path


def _running(pid: int) -> bool:
    try:
        return psutil.Process(pid).status() != psutil.STATUS_ZOMBIE
    except psutil.NoSuchProcess:
        return False
