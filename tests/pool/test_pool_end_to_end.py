"""End to end through a real ``ep run``: submit files, holds, users' rights, restarts.

Every test starts its own pool (epcore.testing.pool) and talks to it with the ``ep`` commands, as
real users where it matters, or with raw lines on its socket for malformed requests.
"""

from __future__ import annotations

import os
import signal
import socket
import time
from pathlib import Path

import pytest

from epcore.classad import parse_ad
from epcore.runtime import framing
from epcore.testing.pool import PoolProcess, submit_as, user_home
from epcore.testing.system import SlotUser

pytestmark = pytest.mark.system


def _write(path: Path, text: str, user: SlotUser) -> Path:
    path.write_text(text)
    os.chown(path, user.uid, user.gid)
    return path


def _status(pool: PoolProcess, job_id: str, history: bool = False) -> object:
    cluster, proc = job_id.split(".")
    found = pool.jobs(f"ClusterId == {cluster} && ProcId == {proc}", history=history)
    return found[0].evaluate("JobStatus") if found else None


def test_a_missing_executable_is_held_with_code_6_naming_the_file(
    pool_factory, slot_users, shared_dir: Path
) -> None:
    """A job whose executable is gone when it starts is held with HoldReasonCode 6 and a
    reason naming the file (must-show 4)."""
    pool = pool_factory()
    user = slot_users[0]
    home = user_home(shared_dir, user)
    program = _write(home / "prog.sh", "#!/bin/sh\necho hi\n", user)
    program.chmod(0o755)
    _write(home / "job.sub", "executable = prog.sh\noutput = out\nhold = true\nqueue\n", user)
    result = pool.ep("submit", "job.sub", user=user, cwd=str(home))
    assert result.status == 0, result.stderr
    program.unlink()
    assert pool.ep("release", "1", user=user).status == 0
    pool.wait_for(lambda: _status(pool, "1.0") == 5, 30, "the hold")
    job = pool.jobs("ClusterId == 1")[0]
    assert job.evaluate("HoldReasonCode") == 6
    assert str(program) in str(job.evaluate("HoldReason"))
    held = pool.ep("q", "-hold", user=user)
    assert str(program) in held.stdout


def test_submit_errors_name_the_file_and_line_and_queue_nothing(
    pool_factory, slot_users, shared_dir: Path
) -> None:
    """A submit file with a mistake is refused with its file and line; no job is queued."""
    pool = pool_factory()
    user = slot_users[0]
    home = user_home(shared_dir, user)
    _write(
        home / "bad.sub",
        "executable = /bin/true\nrequest_memory = 12 parsecs\nqueue\n",
        user,
    )
    result = pool.ep("submit", "bad.sub", user=user, cwd=str(home))
    assert result.status == 1
    assert "bad.sub, line 2" in result.stderr, result.stderr
    _write(home / "missing.sub", "executable = /no/such/program\nqueue\n", user)
    result = pool.ep("submit", "missing.sub", user=user, cwd=str(home))
    assert result.status == 1 and "/no/such/program" in result.stderr, result.stderr
    assert pool.jobs() == []


def test_users_act_on_their_own_jobs_and_root_on_all(
    pool_factory, slot_users, shared_dir: Path
) -> None:
    """A user may hold, release and remove their own jobs but not another's; root may."""
    pool = pool_factory()
    alice, bob = slot_users[0], slot_users[1]
    for user in (alice, bob):
        home = user_home(shared_dir, user)
        _write(home / "job.sub", "executable = /bin/true\nhold = true\nqueue 2\n", user)
        assert pool.ep("submit", "job.sub", user=user, cwd=str(home)).status == 0
    owners = {str(j.evaluate("ClusterId")): str(j.evaluate("Owner")) for j in pool.jobs()}
    assert owners == {"1": alice.name, "2": bob.name}
    refused = pool.ep("rm", "2", user=alice)
    assert refused.status == 1 and "not owned by" in refused.stderr
    mine = pool.ep("rm", "1.1", user=alice)
    assert mine.status == 0 and "Job 1.1 marked for removal." in mine.stdout
    assert _status(pool, "1.1", history=True) == 3
    shown = pool.ep("q", user=alice)
    assert " 1.0 " in shown.stdout and " 2.0 " not in shown.stdout
    everyone = pool.ep("q", "-allusers", user=alice)
    assert " 2.1 " in everyone.stdout
    assert pool.ep("rm", bob.name).status == 0  # root removes every job of bob's
    assert [str(j.evaluate("Owner")) for j in pool.jobs()] == [alice.name]


