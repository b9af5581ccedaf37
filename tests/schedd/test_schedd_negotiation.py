"""The schedd's NEGOTIATE handler driven message by message: every operation of a round,
rejections, matches it must not take, a negotiator that breaks off, and who may negotiate."""

from __future__ import annotations

import logging
from pathlib import Path

import pytest

from epcore.classad import ClassAd, parse_expr
from epcore.config import Config
from epcore.net import commands
from epcore.net import negotiation as neg
from epcore.net.codec import CodecError, Reader, Writer
from epcore.net.conversation import Refused, Stream
from epcore.net.dispatch import CommandContext
from epcore.net.frames import Framer
from epcore.net.handshake import Peer
from epcore.net.methods import Identity
from epcore.schedd.jobqueue import JobId, QueueError
from epcore.schedd.negotiation import negotiation_handler
from tests.links.negotiate_peers import NOW, SCHEDD_CONFIG, Service, make_schedd, slots

ALICE = "alice@example.org"


def header(owner: str | None = ALICE, **extra: object) -> bytes:
    ad = ClassAd({"SubmitterTag": "", "NegotiatorName": "cm"})
    if owner is not None:
        ad[neg.OWNER] = owner
    for name, value in extra.items():
        ad[name] = value
    return Writer().put_classad(ad).bytes()


def op(kind: int) -> bytes:
    return Writer().put_int(kind).bytes()


def ask(count: int) -> bytes:
    return Writer().put_int(neg.SEND_RESOURCE_REQUEST_LIST).put_int(count).bytes()


def permission(cluster: int, proc: int, slot_number: int = 1, **extra: object) -> bytes:
    slot = slots(slot_number)[-1]
    slot[neg.REQUEST_CLUSTER] = cluster
    slot[neg.REQUEST_PROC] = proc
    for name, value in extra.items():
        slot[name] = value
    return Writer().put_int(neg.PERMISSION_AND_AD).put_string("null").put_classad(slot).bytes()


def run(
    service: Service,
    messages: list[bytes],
    *,
    config: str = SCHEDD_CONFIG,
    user: str = "condor",
    ip: str = "127.0.0.1",
) -> tuple[list[Reader], object]:
    """Drive NEGOTIATE from ``user@example.org`` at ``ip`` with ``messages`` (then the end
    of the connection); the replies and the handler's result (or the exception)."""
    parsed = Config.from_text(config, subsystem="SCHEDD")
    handler = negotiation_handler(
        service, lambda: parsed, log=logging.getLogger("test.schedd"), clock=lambda: NOW
    )
    stream = Stream(Framer(), ("127.0.0.1", 9618), (ip, 40000))
    peer = Peer((ip, 40000), Identity(user, "example.org", "TOKEN"), commands.NEGOTIATE.number)
    conversation = handler(CommandContext(stream, peer))
    pending = list(messages)
    sent: list[Reader] = []
    try:
        step = next(conversation)
        while True:
            if hasattr(step, "message"):
                sent.append(Reader(step.message))
                step = conversation.send(None)
            else:
                step = conversation.send(pending.pop(0) if pending else None)
    except StopIteration as done:
        return sent, done.value
    except Exception as error:
        return sent, error


def requests(replies: list[Reader]) -> list[ClassAd | None]:
    return [neg.read_request(reply) for reply in replies]


def test_a_round_with_every_operation(tmp_path: Path) -> None:
    """SEND_JOB_INFO gets one job, SEND_RESOURCE_REQUEST_LIST the rest and NO_MORE_JOBS;
    rejections are heard; PERMISSION_AND_AD's match is taken at END_NEGOTIATE, and the
    connection is kept for the next NEGOTIATE."""
    service = Service(make_schedd(tmp_path, {"alice": 3}))
    diagnostics = ClassAd({"MatchDiag": "slots refused"})
    rejection = Writer().put_int(neg.REJECTED_WITH_REASON).put_string("no match |1|1.1|")
    replies, result = run(
        service,
        [
            header(),
            op(neg.SEND_JOB_INFO),
            ask(10),
            op(neg.REJECTED),
            rejection.put_classad(diagnostics).bytes(),
            permission(1, 0),
            op(neg.END_NEGOTIATE),
        ],
    )
    assert result is True
    got = requests(replies)
    assert [None if r is None else r.evaluate("ProcId") for r in got] == [0, 1, 2, None]
    [taken] = service.taken
    assert [(m.submitter, m.job_id, m.slot_name) for m in taken] == [
        (ALICE, "1.0", "slot1@exec.example.org")
    ]
    assert service.cycles == 1


def test_a_list_stops_at_the_count_asked(tmp_path: Path) -> None:
    """A request list sends at most the count asked; the next ask goes on from there."""
    service = Service(make_schedd(tmp_path, {"alice": 3}))
    replies, _ = run(service, [header(), ask(2), ask(2), op(neg.END_NEGOTIATE)])
    assert [None if r is None else r.evaluate("ProcId") for r in requests(replies)] == [
        0,
        1,
        2,
        None,
    ]


