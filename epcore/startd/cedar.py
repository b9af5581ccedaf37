"""The startd's CEDAR commands, as HTCondor's tools send them (condor_daemon_client/
dc_startd.cpp, htcondor2's Startd), carried out by the handlers the pool's local requests
use (:mod:`epcore.startd.requests`, on the startd's :class:`~epcore.interfaces.StartdLink`):

- DRAIN_JOBS: a request ad (HowFast 0/10/20 for graceful, quick, fast; CheckExpr,
  StartExpr, DrainReason, ResumeOnCompletion 0: nothing or 1: resume, the two carried out); the
  answer is an ad with Result, RequestID and, on failure, ErrorCode and ErrorString.
  CANCEL_DRAIN_JOBS: an ad (RequestID, ignored: a startd drains once at a time) and the
  same kind of answer.
- VACATE_ALL_CLAIMS / VACATE_ALL_FAST: no payload; VACATE_CLAIM / VACATE_CLAIM_FAST: the
  slot's name. HTCondor answers neither, so a failure is only logged.
- GET_HISTORY: htcondor2's ``Startd().history``: a query ad (Requirements, Projection as a
  list, NumJobMatches, Since); the answer is one message with the matching finished jobs,
  newest first, then an ad with ``Owner = 0`` and NumJobMatches (condor_history's ending).

- ALIVE and RELEASE_CLAIM (a schedd on its own claim, condor_startd.V6/command.cpp): the
  claim id as a string, DAEMON level. Knowing the claim id is what makes the caller the
  claim's owner, so an unknown id is refused and logged. RELEASE_CLAIM answers NOT_OK (0)
  then, and nothing when done. ALIVE is not answered for a claim the startd holds (as
  HTCondor's startd); for one it does not know it answers -1, the answer HTCondor's schedd
  gives a startd's ALIVE for a claim it does not know (receive_startd_alive; HTCondor's
  startd only closes the connection): the schedd then gives the claim up at once
  (:mod:`epcore.links.startd`) instead of waiting for the job's lease to run out.
- REQUEST_CLAIM, ACTIVATE_CLAIM, DEACTIVATE_CLAIM(_FORCIBLY): :mod:`epcore.startd.claim_commands`.

Every other command but GET_HISTORY needs ADMINISTRATOR (:mod:`epcore.net.commands`): the
handshake refused anyone else before a handler runs. Each action is logged with who asked.
"""

from __future__ import annotations

import logging
import time
from collections.abc import Callable, Generator, Iterable
from typing import Final

from epcore.classad import ClassAd, EvalContext, Expr
from epcore.errors import EpError
from epcore.interfaces import RELEASE_REMOVED, Requester, StartdLink
from epcore.net import commands
from epcore.net.commands import Command
from epcore.net.conversation import Step, send
from epcore.net.dispatch import CommandContext, Handler
from epcore.startd.claim_commands import claim_handlers
from epcore.startd.requests import HANDLERS
from epcore.state.claims import public_part

#: HowFast's values (htcondor2.DrainType) and the startd's names for them.
DRAIN_SPEEDS: Final = {0: "graceful", 10: "quick", 20: "fast"}
#: RELEASE_CLAIM's refusal (condor_commands.h NOT_OK).
NOT_OK: Final = 0
#: ALIVE's answer for a claim id the startd does not know (module docstring).
UNKNOWN_CLAIM: Final = -1
#: The one drain a startd has at a time; its request id.
REQUEST_ID: Final = "1"
#: Most history records one GET_HISTORY reads (the newest), so that a huge file cannot hold
#: the loop: condor_history's own default page is far smaller.
HISTORY_LIMIT: Final = 100_000


def _reply(ok: bool, error: str | None = None, code: int = 1) -> ClassAd:
    ad = ClassAd()
    ad["Result"] = ok
    if ok:
        ad["RequestID"] = REQUEST_ID
    else:
        ad["ErrorCode"] = code
        ad["ErrorString"] = error or "failed"
    return ad


def _local(
    startd: StartdLink, context: CommandContext, command: str, **arguments: object
) -> ClassAd:
    """Run the local request ``command``; its answer (EpError when it refuses)."""
    request = ClassAd()
    request["Command"] = command
    for name, value in arguments.items():
        if value is not None:
            request[name] = value
    # The handshake has authorized ADMINISTRATOR: the CEDAR peer stands where a
    # QUEUE_SUPER_USERS member stands on the local socket.
    requester = Requester(uid=-1, name=context.peer.name, super_user=True)
    return HANDLERS[command](startd, requester, request)


