"""Issue 18, finding 2: deeply nested expressions in a job cannot stop the pool.

The review submitted a job whose OnExitHold was a 470-level ``true ? ... : false``: ``ep run``
crashed with RecursionError when the job ended, and again after every restart; the same depth
in Requirements made every negotiation cycle fail. Now such an expression is refused when it
is read (by ep submit, and by the pool for a raw request), an expression as deep as the pool
accepts is evaluated where the job ends and where it is matched, and the pool keeps serving
another user, also after a restart.
"""

from __future__ import annotations

import os
import socket
from pathlib import Path

import pytest
from security_support import assert_pool_serves

from epcore.classad import ClassAd, parse_ad
from epcore.classad.parser import MESSAGE_NESTING
from epcore.runtime import framing
from epcore.testing.pool import PoolProcess, submit_as, user_home

pytestmark = pytest.mark.system

REVIEWED_DEPTH = 470
# The deepest a job's expression may be: it must still fit when a reply lists the job.
ACCEPTED_DEPTH = MESSAGE_NESTING


def _ternary(levels: int, innermost: str) -> str:
    return "true ? " * levels + innermost + " : false" * levels


def _raw(pool: PoolProcess, line: bytes, uid: int, gid: int) -> ClassAd:
    """Send ``line`` on the pool's socket from a child running as ``uid``; the answer."""
    read, write = os.pipe()
    pid = os.fork()
    if pid == 0:  # pragma: no cover - the child
        try:
            os.setgid(gid)
            os.setuid(uid)
            with socket.socket(socket.AF_UNIX, socket.SOCK_STREAM) as sock:
                sock.settimeout(20)
                sock.connect(pool.socket)
                sock.sendall(line)
                os.write(write, framing.read_line(sock))
        finally:
            os._exit(0)
    os.close(write)
    data = b""
    while chunk := os.read(read, 65536):
        data += chunk
    os.close(read)
    os.waitpid(pid, 0)
    return parse_ad(data.decode())


def _raw_submit(pool: PoolProcess, user: object, attribute: str, expression: str) -> ClassAd:
    """A Submit request written by hand, as the review sent it, with ``attribute`` set."""
    uid, gid = int(getattr(user, "uid", 0)), int(getattr(user, "gid", 0))
    opened = _raw(pool, b'[ Command = "NewCluster" ]\n', uid, gid)
    cluster = opened.evaluate("ClusterId")
    assert isinstance(cluster, int), opened
    line = (
        f'[ Command = "Submit"; ClusterId = {cluster}; ClusterAd = [ ClusterId = {cluster};'
        f' ProcId = 0; Cmd = "/bin/true"; Iwd = "/tmp"; {attribute} = {expression} ];'
        f" Procs = {{ [ ClusterId = {cluster}; ProcId = 0 ] }} ]\n"
    )
    return _raw(pool, line.encode(), uid, gid)


@pytest.mark.parametrize("command", ["on_exit_hold", "requirements"])
def test_a_470_level_expression_is_refused_and_the_pool_serves(
    pool_factory, slot_users, shared_dir: Path, command: str
) -> None:
    """ep submit and a raw Submit request with the review's 470 levels are refused with the
    reason; another user is served, also after a restart."""
    pool = pool_factory()
    attacker = slot_users[0]
    home = user_home(shared_dir, attacker)
    (home / "deep.sub").write_text(
        f"executable = /bin/true\n{command} = {_ternary(REVIEWED_DEPTH, 'true')}\nqueue\n"
    )
    os.chown(home / "deep.sub", attacker.uid, attacker.gid)
    refused = pool.ep("submit", "deep.sub", user=attacker, cwd=str(home))
    assert refused.status != 0
    assert "nested too deeply" in refused.stderr, refused.stderr
    attribute = "OnExitHold" if command == "on_exit_hold" else "Requirements"
    reply = _raw_submit(pool, attacker, attribute, _ternary(REVIEWED_DEPTH, "true"))
    assert reply.evaluate("Ok") is False
    assert "nested too deeply" in str(reply.evaluate("Error")), reply
    # Deep enough to pass in the request, too deep for the replies that would list the job.
    reply = _raw_submit(pool, attacker, attribute, _ternary(MESSAGE_NESTING + 1, "true"))
    assert reply.evaluate("Ok") is False
    assert f"{attribute} is nested too deeply" in str(reply.evaluate("Error")), reply
    assert pool.jobs() == []
    assert_pool_serves(pool, slot_users[3], shared_dir)
    assert pool.terminate() == 0
    pool.start()
    assert_pool_serves(pool, slot_users[3], shared_dir)


def test_a_deep_on_exit_hold_is_evaluated_when_the_job_ends(
    pool_factory, slot_users, shared_dir: Path
) -> None:
    """A job with a deep OnExitHold that is true ends held by it, and the pool serves on,
    also after a restart."""
    pool = pool_factory()
    attacker = slot_users[0]
    text = (
        "executable = /bin/true\n"
        f"on_exit_hold = {_ternary(ACCEPTED_DEPTH, 'true')}\n"
        # ep submit puts the user's requirements inside its own (parentheses and && clauses).
        f"requirements = {_ternary(ACCEPTED_DEPTH - 12, 'TARGET.Cpus >= 1')}\nqueue\n"
    )
    home = submit_as(pool, attacker, shared_dir, text)
    assert home.exists()

    def held() -> bool:
        jobs = pool.jobs("ClusterId == 1")
        return bool(jobs) and jobs[0].evaluate("JobStatus") == 5

    pool.wait_for(held, 60, "the deep job to end held by its OnExitHold")
    assert pool.jobs("ClusterId == 1")[0].evaluate("HoldReasonCode") == 3  # by policy
    listed = pool.ep("q", "-l", user=attacker)  # a reply carrying the deep job parses
    assert listed.status == 0 and "OnExitHold" in listed.stdout, listed.stderr
    assert_pool_serves(pool, slot_users[3], shared_dir)
    assert pool.terminate() == 0
    pool.start()
    assert_pool_serves(pool, slot_users[3], shared_dir)


def test_a_deep_expression_behind_a_reference_chain_ends_the_job_and_the_pool_serves(
    pool_factory, slot_users, shared_dir: Path
) -> None:
    """A job whose OnExitHold reaches a deep expression through 190 attributes referring one
    to the next (near the end of the stack) still ends, completed or held (an evaluation that
    runs out of stack is ERROR); another user is served, also after a restart."""
    pool = pool_factory()
    attacker = slot_users[0]
    chain = "".join(f"+Deep{i} = Deep{i + 1}\n" for i in range(190))
    text = (
        "executable = /bin/true\n"
        f"{chain}+Deep190 = {_ternary(ACCEPTED_DEPTH, 'true')}\n"
        "on_exit_hold = Deep0\nqueue\n"
    )
    submit_as(pool, attacker, shared_dir, text)

    def ended() -> bool:
        jobs = pool.jobs("ClusterId == 1", history=True) or pool.jobs("ClusterId == 1")
        return bool(jobs) and jobs[0].evaluate("JobStatus") in (4, 5)

    pool.wait_for(ended, 90, "the reference-chain job to end, completed or held")
    assert_pool_serves(pool, slot_users[3], shared_dir)
    assert pool.terminate() == 0
    pool.start()
    assert_pool_serves(pool, slot_users[3], shared_dir)
