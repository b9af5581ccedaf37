"""The startd's answers to the pool's requests (:mod:`epcore.pool.requests` lists them all):
``Vacate``, ``Drain`` and ``CancelDrain`` (condor_vacate, condor_drain), carried out through
the startd's link (:class:`~epcore.interfaces.StartdLink`), never by reading its state."""

from __future__ import annotations

from collections.abc import Callable

from epcore.classad import ClassAd
from epcore.interfaces import Requester, RequestHandlers, StartdLink
from epcore.interfaces.requests import bind_handlers
from epcore.runtime.control import answer, expression_argument, flag, optional_text, text_argument


def _vacate(startd: StartdLink, requester: Requester, request: ClassAd) -> ClassAd:
    done = startd.vacate_slots(optional_text(request, "Slot"), flag(request, "Fast"))
    return answer(True, Done=done)


def _drain(startd: StartdLink, requester: Requester, request: ClassAd) -> ClassAd:
    how = text_argument(request, "How")
    startd.drain(
        how,
        expression_argument(request, "Check"),
        expression_argument(request, "Start"),
        reason=optional_text(request, "Reason"),
        resume=flag(request, "Resume"),
    )
    return answer(True)


def _cancel_drain(startd: StartdLink, requester: Requester, request: ClassAd) -> ClassAd:
    startd.cancel_drain()
    return answer(True)


#: The startd's answers, by Command.
HANDLERS: dict[str, Callable[[StartdLink, Requester, ClassAd], ClassAd]] = {
    "Vacate": _vacate,
    "Drain": _drain,
    "CancelDrain": _cancel_drain,
}


def startd_handlers(startd: StartdLink) -> RequestHandlers:
    """The startd's answers to the pool's requests, carried out on ``startd``."""
    return bind_handlers(startd, HANDLERS)
