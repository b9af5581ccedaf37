"""The pool's request socket as a service: each request goes to the role that answers it.

Every local user may connect (the kernel says who they are, :mod:`epcore.runtime.pool_server`);
the requests are :mod:`epcore.pool.requests`'s. The router checks the Command and who may ask
for it (QUEUE_SUPER_USERS for the administration), then hands the request to the handler of
the role that owns it (queue commands to the schedd, status queries to the collector,
priorities to the negotiator, vacate and drain to the startd). A Command whose role does not
run in this process is refused saying so. A request that trips a fault fails alone.
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Mapping, Sequence

from epcore.classad import ClassAd
from epcore.config import Config
from epcore.errors import EpError
from epcore.interfaces import Requester, RequestHandler
from epcore.pool.requests import ADMIN_COMMANDS, COMMANDS
from epcore.runtime.connection_limits import ConnectionLimits
from epcore.runtime.control import ControlError, answer
from epcore.runtime.loop import LoopHandle, ReadyEvent
from epcore.runtime.pool_server import PoolServer


def super_users(config: Config) -> set[str]:
    """QUEUE_SUPER_USERS (root and condor when unset)."""
    raw = config.get("QUEUE_SUPER_USERS") or "root, condor"
    return {name.strip() for name in raw.replace(",", " ").split() if name.strip()}


class PoolRequests:
    """The pool's socket at ``path``, routing each Command to ``handlers`` (module
    docstring); ``roles`` names what runs here, for the refusal of the rest."""

    name = "pool"

    def __init__(
        self,
        path: str,
        handlers: Mapping[str, RequestHandler],
        *,
        roles: Sequence[str],
        config: Callable[[], Config],
        log: logging.Logger,
    ) -> None:
        self.path = path
        self.handlers = dict(handlers)
        self.roles = tuple(roles)
        self.current_config = config
        self.log = log
        self.stopping = False
        initial = config()
        self.server = PoolServer(
            path,
            self.handle,
            super_users=super_users(initial),
            log=log,
            limits=ConnectionLimits.from_config(initial),
        )

    def route(self, requester: Requester, request: ClassAd) -> ClassAd:
        """Carry out ``request`` for ``requester``; refusals raise ControlError."""
        command = request.evaluate("Command")
        if not isinstance(command, str) or command not in COMMANDS:
            raise ControlError(f"unknown Command {command!r}; known: {', '.join(COMMANDS)}")
        if command in ADMIN_COMMANDS and not requester.super_user:
            raise ControlError(f"{command}: {requester.name} is not one of QUEUE_SUPER_USERS")
        handler = self.handlers.get(command)
        if handler is None:
            running = ", ".join(self.roles) or "nothing"
            raise ControlError(
                f"{command}: no daemon here answers it (this process runs {running})"
            )
        return handler(requester, request)

    def handle(self, requester: Requester, request: ClassAd) -> ClassAd:
        """Answer one request from the pool's socket."""
        try:
            return self.route(requester, request)
        except EpError as error:
            return answer(False, str(error))
        except Exception as error:
            # A request that trips a fault fails alone; the pool keeps serving the others.
            command = request.evaluate("Command")
            self.log.exception("request %r from %s failed", command, requester.name)
            return answer(False, f"the pool failed on this request: {type(error).__name__}")

    # -- the loop's calls -----------------------------------------------------------------

    def open(self, loop: LoopHandle) -> None:
        self.server.open(loop.selector, self)
        self.log.info("pool ready: requests on %s", self.path)

    def ready(self, events: Sequence[ReadyEvent]) -> None:
        for fileobj, data in events:
            if data is self:
                self.server.ready(fileobj)

    def timeout(self) -> float:
        return self.server.timeout()

    def tick(self) -> None:
        self.server.work()

    def flush(self) -> None:
        self.server.flush()

    def reconfig(self) -> None:
        config = self.current_config()
        self.server.super_users = self.server.super_users | super_users(config)
        self.server.limits = ConnectionLimits.from_config(config)

    def shutdown(self, fast: bool) -> None:
        self.stopping = True

    @property
    def finished(self) -> bool:
        return self.stopping

    def close(self) -> None:
        self.server.close()

    def close_in_child(self) -> None:
        self.server.requests.close_in_child()
