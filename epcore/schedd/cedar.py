"""The schedd's CEDAR commands, as HTCondor's clients send them, answered through the pool's
requests (the same handlers ``ep q``, ``ep submit``, ``ep rm`` reach over the pool's socket).

Who asks is the handshake's authenticated identity mapped to the local user of that name
(:func:`peer_requester`; the pool's own user and QUEUE_SUPER_USERS act on every job); the
schedd's rules about who may act on which job hold unchanged.

- QMGMT_WRITE_CMD / QMGMT_READ_CMD: the queue-management calls (:mod:`epcore.schedd.qmgmt`):
  submission and edits.
- QUERY_JOB_ADS / QUERY_JOB_ADS_WITH_AUTH: one request ad (Requirements, Projection as
  names separated by newlines, LimitResults, MyJobs); the answer is one message per job ad,
  then a last one with ``Owner = 0`` (the end), ErrorCode, and, MyType ``Summary``, the
  counts of the jobs by status.
- ACT_ON_JOBS: an ad (JobAction, ActionIds or ActionConstraint, the action's reason); the
  answer is the result ad (ActionResult, and ``result_total_<n>`` per outcome, or, when the
  client asks for AR_LONG, ``job_<cluster>_<proc>`` per job); when something
  can be done the client confirms with an integer and the schedd acts, then says OK.
- QUERY_SCHEDD_HISTORY: an ad (Requirements, Projection as a list, NumJobMatches, Since:
  the scan stops at the newest job it is true of); the
  answer is one message holding each ad of the history, newest first, then the end ad
  (``Owner = 0``, NumJobMatches, MalformedAds, ErrorCode).
- RESCHEDULE: a negotiation cycle soon.
- NEGOTIATE: a negotiator in another process negotiates for one submitter
  (:mod:`epcore.schedd.negotiation`; :func:`negotiator_handlers`).
- EP_JOB_RESULT (90001, epcore's own: outside HTCondor's command ranges, which have no such
  conversation; DAEMON level): a startd in another process hands over the result of a job
  that ran on a claim of this schedd: the claim id (a string), the result ad; the answer is
  an int (1: applied, or applied before; 0: refused, the startd drops it) and a string
  saying why (:mod:`epcore.schedd.results`; :func:`result_handlers`).
"""

from __future__ import annotations

import logging
import pwd
from collections.abc import Callable, Collection, Generator
from typing import Final

from epcore.classad import ClassAd
from epcore.config import Config
from epcore.interfaces import Requester
from epcore.net import commands
from epcore.net import qmgmt_protocol as qp
from epcore.net.commands import Command
from epcore.net.conversation import Refused, Step, send
from epcore.net.dispatch import CommandContext, Handler
from epcore.net.handshake import Peer
from epcore.schedd.negotiation import ScheddService, negotiation_handler
from epcore.schedd.qmgmt import QueueSession, Route, queue_conversation
from epcore.schedd.results import ResultReceiver

#: JobAction's numbers and the pool's request for each.
ACTIONS: Final = {
    qp.HOLD_JOBS: "Hold",
    qp.RELEASE_JOBS: "Release",
    qp.REMOVE_JOBS: "Remove",
    qp.REMOVE_X_JOBS: "Remove",
    qp.VACATE_JOBS: "VacateJobs",
    qp.VACATE_FAST_JOBS: "VacateJobs",
}
#: Where each action's reason travels in the request ad.
REASONS: Final = {"Hold": "HoldReason", "Release": "ReleaseReason", "Remove": "RemoveReason"}
#: JobStatus numbers and the summary's name for each.
_STATUS_NAMES: Final = {1: "Idle", 2: "Running", 3: "Removed", 4: "Completed", 5: "Held"}


def qualified_super_users(names: Collection[str], uid_domain: str) -> frozenset[str]:
    """QUEUE_SUPER_USERS as authenticated names: a bare name is that user of UID_DOMAIN,
    ``user@domain`` is itself (HTCondor's ContainsUserName with ASSUME_UID_DOMAIN); domains
    compared without case."""
    return frozenset(
        _folded(name if "@" in name else f"{name}@{uid_domain}") for name in names if name
    )


def _folded(fqu: str) -> str:
    user, _, domain = fqu.rpartition("@")
    return f"{user}@{domain.lower()}"