def test_one_request_per_kind_with_its_count(tmp_path: Path) -> None:
    """Jobs the AutoClusterAttrs cannot tell apart are one request, the first job's ad with
    ResourceRequestCount (every idle job of the kind, whatever EpMatchCapacity an older
    negotiator sends), AutoClusterId and WantMatchDiagnostics; without AutoClusterAttrs every
    attribute tells jobs apart (each its own request of one)."""
    five = Service(make_schedd(tmp_path, {"alice": 5}))
    sent = []
    for extra in (
        {"AutoClusterAttrs": "Requirements,RequestMemory"},
        {"EpMatchCapacity": 2, "AutoClusterAttrs": "Requirements,RequestMemory"},
        {},
    ):
        replies, _ = run(five, [header(**extra), ask(100), op(neg.END_NEGOTIATE)])
        got = [r for r in requests(replies) if r is not None]
        sent.append([(r.evaluate("ProcId"), neg.request_count(r)) for r in got])
    assert sent == [[(0, 5)], [(0, 5)], [(p, 1) for p in range(5)]]
    [request] = [
        r for r in requests(run(five, [header(AutoClusterAttrs="Requirements"), ask(9)])[0]) if r
    ]
    assert type(request.evaluate(neg.AUTO_CLUSTER_ID)) is int
    assert request.evaluate(neg.WANT_MATCH_DIAGNOSTICS) == 2


def test_max_jobs_running_bounds_the_counts(tmp_path: Path) -> None:
    """The requests' counts add up to what MAX_JOBS_RUNNING leaves room for: the first
    kinds in the schedd's order get it, the rest are not sent."""
    schedd = make_schedd(tmp_path, {"alice": 4}, SCHEDD_CONFIG + "MAX_JOBS_RUNNING = 3\n")
    cluster = schedd.queue.next_cluster_id()
    other = ClassAd({"Owner": "alice", "JobStatus": 1, "QDate": 901, "JobPrio": 0})
    other["RequestMemory"] = 200
    other["Requirements"] = parse_expr("TARGET.Memory >= MY.RequestMemory")
    for job_id in schedd.queue.submit(cluster, other, [ClassAd({"ProcId": 0})]):
        schedd.now_idle(job_id)
    replies, _ = run(Service(schedd), [header(AutoClusterAttrs="RequestMemory"), ask(10)])
    got = [r for r in requests(replies) if r is not None]
    assert [(r.evaluate("ClusterId"), neg.request_count(r)) for r in got] == [(1, 3)]


def test_the_matches_of_a_request_go_to_its_jobs_in_the_schedds_order(tmp_path: Path) -> None:
    """Each match naming a request goes to the request's next job, highest JobPrio first; a
    match beyond the request's jobs is dropped and logged; rejections are heard."""
    schedd = make_schedd(tmp_path, {"alice": 3})
    schedd.queue.set_attributes(JobId(1, 2), {"JobPrio": 5}, NOW)
    service = Service(schedd)
    rejection = Writer().put_int(neg.REJECTED_WITH_REASON).put_string("no match found |0|1.2|")
    replies, result = run(
        service,
        [
            header(AutoClusterAttrs="Requirements,RequestMemory"),
            ask(10),
            permission(1, 2, 1),
            permission(1, 2, 2),
            permission(1, 2, 3),
            permission(1, 2, 4),
            rejection.bytes(),
            op(neg.END_NEGOTIATE),
        ],
    )
    assert result is True
    [request, end] = requests(replies)
    assert end is None and request is not None
    assert (request.evaluate("ProcId"), neg.request_count(request)) == (2, 3)
    [taken] = service.taken
    assert [(m.job_id, m.slot_name) for m in taken] == [
        ("1.2", "slot1@exec.example.org"),
        ("1.0", "slot2@exec.example.org"),
        ("1.1", "slot3@exec.example.org"),
    ]
    assert taken[1].job.evaluate("ProcId") == 0


def test_matches_the_schedd_must_not_take_are_dropped(tmp_path: Path) -> None:
    """A match naming no job, a job not in the queue or another submitter's job is not
    taken; the others of the round are."""
    schedd = make_schedd(tmp_path, {"alice": 1, "bob": 1})
    service = Service(schedd)
    no_job = Writer().put_int(neg.PERMISSION_AND_AD).put_string("null")
    no_job.put_classad(slots(1)[0])
    _, result = run(
        service,
        [
            header(),
            no_job.bytes(),
            permission(9, 9),  # no such job
            permission(2, 0),  # bob's
            permission(1, 0, 2, EpMatchReason="priority", EpPreempts="a b"),
            op(neg.END_NEGOTIATE),
        ],
    )
    assert result is True
    [taken] = service.taken
    assert [(m.job_id, m.reason, m.preempts) for m in taken] == [("1.0", "priority", ("a", "b"))]


