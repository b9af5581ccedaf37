"""The startd's files: the saved claims (rewritten atomically) and the job history."""

from __future__ import annotations

import math
import os
from pathlib import Path

import pytest
from hypothesis import given
from hypothesis import strategies as st

from epcore.classad import ClassAd, parse_ad
from epcore.errors import DaemonError
from epcore.runtime import persist
from epcore.state.restore import SavedClaim

_TEXT = st.text(st.characters(blacklist_categories=("Cs",), blacklist_characters="\x00"))
_TIMES = st.floats(0, 4e9, allow_nan=False)
_JOBS = st.dictionaries(
    st.sampled_from(["Owner", "ClusterId", "ProcId", "Cmd", "Arguments", "RequestMemory"]),
    st.one_of(_TEXT, st.integers(-(2**31), 2**31)),
    max_size=6,
).map(ClassAd)

saved_claims = st.builds(
    SavedClaim,
    slot_id=st.integers(1, 64),
    partitionable=st.booleans(),
    claim_id=_TEXT,
    job=_JOBS,
    rank=st.floats(-1e6, 1e6, allow_nan=False),
    made_at=_TIMES,
    lease=st.integers(0, 10**6),
    client_machine=_TEXT,
    job_start=_TIMES,
    run_time=_TIMES,
    suspend_time=_TIMES,
)


def _same(a: SavedClaim, b: SavedClaim) -> bool:
    # Reals are written with 16 significant digits, as HTCondor writes them.
    return (
        (a.slot_id, a.partitionable, a.claim_id, a.lease, a.client_machine)
        == (b.slot_id, b.partitionable, b.claim_id, b.lease, b.client_machine)
        and a.job == b.job
        and all(
            math.isclose(getattr(a, f), getattr(b, f), rel_tol=1e-14, abs_tol=1e-300)
            for f in ("rank", "made_at", "job_start", "run_time", "suspend_time")
        )
    )


def _claim(**changes: object) -> SavedClaim:
    fields: dict[str, object] = {
        "slot_id": 1,
        "partitionable": True,
        "claim_id": "<unix:/x>#1#1#abc",
        "job": parse_ad('[ Owner = "alice"; ClusterId = 3; ProcId = 0 ]'),
        "rank": 0.0,
        "made_at": 100.0,
        "lease": 1800,
        "client_machine": "submit",
        "job_start": 110.0,
    }
    fields.update(changes)
    return SavedClaim(**fields)  # type: ignore[arg-type]


@given(
    claims=st.lists(
        st.tuples(saved_claims, st.integers(1, 2**22)),
        max_size=4,
        unique_by=lambda pair: pair[0].claim_id,
    )
)
def test_claims_round_trip(tmp_path_factory: pytest.TempPathFactory, claims) -> None:
    """Claims written with write_ad_lines are read back the same, with their starters' PIDs."""
    path = str(tmp_path_factory.mktemp("claims") / "startd_claims")
    persist.write_ad_lines(path, [persist.saved_claim_ad(saved, pid) for saved, pid in claims])
    back = persist.read_claims(path)
    assert len(back) == len(claims)
    for (saved, pid), read in zip(claims, back, strict=True):
        assert read.pid == pid
        assert _same(saved, read.claim), (saved, read.claim)
    assert not os.path.exists(path + ".tmp")


def test_write_ad_lines_replaces_the_file(tmp_path: Path) -> None:
    """Each write replaces the whole file; an empty list leaves an empty file."""
    path = str(tmp_path / "startd_claims")
    three = [persist.saved_claim_ad(_claim(claim_id=name), 5) for name in "xyz"]
    persist.write_ad_lines(path, three)
    assert len(persist.read_claims(path)) == 3
    persist.write_ad_lines(path, [persist.saved_claim_ad(_claim(claim_id="b"), 6)])
    assert [(s.claim.claim_id, s.pid) for s in persist.read_claims(path)] == [("b", 6)]
    persist.write_ad_lines(path, [])
    assert persist.read_claims(path) == []
    assert Path(path).read_text() == ""