def peer_requester(peer: Peer, super_users: Collection[str]) -> Requester | None:
    """The local user an authenticated peer acts as (None when unauthenticated); a name
    with no local account acts with uid -1. A super user is an authenticated name
    ``super_users`` holds (:func:`qualified_super_users`), whatever its account: a token or
    CLAIMTOBE naming root, or root of another domain, is not one unless listed."""
    if peer.identity is None:
        return None
    name = peer.identity.user
    try:
        uid = pwd.getpwnam(name).pw_uid
    except KeyError:
        uid = -1
    return Requester(uid, name, _folded(peer.identity.fqu) in super_users)


def cedar_handlers(
    route: Route,
    super_users: Callable[[], Collection[str]],
    *,
    log: logging.Logger,
    clock: Callable[[], float],
) -> dict[Command, Handler]:
    """The schedd's handlers by command (module docstring); ``route`` answers the pool's
    requests, ``super_users`` names QUEUE_SUPER_USERS as configured now, qualified
    (:func:`qualified_super_users`)."""

    def requester(context: CommandContext) -> Requester | None:
        return peer_requester(context.peer, super_users())

    def anyone(context: CommandContext) -> Requester:
        return requester(context) or Requester(-1, "unauthenticated", False)

    def ask(who: Requester, command: str, **arguments: object) -> ClassAd:
        request = ClassAd({"Command": command})
        for name, value in arguments.items():
            if value is not None:
                request[name] = value
        return route(who, request)

    def qmgmt(context: CommandContext) -> Generator[Step, bytes | None, bool | None]:
        write = context.peer.command == commands.QMGMT_WRITE_CMD.number
        session = QueueSession(
            route,
            requester(context),
            write=write,
            log=log,
            clock=clock,
            peer=f"{context.peer.name} at {context.stream.peer_description}",
        )
        if context.first is not None and not context.first.at_end:
            # The first call came in the command's own message.
            reply, more = session.call(
                context.first.get_int32("the call's number"), context.first, context.stream
            )
            context.first = None
            if reply is not None:
                yield from send(reply)
            if not more:
                return None
        yield from queue_conversation(context.stream, session)
        return None

    def query(context: CommandContext) -> Generator[Step, bytes | None, bool | None]:
        reader = yield from context.receive("the query ad")
        ad = reader.get_classad("the query ad")
        requirements = ad.lookup("Requirements")
        constraint = "true" if requirements is None else str(requirements)
        mine = ad.evaluate("MyJobs")
        me = ad.evaluate("Me")
        if isinstance(mine, str) and isinstance(me, str) and mine.strip() != "true":
            constraint = f"({constraint}) && Owner == {_quoted(me)}"
        names = _names(ad.evaluate("Projection"))
        wanted = None if names is None else sorted(set(names) | {"JobStatus"})
        limit = ad.evaluate("LimitResults")
        reply = ask(anyone(context), "QueryJobs", Constraint=constraint, Projection=wanted)
        stream = context.stream
        if reply.evaluate("Ok") is not True:
            end = ClassAd({"Owner": 0, "ErrorCode": 1, "ErrorString": str(reply.evaluate("Error"))})
            yield from send(stream.writer().put_classad(end))
            return None
        jobs = _ads(reply)
        if type(limit) is int and limit >= 0:
            jobs = jobs[:limit]
        counts = dict.fromkeys(_STATUS_NAMES.values(), 0)
        summary_only = ad.evaluate("SummaryOnly") is True
        # SendServerTime: every ad says when it was sent, whatever the projection (as
        # HTCondor's PUT_CLASSAD_SERVER_TIME does).
        server_time = int(clock()) if ad.evaluate("SendServerTime") is True else None
        sent = None if names is None or server_time is None else [*names, "ServerTime"]
        for job in jobs:
            status = _STATUS_NAMES.get(job.evaluate("JobStatus"))  # type: ignore[arg-type]
            if status is not None:
                counts[status] += 1
            if summary_only:
                continue
            if server_time is not None:
                job["ServerTime"] = server_time
            yield from send(
                stream.writer().put_classad(job, projection=sent or names, private=False)
            )
        end = ClassAd({"Owner": 0, "ErrorCode": 0, "ServerTime": int(clock())})
        end["MyType"] = "Summary"
        end["Jobs"] = len(jobs)
        for name, count in counts.items():
            end[name] = count
        end["Suspended"] = 0
        yield from send(stream.writer().put_classad(end))
        return None

    def act(context: CommandContext) -> Generator[Step, bytes | None, bool | None]:
        reader = yield from context.receive("the action ad")
        ad = reader.get_classad("the action ad")
        who = requester(context)
        action = ad.evaluate("JobAction")
        command = ACTIONS.get(action) if isinstance(action, int) else None
        ids_text = ad.evaluate("ActionIds")
        ids = (
            [part.strip() for part in ids_text.split(",") if part.strip()]
            if isinstance(ids_text, str)
            else None
        )
        constraint_expr = ad.lookup("ActionConstraint")
        constraint = None if constraint_expr is None else str(constraint_expr)
        reason_attribute = REASONS.get(command or "")
        reason = ad.evaluate(reason_attribute) if reason_attribute else None
        totals = dict.fromkeys(range(7), 0)
        long_form = ad.evaluate("ActionResultType") == qp.AR_LONG
        result = ClassAd({"ActionResultType": qp.AR_LONG if long_form else qp.AR_TOTALS})
        if command is None or who is None or (ids is None and constraint is None):
            why = "not authenticated" if who is None else f"unknown action {action!r}"
            log.warning("ACT_ON_JOBS from %s refused: %s", context.peer.name, why)
            totals[qp.AR_PERMISSION_DENIED if who is None else qp.AR_BAD_STATUS] = len(ids or [])
            yield from send(context.stream.writer().put_classad(_results(result, totals, 0)))
            return None
        arguments: dict[str, object] = {"JobIds": ids, "Constraint": constraint}
        if isinstance(reason, str) and reason:
            arguments["Reason"] = reason
        dry = ask(who, command, DryRun=True, **arguments)
        done = _texts(dry, "Done")
        refused = _texts(dry, "Refused")
        totals[qp.AR_SUCCESS] = len(done)
        for job_id in done:
            _record(result, job_id, qp.AR_SUCCESS, long_form)
        for line in refused:
            outcome = _outcome(line)
            totals[outcome] += 1
            _record(result, line.split(":")[0], outcome, long_form)
            if "not owned by" in line:
                log.warning(
                    "ACT_ON_JOBS (%s) from %s at %s refused for %s",
                    command,
                    context.peer.name,
                    context.stream.peer_description,
                    line,
                )
        if ids is not None:
            seen = {line.split(":")[0] for line in refused} | set(done)
            for job_id in ids:
                if "." in job_id and job_id not in seen:
                    totals[qp.AR_NOT_FOUND] += 1
                    _record(result, job_id, qp.AR_NOT_FOUND, long_form)
        if dry.evaluate("Ok") is not True or not done:
            yield from send(context.stream.writer().put_classad(_results(result, totals, 0)))
            return None
        yield from send(context.stream.writer().put_classad(_results(result, totals, qp.OK)))
        try:
            confirmation = yield from context.receive("the client's confirmation")
        except Refused:
            # A client that went away before confirming wants nothing done (HTCondor's
            # schedd aborts the action's transaction then).
            log.info("ACT_ON_JOBS from %s: no confirmation; nothing done", context.peer.name)
            return None
        if confirmation.get_int("the client's confirmation") != qp.OK:
            return None
        ask(who, command, JobIds=done, Reason=arguments.get("Reason"))
        yield from send(context.stream.writer().put_int(qp.OK))
        return None

    def history(context: CommandContext) -> Generator[Step, bytes | None, bool | None]:
        reader = yield from context.receive("the history request")
        ad = reader.get_classad("the history request")
        requirements = ad.lookup("Requirements")
        since = ad.lookup("Since")
        limit = ad.evaluate("NumJobMatches")
        names = _names(ad.evaluate("Projection"))
        source = ad.evaluate("HistoryRecordSource")
        writer = context.stream.writer()
        if isinstance(source, str) and source.upper() != "SCHEDD":
            end = ClassAd({"Owner": 0, "ErrorCode": 1, "ErrorString": f"no {source} history here"})
            yield from send(writer.put_classad(end))
            return None
        reply = ask(
            anyone(context),
            "QueryJobs",
            History=True,
            Constraint=None if requirements is None else str(requirements),
            Projection=names,
            Limit=limit if type(limit) is int and limit > 0 else None,
            Since=None if since is None else str(since),
        )
        if reply.evaluate("Ok") is not True:
            end = ClassAd({"Owner": 0, "ErrorCode": 1, "ErrorString": str(reply.evaluate("Error"))})
            yield from send(writer.put_classad(end))
            return None
        jobs = _ads(reply)
        for job in jobs:
            writer.put_classad(job, private=False)
        end = ClassAd({"Owner": 0, "NumJobMatches": len(jobs), "MalformedAds": 0, "ErrorCode": 0})
        yield from send(writer.put_classad(end))
        return None

    def reschedule(context: CommandContext) -> Generator[Step, bytes | None, bool | None]:
        ask(anyone(context), "Reschedule")
        return None
        yield

    return {
        commands.QMGMT_READ_CMD: qmgmt,
        commands.QMGMT_WRITE_CMD: qmgmt,
        commands.QUERY_JOB_ADS: query,
        commands.QUERY_JOB_ADS_WITH_AUTH: query,
        commands.ACT_ON_JOBS: act,
        commands.QUERY_SCHEDD_HISTORY: history,
        commands.RESCHEDULE: reschedule,
    }


