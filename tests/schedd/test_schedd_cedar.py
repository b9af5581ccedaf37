"""The schedd's CEDAR handlers, driven message by message with a recording stand-in for the
pool's requests: who the peer acts as, job queries with their summary, ACT_ON_JOBS with
its confirmation, and the history's one message."""

from __future__ import annotations

import logging
import os
import pwd

import pytest

from epcore.classad import ClassAd
from epcore.interfaces import Requester
from epcore.net import commands
from epcore.net import qmgmt_protocol as qp
from epcore.net.codec import Reader, Writer
from epcore.net.conversation import Stream
from epcore.net.dispatch import CommandContext, Handler
from epcore.net.frames import Framer
from epcore.net.handshake import Peer
from epcore.net.methods import Identity
from epcore.schedd.cedar import cedar_handlers, peer_requester, qualified_super_users
from tests.net.drive import run_conversation

ROOT_NAME = pwd.getpwuid(0).pw_name


class FakePool:
    """Answers QueryJobs with three jobs (one held), the actions with Done 1.0 and Refused
    1.1 (not owned); records every request and who made it."""

    def __init__(self) -> None:
        self.requests: list[tuple[Requester, ClassAd]] = []

    def __call__(self, requester: Requester, request: ClassAd) -> ClassAd:
        self.requests.append((requester, request))
        command = request.evaluate("Command")
        if command == "QueryJobs":
            jobs = [
                ClassAd({"ClusterId": 1, "ProcId": proc, "JobStatus": status, "Owner": "bob"})
                for proc, status in ((0, 1), (1, 5), (2, 1))
            ]
            return ClassAd({"Ok": True, "Ads": jobs})
        return ClassAd({"Ok": True, "Done": ["1.0"], "Refused": ["1.1: not owned by bob"]})


def drive(handler: Handler, peer: Peer, messages: list[bytes]) -> list[Reader]:
    """Run ``handler`` for ``peer`` with ``messages``, then the end; the replies."""
    stream = Stream(Framer(), ("127.0.0.1", 1), ("127.0.0.1", 2))
    return run_conversation(handler(CommandContext(stream, peer)), messages)


def handlers(pool: FakePool) -> dict[int, Handler]:
    table = cedar_handlers(
        pool, lambda: {"condor@example.org"}, log=logging.getLogger("test"), clock=lambda: 5000.0
    )
    return {command.number: handler for command, handler in table.items()}


def bob(command: commands.Command) -> Peer:
    return Peer(("127.0.0.1", 2), Identity("bob", "example.org", "FS"), command.number)


def test_the_peer_acts_as_the_local_user_of_its_authenticated_name() -> None:
    """An authenticated name maps to that local account, a name without an account acts
    with uid -1, and an unauthenticated peer is nobody."""
    nobody = peer_requester(Peer(("h", 1), Identity("no-such-user-x", "d", "TOKEN"), 0), {})
    assert nobody == Requester(-1, "no-such-user-x", False)
    assert peer_requester(Peer(("h", 1), None, 0), {"condor@d"}) is None
    me = pwd.getpwuid(os.getuid()).pw_name
    found = peer_requester(Peer(("h", 1), Identity(me, "d", "FS"), 0), set())
    assert found is not None and found.uid == os.getuid()


@pytest.mark.parametrize(
    ("identity", "listed", "expected"),
    [
        (Identity(ROOT_NAME, "pool.example", "FS"), "root, condor", True),
        (Identity(ROOT_NAME, "pool.example", "TOKEN"), "root, condor", True),
        (Identity(ROOT_NAME, "elsewhere.example", "TOKEN"), "root, condor", False),
        (Identity(ROOT_NAME, "elsewhere.example", "CLAIMTOBE"), "root, condor", False),
        (Identity(ROOT_NAME, "pool.example", "CLAIMTOBE"), "condor", False),
        (Identity(ROOT_NAME, "pool.example", "FS"), "condor", False),
        (Identity("condor", "POOL.example", "FS"), "root, condor", True),
        (Identity("alice", "elsewhere.example", "TOKEN"), "alice@elsewhere.example", True),
        (Identity("alice", "pool.example", "TOKEN"), "alice@elsewhere.example", False),
    ],
)
def test_a_super_user_is_an_authenticated_name_queue_super_users_holds(
    identity: Identity, listed: str, expected: bool
) -> None:
    """QUEUE_SUPER_USERS as HTCondor reads it: a bare name is that user of UID_DOMAIN, a full
    name is itself; an identity named root (its account uid 0 or not) is a super user only
    when listed so, never from another domain."""
    names = qualified_super_users(listed.replace(",", " ").split(), "pool.example")
    requester = peer_requester(Peer(("h", 1), identity, 0), names)
    assert requester is not None and requester.super_user is expected


