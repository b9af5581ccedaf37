"""render_queue and render_hold_reasons: condor_q -nobatch and condor_q -hold layouts."""

from __future__ import annotations

import pytest
from hypothesis import given
from hypothesis import strategies as st

from epcore.classad import ClassAd, parse_ad
from epcore.views.tables import month_day_time, render_hold_reasons, render_queue, run_time

#: 2026-11-22 03:10:00 UTC.
NOW = 1_795_317_000
HEADER = " ID      OWNER            SUBMITTED     RUN_TIME ST PRI SIZE CMD"


def job_ad(**attributes: object) -> ClassAd:
    """A job of alice submitted two minutes ago, with these attributes on top."""
    ad = parse_ad(
        f"""[ ClusterId = 1; ProcId = 0; Owner = "alice"; QDate = {NOW - 120}; JobStatus = 1;
             JobPrio = 0; ImageSize = 1024; RemoteWallClockTime = 0.0;
             Cmd = "/home/alice/run_model.sh"; Arguments = "0 5.0" ]"""
    )
    for name, value in attributes.items():
        ad[name] = value
    return ad


@pytest.mark.parametrize(
    ("attributes", "row"),
    [
        ({}, "   1.0   alice           11/22 03:08   0+00:00:00 I  0    1.0 run_model.sh 0 5.0"),
        (
            {"JobStatus": 2, "JobCurrentStartDate": NOW - 62, "RemoteWallClockTime": 3600.0},
            "   1.0   alice           11/22 03:08   0+01:01:02 R  0    1.0 run_model.sh 0 5.0",
        ),
        (
            {"JobStatus": 2, "ShadowBday": NOW - 5, "JobCurrentStartDate": NOW - 62},
            "   1.0   alice           11/22 03:08   0+00:00:05 R  0    1.0 run_model.sh 0 5.0",
        ),
        (
            {"JobStatus": 5, "RemoteWallClockTime": 90061.0, "JobPrio": -10},
            "   1.0   alice           11/22 03:08   1+01:01:01 H  -10  1.0 run_model.sh 0 5.0",
        ),
        (
            {"JobStatus": 6, "ImageSize": 2_500_000, "Arguments": ""},
            "   1.0   alice           11/22 03:08   0+00:00:00 >  0   2441.4 run_model.sh",
        ),
        (
            {"ClusterId": 2, "ProcId": 12, "QDate": NOW - 30 * 86400, "JobStatus": 3},
            "   2.12  alice           10/23 03:10   0+00:00:00 X  0    1.0 run_model.sh 0 5.0",
        ),
        (
            {"JobStatus": 4, "Cmd": "sleep", "Arguments": None, "Args": "60"},
            "   1.0   alice           11/22 03:08   0+00:00:00 C  0    1.0 sleep 60",
        ),
        (
            {"JobStatus": 7, "Owner": "a-very-long-owner-name"},
            "   1.0   a-very-long-owner-name  11/22 03:08   0+00:00:00 S  0    1.0 "
            "run_model.sh 0 5.0",
        ),
    ],
)
def test_queue_rows(attributes: dict[str, object], row: str) -> None:
    """Each job is one row: id, owner, QDate as month/day hh:mm, run time (wall clock of past
    runs plus the current one), status letter, JobPrio, ImageSize in MB, Cmd's basename and
    the arguments."""
    lines = render_queue([job_ad(**attributes)], now=NOW, totals=False).splitlines()
    assert lines == [HEADER, row]


@pytest.mark.parametrize(
    ("attributes", "missing", "row"),
    [
        (
            {"ProcId": "x", "QDate": "soon"},
            ("ClusterId", "Owner"),
            "   ?.?   undefined               ???   0+00:00:00 I  0    1.0 run_model.sh 0 5.0",
        ),
        (
            {"JobStatus": 9, "JobPrio": 1.5, "ImageSize": "big", "Cmd": 3, "Arguments": 4},
            (),
            "   1.0   alice           11/22 03:08   0+00:00:00 ?  ?      ? undefined",
        ),
        (
            {"JobStatus": "R", "RemoteWallClockTime": "long", "Owner": 42},
            ("JobPrio", "ImageSize"),
            "   1.0   42              11/22 03:08   0+00:00:00 ?  ?      ? run_model.sh 0 5.0",
        ),
        (
            {"JobStatus": 2, "JobCurrentStartDate": NOW + 500, "QDate": float("nan")},
            ("JobStatus",),
            "   1.0   alice                   ???   0+00:00:00 ?  0    1.0 run_model.sh 0 5.0",
        ),
        (
            {"JobStatus": 2, "JobCurrentStartDate": NOW + 500, "QDate": float("inf")},
            ("Cmd",),
            "   1.0   alice                   ???   0+00:00:00 R  0    1.0 undefined 0 5.0",
        ),
    ],
)
def test_queue_rows_with_odd_attributes(
    attributes: dict[str, object], missing: tuple[str, ...], row: str
) -> None:
    """Missing or wrongly typed attributes print as undefined, ? or ??? instead of failing; a
    start in the future adds no run time."""
    ad = job_ad(**attributes)
    for name in missing:
        del ad[name]
    lines = render_queue([ad], now=NOW, totals=False).splitlines()
    assert lines[1] == row