def test_a_negotiator_that_breaks_off_gets_nothing_taken(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    """A round whose connection ends before END_NEGOTIATE takes none of its matches, and
    the log says how many were not taken."""
    service = Service(make_schedd(tmp_path, {"alice": 1}))
    _, result = run(service, [header(), ask(5), permission(1, 0)])
    assert isinstance(result, Refused)
    assert service.taken == []
    assert "1 matches not taken" in caplog.text


@pytest.mark.parametrize(
    "message",
    [
        op(999),
        op(neg.PERMISSION),
        Writer().put_int(neg.SEND_RESOURCE_REQUEST_LIST).put_int(0).bytes(),
        Writer().put_int(neg.PERMISSION_AND_AD).put_string("null").bytes(),
        b"\x00\x01",
    ],
)
def test_a_malformed_operation_ends_the_round(tmp_path: Path, message: bytes) -> None:
    """An unknown operation, PERMISSION without its ad, an empty request list, a match
    without its ad or a message too short for a number end the round with CodecError;
    nothing is taken."""
    service = Service(make_schedd(tmp_path, {"alice": 1}))
    _, result = run(service, [header(), permission(1, 0), message, op(neg.END_NEGOTIATE)])
    assert isinstance(result, CodecError)
    assert service.taken == []


def test_a_header_without_a_submitter_is_refused(tmp_path: Path) -> None:
    """NEGOTIATE whose header names no Owner is refused before anything is offered."""
    service = Service(make_schedd(tmp_path, {"alice": 1}))
    replies, result = run(service, [header(None), ask(5)])
    assert isinstance(result, Refused) and replies == []


@pytest.mark.parametrize(
    ("knobs", "user", "allowed"),
    [
        ("", "condor", True),
        ("ALLOW_NEGOTIATOR_SCHEDD = condor@example.org\n", "condor", True),
        ("ALLOW_NEGOTIATOR_SCHEDD = condor@example.org\n", "mallory", False),
        ("ALLOW_NEGOTIATOR_SCHEDD = 10.0.0.0/8\n", "condor", False),
        ("DENY_NEGOTIATOR_SCHEDD = mallory@*\n", "mallory", False),
    ],
)
def test_allow_negotiator_schedd_decides_who_negotiates(
    tmp_path: Path, knobs: str, user: str, allowed: bool, caplog: pytest.LogCaptureFixture
) -> None:
    """ALLOW_NEGOTIATOR_SCHEDD / DENY_NEGOTIATOR_SCHEDD, when set, are the schedd's own list
    of negotiators (over ALLOW_NEGOTIATOR = *): one they leave out is refused and logged
    before it learns of any job."""
    service = Service(make_schedd(tmp_path, {"alice": 1}))
    replies, result = run(
        service, [header(), ask(5), op(neg.END_NEGOTIATE)], config=SCHEDD_CONFIG + knobs, user=user
    )
    if allowed:
        assert result is True and len(replies) == 2
    else:
        assert isinstance(result, Refused) and replies == []
        assert f"NEGOTIATE from {user}@example.org" in caplog.text


def test_the_slot_ads_of_matches_are_read_at_end_negotiate(tmp_path: Path) -> None:
    """A match's slot ad is read once the round ends, not as it comes (the negotiator's
    sending is not held by the decoding): the request list asked after a match without its
    ad is still answered, and the round then fails at END_NEGOTIATE with nothing taken."""
    service = Service(make_schedd(tmp_path, {"alice": 1}))
    no_ad = Writer().put_int(neg.PERMISSION_AND_AD).put_string("null").bytes()
    replies, result = run(service, [header(), no_ad, ask(5), op(neg.END_NEGOTIATE)])
    assert [None if r is None else r.evaluate("ProcId") for r in requests(replies)] == [0, None]
    assert isinstance(result, CodecError)
    assert service.taken == []


def test_a_match_skips_the_jobs_of_its_request_that_left_the_queue(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A request's job that left the queue after it was offered gets no match: the match
    goes to the request's next job still queued."""
    schedd = make_schedd(tmp_path, {"alice": 3})
    get, read_payload = schedd.queue.get, neg.read_payload
    gone: list[JobId] = []

    def leaving(job_id: JobId) -> ClassAd:
        if job_id in gone:
            raise QueueError(f"job {job_id} is not in the queue")
        return get(job_id)

    def reading(kind: int, reader: Reader) -> neg.Operation:
        if kind == neg.PERMISSION_AND_AD:  # the match is read: job 1.0 has left by now
            gone.append(JobId(1, 0))
        return read_payload(kind, reader)

    monkeypatch.setattr(schedd.queue, "get", leaving)
    monkeypatch.setattr(neg, "read_payload", reading)
    service = Service(schedd)
    messages = [header(AutoClusterAttrs="Requirements,RequestMemory"), ask(10)]
    _, result = run(service, [*messages, permission(1, 0), op(neg.END_NEGOTIATE)])
    assert result is True
    [taken] = service.taken
    assert [m.job_id for m in taken] == ["1.1"]
