"""The schedd's MAX_JOBS_* limits (epcore.schedd.limits): HTCondor's defaults, the boundaries
at which a submission is refused, and condor_submit's words for the refusal."""

from __future__ import annotations

import pytest

from epcore.config import Config
from epcore.schedd.limits import QueueLimits

KNOBS = ("MAX_JOBS_SUBMITTED", "MAX_JOBS_PER_OWNER", "MAX_JOBS_PER_SUBMISSION", "MAX_JOBS_RUNNING")


def _limits(text: str = "") -> QueueLimits:
    return QueueLimits.from_config(Config.from_text(text, subsystem="SCHEDD"))


def test_the_defaults_are_htcondors() -> None:
    """With no configuration the limits read as htcondor2.param gives them."""
    htcondor2 = pytest.importorskip("htcondor2")
    limits = _limits()
    ours = (
        limits.max_jobs_submitted,
        limits.max_jobs_per_owner,
        limits.max_jobs_per_submission,
        limits.max_jobs_running,
    )
    assert ours == tuple(int(htcondor2.param[knob]) for knob in KNOBS)


@pytest.mark.parametrize(
    ("queued", "owned", "submitted", "adding", "knob"),
    [
        (0, 0, 0, 10, None),
        (90, 90, 0, 10, None),
        (90, 90, 0, 11, "MAX_JOBS_PER_OWNER"),
        (190, 50, 0, 10, None),
        (195, 50, 0, 10, "MAX_JOBS_SUBMITTED"),
        (0, 0, 20, 5, None),
        (0, 0, 20, 6, "MAX_JOBS_PER_SUBMISSION"),
        (0, 0, 0, 26, "MAX_JOBS_PER_SUBMISSION"),
    ],
)
def test_a_submission_may_reach_each_limit_but_not_pass_it(
    queued: int, owned: int, submitted: int, adding: int, knob: str | None
) -> None:
    """Adding jobs up to exactly a limit is allowed; one more is refused naming the limit."""
    limits = _limits(
        "MAX_JOBS_SUBMITTED = 200\nMAX_JOBS_PER_OWNER = 100\nMAX_JOBS_PER_SUBMISSION = 25"
    )
    refusal = limits.submission_refusal(
        owner="alice", queued=queued, owned=owned, submitted=submitted, adding=adding
    )
    if knob is None:
        assert refusal is None
    else:
        assert refusal is not None
        assert refusal.startswith(f"Number of submitted jobs would exceed {knob}")


def test_the_refusal_gives_the_counts() -> None:
    """The refusal says whose count, how many more were asked for, and the limit."""
    refusal = _limits("MAX_JOBS_PER_OWNER = 3").submission_refusal(
        owner="alice", queued=2, owned=2, submitted=0, adding=2
    )
    assert refusal == (
        "Number of submitted jobs would exceed MAX_JOBS_PER_OWNER: alice has 2 job(s), "
        "2 more asked for, the limit is 3"
    )


def test_no_cluster_is_opened_in_a_full_queue() -> None:
    """NewCluster is refused once the queue holds MAX_JOBS_SUBMITTED jobs."""
    limits = _limits("MAX_JOBS_SUBMITTED = 5")
    assert limits.new_cluster_refusal(4) is None
    refusal = limits.new_cluster_refusal(5)
    assert refusal is not None and "MAX_JOBS_SUBMITTED exceeded. Current=5, Limit=5" in refusal


def test_the_running_limit_counts_started_jobs() -> None:
    """MAX_JOBS_RUNNING = 2 lets a second job start and not a third."""
    limits = _limits("MAX_JOBS_RUNNING = 2")
    assert limits.may_start(1) and not limits.may_start(2)


@pytest.mark.parametrize("value", ["-5", "many", ""])
def test_a_nonsense_limit_reads_as_htcondor_reads_it(value: str) -> None:
    """A negative limit counts as 0 (nothing may be submitted); a word or nothing gives the
    default."""
    limits = _limits(f"MAX_JOBS_PER_OWNER = {value}")
    expected = 0 if value == "-5" else 100000
    assert limits.max_jobs_per_owner == expected
