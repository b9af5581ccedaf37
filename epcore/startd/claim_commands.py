"""A schedd's claim on a startd over CEDAR: REQUEST_CLAIM, ACTIVATE_CLAIM and
DEACTIVATE_CLAIM(_FORCIBLY), HTCondor's numbers (condor_commands.h) at DAEMON level, as
condor_startd.V6/command.cpp registers them; carried out on the startd's
:class:`~epcore.interfaces.StartdLink`. ALIVE and RELEASE_CLAIM are in
:mod:`epcore.startd.cedar`.

The layouts follow HTCondor's where epcore's startd works the same way:

- REQUEST_CLAIM (442): one message: a string, the job ad, the schedd's address (a string),
  the alive interval (an int, read and not used: the claim's lease comes from the job and
  the startd's configuration) and a count of claims to preempt (an int, which must be 0:
  epcore's startd picks what a priority claim preempts). HTCondor's first string is the
  claim id the negotiator took from the slot's private ad; epcore's startd makes a claim's
  id when it is claimed, so that string names the slot (``slot1`` or ``slot1@host``), and
  one more int follows (1: the claim is made by priority preemption; epcore's own). The
  answer is OK (1) and the new claim id, or NOT_OK (0) and the reason: both epcore's
  (HTCondor's schedd knows the id already and gets a bare NOT_OK).
- ACTIVATE_CLAIM (444): the claim id, an int (ignored, as HTCondor's startd does), the job
  ad (empty: the claim's own job); the answer is OK or NOT_OK (a bare int).
- DEACTIVATE_CLAIM (403), DEACTIVATE_CLAIM_FORCIBLY (404): the claim id; the answer is an ad
  with ``Start``. epcore's startd has no idle claim after a job was stopped, so the job is
  vacated (gracefully or fast) and the claim ends: ``Start = false``, which tells the schedd,
  as HTCondor's startd does when a claim is closing, that no RELEASE_CLAIM is needed. An
  unknown claim gets the same answer, as in HTCondor.
- EP_CLAIM_STATUS (65001, epcore's own: HTCondor's schedd learns the same from REQUEST_CLAIM's
  answer and the startd's ads): the claim id; the answer is the full name of the slot the
  claim holds or waits for (empty: none) and an int, 1 when the slot is Claimed/Idle (ready
  for a job). A remote schedd's :class:`~epcore.interfaces.StartdLink` asks it.

Each claim made is told, with the schedd's address, to ``claimed``: the startd's results go
there (:mod:`epcore.links.results`). Before a claim is made, ``reached`` hears the address
the schedd reached this startd at (the connection's local end): a claim id begins with it,
as HTCondor's begins with the startd's sinful, so that other hosts can reach the startd by
its claims (the startd's own address is its Unix socket).

The whole claim id (its secret after the last ``#``) is the proof that the caller holds the
claim: a wrong or unknown one acts on nothing. Logs name claims by their public part only.
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Generator
from typing import Final

from epcore.classad import ClassAd
from epcore.errors import EpError
from epcore.interfaces import StartdLink
from epcore.net import commands
from epcore.net.commands import Command
from epcore.net.conversation import Step, send
from epcore.net.dispatch import CommandContext, Handler
from epcore.net.sinful import Sinful
from epcore.state.claims import public_part

#: condor_commands.h's answers.
OK: Final = 1
NOT_OK: Final = 0


def _who(context: CommandContext) -> str:
    return f"{context.peer.name} at {context.stream.peer_description}"


def _hide(text: str, claim_id: str) -> str:
    """``text`` with ``claim_id`` named by its public part (a link's error may quote it)."""
    return text.replace(claim_id, public_part(claim_id)) if claim_id else text


def claim_handlers(
    startd: StartdLink,
    log: logging.Logger,
    claimed: Callable[[str, str], None] | None = None,
    reached: Callable[[str], None] | None = None,
) -> dict[Command, Handler]:
    """The handlers of the module docstring's commands, on ``startd``; ``claimed`` hears each
    new claim's id and its schedd's address, ``reached`` the address claims are made at."""

    def request_claim(context: CommandContext) -> Generator[Step, bytes | None, bool | None]:
        reader = yield from context.receive("the claim request")
        slot = reader.get_string("the slot's name")
        job = reader.get_classad("the job ad")
        client = reader.get_string("the schedd's address")
        reader.get_int("the alive interval")
        preempting = reader.get_int("the count of claims to preempt")
        by_priority = reader.get_int("the priority flag") == 1
        reader.expect_end("the claim request")
        writer = context.stream.writer()
        job_id = f"{job.evaluate('ClusterId')}.{job.evaluate('ProcId')}"
        try:
            if preempting:
                raise EpError("naming the claims to preempt is not supported")
            if reached is not None:
                reached(str(Sinful(*context.stream.local)))
            claim_id = startd.claim(slot, job, client, by_priority)
        except EpError as error:
            log.warning(
                "REQUEST_CLAIM of %s for job %s from %s refused: %s",
                slot,
                job_id,
                _who(context),
                error,
            )
            writer.put_int(NOT_OK).put_string(str(error))
        else:
            log.info(
                "REQUEST_CLAIM of %s for job %s from %s: claim %s",
                slot,
                job_id,
                _who(context),
                public_part(claim_id),
            )
            if claimed is not None:
                claimed(claim_id, client)
            writer.put_int(OK).put_string(claim_id)
        yield from send(writer)
        return None

    def activate_claim(context: CommandContext) -> Generator[Step, bytes | None, bool | None]:
        reader = yield from context.receive("the activation")
        claim_id = reader.get_string("the claim id")
        reader.get_int("the starter's kind")
        job = reader.get_classad("the job ad")
        reader.expect_end("the activation")
        public = public_part(claim_id)
        try:
            startd.activate(claim_id, job if len(job) else None)
        except EpError as error:
            log.warning(
                "ACTIVATE_CLAIM of claim %s from %s refused: %s",
                public,
                _who(context),
                _hide(str(error), claim_id),
            )
            answer = NOT_OK
        else:
            log.info("ACTIVATE_CLAIM of claim %s from %s", public, _who(context))
            answer = OK
        yield from send(context.stream.writer().put_int(answer))
        return None

    def deactivate_claim(context: CommandContext) -> Generator[Step, bytes | None, bool | None]:
        name = commands.describe(context.peer.command)
        fast = context.peer.command == commands.DEACTIVATE_CLAIM_FORCIBLY.number
        reader = yield from context.receive("the claim id")
        claim_id = reader.get_string("the claim id")
        reader.expect_end("the claim id")
        public = public_part(claim_id)
        # Only a slot's current claim: a preempting claim's id must not evict the job of
        # the claim it waits to replace.
        held = claim_id in {held_id for held_id, _ in startd.claims()}
        slot = startd.slot_of(claim_id) if held else None
        if slot is None:
            log.warning("%s of claim %s from %s: no such claim", name, public, _who(context))
        else:
            try:
                startd.vacate(slot, fast)
            except EpError as error:
                log.warning(
                    "%s of claim %s from %s failed: %s",
                    name,
                    public,
                    _who(context),
                    _hide(str(error), claim_id),
                )
            else:
                log.info("%s of claim %s on %s from %s", name, public, slot, _who(context))
        answer = ClassAd()
        answer["Start"] = False
        yield from send(context.stream.writer().put_classad(answer))
        return None

    def claim_status(context: CommandContext) -> Generator[Step, bytes | None, bool | None]:
        reader = yield from context.receive("the claim id")
        claim_id = reader.get_string("the claim id")
        reader.expect_end("the claim id")
        # The whole id answers, as it proves the claim is held: a guessed secret learns
        # nothing (both calls compare whole ids).
        slot = startd.slot_of(claim_id) or ""
        ready = 1 if slot and startd.claim_ready(claim_id) else 0
        yield from send(context.stream.writer().put_string(slot).put_int(ready))
        return None

    return {
        commands.EP_CLAIM_STATUS: claim_status,
        commands.REQUEST_CLAIM: request_claim,
        commands.ACTIVATE_CLAIM: activate_claim,
        commands.DEACTIVATE_CLAIM: deactivate_claim,
        commands.DEACTIVATE_CLAIM_FORCIBLY: deactivate_claim,
    }
