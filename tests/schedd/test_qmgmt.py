"""The queue-management protocol's server side, driven message by message with a recording
stand-in for the pool's requests (no socket, no pool)."""

from __future__ import annotations

import errno
import logging

from epcore.classad import ClassAd
from epcore.interfaces import Requester
from epcore.net import qmgmt_protocol as qmgmt
from epcore.net.codec import Reader, Writer
from epcore.net.conversation import Stream
from epcore.net.frames import Framer
from epcore.schedd import qmgmt as qmgmt_session
from epcore.schedd.qmgmt import QueueSession, queue_conversation
from tests.net.drive import run_conversation

ALICE = Requester(1000, "alice", False)
LOG = logging.getLogger("test.qmgmt")


class FakePool:
    """Answers NewCluster with 7, Submit and Edit with Ok (Edit refused for job 9.0), and
    QueryJobs with one job; records every request."""

    def __init__(self) -> None:
        self.requests: list[ClassAd] = []
        self.asked_by: list[Requester] = []

    def __call__(self, requester: Requester, request: ClassAd) -> ClassAd:
        self.requests.append(request)
        self.asked_by.append(requester)
        command = request.evaluate("Command")
        if command == "NewCluster":
            return ClassAd({"Ok": True, "ClusterId": 7})
        if command == "Edit" and request.evaluate("JobIds") == ["9.0"]:
            return ClassAd({"Ok": False, "Error": "9.0: not owned by alice"})
        if command == "QueryJobs":
            job = ClassAd({"ClusterId": 3, "ProcId": 0, "Owner": "alice", "Cpus": 2})
            job["ClaimId"] = "secret"
            job["Weight"] = 0.75
            return ClassAd({"Ok": True, "Ads": [job]})
        return ClassAd({"Ok": True, "Done": ["3.0"]})

    def commands(self) -> list[object]:
        return [request.evaluate("Command") for request in self.requests]


def call(number: int, *arguments: int | str, flags: int | None = None) -> bytes:
    writer = Writer().put_int(number)
    for argument in arguments:
        if isinstance(argument, int):
            writer.put_int(argument)
        else:
            writer.put_string(argument)
    if flags is not None:
        writer.put_byte(flags)
    return writer.bytes()


def drive(session: QueueSession, messages: list[bytes]) -> list[Reader]:
    """Feed ``messages`` to the conversation, then the end of the connection; the replies."""
    stream = Stream(Framer(), ("127.0.0.1", 1), ("127.0.0.1", 2))
    return run_conversation(queue_conversation(stream, session), messages)


def session(
    pool: FakePool, *, write: bool = True, requester: Requester | None = ALICE
) -> QueueSession:
    return QueueSession(pool, requester, write=write, log=LOG, clock=lambda: 1000.0)


def test_a_submission_is_sent_to_the_pool_only_at_the_commit() -> None:
    """NewCluster, NewProc and unacknowledged SetAttribute2 calls build the transaction; the
    commit sends one Submit with the cluster's ad, the jobs' own ads and the submission's
    size, and answers 0 and an ad."""
    pool = FakePool()
    no_ack = qmgmt.NO_ACK
    replies = drive(
        session(pool),
        [
            call(qmgmt.NEW_CLUSTER),
            call(qmgmt.SET_ATTRIBUTE2, 7, -1, '"/bin/true"', "Cmd", flags=no_ack),
            call(qmgmt.NEW_PROC, 7),
            call(qmgmt.SET_ATTRIBUTE2, 7, 0, "0", "ProcId", flags=no_ack),
            call(qmgmt.NEW_PROC, 7),
            call(qmgmt.SET_ATTRIBUTE2, 7, 1, "1", "ProcId", flags=no_ack),
            call(qmgmt.SET_ATTRIBUTE2, 7, 1, '"x y"', "Args", flags=no_ack),
            call(qmgmt.COMMIT, 0),
            call(qmgmt.CLOSE_SOCKET),
        ],
    )
    assert [reply.get_int() for reply in replies[:3]] == [7, 0, 1]
    assert replies[3].get_int() == 0
    replies[3].get_classad()
    assert pool.commands() == ["NewCluster", "Submit"]
    submit = pool.requests[1]
    assert submit.evaluate("ClusterId") == 7 and submit.evaluate("SubmissionSize") == 2
    cluster_ad = submit.evaluate("ClusterAd")
    assert isinstance(cluster_ad, ClassAd) and cluster_ad.evaluate("Cmd") == "/bin/true"
    procs = submit.evaluate("Procs")
    assert isinstance(procs, list)
    assert [proc.evaluate("ProcId") for proc in procs] == [0, 1]
    assert procs[1].evaluate("Args") == "x y"