def test_hold_release_and_remove_a_running_job(pool_factory, slot_users, shared_dir: Path) -> None:
    """Holding a running job stops it; releasing runs it again; removing it ends it for good."""
    pool = pool_factory()
    user = slot_users[0]
    assert not _user_sleeps(user.name), f"left by an earlier test: {_described(user.name)}"
    submit_as(pool, user, shared_dir, "executable = /bin/sleep\narguments = 300\nqueue\n")
    pool.wait_for(lambda: _status(pool, "1.0") == 2, 30, "the job to run")
    assert pool.ep("hold", "1.0", "-reason", "testing", user=user).status == 0
    job = pool.jobs()[0]
    assert job.evaluate("JobStatus") == 5 and job.evaluate("HoldReason") == "testing"
    assert job.evaluate("HoldReasonCode") == 1
    try:
        pool.wait_for(lambda: not _user_sleeps(user.name), 30, "the held job's process to end")
    except AssertionError as error:
        raise AssertionError(f"{error}\nstill running: {_described(user.name)}") from None
    assert pool.ep("release", "1.0", user=user).status == 0
    pool.wait_for(lambda: _status(pool, "1.0") == 2, 30, "the job to run again")
    assert pool.jobs()[0].evaluate("NumJobStarts") == 2
    assert pool.ep("rm", "1.0", user=user).status == 0
    pool.wait_for(lambda: _status(pool, "1.0", history=True) == 3, 30, "the removal")
    assert pool.jobs() == []


def _user_sleeps(name: str) -> bool:
    from epcore.testing.system import user_processes

    return bool(user_processes(name))


def _described(name: str) -> list[str]:
    """Each live process of ``name``: its pid, parent, age and command line."""
    import psutil

    from epcore.testing.system import user_processes

    found = []
    for pid in user_processes(name):
        try:
            process = psutil.Process(pid)
            age = time.time() - process.create_time()
            found.append(f"{pid} (parent {process.ppid()}, {age:.0f} s) {process.cmdline()}")
        except psutil.Error:
            continue
    return found


def test_vacate_sends_the_job_back_to_idle_and_it_runs_again(
    pool_factory, slot_users, shared_dir: Path
) -> None:
    """ep vacate evicts the running job; the queue takes it back as idle and it runs again."""
    pool = pool_factory()
    user = slot_users[0]
    submit_as(pool, user, shared_dir, "executable = /bin/sleep\narguments = 300\nqueue\n")
    pool.wait_for(lambda: _status(pool, "1.0") == 2, 30, "the job to run")
    refused = pool.ep("vacate", user=user)
    assert refused.status == 1 and "QUEUE_SUPER_USERS" in refused.stderr
    result = pool.ep("vacate", "-fast")
    assert result.status == 0 and "Vacated slot1_1." in result.stdout, result.stdout
    pool.wait_for(
        lambda: pool.jobs()[0].evaluate("NumJobStarts") == 2 and _status(pool, "1.0") == 2,
        60,
        "the job to run a second time",
    )
    assert pool.jobs()[0].evaluate("JobLastOutcome") == "evicted"
    assert pool.ep("rm", "1").status == 0