def test_missing_files_read_as_empty(tmp_path: Path) -> None:
    """No claims file means no saved claims; no history file means no records."""
    assert persist.read_claims(str(tmp_path / "absent")) == []
    assert list(persist.read_history(str(tmp_path / "absent"))) == []


GOOD = str(persist.saved_claim_ad(_claim(), 42))


@pytest.mark.parametrize(
    ("line", "named"),
    [
        ("this is not a ClassAd", "not a ClassAd"),
        ("[ SlotId = 1; ", "not a ClassAd"),
        (GOOD.replace("SlotId = 1", 'SlotId = "one"'), "SlotId must be a number"),
        (GOOD.replace("SlotId = 1", "SlotId = true"), "SlotId must be a number"),
        (GOOD.replace("Lease = 1800", "Lease = undefined"), "Lease must be a number"),
        (GOOD.replace("StarterPid = 42", "Pid = 42"), "StarterPid must be a number"),
        (GOOD.replace('ClaimId = "<unix:/x>#1#1#abc"', "ClaimId = 7"), "ClaimId must be a string"),
        (GOOD.replace('ClientMachine = "submit"', "ClientMachine = {}"), "ClientMachine"),
        (GOOD.replace('Job = [ Owner = "alice";', 'Job = "x"; J = [ Owner = "alice";'), "Job"),
        ("[ Job = [ A = 1 ] ]", "SlotId"),
    ],
    ids=[
        "prose",
        "torn",
        "slot-string",
        "slot-bool",
        "lease-undefined",
        "no-pid",
        "claimid-number",
        "client-list",
        "job-string",
        "almost-empty",
    ],
)
def test_malformed_claims_line_names_file_and_line(tmp_path: Path, line: str, named: str) -> None:
    """An unreadable entry is a DaemonError naming the file, the line and what is wrong."""
    path = tmp_path / "startd_claims"
    path.write_text(f"{GOOD}\n\n{line}\n")
    with pytest.raises(DaemonError, match=f"{path}, line 3: .*{named}"):
        persist.read_claims(str(path))


@pytest.mark.parametrize(
    "replacement",
    [("SlotId = 1", "SlotId = 1e999"), ("Lease = 1800", 'Lease = real("NaN")'), ("[", "\udcff[")],
    ids=["infinite-slot", "nan-lease", "bad-utf8"],
)
def test_impossible_claims_values_are_daemon_errors(
    tmp_path: Path, replacement: tuple[str, str]
) -> None:
    """Infinite or NaN numbers and undecodable bytes in the claims file are DaemonErrors."""
    path = tmp_path / "startd_claims"
    text = GOOD.replace(*replacement, 1) + "\n"
    path.write_bytes(text.encode("utf-8", "surrogateescape"))
    with pytest.raises(DaemonError, match="line 1"):
        persist.read_claims(str(path))


@given(
    text=_TEXT.filter(lambda t: len(t) < 300)
    | st.sampled_from([GOOD, GOOD[:-5], GOOD + GOOD, GOOD.replace(";", "\n")])
    | st.tuples(st.integers(0, len(GOOD)), _TEXT).map(lambda c: GOOD[: c[0]] + c[1])
)
def test_read_claims_fuzz(tmp_path_factory: pytest.TempPathFactory, text: str) -> None:
    """Any (UTF-8) text in the claims file is read or refused with a DaemonError, nothing else."""
    path = tmp_path_factory.mktemp("fuzz") / "startd_claims"
    path.write_text(text, encoding="utf-8")
    try:
        claims = persist.read_claims(str(path))
    except DaemonError:
        return
    assert all(isinstance(s.claim, SavedClaim) and s.pid >= 0 for s in claims)


def _record(n: int) -> ClassAd:
    return ClassAd({"ClusterId": 1, "ProcId": n, "JobOutcome": "exited", "ExitReason": "a\nb"})


def test_history_appends_and_reads_in_order(tmp_path: Path) -> None:
    """append_history adds one line per record; read_history gives them back oldest first."""
    path = str(tmp_path / "startd_history")
    for n in range(4):
        persist.append_history(path, _record(n))
    assert list(persist.read_history(path)) == [_record(n) for n in range(4)]
    assert len(Path(path).read_text().splitlines()) == 4


