"""The negotiator's CEDAR commands, as condor_userprio and htcondor2's Negotiator send them
(condor_negotiator.V6/matchmaker.cpp), carried out by the handlers the pool's local requests
use (:mod:`epcore.negotiator.requests`), so that a change is logged and saved the same way.

- GET_PRIORITY / GET_PRIORITY_ROLLUP: no payload; the answer is one ad with a numbered set
  of attributes per accounting group and submitter (``Name1``, ``Priority1``,
  ``PriorityFactor1``, a group's ``EffectiveQuota1``...), NumSubmittors and LastUpdate, as
  the accountant's ReportState numbers it (:func:`epcore.negotiator.report.numbered_report`),
  sent without the ad's two type strings (PUT_CLASSAD_NO_TYPES) as HTCondor does; the
  rollup adds each group's subgroups' usage to it. GET_RESLIST: the submitter's name;
  the answer numbers the slots it holds now (``Name1``, ``StartTime1``...).
- SET_PRIORITYFACTOR, SET_PRIORITY, SET_ACCUMUSAGE: the submitter and a double;
  SET_CEILING, SET_FLOOR, SET_BEGINTIME, SET_LASTTIME: the submitter and an integer;
  RESET_USAGE, DELETE_USER: the submitter; RESET_ALL_USAGE: nothing. Only
  SET_PRIORITYFACTOR is answered (an ad with ErrorCode and, on failure, ErrorString), as
  HTCondor 8.9.9 and later answers it.
- RESCHEDULE (DAEMON, only where no schedd runs in the process: :func:`reschedule_handlers`):
  a schedd in another process asks for a cycle soon.

The changes need ADMINISTRATOR (:mod:`epcore.net.commands`); the handshake refused anyone
else. A change the accountant refuses (a factor below 1...) is logged with who asked.
"""

from __future__ import annotations

from collections.abc import Generator
from typing import TYPE_CHECKING

from epcore.classad import ClassAd
from epcore.errors import EpError
from epcore.interfaces import Requester
from epcore.negotiator.accountant import usage_principal
from epcore.negotiator.report import numbered_report, userprio_ads
from epcore.negotiator.requests import HANDLERS
from epcore.net import commands
from epcore.net.codec import Reader
from epcore.net.commands import Command
from epcore.net.conversation import Step, send
from epcore.net.dispatch import CommandContext, Handler

if TYPE_CHECKING:
    from epcore.negotiator.service import NegotiatorService

#: The local request each submitter-changing command is carried out as, and how its value
#: travels ("double", "int" or None).
_CHANGES: dict[int, tuple[str, str | None]] = {
    commands.SET_PRIORITYFACTOR.number: ("SetFactor", "double"),
    commands.SET_PRIORITY.number: ("SetPriority", "double"),
    commands.SET_ACCUMUSAGE.number: ("SetAccumulatedUsage", "double"),
    commands.SET_CEILING.number: ("SetCeiling", "int"),
    commands.SET_FLOOR.number: ("SetFloor", "int"),
    commands.SET_BEGINTIME.number: ("SetBeginUsageTime", "int"),
    commands.SET_LASTTIME.number: ("SetLastUsageTime", "int"),
    commands.RESET_USAGE.number: ("ResetUsage", None),
    commands.DELETE_USER.number: ("DeleteSubmitter", None),
}


def priority_report(service: NegotiatorService, *, rollup: bool = False) -> ClassAd:
    """The accountant as GET_PRIORITY's (``rollup``: GET_PRIORITY_ROLLUP's) numbered ad,
    built from the ads the local request answers with (``report.numbered_report``)."""
    accountant = service.accountant
    return numbered_report(
        userprio_ads(accountant, service.last_report),
        accountant.policy.groups,
        int(accountant.last_update or 0),
        rollup=rollup,
    )


def resource_report(service: NegotiatorService, submitter: str) -> ClassAd:
    """GET_RESLIST's ad: the slots ``submitter`` holds now, from the collector's ads."""
    report = ClassAd()
    uid_domain = service.accountant.policy.uid_domain
    slots = service.collector.query("Machine", now=service.clock())
    held = [slot for slot in slots if usage_principal(slot, uid_domain) == submitter]
    for number, slot in enumerate(sorted(held, key=lambda s: str(s.evaluate("Name"))), 1):
        report[f"Name{number}"] = str(slot.evaluate("Name"))
        started = slot.evaluate("EnteredCurrentState")
        report[f"StartTime{number}"] = started if type(started) is int else 0
    return report


