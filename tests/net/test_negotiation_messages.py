"""The negotiation protocol's messages: HTCondor's numbers, what each operation carries, the
parser of what a schedd sends (fuzzed: it reads a request or raises CodecError, nothing
else), and the job a rejection names."""

from __future__ import annotations

import pytest
from hypothesis import given
from hypothesis import strategies as st

from epcore.classad import ClassAd
from epcore.net import commands
from epcore.net import negotiation as neg
from epcore.net.codec import CodecError, Reader, Writer


def test_the_numbers_are_htcondors() -> None:
    """condor_commands.h: NEGOTIATE 416 at NEGOTIATOR level, SEND_JOB_INFO 417, NO_MORE_JOBS
    418, JOB_INFO 419, END_NEGOTIATE 425, REJECTED 426, PERMISSION_AND_AD 472,
    REJECTED_WITH_REASON 476, SEND_RESOURCE_REQUEST_LIST 518."""
    assert (commands.NEGOTIATE.number, commands.NEGOTIATE.level) == (416, commands.NEGOTIATOR)
    assert (neg.SEND_JOB_INFO, neg.NO_MORE_JOBS, neg.JOB_INFO) == (417, 418, 419)
    assert (neg.END_NEGOTIATE, neg.REJECTED, neg.PERMISSION_AND_AD) == (425, 426, 472)
    assert (neg.REJECTED_WITH_REASON, neg.SEND_RESOURCE_REQUEST_LIST) == (476, 518)


def test_each_operation_reads_what_it_carries() -> None:
    """A request list its count, a match its claim ids and slot ad, a rejection its reason
    and (when sent) its diagnostics ad; the bare ones nothing."""
    slot = ClassAd({"Name": "slot1@h", neg.REQUEST_CLUSTER: 3, neg.REQUEST_PROC: 1})
    match = neg.read_operation(
        Reader(
            Writer().put_int(neg.PERMISSION_AND_AD).put_string("c1 c2").put_classad(slot).bytes()
        )
    )
    assert match.claim_ids == "c1 c2" and match.ad is not None and dict(match.ad) == dict(slot)
    listed = neg.read_operation(Reader(Writer().put_int(518).put_int(200).bytes()))
    assert listed.count == 200
    bare = neg.read_operation(
        Reader(Writer().put_int(neg.REJECTED_WITH_REASON).put_string("x").bytes())
    )
    assert bare.reason == "x" and bare.ad is None
    for kind in (neg.SEND_JOB_INFO, neg.REJECTED, neg.END_NEGOTIATE):
        assert neg.read_operation(Reader(Writer().put_int(kind).bytes())).kind == kind


def test_a_request_round_trips_and_the_end_is_none() -> None:
    """JOB_INFO with a job's ad reads back as the ad; NO_MORE_JOBS as None."""
    job = ClassAd({"ClusterId": 4, "ProcId": 2, "Owner": "alice"})
    read = neg.read_request(Reader(neg.write_request(Writer(), job).bytes()))
    assert read is not None and dict(read) == dict(job)
    assert neg.read_request(Reader(neg.write_request(Writer(), None).bytes())) is None


@pytest.mark.parametrize(
    ("reason", "expected"),
    [
        ("no match found |12|7.3|", ("no match found", "7.3")),
        ("insufficient priority", ("insufficient priority", None)),
        ("odd |12|", ("odd", None)),
    ],
)
def test_a_rejection_names_its_job_when_htcondor_appends_it(
    reason: str, expected: tuple[str, str | None]
) -> None:
    """``reason |autocluster|cluster.proc|`` is the words and the job; without the tail,
    the words alone."""
    assert neg.rejection_reason(reason) == expected


def test_a_requests_count_is_its_resource_request_count_or_one() -> None:
    """ResourceRequestCount when it is a positive integer; 1 without it or otherwise (an
    older schedd's request stands for one job)."""
    counts = [
        neg.request_count(ClassAd(values))
        for values in ({neg.REQUEST_COUNT: 7}, {}, {neg.REQUEST_COUNT: 0}, {neg.REQUEST_COUNT: "3"})
    ]
    assert counts == [7, 1, 1, 1]


@pytest.mark.parametrize(
    ("want", "kind", "reason", "ad"),
    [
        (None, neg.REJECTED, None, False),
        (1, neg.REJECTED_WITH_REASON, "no match found", False),
        (2, neg.REJECTED_WITH_REASON, "no match found |4|12.3|", False),
        (3, neg.REJECTED_WITH_REASON, "no match found |4|12.3|", True),
    ],
)
def test_a_rejection_says_what_the_requests_match_diagnostics_ask(
    want: int | None, kind: int, reason: str | None, ad: bool
) -> None:
    """WantMatchDiagnostics (matchmaker.cpp): without it REJECTED alone; from 1 the reason,
    from 2 with ``|autocluster|cluster.proc|``, from 3 with the diagnostics ad; what the
    schedd's parser reads back."""
    request = ClassAd({"ClusterId": 12, "ProcId": 3, neg.AUTO_CLUSTER_ID: 4})
    if want is not None:
        request[neg.WANT_MATCH_DIAGNOSTICS] = want
    writer = neg.write_rejection(Writer(), request, "no match found")
    operation = neg.read_operation(Reader(writer.bytes()))
    assert operation.kind == kind
    assert (operation.reason or None) == reason
    assert (operation.ad is not None) == ad
    if operation.ad is not None:
        assert operation.ad.evaluate("JobId") == "12.3"
    if reason is not None and want == 2:
        assert neg.rejection_reason(reason) == ("no match found", "12.3")


def test_the_match_capacity_counts_slots_and_their_cpus() -> None:
    """One per slot ad and one per CPU, at least one."""
    slots = [ClassAd({"Cpus": 4}), ClassAd({"Cpus": 1}), ClassAd({"Cpus": True})]
    assert neg.match_capacity(slots) == 3 + 4 + 1
    assert neg.match_capacity([]) == 1


_GOOD = neg.write_request(Writer(), ClassAd({"ClusterId": 1, "ProcId": 0, "A": "x"})).bytes()


@given(
    st.one_of(
        st.binary(max_size=300),
        # A good request with bytes changed, cut or added: the likely faults of a peer.
        st.tuples(st.integers(0, len(_GOOD) - 1), st.binary(min_size=1, max_size=8)).map(
            lambda cut: _GOOD[: cut[0]] + cut[1] + _GOOD[cut[0] + len(cut[1]) :]
        ),
        st.integers(0, len(_GOOD)).map(lambda end: _GOOD[:end]),
        st.binary(max_size=20).map(lambda tail: _GOOD + tail),
    )
)
def test_the_parser_of_a_schedds_replies_reads_a_request_or_refuses(data: bytes) -> None:
    """Whatever a schedd sends, read_request returns a job's ad (ClusterId and ProcId
    integers), None for NO_MORE_JOBS, or raises CodecError: never another exception."""
    try:
        read = neg.read_request(Reader(data))
    except CodecError:
        return
    if read is not None:
        assert type(read.evaluate("ClusterId")) is int and type(read.evaluate("ProcId")) is int


@given(st.binary(max_size=300))
def test_the_parser_of_a_negotiators_operations_reads_one_or_refuses(data: bytes) -> None:
    """Whatever a negotiator sends, read_operation returns a known operation or raises
    CodecError."""
    try:
        operation = neg.read_operation(Reader(data))
    except CodecError:
        return
    assert operation.kind in neg.OPERATIONS