@pytest.mark.parametrize("cut", [1, 10, 25, -2])
def test_torn_last_history_line_is_skipped(tmp_path: Path, cut: int) -> None:
    """A record cut short by a crash while it was appended is skipped; the others are read."""
    path = tmp_path / "startd_history"
    for n in range(3):
        persist.append_history(str(path), _record(n))
    torn = str(_record(3))[:cut]
    with open(path, "a", encoding="utf-8") as handle:
        handle.write(torn)
    assert list(persist.read_history(str(path))) == [_record(n) for n in range(3)]


@given(records=st.lists(st.dictionaries(st.sampled_from(["A", "B", "Why"]), _TEXT).map(ClassAd)))
def test_history_round_trip(tmp_path_factory: pytest.TempPathFactory, records) -> None:
    """Any records appended are read back the same and in order."""
    path = str(tmp_path_factory.mktemp("history") / "startd_history")
    for record in records:
        persist.append_history(path, record)
    assert list(persist.read_history(path)) == records


@given(text=_TEXT.filter(lambda t: len(t) < 300))
def test_read_history_never_raises(tmp_path_factory: pytest.TempPathFactory, text: str) -> None:
    """Whatever text the history file holds, read_history yields ClassAds without raising."""
    path = tmp_path_factory.mktemp("history") / "startd_history"
    path.write_text(text, encoding="utf-8")
    assert all(isinstance(ad, ClassAd) for ad in persist.read_history(str(path)))


def test_history_line_with_bad_bytes_is_skipped(tmp_path: Path) -> None:
    """A damaged history line that is not UTF-8 is skipped like a torn one."""
    path = tmp_path / "startd_history"
    persist.append_history(str(path), _record(0))
    with open(path, "ab") as handle:
        handle.write(b'[ A = "\xff\xfe\n')
    persist.append_history(str(path), _record(1))
    assert list(persist.read_history(str(path))) == [_record(0), _record(1)]


def test_the_claims_journal_replays_adds_and_drops(tmp_path: Path) -> None:
    """Claims added and dropped through ClaimsFile read back as the live ones, in order; a
    later line for the same claim replaces the earlier one."""
    path = str(tmp_path / "startd_claims")
    journal = persist.ClaimsFile(path)
    entries = [persist.SavedStarter(_claim(claim_id=name), pid) for pid, name in enumerate("abc")]
    for entry in entries:
        journal.add(entry)
    journal.drop("b")
    journal.drop("unknown")
    assert [e.claim.claim_id for e in persist.read_claims(path)] == ["a", "c"]
    assert len(Path(path).read_text().splitlines()) == 4


def test_the_claims_journal_is_compacted(tmp_path: Path) -> None:
    """Once dropped claims far outnumber live ones, the journal is rewritten with the live
    ones only, and still reads back the same."""
    path = str(tmp_path / "startd_claims")
    journal = persist.ClaimsFile(path)
    journal.rewrite([persist.SavedStarter(_claim(claim_id="keep"), 1)])
    for n in range(100):
        journal.add(persist.SavedStarter(_claim(claim_id=f"c{n}"), n + 2))
        journal.drop(f"c{n}")
    lines = Path(path).read_text().splitlines()
    assert len(lines) < 80
    assert [e.claim.claim_id for e in persist.read_claims(path)] == ["keep"]


def test_a_bad_dropped_line_names_the_line(tmp_path: Path) -> None:
    """A journal line whose DroppedClaimId is not text is a DaemonError naming the line."""
    path = tmp_path / "startd_claims"
    path.write_text("[ DroppedClaimId = 7 ]\n")
    with pytest.raises(DaemonError, match="line 1"):
        persist.read_claims(str(path))