def _requester(context: CommandContext) -> Requester:
    # The handshake has authorized the command's level (ADMINISTRATOR for every change):
    # the CEDAR peer stands where a QUEUE_SUPER_USERS member stands on the local socket.
    return Requester(uid=-1, name=context.peer.name, super_user=True)


def _value(reader: Reader, kind: str | None) -> float | int | None:
    if kind == "double":
        return reader.get_double("the value")
    if kind == "int":
        return reader.get_int("the value")
    return None


def cedar_handlers(service: NegotiatorService) -> dict[Command, Handler]:
    """The negotiator's handlers by command (module docstring)."""

    def get_priority(context: CommandContext) -> Generator[Step, bytes | None, bool | None]:
        rollup = context.peer.command == commands.GET_PRIORITY_ROLLUP.number
        report = priority_report(service, rollup=rollup)
        yield from send(context.stream.writer().put_classad(report, types=False))
        return None

    def get_reslist(context: CommandContext) -> Generator[Step, bytes | None, bool | None]:
        reader = yield from context.receive("the submitter")
        submitter = reader.get_string("the submitter")
        reader.expect_end("the submitter")
        report = resource_report(service, submitter)
        yield from send(context.stream.writer().put_classad(report, types=False))
        return None

    def change(context: CommandContext) -> Generator[Step, bytes | None, bool | None]:
        number = context.peer.command
        local, kind = _CHANGES[number]
        reader = yield from context.receive("the submitter")
        submitter = reader.get_string("the submitter")
        value = _value(reader, kind)
        reader.expect_end(f"{commands.describe(number)}'s payload")
        request = ClassAd()
        request["Command"] = local
        request["Submitter"] = submitter
        if value is not None:
            request["Value"] = value
        reply = _carry_out(service, context, local, request)
        if number == commands.SET_PRIORITYFACTOR.number:
            answer = ClassAd()
            error = reply.evaluate("Error")
            answer["ErrorCode"] = 0 if reply.evaluate("Ok") is True else 4
            if isinstance(error, str):
                answer["ErrorString"] = error
            yield from send(context.stream.writer().put_classad(answer))
        return None

    def reset_all(context: CommandContext) -> Generator[Step, bytes | None, bool | None]:
        for name in sorted(service.accountant.records):
            request = ClassAd()
            request["Command"] = "ResetUsage"
            request["Submitter"] = name
            _carry_out(service, context, "ResetUsage", request)
        return None
        yield

    table: dict[Command, Handler] = {
        commands.GET_PRIORITY: get_priority,
        commands.GET_PRIORITY_ROLLUP: get_priority,
        commands.GET_RESLIST: get_reslist,
        commands.RESET_ALL_USAGE: reset_all,
    }
    for command in commands.BY_NUMBER.values():
        if command.number in _CHANGES:
            table[command] = change
    return table


def reschedule_handlers(service: NegotiatorService) -> dict[Command, Handler]:
    """RESCHEDULE for a negotiator whose schedds run in other processes: a cycle soon
    (:data:`epcore.net.commands.NEGOTIATOR_RESCHEDULE`, DAEMON level, as HTCondor's)."""

    def reschedule(context: CommandContext) -> Generator[Step, bytes | None, bool | None]:
        service.reschedule()
        return None
        yield

    return {commands.NEGOTIATOR_RESCHEDULE: reschedule}


def _carry_out(
    service: NegotiatorService, context: CommandContext, local: str, request: ClassAd
) -> ClassAd:
    """Run the local request's handler; a refusal is logged (HTCondor answers none of these
    but SET_PRIORITYFACTOR) and returned."""
    try:
        reply = HANDLERS[local](service, _requester(context), request)
    except EpError as error:
        reply = ClassAd()
        reply["Ok"] = False
        reply["Error"] = str(error)
        service.log.warning(
            "%s of %s from %s at %s refused: %s",
            commands.describe(context.peer.command),
            request.evaluate("Submitter"),
            context.peer.name,
            context.stream.peer_description,
            error,
        )
    return reply