def test_an_unacknowledged_failure_fails_the_commit_and_nothing_is_queued() -> None:
    """A SetAttribute2 with NoAck whose value does not parse is answered by nothing; the
    commit answers -1, EINVAL and an ad naming the attribute, and no Submit is made."""
    pool = FakePool()
    replies = drive(
        session(pool),
        [
            call(qmgmt.NEW_CLUSTER),
            call(qmgmt.NEW_PROC, 7),
            call(qmgmt.SET_ATTRIBUTE2, 7, 0, "1 +", "Broken", flags=qmgmt.NO_ACK),
            call(qmgmt.COMMIT, 0),
        ],
    )
    assert len(replies) == 3
    commit = replies[2]
    assert commit.get_int() == -1 and commit.get_int() == errno.EINVAL
    reason = commit.get_classad().evaluate("ErrorReason")
    assert isinstance(reason, str) and "Broken" in reason
    assert "Submit" not in pool.commands()


def test_a_submit_digest_is_taken_and_its_commit_refused_with_the_reason() -> None:
    """SetJobFactory and SendMaterializeData (late materialization) are answered as taken, so
    the client reaches its commit, which answers -1 and an ad saying that late
    materialization is not supported (once); nothing is queued."""
    pool = FakePool()
    digest = "executable=/bin/true\nQueue 5\n"
    items = Writer().put_int(qmgmt.SEND_MATERIALIZE_DATA).put_int(7).put_int(0)
    items.put_bytes(b"a\nb\n")
    replies = drive(
        session(pool),
        [
            call(qmgmt.NEW_CLUSTER),
            items.bytes(),
            call(qmgmt.SET_JOB_FACTORY, 7, 2, "", digest),
            call(qmgmt.SET_ATTRIBUTE2, 7, -1, '"/bin/true"', "Cmd", flags=qmgmt.NO_ACK),
            call(qmgmt.COMMIT, 0),
        ],
    )
    assert replies[1].get_string() == "" and replies[1].get_int() == 2
    assert replies[1].get_int() == 0
    assert replies[2].get_int() == 0
    commit = replies[3]
    assert commit.get_int() == -1 and commit.get_int() == errno.EINVAL
    reason = commit.get_classad().evaluate("ErrorReason")
    assert reason == qmgmt_session.NO_LATE_MATERIALIZATION
    assert "late materialization (max_materialize, max_idle) is not supported" in reason
    assert pool.commands() == ["NewCluster"]


def test_a_connection_that_ends_uncommitted_queues_nothing() -> None:
    """A transaction the client never commits (the connection ends) is dropped."""
    pool = FakePool()
    drive(session(pool), [call(qmgmt.NEW_CLUSTER), call(qmgmt.NEW_PROC, 7)])
    assert pool.commands() == ["NewCluster"]


def test_a_read_only_or_anonymous_connection_cannot_make_a_cluster() -> None:
    """NewCluster over QMGMT_READ_CMD, or without a local user, answers -1, EACCES and an
    ad with the reason; the pool is not asked."""
    for made in (session(FakePool(), write=False), session(FakePool(), requester=None)):
        (reply,) = drive(made, [call(qmgmt.NEW_CLUSTER)])
        assert reply.get_int() == -1 and reply.get_int() == errno.EACCES
        assert reply.get_classad().evaluate("ErrorCode") == errno.EACCES
        assert isinstance(made.route, FakePool) and made.route.requests == []


def test_an_edit_is_checked_at_once_and_made_at_the_commit() -> None:
    """SetAttribute on a queued job asks the pool whether it may (QueryOnly) and answers; a
    refused edit answers -1 EINVAL; the allowed one is made by an Edit at the commit."""
    pool = FakePool()
    replies = drive(
        session(pool),
        [
            call(qmgmt.SET_ATTRIBUTE, 3, 0, "42", "Answer"),
            call(qmgmt.SET_ATTRIBUTE, 9, 0, "1", "Answer"),
            call(qmgmt.COMMIT_NO_FLAGS),
        ],
    )
    assert replies[0].get_int() == 0
    assert replies[1].get_int() == -1 and replies[1].get_int() == errno.EINVAL
    assert replies[2].get_int() == 0
    edits = [r for r in pool.requests if r.evaluate("Command") == "Edit"]
    assert [e.evaluate("QueryOnly") is True for e in edits] == [True, True, False]
    assert edits[2].evaluate("JobIds") == ["3.0"] and edits[2].evaluate("Value") == "42"