def test_a_cut_off_last_claims_line_is_left_out(tmp_path: Path) -> None:
    """A last journal line without its newline (a write cut short) is left out; the whole
    lines before it read back."""
    path = tmp_path / "startd_claims"
    journal = persist.ClaimsFile(str(path))
    journal.add(persist.SavedStarter(_claim(claim_id="whole"), 7))
    line = str(persist.saved_starter_ad(persist.SavedStarter(_claim(claim_id="cut"), 8)))
    with open(path, "a", encoding="utf-8") as handle:
        handle.write(line[: len(line) // 2])
    assert [e.claim.claim_id for e in persist.read_claims(str(path))] == ["whole"]


def test_every_state_file_is_private(tmp_path: Path) -> None:
    """The claims journal, the history and any ad-lines file are made mode 0600, and one
    left 0644 by an older version becomes 0600 at its next write."""
    claims, history, ads = (tmp_path / name for name in ("claims", "history", "ads"))
    for path in (claims, history, ads):
        path.write_text("")
        path.chmod(0o644)
    journal = persist.ClaimsFile(str(claims))
    journal.add(persist.SavedStarter(_claim(claim_id="a"), 1))
    persist.append_history(str(history), _record(0))
    persist.write_ad_lines(str(ads), [_record(1)])
    assert {oct(p.stat().st_mode & 0o777) for p in (claims, history, ads)} == {"0o600"}
    journal.rewrite([])
    assert claims.stat().st_mode & 0o777 == 0o600


def test_state_files_are_never_written_through_a_symbolic_link(tmp_path: Path) -> None:
    """A state file that is a symbolic link is refused (OSError), its target untouched."""
    target = tmp_path / "target"
    target.write_text("keep\n")
    target.chmod(0o644)
    link = tmp_path / "startd_history"
    link.symlink_to(target)
    with pytest.raises(OSError):
        persist.append_history(str(link), _record(0))
    assert target.read_text() == "keep\n"
    assert target.stat().st_mode & 0o777 == 0o644


def test_files_left_readable_by_an_older_version_are_made_private(tmp_path: Path) -> None:
    """make_directory_private makes the regular files of a directory 0600 (a stricter mode
    stays), and leaves links and their targets, FIFOs (without blocking), sockets and
    subdirectories as they were."""
    import socket

    outside = tmp_path / "outside"
    outside.write_text("not ours\n")
    outside.chmod(0o644)
    state = tmp_path / "spool"
    state.mkdir()
    for name, mode in (("startd_history", 0o644), ("job_queue.db", 0o640), ("strict", 0o400)):
        (state / name).write_text("x")
        (state / name).chmod(mode)
    (state / "link").symlink_to(outside)
    os.mkfifo(state / "fifo", 0o644)
    (state / "sub").mkdir(mode=0o755)
    (state / "sub").chmod(0o755)
    listener = socket.socket(socket.AF_UNIX)
    listener.bind(str(state / "pool_control"))
    (state / "pool_control").chmod(0o777)
    try:
        changed = persist.make_directory_private(str(state))
    finally:
        listener.close()
    assert sorted(changed) == ["job_queue.db", "startd_history"]
    modes = {p.name: p.lstat().st_mode & 0o777 for p in state.iterdir() if p.name != "link"}
    assert modes == {
        "startd_history": 0o600,
        "job_queue.db": 0o600,
        "strict": 0o400,
        "fifo": 0o644,
        "sub": 0o755,
        "pool_control": 0o777,
    }
    assert outside.stat().st_mode & 0o777 == 0o644


def test_the_history_tail_reads_only_whole_recent_records(tmp_path: Path) -> None:
    """read_history with last_bytes reads the whole records within the file's end (the one
    the cut falls in is left out), and with containing only those naming one of the strings."""
    path = tmp_path / "startd_history"
    for n in range(100):
        persist.append_history(str(path), _record(n))
    size = path.stat().st_size
    tail = list(persist.read_history(str(path), last_bytes=size // 10))
    assert 5 <= len(tail) <= 10
    assert tail[-1] == _record(99)
    assert [ad.evaluate("ProcId") for ad in tail] == list(range(100 - len(tail), 100))
    assert list(persist.read_history(str(path), last_bytes=10 * size)) == [
        _record(n) for n in range(100)
    ]
    assert list(persist.read_history(str(path), containing={"ProcId = 42;"})) == [_record(42)]