def test_ids_widen_for_big_clusters_and_procs() -> None:
    """The ID column grows with the longest cluster and proc, and the heading with it."""
    lines = render_queue(
        [job_ad(ClusterId=15872426, ProcId=5184), job_ad()], now=NOW, totals=False
    ).splitlines()
    assert lines[0].startswith(" ID           OWNER")
    assert lines[1].startswith("15872426.5184 alice ")
    assert lines[2].startswith("       1.0    alice ")


def test_totals_line_counts_each_status() -> None:
    """The Total line counts the jobs by status; a job transferring output counts as running."""
    statuses = [1, 1, 2, 3, 4, 5, 6, 7, 0]
    text = render_queue([job_ad(JobStatus=s) for s in statuses], now=NOW)
    assert text.splitlines()[-2:] == [
        "",
        "Total for query: 9 jobs; 1 completed, 1 removed, 2 idle, 2 running, 1 held, 1 suspended",
    ]


def test_empty_queue() -> None:
    """No jobs: the heading and a Total line of zeros."""
    assert render_queue([], now=NOW) == (
        HEADER + "\n\nTotal for query: 0 jobs; 0 completed, 0 removed, 0 idle, 0 running, 0 held, "
        "0 suspended\n"
    )


def test_local_time_offset_moves_dates() -> None:
    """QDate is printed in the local time the caller's UTC offset gives."""
    row = render_queue([job_ad()], now=NOW, totals=False, utc_offset=-6 * 3600).splitlines()[1]
    assert " 11/21 21:08 " in row


def test_hold_reasons_list_held_jobs_only() -> None:
    """condor_q -hold lists the held jobs: id, owner, when held, and why; then their total."""
    jobs = [
        job_ad(),
        job_ad(
            ProcId=1,
            JobStatus=5,
            EnteredCurrentStatus=NOW - 3600,
            HoldReason="via condor_hold (by user alice)",
        ),
        job_ad(ProcId=2, JobStatus=5),
    ]
    assert render_hold_reasons(jobs).splitlines() == [
        " ID      OWNER          HELD_SINCE  HOLD_REASON",
        "   1.1   alice          11/22 02:10 via condor_hold (by user alice)",
        "   1.2   alice                  ??? undefined",
        "",
        "Total for query: 2 jobs; 0 completed, 0 removed, 0 idle, 0 running, 2 held, 0 suspended",
    ]


@pytest.mark.parametrize(
    ("seconds", "text"),
    [(0, "0+00:00:00"), (62, "0+00:01:02"), (90061, "1+01:01:01"), (-5, "0+00:00:00")],
)
def test_run_time_format(seconds: float, text: str) -> None:
    """RUN_TIME is days+hh:mm:ss; negative times (clock skew) print as 0."""
    assert run_time(seconds) == text


@pytest.mark.parametrize(
    ("epoch", "text"),
    [
        (NOW, "11/22 03:10"),
        (1_767_225_599, "12/31 23:59"),
        (1_767_225_600, "1/1  00:00"),
        (None, "???"),
        (1e300, "???"),
    ],
)
def test_month_day_time_format(epoch: float | None, text: str) -> None:
    """Dates are month/day (day left-aligned in two) and hh:mm, or ??? when unknown."""
    assert month_day_time(epoch) == text


VALUES = st.one_of(
    st.none(),
    st.booleans(),
    st.integers(-(2**63), 2**63 - 1),
    st.floats(),
    st.text(alphabet=st.characters(blacklist_categories=["Cs"], blacklist_characters="\0")),
    st.lists(st.integers(-5, 5), max_size=3),
)
NAMES = st.sampled_from(
    [
        "ClusterId",
        "ProcId",
        "Owner",
        "QDate",
        "JobStatus",
        "JobPrio",
        "ImageSize",
        "Cmd",
        "Arguments",
        "Args",
        "RemoteWallClockTime",
        "JobCurrentStartDate",
        "ShadowBday",
        "EnteredCurrentStatus",
        "HoldReason",
    ]
)


@given(jobs=st.lists(st.dictionaries(NAMES, VALUES), max_size=4))
def test_any_job_ads_render(jobs: list[dict[str, object]]) -> None:
    """Any values in the attributes the tables read render without raising, one row per job
    (one per held job under -hold) between the heading and the Total line."""
    ads = [ClassAd(attributes) for attributes in jobs]
    queue = render_queue(ads, now=NOW).splitlines()
    assert len(queue) >= len(ads) + 3
    assert queue[-1].startswith(f"Total for query: {len(ads)} jobs;")
    held = render_hold_reasons(ads).splitlines()
    assert held[-1].startswith("Total for query: ")
