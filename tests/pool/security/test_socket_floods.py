"""Issue 18, finding 4: floods of the pool's socket by an ordinary user stop nobody else.

Each attack is run as the review ran it: by a real unprivileged user's own process (forked,
setuid) against a real ``ep run`` as root, over the pool's Unix socket, bounded in count and
time; each ends with the bystander check (another user is answered within 2 s and a job of
theirs runs). The last test runs the floods together for about 35 s while the pool's memory
is sampled.
"""

from __future__ import annotations

import time
from pathlib import Path

import psutil
import pytest
from security_support import ANSWER_WITHIN_SECONDS, assert_pool_serves
from socket_attacks import (
    MemoryWatch,
    big_requests,
    garbage_lines,
    idle_connections,
    run_as,
    start_as,
    unfinished_ads,
    unread_queries,
)

from epcore.testing.pool import PoolProcess, submit_as, user_home

pytestmark = pytest.mark.system

MB = 2**20


def _answered_within(pool: PoolProcess, user: object) -> float:
    """How long ``ep q`` took for ``user`` (it must succeed)."""
    started = time.monotonic()
    answer = pool.ep("q", user=user)
    waited = time.monotonic() - started
    assert answer.status == 0, f"ep q failed during the attack: {answer.stderr}"
    return waited


def _logs_size(pool: PoolProcess) -> int:
    return sum(p.stat().st_size for p in (pool.directory / "log").glob("*Log*"))


def test_unfinished_huge_ads_are_refused_and_memory_stays_bounded(
    pool_factory, slot_users, shared_dir: Path
) -> None:
    """200 connections each sending an unfinished 3.9 MB ad get an error ad naming
    POOL_MAX_REQUEST_SIZE (or the per-user connection limit) and cost the pool little memory."""
    pool = pool_factory()
    assert pool.process is not None
    with MemoryWatch(pool.process.pid) as memory:
        baseline = memory.rss() / MB
        outcome = run_as(slot_users[0], unfinished_ads, pool.socket, 60.0, 200, 3_900_000)
    answers = [a for per_connection in outcome["answers"] for a in per_connection]
    assert outcome["connected"] == 200
    assert any("POOL_MAX_REQUEST_SIZE" in a and "262144" in a for a in answers), answers[:5]
    assert any("POOL_MAX_CONNECTIONS_PER_USER" in a for a in answers), answers[:5]
    assert "ok" not in answers
    assert memory.peak_mb - baseline < 100, f"{baseline:.0f} MB -> {memory.peak_mb:.0f} MB"
    assert_pool_serves(pool, slot_users[3], shared_dir)


def test_unfinished_input_of_all_connections_together_is_bounded(
    pool_factory, slot_users, shared_dir: Path
) -> None:
    """Unfinished requests within the size limit but over POOL_MAX_UNREAD_INPUT together
    make the pool refuse the connections holding the most, with the knob named."""
    pool = pool_factory("POOL_MAX_UNREAD_INPUT = 4000000\n")
    outcome = run_as(slot_users[0], unfinished_ads, pool.socket, 15.0, 30, 200_000)
    answers = [a for per_connection in outcome["answers"] for a in per_connection]
    refused = [a for a in answers if "POOL_MAX_UNREAD_INPUT" in a]
    # 30 x 200 KB is 6 MB: at least 10 must go for the rest to fit in 4 MB.
    assert len(refused) >= 10, answers
    assert_pool_serves(pool, slot_users[3], shared_dir)


