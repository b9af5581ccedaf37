"""The negotiator's link to a schedd in another process against the schedd's NEGOTIATE
handler, over loopback CEDAR (handshake, AES-GCM): jobs out, matches back, and schedds that
are down, silent, closing or talking nonsense."""

from __future__ import annotations

import logging
import socket
import time
from collections.abc import Generator
from pathlib import Path

import pytest

from epcore.classad import ClassAd, parse_expr
from epcore.config import Config
from epcore.interfaces import Locator, Match, PeerUnreachable, Significance
from epcore.links.negotiate import (
    RemoteJobSource,
    as_jobs,
    offer_ad,
    remote_schedd_connector,
    unmatched,
)
from epcore.negotiator import Accountant
from epcore.negotiator.cycle import negotiate
from epcore.negotiator.service import NegotiatorService
from epcore.negotiator.settings import significance
from epcore.net import commands
from epcore.net import negotiation as neg
from epcore.net.conversation import Step, receive, send
from epcore.net.dispatch import CommandContext, Handler
from tests.links.negotiate_peers import (
    NEGOTIATOR_CONFIG,
    NOW,
    Service,
    make_schedd,
    negotiate_handler,
    serving,
    slots,
    submitter_ad,
)
from tests.negotiator.negotiator_helpers import config as negotiator_config

NOTHING = Significance((), ())
#: A negotiator that reads the ads' Requirements (its own expressions read nothing).
MATCHING = Significance((), ("requirements",))


def link(address: str, names: list[str], config: str = NEGOTIATOR_CONFIG) -> RemoteJobSource:
    parsed = Config.from_text(config, subsystem="NEGOTIATOR")
    ads = [submitter_ad(name, address) for name in names]
    return RemoteJobSource(
        address,
        lambda: ads,
        lambda: parsed,
        name="negotiator.example.org",
        log=logging.getLogger("test.negotiator"),
    )


def match(job: ClassAd, slot: ClassAd, submitter: str, **extra: object) -> Match:
    job_id = f"{job.evaluate('ClusterId')}.{job.evaluate('ProcId')}"
    return Match(submitter, job_id, job, str(slot.evaluate("Name")), slot, "no_preemption", **extra)  # type: ignore[arg-type]