def test_edits_by_constraint_are_answered_even_without_ack() -> None:
    """SetAttributeByConstraint2 with NoAck still answers the number of jobs it touches."""
    pool = FakePool()
    (reply,) = drive(
        session(pool),
        [call(qmgmt.SET_ATTRIBUTE_BY_CONSTRAINT2, 'Owner == "alice"', "1", "X", flags=2)],
    )
    assert reply.get_int() == 1


def test_reads_answer_values_but_never_private_attributes() -> None:
    """GetAttributeInt, GetAttributeString and GetAttributeFloat (CEDAR's mantissa and
    exponent) answer a queued job's values; a private attribute answers EACCES; GetJobAd
    leaves it out."""
    pool = FakePool()
    replies = drive(
        session(pool),
        [
            call(qmgmt.GET_ATTRIBUTE_INT, 3, 0, "Cpus"),
            call(qmgmt.GET_ATTRIBUTE_STRING, 3, 0, "Owner"),
            call(qmgmt.GET_ATTRIBUTE_FLOAT, 3, 0, "Weight"),
            call(qmgmt.GET_ATTRIBUTE_EXPR, 3, 0, "ClaimId"),
            call(qmgmt.GET_JOB_AD, 3, 0),
        ],
    )
    assert (replies[0].get_int(), replies[0].get_int()) == (0, 2)
    assert (replies[1].get_int(), replies[1].get_string()) == (0, "alice")
    assert replies[2].get_int() == 0
    mantissa, exponent = replies[2].get_int(), replies[2].get_int()
    assert abs(qmgmt.double_of(mantissa, exponent) - 0.75) < 1e-9  # CEDAR keeps 31 bits
    assert (replies[3].get_int(), replies[3].get_int()) == (-1, errno.EACCES)
    assert replies[4].get_int() == 0
    assert "ClaimId" not in replies[4].get_classad()


def test_an_unknown_call_ends_the_connection() -> None:
    """A call number the schedd does not answer closes the connection without a reply, and
    what was pending is dropped."""
    pool = FakePool()
    replies = drive(
        session(pool),
        [call(qmgmt.NEW_CLUSTER), call(10999), call(qmgmt.NEW_PROC, 7)],
    )
    assert len(replies) == 1
    assert pool.commands() == ["NewCluster"]


def test_a_transaction_is_bounded(monkeypatch) -> None:
    """NewProc beyond MAX_PROCS answers -1 E2BIG and fails the commit; an attribute beyond
    MAX_ATTRIBUTES in one ad is refused: a client cannot fill the pool's memory."""
    from epcore.schedd import qmgmt as server

    monkeypatch.setattr(server, "MAX_PROCS", 2)
    monkeypatch.setattr(server, "MAX_ATTRIBUTES", 1)
    pool = FakePool()
    replies = drive(
        session(pool),
        [
            call(qmgmt.NEW_CLUSTER),
            call(qmgmt.NEW_PROC, 7),
            call(qmgmt.NEW_PROC, 7),
            call(qmgmt.NEW_PROC, 7),
            call(qmgmt.SET_ATTRIBUTE, 7, 0, "1", "A"),
            call(qmgmt.SET_ATTRIBUTE, 7, 0, "2", "B"),
            call(qmgmt.COMMIT, 0),
        ],
    )
    assert [replies[n].get_int() for n in range(3)] == [7, 0, 1]
    assert (replies[3].get_int(), replies[3].get_int()) == (-1, errno.E2BIG)
    assert replies[4].get_int() == 0
    assert (replies[5].get_int(), replies[5].get_int()) == (-1, errno.EINVAL)
    assert replies[6].get_int() == -1
    assert "Submit" not in pool.commands()


def test_only_a_super_user_may_act_as_another_owner() -> None:
    """SetEffectiveOwner naming someone else is refused (EACCES) to an ordinary user; a
    super user who names another user then asks the pool as that user."""
    pool = FakePool()
    (refused,) = drive(session(pool), [call(qmgmt.SET_EFFECTIVE_OWNER, "mallory")])
    assert (refused.get_int(), refused.get_int()) == (-1, errno.EACCES)
    admin = Requester(0, "condor", True)
    replies = drive(
        session(pool, requester=admin),
        [call(qmgmt.SET_EFFECTIVE_OWNER, "alice"), call(qmgmt.NEW_CLUSTER)],
    )
    assert [reply.get_int() for reply in replies] == [0, 7]
    assert pool.commands() == ["NewCluster"]
    (asker,) = pool.asked_by
    assert asker.name == "alice" and not asker.super_user