def test_the_queue_and_the_priorities_survive_a_restart(
    pool_factory, slot_users, shared_dir: Path
) -> None:
    """After a peaceful shutdown and a new ep run, the jobs, their ids, the cluster counter
    and the priority factors are as they were."""
    pool = pool_factory()
    user = slot_users[0]
    home = submit_as(pool, user, shared_dir, "executable = /bin/true\nhold = true\nqueue 3\n")
    submitter = str(pool.jobs()[0].evaluate("User"))
    assert pool.ep("userprio", "-setfactor", submitter, "2500").status == 0
    assert pool.terminate() == 0
    pool.start()
    assert [str(j.evaluate("ProcId")) for j in pool.jobs()] == ["0", "1", "2"]
    factors = {
        str(ad.evaluate("Name")): ad.evaluate("PriorityFactor") for ad in pool.client.user_prio()
    }
    assert factors[submitter] == 2500.0
    result = pool.ep("submit", "job.sub", user=user, cwd=str(home))
    assert "submitted to cluster 2." in result.stdout


@pytest.mark.parametrize(
    ("line", "fragment"),
    [
        (b"not a classad\n", "unreadable message"),
        (b'[ Command = "Launch" ]\n', "unknown Command"),
        (b'[ Command = "Submit"; ClusterId = 1; ClusterAd = [ ]; Procs = { 1 } ]\n', "Procs[0]"),
        (b'[ Command = "Submit"; ClusterId = 1; ClusterAd = [ ]; Procs = { } ]\n', "Procs must"),
        (
            b'[ Command = "Submit"; ClusterId = 1; ClusterAd = [ ]; '
            b"Procs = { [ ClusterId = 1 ] } ]\n",
            "ProcId",
        ),
        (
            b'[ Command = "Submit"; ClusterId = 1; ClusterAd = [ ClusterId = 1; ProcId = 0; '
            b'Cmd = "/bin/true" ]; Procs = { [ Args = "x" ] } ]\n',
            "Procs[0]: ProcId",
        ),
        (
            b'[ Command = "Submit"; ClusterId = 999; ClusterAd = [ ]; '
            b'Procs = { [ ClusterId = 999; ProcId = 0; Cmd = "/bin/true" ] } ]\n',
            "was not opened by this user",
        ),
        (b'[ Command = "QueryJobs"; Constraint = "JobStatus ==" ]\n', "Constraint"),
        (b'[ Command = "Remove" ]\n', "JobIds or a Constraint"),
        (b'[ Command = "Remove"; JobIds = { "x.y" } ]\n', "not a job id"),
        (b'[ Command = "SetFactor"; Submitter = "a@b"; Value = 2 ]\n', "QUEUE_SUPER_USERS"),
        (b'[ Command = "Analyze"; JobId = "77.0" ]\n', "77.0"),
    ],
)
def test_malformed_requests_are_refused_and_the_pool_keeps_serving(
    pool_factory, slot_users, line: bytes, fragment: str
) -> None:
    """Every malformed or forbidden request gets Ok = false with a reason naming what is
    wrong, and the next request is answered."""
    pool = pool_factory()
    user = slot_users[0]
    reply = _raw(pool, line, user.uid, user.gid)
    assert reply.evaluate("Ok") is False
    assert fragment in str(reply.evaluate("Error")), reply
    assert pool.client.query_ads("Machine")


def _raw(pool: PoolProcess, line: bytes, uid: int, gid: int) -> object:
    """Send ``line`` from a child running as ``uid`` and parse the answer."""
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


def test_analyze_says_which_clause_rules_out_the_slots(
    pool_factory, slot_users, shared_dir: Path
) -> None:
    """ep q -better-analyze of a job no slot can hold names the clause that rules them out."""
    pool = pool_factory()
    user = slot_users[0]
    text = "executable = /bin/true\nrequirements = TARGET.Memory > 1000000\nqueue\n"
    submit_as(pool, user, shared_dir, text)
    time.sleep(1)
    result = pool.ep("q", "-better-analyze", user=user)
    assert result.status == 0, result.stderr
    assert "TARGET.Memory > 1000000" in result.stdout, result.stdout