def negotiator_handlers(
    service: ScheddService,
    config: Callable[[], Config],
    *,
    log: logging.Logger,
    clock: Callable[[], float],
) -> dict[Command, Handler]:
    """NEGOTIATE for the schedd ``service``: its jobs for a negotiator in another process,
    and that negotiator's matches (:mod:`epcore.schedd.negotiation`)."""
    return {commands.NEGOTIATE: negotiation_handler(service, config, log=log, clock=clock)}


def result_handlers(
    receiver: ResultReceiver, *, log: logging.Logger, clock: Callable[[], float]
) -> dict[Command, Handler]:
    """EP_JOB_RESULT (module docstring), answered by ``receiver``."""

    def job_result(context: CommandContext) -> Generator[Step, bytes | None, bool | None]:
        reader = yield from context.receive("the job's result")
        claim_id = reader.get_string("the claim id")
        result = reader.get_classad("the result ad")
        reader.expect_end("the job's result")
        acknowledged, why = receiver.receive(claim_id, result, clock())
        job_id = f"{result.evaluate('ClusterId')}.{result.evaluate('ProcId')}"
        where = f"{context.peer.name} at {context.stream.peer_description}"
        if acknowledged:
            log.info("result of job %s from %s: %s", job_id, where, why)
        else:
            log.warning("result of job %s from %s refused: %s", job_id, where, why)
        yield from send(context.stream.writer().put_int(int(acknowledged)).put_string(why))
        return None

    return {commands.EP_JOB_RESULT: job_result}