def test_big_valid_requests_are_refused_and_do_not_starve_others(
    pool_factory, slot_users, shared_dir: Path
) -> None:
    """Valid 2.6 MB requests are refused with POOL_MAX_REQUEST_SIZE named, and while one
    user sends them and requests just within the limit without pause, another user is
    answered within 2 s."""
    pool = pool_factory()
    huge = start_as(slot_users[0], big_requests, pool.socket, 12.0, 2_600_000)
    within = start_as(slot_users[1], big_requests, pool.socket, 12.0, 240_000)
    time.sleep(3.0)
    waits = [_answered_within(pool, slot_users[3]) for _ in range(3)]
    huge_outcome = huge.result()
    within_outcome = within.result()
    assert huge_outcome["answers"], huge_outcome
    assert all("POOL_MAX_REQUEST_SIZE" in a for a in huge_outcome["answers"]), huge_outcome
    assert within_outcome["answers"] and set(within_outcome["answers"]) == {"ok"}
    assert max(waits) <= ANSWER_WITHIN_SECONDS, f"answers took {waits} s during the flood"
    assert_pool_serves(pool, slot_users[3], shared_dir)


def test_a_submission_larger_than_one_request_goes_in_several(
    pool_factory, slot_users, shared_dir: Path
) -> None:
    """ep submit of 1,500 jobs with long arguments (more than POOL_MAX_REQUEST_SIZE in all)
    succeeds: the client splits it into requests within the limit."""
    pool = pool_factory()
    argument = "a" * 400
    submit_as(
        pool,
        slot_users[2],
        shared_dir,
        f"executable = /bin/echo\narguments = {argument} $(Process)\nhold = true\nqueue 1500\n",
    )
    jobs = pool.jobs(f'Owner == "{slot_users[2].name}"')
    assert len(jobs) == 1500
    assert pool.ep("rm", slot_users[2].name, user=slot_users[2]).status == 0
    assert_pool_serves(pool, slot_users[3], shared_dir)


def test_unread_pipelined_history_queries_are_held_back_and_dropped(
    pool_factory, slot_users, shared_dir: Path
) -> None:
    """1,000 pipelined history queries whose answers are never read neither grow the pool's
    memory nor delay another user, and the connection is closed after POOL_CLIENT_TIMEOUT."""
    pool = pool_factory("POOL_CLIENT_TIMEOUT = 5\n")
    attacker = slot_users[0]
    submit_as(pool, attacker, shared_dir, "executable = /bin/true\nqueue 6\n")
    pool.wait_for(
        lambda: len(pool.jobs(f'Owner == "{attacker.name}"', history=True)) == 6,
        90,
        "the attacker's jobs to reach the history",
    )
    assert pool.process is not None
    with MemoryWatch(pool.process.pid) as memory:
        baseline = memory.rss() / MB
        attack = start_as(attacker, unread_queries, pool.socket, 40.0, 1000)
        time.sleep(1.0)
        wait = _answered_within(pool, slot_users[3])
        outcome = attack.result()
    assert outcome["sent_requests"] == 1000
    assert outcome["closed_after"] is not None, "the pool kept a peer that reads nothing"
    assert outcome["closed_after"] < 30, outcome
    assert wait <= ANSWER_WITHIN_SECONDS
    assert memory.peak_mb - baseline < 60, f"{baseline:.0f} MB -> {memory.peak_mb:.0f} MB"
    assert "did not read its answers" in pool.log("SchedLog")
    assert_pool_serves(pool, slot_users[3], shared_dir)


def test_twenty_thousand_idle_connections_are_refused_politely(
    pool_factory, slot_users, shared_dir: Path
) -> None:
    """20,000 connections of one user: at most POOL_MAX_CONNECTIONS_PER_USER are kept, the
    rest get an error ad naming the knob, the logs stay small and another user is answered
    within 2 s meanwhile."""
    pool = pool_factory()
    assert pool.process is not None
    logs_before = _logs_size(pool)
    # Two processes of the same user, 10,000 each (a process may not hold 20,000 here).
    attacks = [
        start_as(slot_users[0], idle_connections, pool.socket, 30.0, 10_000, descriptors=10_100)
        for _ in range(2)
    ]
    time.sleep(8.0)
    fds = psutil.Process(pool.process.pid).num_fds()
    wait = _answered_within(pool, slot_users[3])
    outcomes = [attack.result() for attack in attacks]
    connected = sum(o["connected"] for o in outcomes)
    assert connected == 20_000, outcomes
    assert sum(o["still_open"] for o in outcomes) <= 32, outcomes
    refused = sum(
        n for o in outcomes for text, n in o["refusals"].items() if "POOL_MAX_CONNECTIONS" in text
    )
    assert refused >= connected - 32, outcomes
    assert fds < 300, f"the pool holds {fds} descriptors"
    assert wait <= ANSWER_WITHIN_SECONDS
    assert _logs_size(pool) - logs_before < 200_000
    assert_pool_serves(pool, slot_users[3], shared_dir)


