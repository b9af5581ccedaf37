"""HTCondor's negotiation protocol between a negotiator and a schedd, as messages: shared by
the schedd's side (:mod:`epcore.schedd.negotiation`) and the negotiator's link
(:mod:`epcore.links.negotiate`). The numbers are condor_commands.h's; the conversation is
matchmaker.cpp's (the negotiator) and schedd_negotiate.cpp's (the schedd):

1. The negotiator starts NEGOTIATE (a NEGOTIATOR-level command) and sends the header ad:
   Owner (the submitter), SubmitterTag, AutoClusterAttrs (the job attributes the slots'
   expressions read), NegotiatorName, MatchCaps.
2. It asks for requests: SEND_RESOURCE_REQUEST_LIST with how many it wants (or
   SEND_JOB_INFO for one); the schedd answers each with JOB_INFO and the request's ad in
   one message, and NO_MORE_JOBS (alone) once it has none left.
3. For each match, PERMISSION_AND_AD, the claim ids (a string: the slot's claim id, then
   the preempted dynamic slots' ones, separated by spaces) and the slot ad, in which
   ResourceRequestCluster and ResourceRequestProc name the request it answers;
   REJECTED (alone) or REJECTED_WITH_REASON (the reason, optionally a diagnostic ad) for
   a request the negotiator gave up on.
4. END_NEGOTIATE ends the round; the connection may carry the next NEGOTIATE.

A request stands for many jobs, as HTCondor's schedd (8.3 and later) sends them: one per
autocluster (jobs the slots cannot tell apart), the ad of its first job in the schedd's order
with ResourceRequestCount, how many of them it asks slots for, and AutoClusterId. The
negotiator matches the request up to that many times, names it in each match's
ResourceRequestCluster/Proc, and sends one rejection for a request it did not match in full;
the schedd hands the slots matched for a request to that request's jobs in its order.

epcore adds, beside HTCondor's attributes, what its schedd needs to take a match as the
in-process :class:`~epcore.interfaces.Match` carries it (HTCondor's schedd ignores unknown
attributes): in the slot ad of a match, EpMatchReason, EpPreempts (the preempted slots'
names, separated by spaces) and EpMatchWeight.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Final

import attrs

from epcore.classad import ClassAd
from epcore.net.codec import CodecError, Reader, Writer

_SCHED_VERS: Final = 400
PERMISSION: Final = _SCHED_VERS + 7
SEND_JOB_INFO: Final = _SCHED_VERS + 17
NO_MORE_JOBS: Final = _SCHED_VERS + 18
JOB_INFO: Final = _SCHED_VERS + 19
END_NEGOTIATE: Final = _SCHED_VERS + 25
REJECTED: Final = _SCHED_VERS + 26
PERMISSION_AND_AD: Final = _SCHED_VERS + 72
REJECTED_WITH_REASON: Final = _SCHED_VERS + 76
SEND_RESOURCE_REQUEST_LIST: Final = _SCHED_VERS + 118

#: The operations a negotiator sends inside a round, by number (for messages).
OPERATIONS: Final = {
    SEND_JOB_INFO: "SEND_JOB_INFO",
    SEND_RESOURCE_REQUEST_LIST: "SEND_RESOURCE_REQUEST_LIST",
    PERMISSION_AND_AD: "PERMISSION_AND_AD",
    REJECTED: "REJECTED",
    REJECTED_WITH_REASON: "REJECTED_WITH_REASON",
    END_NEGOTIATE: "END_NEGOTIATE",
}

# The attributes (HTCondor's, then epcore's own: see the module docstring).
OWNER: Final = "Owner"
SUBMITTER_TAG: Final = "SubmitterTag"
AUTO_CLUSTER_ATTRS: Final = "AutoClusterAttrs"
AUTO_CLUSTER_ID: Final = "AutoClusterId"
NEGOTIATOR_NAME: Final = "NegotiatorName"
REQUEST_CLUSTER: Final = "ResourceRequestCluster"
REQUEST_PROC: Final = "ResourceRequestProc"
REQUEST_COUNT: Final = "ResourceRequestCount"
WANT_MATCH_DIAGNOSTICS: Final = "WantMatchDiagnostics"
MATCH_REASON: Final = "EpMatchReason"
PREEMPTS: Final = "EpPreempts"
MATCH_WEIGHT: Final = "EpMatchWeight"
#: What the negotiator puts into the slot ad of a match (and the schedd takes out).
MATCH_ATTRIBUTES: Final = (REQUEST_CLUSTER, REQUEST_PROC, MATCH_REASON, PREEMPTS, MATCH_WEIGHT)
#: A request list's most requests in one answer (a bound for what a negotiator may ask).
MAX_REQUESTS: Final = 1_000_000


@attrs.frozen
class Operation:
    """One message of the negotiator inside a round: its ``kind`` (a number above) and what
    came with it (``count`` for a request list, ``reason`` and ``ad`` for a rejection,
    ``claim_ids`` and ``ad`` for a match)."""

    kind: int
    count: int = 1
    reason: str = ""
    claim_ids: str = ""
    ad: ClassAd | None = None


def match_capacity(slots: Sequence[ClassAd]) -> int:
    """More matches than one negotiation cycle can make on ``slots``: one per slot ad, plus
    one per CPU any of them has (a job asks for at least one CPU, so a partitionable slot
    takes at most that many jobs, and each other slot one)."""
    capacity = len(slots)
    for slot in slots:
        cpus = slot.evaluate("Cpus")
        if isinstance(cpus, int | float) and not isinstance(cpus, bool) and cpus > 0:
            capacity += int(cpus)
    return max(capacity, 1)


def request_count(request: ClassAd) -> int:
    """How many matches ``request`` asks for: its ResourceRequestCount, 1 when it has none
    or not a positive integer (a request of an older schedd stands for one job)."""
    count = request.evaluate(REQUEST_COUNT)
    return count if type(count) is int and count > 0 else 1


def write_rejection(writer: Writer, request: ClassAd, reason: str) -> Writer:
    """The negotiator's rejection of ``request`` for ``reason``, as its WantMatchDiagnostics
    asks (matchmaker.cpp): REJECTED alone without it; REJECTED_WITH_REASON with the reason
    from 1, followed by ``|autocluster|cluster.proc|`` from 2 and the diagnostics ad from 3."""
    want = request.evaluate(WANT_MATCH_DIAGNOSTICS)
    level = int(want) if isinstance(want, int) else 0  # a bool is an int: True is 1
    if level <= 0:
        return writer.put_int(REJECTED)
    autocluster = request.evaluate(AUTO_CLUSTER_ID)
    number = autocluster if type(autocluster) is int else -1
    job = f"{request.evaluate('ClusterId')}.{request.evaluate('ProcId')}"
    message = f"{reason} |{number}|{job}|" if level & 2 else reason
    writer.put_int(REJECTED_WITH_REASON).put_string(message)
    if level > 2:
        diagnostics = ClassAd()
        diagnostics[AUTO_CLUSTER_ID] = number
        diagnostics["JobId"] = job
        diagnostics["Reason"] = reason
        writer.put_classad(diagnostics, private=False)
    return writer


def read_operation(reader: Reader) -> Operation:
    """The negotiator's operation in ``reader`` (schedd_negotiate.cpp's readMsg);
    CodecError for an unknown one or a payload that is not what it should be."""
    return read_payload(reader.get_int("the negotiator's operation"), reader)


def read_payload(kind: int, reader: Reader) -> Operation:
    """The operation ``kind`` with what it carries, read from ``reader`` (past the number:
    a schedd may read a match's slot ad later than its number); as :func:`read_operation`."""
    if kind == SEND_RESOURCE_REQUEST_LIST:
        count = reader.get_int("the number of requests wanted")
        if not 0 < count <= MAX_REQUESTS:
            raise CodecError(f"SEND_RESOURCE_REQUEST_LIST: {count} requests is out of range")
        return Operation(kind, count=count)
    if kind == PERMISSION_AND_AD:
        claim_ids = reader.get_string("the match's claim id")
        ad = reader.get_classad("the match's slot ad")
        return Operation(kind, claim_ids=claim_ids, ad=ad)
    if kind == REJECTED_WITH_REASON:
        reason = reader.get_string("the rejection's reason")
        # A 24.x negotiator may add its match diagnostics ad.
        diagnostics = None if reader.at_end else reader.get_classad("the rejection's ad")
        return Operation(kind, reason=reason, ad=diagnostics)
    if kind in (SEND_JOB_INFO, REJECTED, END_NEGOTIATE):
        return Operation(kind)
    if kind == PERMISSION:
        raise CodecError("PERMISSION without the slot ad (a negotiator older than 7.1.3)")
    raise CodecError(f"unknown negotiation operation {kind}")


def write_request(writer: Writer, request: ClassAd | None) -> Writer:
    """The schedd's answer to one asked request: JOB_INFO and the ad, or NO_MORE_JOBS."""
    if request is None:
        return writer.put_int(NO_MORE_JOBS)
    return writer.put_int(JOB_INFO).put_classad(request, private=False)


def read_request(reader: Reader) -> ClassAd | None:
    """A request the schedd sent (None: NO_MORE_JOBS); CodecError for anything else, or a
    request without ClusterId and ProcId integers."""
    reply = reader.get_int("the schedd's reply")
    if reply == NO_MORE_JOBS:
        reader.expect_end("NO_MORE_JOBS")
        return None
    if reply != JOB_INFO:
        raise CodecError(f"the schedd replied {reply}, not JOB_INFO or NO_MORE_JOBS")
    ad = reader.get_classad("the request's ad")
    reader.expect_end("the request")
    for name in ("ClusterId", "ProcId"):
        value = ad.evaluate(name)
        if type(value) is not int or value < 0:
            raise CodecError(f"a request whose {name} is {value!r}, not a job's number")
    return ad


def rejection_reason(reason: str) -> tuple[str, str | None]:
    """A rejection's words and the job it names: HTCondor's negotiator ends the reason
    with ``|autocluster|cluster.proc|`` when it answers a request list."""
    words, bar, rest = reason.partition("|")
    if not bar:
        return reason.strip(), None
    parts = rest.split("|")
    job = parts[1].strip() if len(parts) > 1 and parts[1].strip() else None
    return words.strip(), job