def test_drain_and_cancel(pool_factory) -> None:
    """ep drain drains the machine (its slot shows Drained) and -cancel brings it back."""
    pool = pool_factory()
    assert pool.ep("drain", "-fast").status == 0
    pool.wait_for(
        lambda: any(ad.evaluate("State") == "Drained" for ad in pool.client.query_ads()),
        30,
        "the slot to drain",
    )
    assert pool.ep("drain", "-cancel").status == 0
    pool.wait_for(
        lambda: all(ad.evaluate("State") == "Unclaimed" for ad in pool.client.query_ads()),
        30,
        "the drain to end",
    )


def test_match_references_are_filled_from_the_matched_slot(
    pool_factory, slot_users, shared_dir: Path
) -> None:
    """$$(Attr) in a job takes the matched slot's value, for the first job of a claim and for
    the next ones that reuse it."""
    pool = pool_factory(cpus=1, memory=1024)
    user = slot_users[0]
    text = (
        "executable = /bin/echo\narguments = arch $$(Arch) on $$(OpSys:nowhere)\n"
        "output = out.$(Process)\nqueue 3\n"
    )
    home = submit_as(pool, user, shared_dir, text)
    pool.wait_for(lambda: not pool.jobs(), 60, "the jobs to finish")
    for process in range(3):
        assert (home / f"out.{process}").read_text() == "arch X86_64 on LINUX\n"
    done = pool.jobs(history=True)
    assert {str(j.evaluate("MATCH_Arch")) for j in done} == {"X86_64"}
    assert len({str(j.evaluate("PublicClaimId")) for j in done}) == 1, "one claim, reused"


def test_status_shows_the_schedd_and_the_submitters(
    pool_factory, slot_users, shared_dir: Path
) -> None:
    """ep status -schedd and -submitters show the queue's counts per daemon and submitter."""
    pool = pool_factory()
    user = slot_users[0]
    submit_as(pool, user, shared_dir, "executable = /bin/true\nhold = true\nqueue 2\n")

    def shown() -> bool:
        text = pool.ep("status", "-submitters").stdout
        return any(user.name in line and line.rstrip().endswith(" 2") for line in text.splitlines())

    pool.wait_for(shown, 30, "the submitter's ad")
    schedd = pool.ep("status", "-schedd", "-af", "TotalHeldJobs")
    assert schedd.stdout.strip() == "2"
    machines = pool.ep("status", "-af", "Name", "State")
    assert machines.stdout.startswith("slot1@") and "Unclaimed" in machines.stdout


def test_a_peaceful_shutdown_lets_the_job_finish(
    pool_factory, slot_users, shared_dir: Path
) -> None:
    """SIGTERM once: the running job finishes and is recorded before ep run exits."""
    pool = pool_factory()
    user = slot_users[0]
    submit_as(pool, user, shared_dir, "executable = /bin/sleep\narguments = 3\nqueue\n")
    pool.wait_for(lambda: _status(pool, "1.0") == 2, 30, "the job to run")
    assert pool.process is not None
    pool.process.send_signal(signal.SIGTERM)
    assert pool.process.wait(60) == 0
    pool.start()
    assert pool.jobs() == []
    (done,) = pool.jobs(history=True)
    assert done.evaluate("JobStatus") == 4 and done.evaluate("ExitCode") == 0


def test_a_fast_shutdown_puts_the_job_back_to_idle(
    pool_factory, slot_users, shared_dir: Path
) -> None:
    """SIGTERM twice: the running job is killed, goes back to idle, and runs again when the
    pool comes back."""
    pool = pool_factory()
    user = slot_users[0]
    submit_as(pool, user, shared_dir, "executable = /bin/sleep\narguments = 300\nqueue\n")
    pool.wait_for(lambda: _status(pool, "1.0") == 2, 30, "the job to run")
    assert pool.process is not None
    pool.process.send_signal(signal.SIGTERM)
    time.sleep(0.5)
    pool.process.send_signal(signal.SIGTERM)
    assert pool.process.wait(60) == 0
    assert pool.processes() == []
    pool.start()
    pool.wait_for(
        lambda: _status(pool, "1.0") == 2 and pool.jobs()[0].evaluate("NumJobStarts") == 2,
        60,
        "the job to run again",
    )
    assert pool.ep("rm", "1").status == 0
