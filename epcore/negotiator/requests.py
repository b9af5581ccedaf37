"""The negotiator's answers to the pool's requests (:mod:`epcore.pool.requests` lists them
all): the accountant's ads (``UserPrio``) and its administration (condor_userprio's
``SetFactor``, ``SetCeiling``, ``SetFloor``, ``ResetUsage``, ``DeleteSubmitter``)."""

from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING

from epcore.classad import ClassAd
from epcore.interfaces import Requester
from epcore.negotiator.accountant import Accountant
from epcore.negotiator.report import userprio_ads
from epcore.runtime.control import answer, argument, text_argument

if TYPE_CHECKING:
    from epcore.negotiator.service import NegotiatorService


def _user_prio(service: NegotiatorService, requester: Requester, request: ClassAd) -> ClassAd:
    return answer(True, Ads=userprio_ads(service.accountant, service.last_report))


def _set_submitter(
    command: str,
) -> Callable[[NegotiatorService, Requester, ClassAd], ClassAd]:
    def handler(service: NegotiatorService, requester: Requester, request: ClassAd) -> ClassAd:
        name = text_argument(request, "Submitter")
        now = service.clock()
        value = 0.0
        if command in _SETTERS:
            given = argument(request, "Value", float)
            assert isinstance(given, int | float)
            value = float(given)

        def change(accountant: Accountant) -> Accountant:
            if command in _SETTERS:
                return _SETTERS[command](accountant, name, value, now)
            if command == "ResetUsage":
                return accountant.reset_usage(name, now)
            return accountant.delete(name)

        # Through the service: a cycle running in its thread gets the change too.
        service.change_accountant(change)
        service.save_accountant()
        service.log.info("%s %s by %s", command, name, requester.name)
        return answer(True)

    return handler


#: The changes that set one number of a submitter's record.
_SETTERS: dict[str, Callable[[Accountant, str, float, float], Accountant]] = {
    "SetFactor": Accountant.set_factor,
    # -1 is "no ceiling", as condor_userprio -setceil and the accountant's ads say it.
    "SetCeiling": lambda a, name, value, now: a.set_ceiling(
        name, None if value == -1 else value, now
    ),
    "SetFloor": Accountant.set_floor,
    "SetPriority": Accountant.set_priority,
    "SetAccumulatedUsage": Accountant.set_accumulated_usage,
    "SetBeginUsageTime": lambda a, name, when, now: a.set_usage_time(name, "begin", when, now),
    "SetLastUsageTime": lambda a, name, when, now: a.set_usage_time(name, "last", when, now),
}

#: The negotiator's answers, by Command.
HANDLERS: dict[str, Callable[[NegotiatorService, Requester, ClassAd], ClassAd]] = {
    "UserPrio": _user_prio,
    "SetFactor": _set_submitter("SetFactor"),
    "SetCeiling": _set_submitter("SetCeiling"),
    "SetFloor": _set_submitter("SetFloor"),
    "SetPriority": _set_submitter("SetPriority"),
    "SetAccumulatedUsage": _set_submitter("SetAccumulatedUsage"),
    "SetBeginUsageTime": _set_submitter("SetBeginUsageTime"),
    "SetLastUsageTime": _set_submitter("SetLastUsageTime"),
    "ResetUsage": _set_submitter("ResetUsage"),
    "DeleteSubmitter": _set_submitter("DeleteSubmitter"),
}