def test_a_job_query_sends_each_ad_then_the_summary() -> None:
    """QUERY_JOB_ADS answers one message per job, cut to the projection and the limit, then
    an ad with Owner 0, no error and the counts by status of the jobs it sent."""
    pool = FakePool()
    query = ClassAd({"Projection": "ProcId\nOwner", "LimitResults": 2})
    query["Requirements"] = True
    replies = drive(
        handlers(pool)[commands.QUERY_JOB_ADS.number],
        bob(commands.QUERY_JOB_ADS),
        [Writer().put_classad(query).bytes()],
    )
    assert len(replies) == 3
    first = replies[0].get_classad()
    assert set(first) == {"ProcId", "Owner"}
    summary = replies[2].get_classad()
    assert summary.evaluate("Owner") == 0 and summary.evaluate("ErrorCode") == 0
    assert summary.evaluate("MyType") == "Summary"
    assert (summary.evaluate("Jobs"), summary.evaluate("Idle"), summary.evaluate("Held")) == (
        2,
        1,
        1,
    )
    requester, request = pool.requests[0]
    assert requester.name == "bob" and request.evaluate("Constraint") == "true"


def test_act_on_jobs_reports_then_acts_only_once_confirmed() -> None:
    """ACT_ON_JOBS asks the pool who may (DryRun), answers per job (AR_LONG), and only after
    the client's OK asks the pool to act, on the jobs allowed, then says OK."""
    pool = FakePool()
    action = ClassAd(
        {
            "JobAction": qp.HOLD_JOBS,
            "ActionResultType": qp.AR_LONG,
            "ActionIds": "1.0,1.1,1.7",
            "HoldReason": "lunch",
        }
    )
    replies = drive(
        handlers(pool)[commands.ACT_ON_JOBS.number],
        bob(commands.ACT_ON_JOBS),
        [Writer().put_classad(action).bytes(), Writer().put_int(qp.OK).bytes()],
    )
    result = replies[0].get_classad()
    assert result.evaluate("ActionResult") == qp.OK
    assert result.evaluate("job_1_0") == qp.AR_SUCCESS
    assert result.evaluate("job_1_1") == qp.AR_PERMISSION_DENIED
    assert result.evaluate("job_1_7") == qp.AR_NOT_FOUND
    assert replies[1].get_int() == qp.OK
    dry, real = (request for _, request in pool.requests)
    assert dry.evaluate("DryRun") is True and dry.evaluate("Reason") == "lunch"
    assert real.evaluate("Command") == "Hold" and real.evaluate("JobIds") == ["1.0"]
    assert "DryRun" not in real


def test_act_on_jobs_does_nothing_without_the_confirmation() -> None:
    """A client that answers the result with anything but OK leaves the jobs as they were;
    an unauthenticated one is refused every job (totals form)."""
    pool = FakePool()
    action = ClassAd({"JobAction": qp.REMOVE_JOBS, "ActionIds": "1.0"})
    handler = handlers(pool)[commands.ACT_ON_JOBS.number]
    drive(handler, bob(commands.ACT_ON_JOBS), [Writer().put_classad(action).bytes()])
    assert [r.evaluate("DryRun") for _, r in pool.requests] == [True]
    anonymous = Peer(("h", 1), None, commands.ACT_ON_JOBS.number)
    (reply,) = drive(handler, anonymous, [Writer().put_classad(action).bytes()])
    result = reply.get_classad()
    assert result.evaluate("ActionResult") == 0
    assert result.evaluate(f"result_total_{qp.AR_PERMISSION_DENIED}") == 1
    assert len(pool.requests) == 1


def test_the_history_comes_in_one_message_ended_by_its_count() -> None:
    """QUERY_SCHEDD_HISTORY answers every ad and the end ad (Owner 0, NumJobMatches) in one
    message, asking the pool for the history with the limit; another record source is
    refused with an error in the end ad."""
    pool = FakePool()
    request = ClassAd({"NumJobMatches": 5, "Projection": ["ProcId"]})
    handler = handlers(pool)[commands.QUERY_SCHEDD_HISTORY.number]
    (reply,) = drive(
        handler, bob(commands.QUERY_SCHEDD_HISTORY), [Writer().put_classad(request).bytes()]
    )
    ads = [reply.get_classad() for _ in range(4)]
    assert reply.at_end
    assert ads[3].evaluate("Owner") == 0 and ads[3].evaluate("NumJobMatches") == 3
    _, asked = pool.requests[0]
    assert asked.evaluate("History") is True and asked.evaluate("Limit") == 5
    startd = ClassAd({"HistoryRecordSource": "STARTD"})
    (refusal,) = drive(
        handler, bob(commands.QUERY_SCHEDD_HISTORY), [Writer().put_classad(startd).bytes()]
    )
    assert refusal.get_classad().evaluate("ErrorCode") == 1
