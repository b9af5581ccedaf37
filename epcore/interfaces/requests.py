"""Who sends a request on the pool's socket, and the handlers each role offers for it."""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import TypeVar

from epcore.classad import ClassAd
from epcore.runtime.control import SUBMIT_CHUNK
from epcore.runtime.pool_server import Requester

#: Answers one request (an ad with Command) for a requester; refusals are ``Ok = false``.
RequestHandler = Callable[[Requester, ClassAd], ClassAd]
#: A role's handlers by the Command they answer.
RequestHandlers = Mapping[str, RequestHandler]

Owner = TypeVar("Owner")


def bind_handlers(
    owner: Owner, table: Mapping[str, Callable[[Owner, Requester, ClassAd], ClassAd]]
) -> dict[str, RequestHandler]:
    """A role's handler table (functions of the role's service) bound to ``owner``."""

    def bound(
        handler: Callable[[Owner, Requester, ClassAd], ClassAd],
    ) -> RequestHandler:
        return lambda requester, request: handler(owner, requester, request)

    return {command: bound(handler) for command, handler in table.items()}


__all__ = ["SUBMIT_CHUNK", "RequestHandler", "RequestHandlers", "Requester", "bind_handlers"]