def test_jobs_go_out_and_matches_come_back(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    """Each submitter's request (one per kind of job) reaches the negotiator's cycle as
    many times as its count asks, no more than the slots could take; the matches sent back
    name the request and reach the schedd's take_matches for the request's jobs in order,
    as the in-process negotiator would hand them over; a request matched less often than its
    count is rejected with the cycle's reason, and every round is closed."""
    caplog.set_level(logging.DEBUG, logger="test.schedd")
    schedd = make_schedd(tmp_path, {"alice": 5, "bob": 3})
    service = Service(schedd)
    with serving(negotiate_handler(service)) as listener:
        remote = link(listener.address, ["alice@example.org", "bob@example.org"])
        offered = listener.call(lambda: remote.negotiable_jobs(slots(2), NOTHING, NOW))
        assert [o.submitter for o in offered] == ["alice@example.org", "bob@example.org"]
        # Two one-core slots: at most 2 + 2 jobs of one kind (match_capacity).
        alice = offered[0].jobs
        assert len(alice) == 4 and all(j is alice[0] for j in alice)
        assert (alice[0].evaluate("ProcId"), neg.request_count(alice[0])) == (0, 5)
        assert remote.requested == 8  # what the requests stood for, not what the cycle sees
        assert set(remote.rounds) == {"alice@example.org", "bob@example.org"}
        pool = slots(2)
        sent = [
            match(alice[0], pool[0], "alice@example.org"),
            Match(
                "alice@example.org",
                "1.0",
                alice[1],
                "slot2@exec.example.org",
                pool[1],
                "rank",
                ("slot2@exec.example.org",),
                2.5,
            ),
        ]
        remote.note_rejections({"1.0": "insufficient priority", "2.0": "no match found"})
        listener.call(lambda: remote.take_matches(sent, NOW))
        assert remote.rounds == {}
        deadline = time.monotonic() + 5
        while len(service.taken) < 1 and time.monotonic() < deadline:
            time.sleep(0.01)
    [taken] = service.taken  # bob's round had no matches: nothing to take
    assert [(m.submitter, m.job_id, m.slot_name, m.reason) for m in taken] == [
        ("alice@example.org", "1.0", "slot1@exec.example.org", "no_preemption"),
        ("alice@example.org", "1.1", "slot2@exec.example.org", "rank"),
    ]
    assert taken[1].preempts == ("slot2@exec.example.org",) and taken[1].weight == 2.5
    assert dict(taken[1].slot) == dict(pool[1])  # the protocol's attributes taken out
    assert taken[0].job.evaluate("Owner") == "alice"
    assert service.cycles == 2
    assert "request 1.0 (3 jobs without a match): insufficient priority" in caplog.text
    assert "request 2.0 (3 jobs without a match): no match found" in caplog.text


def test_a_submitter_without_jobs_ends_its_round_at_once(tmp_path: Path) -> None:
    """A submitter whose schedd has no idle job for it gets NO_MORE_JOBS, and its round is
    ended (END_NEGOTIATE) and closed in the first half of the cycle."""
    schedd = make_schedd(tmp_path, {"alice": 1})
    with serving(negotiate_handler(Service(schedd))) as listener:
        remote = link(listener.address, ["carol@example.org"])
        assert listener.call(lambda: remote.negotiable_jobs(slots(1), NOTHING, NOW)) == []
        assert remote.rounds == {}


def _offered_with_a_red_job(directory: Path, pool: list[ClassAd]) -> int:
    """How many jobs a schedd with three plain jobs and a red one offers for ``pool``."""
    directory.mkdir()
    schedd = make_schedd(directory, {"alice": 3})
    common = schedd.queue.get(schedd.idle_ids()[0]).copy()
    common["Color"] = "red"
    cluster = schedd.queue.next_cluster_id()
    [red] = schedd.queue.submit(cluster, common, [ClassAd({"ProcId": 0})])
    schedd.now_idle(red)
    with serving(negotiate_handler(Service(schedd))) as listener:
        remote = link(listener.address, ["alice@example.org"])
        [offered] = listener.call(lambda: remote.negotiable_jobs(pool, MATCHING, NOW))
        listener.call(lambda: remote.take_matches([], NOW))
    return len(offered.jobs)


def test_the_header_tells_the_schedd_what_the_slots_read(tmp_path: Path) -> None:
    """The header names the job attributes the slots' expressions read (AutoClusterAttrs)
    and the capacity; the schedd tells its jobs apart by them: a job that differs in an
    attribute the slots read is a kind of its own (2 + 1 offered for capacity 2), one whose
    difference no slot reads is not (2 offered)."""
    reading = slots(1)
    reading[0]["Requirements"] = parse_expr('TARGET.Color =!= "blue"')
    assert _offered_with_a_red_job(tmp_path / "reads", reading) == 3
    assert _offered_with_a_red_job(tmp_path / "blind", slots(1)) == 2


def test_a_schedd_that_is_down_fails_fast_and_names_itself() -> None:
    """A schedd whose port refuses connections costs the cycle no wait: PeerUnreachable
    names its address."""
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        port = probe.getsockname()[1]
    remote = link(f"<127.0.0.1:{port}>", ["alice@example.org"])
    started = time.monotonic()
    with pytest.raises(PeerUnreachable, match=f"127.0.0.1:{port}"):
        remote.negotiable_jobs(slots(1), NOTHING, NOW)
    assert time.monotonic() - started < 2
    assert remote.rounds == {}


def _silent(context: CommandContext) -> Generator[Step, bytes | None, bool | None]:
    """Reads the header and the first ask, then never answers."""
    yield from context.receive("the header")
    while True:
        yield from receive(context.stream, "anything")


def test_a_silent_schedd_costs_at_most_negotiator_timeout() -> None:
    """A schedd that takes the command but never answers is given up after
    NEGOTIATOR_TIMEOUT; the link raises PeerUnreachable saying it timed out."""
    with serving({commands.NEGOTIATE: _silent}) as listener:
        remote = link(
            listener.address,
            ["alice@example.org"],
            NEGOTIATOR_CONFIG + "NEGOTIATOR_TIMEOUT = 0.5\n",
        )
        started = time.monotonic()
        with pytest.raises(PeerUnreachable, match="timed out"):
            listener.call(lambda: remote.negotiable_jobs(slots(1), NOTHING, NOW))
        assert 0.4 < time.monotonic() - started < 3
        assert remote.rounds == {}


def _one_then(reply: bytes | None) -> Handler:
    """A schedd that answers the first ask with one good job, then ``reply`` (None: closes
    the connection)."""

    def handler(context: CommandContext) -> Generator[Step, bytes | None, bool | None]:
        yield from context.receive("the header")
        yield from receive(context.stream, "the ask")
        job = ClassAd({"ClusterId": 1, "ProcId": 0, "Owner": "alice"})
        yield from send(neg.write_request(context.stream.writer(), job))
        if reply is not None:
            yield from send(context.stream.writer().put_bytes(reply))
        return None

    return handler


@pytest.mark.parametrize(
    ("reply", "words"),
    [
        (None, "closed"),
        ((999).to_bytes(8, "big"), "replied 999"),
        (neg.JOB_INFO.to_bytes(8, "big") + b"\x00\x01", "request"),
        (neg.JOB_INFO.to_bytes(8, "big") + (0).to_bytes(8, "big") + b"\0\0", "ClusterId"),
    ],
)
def test_a_schedd_that_breaks_off_or_talks_nonsense_is_named(
    reply: bytes | None, words: str
) -> None:
    """A schedd that closes mid-conversation, answers with an unknown number, a truncated
    ad or a request that is no job: PeerUnreachable names the schedd and the fault, and no
    round stays open."""
    with serving({commands.NEGOTIATE: _one_then(reply)}) as listener:
        remote = link(listener.address, ["alice@example.org"])
        with pytest.raises(PeerUnreachable, match=words) as raised:
            listener.call(lambda: remote.negotiable_jobs(slots(1), NOTHING, NOW))
        assert listener.address in str(raised.value)
        assert remote.rounds == {}


def test_a_schedd_that_goes_away_before_its_matches_is_named(tmp_path: Path) -> None:
    """When the schedd's connection is gone by the time its matches are sent, take_matches
    raises PeerUnreachable (its slots stay unclaimed) and closes the rounds."""
    schedd = make_schedd(tmp_path, {"alice": 1})
    with serving(negotiate_handler(Service(schedd))) as listener:
        remote = link(listener.address, ["alice@example.org"])
        [offered] = listener.call(lambda: remote.negotiable_jobs(slots(1), NOTHING, NOW))
        round_ = remote.rounds["alice@example.org"]
        round_.sock.shutdown(socket.SHUT_RDWR)
        with pytest.raises(PeerUnreachable, match="sending its matches"):
            listener.call(
                lambda: remote.take_matches(
                    [match(offered.jobs[0], slots(1)[0], "alice@example.org")], NOW
                )
            )
        assert remote.rounds == {}


def test_rounds_a_cycle_left_open_end_at_the_next_cycle(tmp_path: Path) -> None:
    """A cycle that failed between its halves leaves rounds open; the next cycle_started
    ends and closes them (the schedd takes nothing)."""
    schedd = make_schedd(tmp_path, {"alice": 1})
    service = Service(schedd)
    with serving(negotiate_handler(service)) as listener:
        remote = link(listener.address, ["alice@example.org"])
        listener.call(lambda: remote.negotiable_jobs(slots(1), NOTHING, NOW))
        assert remote.rounds
        listener.call(remote.cycle_started)
        assert remote.rounds == {}
    assert service.taken == []


def test_the_connector_refuses_an_address_that_is_none() -> None:
    """The Locator's connect for remote schedds raises PeerUnreachable for a ScheddIpAddr
    that is not a sinful string, and makes a link for one that is."""

    class Ads:
        def query(self, *args: object, **kwargs: object) -> list[ClassAd]:
            return [submitter_ad("alice@example.org", "<127.0.0.1:1>")]

    config = Config.from_text(NEGOTIATOR_CONFIG, subsystem="NEGOTIATOR")
    connect = remote_schedd_connector(
        Ads(), lambda: config, name="n", log=logging.getLogger("t"), clock=lambda: NOW
    )
    with pytest.raises(PeerUnreachable, match="not an address"):
        connect("<unix:/tmp/nowhere")
    made = connect("<127.0.0.1:1>")
    assert [ad.evaluate("Name") for ad in made.submitters()] == ["alice@example.org"]


def test_the_offer_ad_names_the_request_and_keeps_the_claim_id_out() -> None:
    """The slot ad of PERMISSION_AND_AD carries ResourceRequestCluster/Proc and epcore's
    match attributes, never the slot's ClaimId (that travels as the claim id)."""
    slot = slots(1)[0]
    slot["ClaimId"] = "<secret>#1#2"
    job = ClassAd({"ClusterId": 7, "ProcId": 3})
    offer = offer_ad(match(job, slot, "alice@example.org"))
    assert offer.evaluate(neg.REQUEST_CLUSTER) == 7 and offer.evaluate(neg.REQUEST_PROC) == 3
    assert offer.evaluate(neg.MATCH_REASON) == "no_preemption"
    assert "ClaimId" not in offer and "ClaimId" in slot


def request_ad(proc: int, count: int | None, cpus: object = 1) -> ClassAd:
    ad = ClassAd({"ClusterId": 7, "ProcId": proc, "RequestCpus": cpus})
    if count is not None:
        ad[neg.REQUEST_COUNT] = count
    return ad


def test_a_request_is_as_many_jobs_as_its_count_within_the_capacity() -> None:
    """A request is its count's jobs (one without a count, or with counts off), at most the
    capacity for jobs of a CPU or more and uncut for jobs of less."""
    big, small, old = request_ad(0, 5), request_ad(1, 5, 0.5), request_ad(2, None)
    counted = [int(str(j.evaluate("ProcId"))) for j in as_jobs([big, small, old], 3)]
    assert counted == [0, 0, 0, 1, 1, 1, 1, 1, 2]
    assert len(as_jobs([big, small], 3, counts=False)) == 2


def test_a_request_matched_less_often_than_its_count_is_rejected() -> None:
    """Each request with fewer matches than its count gets one rejection, with the cycle's
    reason for its job or "no match found"; a request matched in full none."""
    full, part, none = request_ad(0, 2), request_ad(1, 3), request_ad(2, 1)
    slot = slots(1)[0]
    made = [match(full, slot, "a"), match(full, slot, "a"), match(part, slot, "a")]
    rejected = unmatched([full, part, none], made, {"7.1": "concurrency limit reached"})
    assert [(r.evaluate("ProcId"), why) for r, why in rejected] == [
        (1, "concurrency limit reached"),
        (2, "no match found"),
    ]


def test_a_cycle_over_the_wire_matches_the_jobs_the_in_process_one_does(tmp_path: Path) -> None:
    """Two submitters' jobs at a schedd in another process, one of them under a concurrency
    limit, on fewer slots than jobs: the whole cycle over NEGOTIATE (one request per kind)
    gives each submitter the jobs, in the schedd's order, that the same cycle with the
    schedd in-process gives (fair share and the limit hold alike)."""
    schedd = make_schedd(tmp_path, {"alice": 6})
    limited = ClassAd({"Owner": "bob", "JobStatus": 1, "QDate": 900, "JobPrio": 0})
    limited["RequestCpus"] = 1
    limited["RequestMemory"] = 100
    limited["ConcurrencyLimits"] = "lic"
    limited["Requirements"] = parse_expr("TARGET.Memory >= MY.RequestMemory")
    cluster = schedd.queue.next_cluster_id()
    for job_id in schedd.queue.submit(cluster, limited, [ClassAd({"ProcId": p}) for p in range(6)]):
        schedd.now_idle(job_id)
    settings = negotiator_config("LIC_LIMIT = 2\n")
    pool = [ClassAd({**dict(ad), "MyType": "Machine", "State": "Unclaimed"}) for ad in slots(7)]
    wanted = significance(settings, pool, NOW)
    here = negotiate(
        settings, Accountant.empty(settings), pool, schedd.negotiable_jobs(pool, wanted, NOW), NOW
    )
    expected = sorted((m.submitter, m.job_id) for m in here.matches)
    assert [job for who, job in expected if who.startswith("bob")] == ["2.0", "2.1"]
    service = Service(schedd)
    with serving(negotiate_handler(service)) as listener:
        remote = link(listener.address, ["alice@example.org", "bob@example.org"])
        negotiator = NegotiatorService(
            Accountant.empty(settings),
            config=lambda: settings,
            collector=FixedSlots(pool),  # type: ignore[arg-type]
            schedds=Locator("schedd", connect=lambda address: remote),
            accountant_file=str(tmp_path / "accountant"),
            ad_name="cm",
            log=logging.getLogger("test.negotiator"),
            clock=lambda: NOW,
            schedd_addresses=lambda: [listener.address],
        )
        listener.call(lambda: negotiator.negotiate(NOW))
        deadline = time.monotonic() + 5
        while len(service.taken) < 2 and time.monotonic() < deadline:
            listener.turn()
    assert sorted((m.submitter, m.job_id) for taken in service.taken for m in taken) == expected
    assert negotiator.last_cycle_stats.evaluate("LastNegotiationCycleNumIdleJobs0") == 12


class FixedSlots:
    """A collector link holding fixed slot ads."""

    def __init__(self, ads: list[ClassAd]) -> None:
        self.ads = ads

    def query(self, my_type, constraint=None, projection=None, *, now):  # type: ignore[no-untyped-def]
        return list(self.ads) if my_type == "Machine" else []

    def update(self, ads, now):  # type: ignore[no-untyped-def]
        pass