def _expr_text(ad: ClassAd, name: str) -> str | None:
    expr = ad.lookup(name)
    return None if expr is None else str(expr)


def _projection(query: ClassAd) -> list[str] | None:
    value = query.evaluate("Projection")
    if isinstance(value, list):
        names = [name for name in value if isinstance(name, str) and name]
    elif isinstance(value, str):
        names = value.replace(",", " ").split()
    else:
        names = []
    return names or None


def select_history(
    records: Iterable[ClassAd], query: ClassAd, now: float
) -> tuple[list[ClassAd], list[str] | None]:
    """The records (oldest first) a history query wants, newest first: those passing its
    Requirements, before the first (newest-first) that makes Since true, at most
    NumJobMatches (-1 or absent: all); and its projection."""
    context = EvalContext(now=now)
    requirements: Expr | None = query.lookup("Requirements")
    since: Expr | None = query.lookup("Since")
    limit = query.evaluate("NumJobMatches")
    wanted = limit if type(limit) is int and limit >= 0 else None
    found: list[ClassAd] = []
    for record in reversed(list(records)):
        if wanted is not None and len(found) >= wanted:
            break
        if since is not None and since.evaluate(record, context=context) is True:
            break
        if requirements is None or requirements.evaluate(record, context=context) is True:
            found.append(record)
    return found, _projection(query)


