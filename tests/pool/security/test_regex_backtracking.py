"""Issue 18, finding 3: a backtracking regular expression cannot block the pool.

The review's ``regexp("^(a+)+$", "aaaa…a!")`` with 28 a's in ``ep q -constraint`` blocked the
pool 9.2 s, and in a queued job's Requirements made every negotiation cycle take 2.4 s. Every
match now runs under MATCH_TIMEOUT and a runaway match is ERROR; the same match timing out
again is not run again.
"""

from __future__ import annotations

import re
import time
from pathlib import Path

import pytest
from security_support import ANSWER_WITHIN_SECONDS, assert_pool_serves

from epcore.classad.functions._pcre import MATCH_TIMEOUT
from epcore.testing.pool import PoolProcess, submit_as

pytestmark = pytest.mark.system

# The review's pattern (Python's re backtracks on it; the regex package does not need to),
# and one that backtracks exponentially in any backtracking engine.
REVIEWED = 'regexp("^(a+)+$", "' + "a" * 28 + '!")'
RUNAWAY = 'regexp("^(a|aa)+$", "' + "a" * 80 + '!")'
_CYCLE = re.compile(r"negotiation cycle (\d+): .* (\d+) idle jobs, \d+ matches in ([0-9.]+) s")
# The review measured 2.4 s per cycle; a bounded match costs at most MATCH_TIMEOUT once.
CYCLE_AT_MOST_SECONDS = 1.0


def _cycles(pool: PoolProcess) -> list[tuple[int, int, float]]:
    """(number, idle jobs, seconds) of every negotiation cycle logged so far."""
    return [
        (int(number), int(idle), float(seconds))
        for number, idle, seconds in _CYCLE.findall(pool.log("NegotiatorLog"))
    ]


@pytest.mark.parametrize("constraint", [REVIEWED, RUNAWAY], ids=["reviewed", "runaway"])
def test_a_backtracking_constraint_is_answered_quickly(
    pool_factory, slot_users, shared_dir: Path, constraint: str
) -> None:
    """ep q -constraint with a backtracking regexp answers within 2 s (matching no job, the
    runaway match being ERROR) and the pool serves another user."""
    pool = pool_factory()
    attacker = slot_users[0]
    submit_as(pool, attacker, shared_dir, "executable = /bin/true\nhold = true\nqueue 3\n")
    started = time.monotonic()
    result = pool.ep("q", "-constraint", constraint, user=attacker)
    waited = time.monotonic() - started
    assert result.status == 0, result.stderr
    assert waited <= ANSWER_WITHIN_SECONDS, f"ep q took {waited:.2f} s{pool.hint()}"
    assert pool.jobs(constraint) == []
    assert len(pool.jobs()) == 3
    assert_pool_serves(pool, slot_users[3], shared_dir)


def test_a_backtracking_requirements_keeps_negotiation_cycles_short(
    pool_factory, slot_users, shared_dir: Path
) -> None:
    """A queued job whose Requirements runs away stays idle, the cycles that consider it stay
    short, and another user's job still runs."""
    pool = pool_factory()
    attacker = slot_users[0]
    submit_as(
        pool,
        attacker,
        shared_dir,
        f"executable = /bin/true\nrequirements = {RUNAWAY} || {REVIEWED}\nqueue\n",
    )
    before = len(_cycles(pool))

    def three_cycles_with_the_job() -> bool:
        pool.check_alive()
        return sum(1 for _, idle, _ in _cycles(pool)[before:] if idle >= 1) >= 3

    pool.wait_for(three_cycles_with_the_job, 60, "three negotiation cycles with the idle job")
    considered = [seconds for _, idle, seconds in _cycles(pool)[before:] if idle >= 1]
    assert max(considered) < CYCLE_AT_MOST_SECONDS, (considered, MATCH_TIMEOUT)
    jobs = pool.jobs("ClusterId == 1")
    assert jobs and jobs[0].evaluate("JobStatus") == 1  # idle: its Requirements is ERROR
    assert_pool_serves(pool, slot_users[3], shared_dir)
    assert pool.jobs("ClusterId == 1")[0].evaluate("JobStatus") == 1
