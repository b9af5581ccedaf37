"""The peers of the negotiation tests: a real schedd core with a queue, the service around it
(recording the matches it takes), and a CEDAR listener turned by a thread on loopback."""

from __future__ import annotations

import logging
import selectors
import threading
from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager
from pathlib import Path
from typing import TypeVar

from epcore.classad import ClassAd, parse_expr
from epcore.config import Config
from epcore.interfaces import Locator, Match
from epcore.net import commands
from epcore.net.commands import Command
from epcore.net.dispatch import CommandTable, Handler
from epcore.net.handshake import SecurityServer
from epcore.net.keyexchange import EcdhKeyExchange
from epcore.net.listener import CedarListener
from epcore.net.methods import default_registry
from epcore.schedd.jobqueue import JobQueue
from epcore.schedd.negotiation import negotiation_handler
from epcore.schedd.schedd import Schedd

NOW = 1_700_000_000.0
Result = TypeVar("Result")
#: The schedd's side: negotiators anywhere on loopback may negotiate.
SCHEDD_CONFIG = """
UID_DOMAIN = example.org
ALLOW_NEGOTIATOR = *
ALLOW_READ = *
SEC_DEFAULT_AUTHENTICATION_METHODS = CLAIMTOBE
CEDAR_CLIENT_TIMEOUT = 10
"""
#: The negotiator's side.
NEGOTIATOR_CONFIG = """
SEC_DEFAULT_AUTHENTICATION_METHODS = CLAIMTOBE
NEGOTIATOR_TIMEOUT = 5
"""


class Service:
    """The schedd's service as NEGOTIATE needs it: records each round's matches."""

    def __init__(self, schedd: Schedd) -> None:
        self.schedd = schedd
        self.cycles = 0
        self.taken: list[list[Match]] = []

    def cycle_started(self) -> None:
        self.cycles += 1

    def take_matches(self, matches: Sequence[Match], now: float) -> None:
        self.taken.append(list(matches))


def make_schedd(directory: Path, jobs: dict[str, int], config: str = SCHEDD_CONFIG) -> Schedd:
    """A schedd whose queue holds, per owner, that many idle jobs in one cluster (each asks
    for 100 MB, as RequestMemory, which its Requirements read)."""
    queue = JobQueue.open(directory / "job_queue.db")
    schedd = Schedd(
        Config.from_text(config, subsystem="SCHEDD"),
        queue,
        Locator("startd"),
        host_name="submit.example.org",
        log=logging.getLogger("test.schedd"),
        clock=lambda: NOW,
    )
    for owner, count in jobs.items():
        cluster = queue.next_cluster_id()
        common = ClassAd({"Owner": owner, "JobStatus": 1, "QDate": 900, "JobPrio": 0})
        common["RequestCpus"] = 1
        common["RequestMemory"] = 100
        common["Requirements"] = parse_expr("TARGET.Memory >= MY.RequestMemory")
        for job_id in queue.submit(cluster, common, [ClassAd({"ProcId": p}) for p in range(count)]):
            schedd.now_idle(job_id)
    return schedd


def slots(count: int) -> list[ClassAd]:
    """``count`` one-core slots of 1 GB."""
    return [
        ClassAd(
            {
                "Name": f"slot{n}@exec.example.org",
                "Machine": "exec.example.org",
                "MyAddress": "<127.0.0.9:9618>",
                "Cpus": 1,
                "Memory": 1024,
                "SlotWeight": 1,
                "Requirements": True,
            }
        )
        for n in range(1, count + 1)
    ]


class _Loop:
    def __init__(self) -> None:
        self.selector = selectors.DefaultSelector()

    def close_in_child(self) -> None:
        pass


class Served:
    """A listener on 127.0.0.1 answering in this thread (the schedd's queue is SQLite, used
    by one thread only) while :meth:`call` runs the negotiator's side in another."""

    def __init__(self, listener: CedarListener, loop: _Loop) -> None:
        self.listener = listener
        self.loop = loop

    @property
    def address(self) -> str:
        return str(self.listener.sinful)

    def call(self, client: Callable[[], Result]) -> Result:
        """``client()`` run in a thread while this one turns the listener; its result, or
        its exception raised here."""
        outcome: list[object] = []

        def run() -> None:
            try:
                outcome.append(("ok", client()))
            except BaseException as error:  # handed to the test's thread
                outcome.append(("error", error))

        thread = threading.Thread(target=run, daemon=True)
        thread.start()
        while thread.is_alive():
            self.turn()
        for _ in range(5):  # what the client's last messages still ask of the schedd
            self.turn()
        [(kind, value)] = outcome  # type: ignore[misc]
        if kind == "error":
            raise value  # type: ignore[misc]
        return value  # type: ignore[return-value]

    def turn(self) -> None:
        listener = self.listener
        ready = self.loop.selector.select(min(0.01, max(listener.timeout(), 0.0)))
        listener.ready([(key.fileobj, key.data) for key, _ in ready])
        listener.tick()
        listener.flush()


@contextmanager
def serving(
    handlers: dict[Command, Handler], config: str = SCHEDD_CONFIG, port: int = 0
) -> Iterator[Served]:
    """A listener on 127.0.0.1 (at ``port``; 0: any free one) answering ``handlers``
    (:class:`Served`)."""
    parsed = Config.from_text(config, subsystem="SCHEDD")
    table = CommandTable()
    for command, handler in handlers.items():
        table.register(command, handler)
    log = logging.getLogger("test.schedd.cedar")
    security = SecurityServer(
        lambda: parsed,
        table.levels,
        methods=default_registry(),
        log=log,
        key_exchange=EcdhKeyExchange(),
    )
    listener = CedarListener("127.0.0.1", port, table, security, config=lambda: parsed, log=log)
    listener.throttled.period = 0.0
    loop = _Loop()
    listener.open(loop)
    try:
        yield Served(listener, loop)
    finally:
        listener.close()


def negotiate_handler(service: Service, config: str = SCHEDD_CONFIG) -> dict[Command, Handler]:
    """The schedd's NEGOTIATE handler for ``service``."""
    parsed = Config.from_text(config, subsystem="SCHEDD")
    handler = negotiation_handler(
        service, lambda: parsed, log=logging.getLogger("test.schedd"), clock=lambda: NOW
    )
    return {commands.NEGOTIATE: handler}


def submitter_ad(name: str, address: str) -> ClassAd:
    """A Submitter ad naming its schedd as the negotiator finds it in the collector."""
    return ClassAd({"MyType": "Submitter", "Name": name, "ScheddIpAddr": address})