def test_out_of_descriptors_the_listener_rests_and_logs_once_per_period(
    pool_factory, slot_users, shared_dir: Path
) -> None:
    """A pool that runs out of descriptors refuses the excess with its reserved one, stops
    polling its listener for a while instead of spinning, logs it at most once per 10 s, and
    serves again once the connections are gone."""
    pool = pool_factory("POOL_MAX_CONNECTIONS = 100000\nPOOL_MAX_CONNECTIONS_PER_USER = 100000\n")
    assert pool.process is not None
    process = psutil.Process(pool.process.pid)
    soft, hard = process.rlimit(psutil.RLIMIT_NOFILE)
    process.rlimit(psutil.RLIMIT_NOFILE, (process.num_fds() + 100, hard))
    logs_before = _logs_size(pool)
    cpu_before = sum(process.cpu_times()[:2])
    started = time.monotonic()
    try:
        outcome = run_as(slot_users[0], idle_connections, pool.socket, 15.0, 2_000)
        cpu = sum(process.cpu_times()[:2]) - cpu_before
        elapsed = time.monotonic() - started
    finally:
        process.rlimit(psutil.RLIMIT_NOFILE, (soft, hard))
    log = pool.log("SchedLog")
    lines = log.count("cannot accept connections")
    assert 1 <= lines <= elapsed / 10 + 2, f"{lines} lines in {elapsed:.0f} s"
    assert any("out of file descriptors" in text for text in outcome["refusals"]), outcome
    assert cpu / elapsed < 0.5, f"the pool used {cpu:.1f} s of CPU in {elapsed:.1f} s"
    assert _logs_size(pool) - logs_before < 200_000
    assert_pool_serves(pool, slot_users[3], shared_dir)


def test_combined_floods_keep_the_pool_under_400_mb(
    pool_factory, slot_users, shared_dir: Path
) -> None:
    """Unfinished huge ads, big valid requests, unread pipelined queries, thousands of idle
    connections and random garbage, all at once for about 35 s from two users: the pool's
    memory (with its children) stays under 400 MB, its logs stay small, and afterwards it
    serves another user."""
    pool = pool_factory("POOL_CLIENT_TIMEOUT = 5\n")
    assert pool.process is not None
    first, second = slot_users[0], slot_users[1]
    user_home(shared_dir, first)
    logs_before = _logs_size(pool)
    seconds = 35.0
    with MemoryWatch(pool.process.pid, period=0.1) as memory:
        attacks = [
            start_as(first, unfinished_ads, pool.socket, seconds, 200, 3_900_000, True),
            start_as(second, big_requests, pool.socket, seconds, 2_600_000),
            start_as(second, big_requests, pool.socket, seconds, 240_000),
            start_as(first, unread_queries, pool.socket, seconds, 1000, False),
            start_as(second, idle_connections, pool.socket, seconds, 5_000, descriptors=6_000),
            start_as(first, garbage_lines, pool.socket, seconds),
        ]
        outcomes = [attack.result(seconds + 90) for attack in attacks]
    assert len(memory.samples) > 100
    assert memory.peak_mb < 400, f"the pool reached {memory.peak_mb:.0f} MB"
    assert outcomes[5]["sent_lines"] > 0
    assert _logs_size(pool) - logs_before < 2 * MB
    assert_pool_serves(pool, slot_users[3], shared_dir)