def _outcome(refusal: str) -> int:
    """ACT_ON_JOBS' outcome for one of the pool's refusals (``<id>: <why>``)."""
    if "not owned by" in refusal:
        return qp.AR_PERMISSION_DENIED
    if "already" in refusal:
        return qp.AR_ALREADY_DONE
    return qp.AR_BAD_STATUS


def _record(result: ClassAd, job_id: str, outcome: int, long_form: bool) -> None:
    """One job's outcome, in the per-job (AR_LONG) form: ``job_<cluster>_<proc>``."""
    cluster, _, proc = job_id.partition(".")
    if long_form and cluster.isdigit() and proc.isdigit():
        result[f"job_{cluster}_{proc}"] = outcome


def _results(result: ClassAd, totals: dict[int, int], outcome: int) -> ClassAd:
    ad = result.copy()
    ad["ActionResult"] = outcome
    if ad.evaluate("ActionResultType") == qp.AR_TOTALS:
        for number, count in totals.items():
            ad[f"result_total_{number}"] = count
    ad["TotalJobAds"] = sum(totals.values())
    return ad


def _names(projection: object) -> list[str] | None:
    """A projection as names: HTCondor sends a string (newline, comma or space separated) or
    a list of strings; nothing, or nothing in it, means every attribute."""
    if isinstance(projection, str):
        names = projection.replace(",", " ").split()
    elif isinstance(projection, list):
        names = [name for name in projection if isinstance(name, str) and name]
    else:
        return None
    return names or None


def _ads(reply: ClassAd) -> list[ClassAd]:
    ads = reply.evaluate("Ads")
    return [ad for ad in ads if isinstance(ad, ClassAd)] if isinstance(ads, list) else []


def _texts(reply: ClassAd, name: str) -> list[str]:
    values = reply.evaluate(name)
    return [str(v) for v in values if isinstance(v, str)] if isinstance(values, list) else []


def _quoted(text: str) -> str:
    return '"' + text.replace("\\", "\\\\").replace('"', '\\"') + '"'