def cedar_handlers(
    startd: StartdLink,
    history: Callable[[], Iterable[ClassAd]],
    log: logging.Logger,
    clock: Callable[[], float] = time.time,
    claimed: Callable[[str, str], None] | None = None,
    reached: Callable[[str], None] | None = None,
    result_pending: Callable[[str], bool] | None = None,
) -> dict[Command, Handler]:
    """The startd's handlers by command (module docstring); ``history`` reads the finished
    jobs' records, oldest first; ``claimed`` hears each claim REQUEST_CLAIM made and the
    address of its schedd (where the claim's results go), ``reached`` the TCP address
    claims are made at (:func:`epcore.startd.claim_commands.claim_handlers`);
    ``result_pending`` tells whether a result of a claim is still on its way to its schedd
    (an ALIVE for such a claim, gone here, is not answered -1: the schedd would requeue a job
    whose result is coming)."""

    def who(context: CommandContext) -> str:
        return f"{context.peer.name} at {context.stream.peer_description}"

    def drain(context: CommandContext) -> Generator[Step, bytes | None, bool | None]:
        reader = yield from context.receive("the drain request")
        request = reader.get_classad("the drain request")
        reader.expect_end("the drain request")
        speed = request.evaluate("HowFast")
        how = DRAIN_SPEEDS.get(speed) if type(speed) is int else None
        completion = request.evaluate("ResumeOnCompletion")
        if how is None:
            reply = _reply(False, f"HowFast {speed!r} is not 0, 10 or 20")
        elif "ResumeOnCompletion" in request and completion not in (0, 1):
            # Doing nothing (0) or resuming service (1, condor_defrag's) when a drain
            # completes are carried out; exiting or restarting then are not, so they are
            # refused, not ignored.
            reply = _reply(
                False,
                f"ResumeOnCompletion {completion!r}: only 0 (nothing) and 1 (resume) are "
                "carried out here",
            )
        else:
            reason = request.evaluate("DrainReason")
            try:
                _local(
                    startd,
                    context,
                    "Drain",
                    How=how,
                    Check=_expr_text(request, "CheckExpr"),
                    Start=_expr_text(request, "StartExpr"),
                    Reason=reason if isinstance(reason, str) else None,
                    Resume=completion == 1,
                )
            except EpError as error:
                reply = _reply(False, str(error))
            else:
                reply = _reply(True)
        reason = request.evaluate("DrainReason")
        log.info(
            "DRAIN_JOBS (%s, reason %r) from %s: %s",
            how or speed,
            reason,
            who(context),
            "draining" if reply.evaluate("Result") else reply.evaluate("ErrorString"),
        )
        yield from send(context.stream.writer().put_classad(reply))
        return None

    def cancel_drain(context: CommandContext) -> Generator[Step, bytes | None, bool | None]:
        reader = yield from context.receive("the cancellation")
        reader.get_classad("the cancellation")
        reader.expect_end("the cancellation")
        try:
            _local(startd, context, "CancelDrain")
        except EpError as error:
            reply = _reply(False, str(error))
        else:
            reply = _reply(True)
        log.info("CANCEL_DRAIN_JOBS from %s", who(context))
        yield from send(context.stream.writer().put_classad(reply))
        return None

    def vacate(context: CommandContext) -> Generator[Step, bytes | None, bool | None]:
        number = context.peer.command
        fast = number in (commands.VACATE_ALL_FAST.number, commands.VACATE_CLAIM_FAST.number)
        slot: str | None = None
        if number in (commands.VACATE_CLAIM.number, commands.VACATE_CLAIM_FAST.number):
            reader = yield from context.receive("the slot's name")
            slot = reader.get_string("the slot's name")
        try:
            done = _local(startd, context, "Vacate", Slot=slot, Fast=fast).evaluate("Done")
        except EpError as error:
            # HTCondor sends no answer to a vacate: the log is where a refusal shows.
            log.warning(
                "%s of %s from %s failed: %s",
                commands.describe(number),
                slot or "every slot",
                who(context),
                error,
            )
        else:
            log.info(
                "%s from %s: vacated %s",
                commands.describe(number),
                who(context),
                ", ".join(map(str, done)) if isinstance(done, list) and done else "nothing",
            )
        return None

    def get_history(context: CommandContext) -> Generator[Step, bytes | None, bool | None]:
        reader = yield from context.receive("the history query")
        query = reader.get_classad("the history query")
        reader.expect_end("the history query")
        records = list(history())[-HISTORY_LIMIT:]
        found, projection = select_history(records, query, clock())
        writer = context.stream.writer()
        for record in found:
            writer.put_classad(record, projection=projection)
        end = ClassAd()
        end["Owner"] = 0
        end["NumJobMatches"] = len(found)
        end["MalformedAds"] = 0
        writer.put_classad(end)
        yield from send(writer)
        return None

    def claim_command(context: CommandContext) -> Generator[Step, bytes | None, bool | None]:
        name = commands.describe(context.peer.command)
        reader = yield from context.receive("the claim id")
        claim_id = reader.get_string("the claim id")
        release = context.peer.command == commands.RELEASE_CLAIM.number
        # epcore's schedd adds why it releases a removed job's claim; HTCondor's sends the id
        # alone (its shadow stops the job before).
        cause = reader.get_string("the release's cause") if release and not reader.at_end else ""
        reader.expect_end("the claim id")
        # The public part only: the whole id is the secret that proves ownership.
        public = public_part(claim_id)
        try:
            if release:
                startd.release(claim_id, removed=cause == RELEASE_REMOVED)
            else:
                startd.alive(claim_id)
        except EpError as error:
            if not release and result_pending is not None and result_pending(claim_id):
                # The claim ended with its job and the result is not yet delivered: no news,
                # as HTCondor's startd gives (the result, once applied, ends the claim).
                log.debug("ALIVE for claim %s: its result is on its way", public)
                return None
            # The link's reason may quote the id it did not know: never log a secret.
            reason = str(error).replace(claim_id, public)
            log.warning("%s for claim %s from %s refused: %s", name, public, who(context), reason)
            answer = NOT_OK if release else UNKNOWN_CLAIM
            yield from send(context.stream.writer().put_int(answer))
            return None
        log.log(
            logging.INFO if release else logging.DEBUG,
            "%s for claim %s from %s",
            name,
            public,
            who(context),
        )
        return None

    table: dict[Command, Handler] = {
        **claim_handlers(startd, log, claimed, reached),
        commands.ALIVE: claim_command,
        commands.RELEASE_CLAIM: claim_command,
        commands.DRAIN_JOBS: drain,
        commands.CANCEL_DRAIN_JOBS: cancel_drain,
        commands.GET_HISTORY: get_history,
    }
    for command in (
        commands.VACATE_ALL_CLAIMS,
        commands.VACATE_ALL_FAST,
        commands.VACATE_CLAIM,
        commands.VACATE_CLAIM_FAST,
    ):
        table[command] = vacate
    return table
