"""The startd's fork server (its zygote): where starters and prepared supervisors come from.

The startd forks its zygote (:mod:`epcore.runtime.forkserver`) when it is built, before its
loop, its plugins' cron threads or (in ``ep run``) the rest of the pool exist. The zygote
holds what a starter needs that cannot travel as data (the configuration with the plugins'
functions, the isolation backends, the container runtimes) as the startd had them; what
changes per job travels in the request, a :class:`~epcore.starter.starter.StarterOrder`
(pickled: the starter reads it after the fork), which the starter completes with the
zygote's parts into its request. The zygote also holds the jobs prepared ahead of
activation (the job's cgroups and a supervisor inside them, see
:mod:`epcore.startd.prepare`), so that the starter forked for a claim inherits its claim's
preparation and nothing else.

Requests: ``prepare`` and ``discard`` (no reply: a failure comes back as a
:class:`PrepareFailed` note), ``spawn`` (the reply is the starter's PID and the tracking key
of the preparation it took), ``reconfig`` (the new configuration's macro table: the zygote
rebuilds its configuration and container runtimes as the startd does). When the zygote ends
(the startd closed it or went away) it gives up every preparation it holds.
"""

from __future__ import annotations

import contextlib
import importlib
import logging
import os
import pickle
import time
from collections.abc import Callable

import attrs

from epcore.classad import ClassAd
from epcore.config import Config
from epcore.config.table import MacroTable
from epcore.errors import ConfigError, EpError
from epcore.logs import LogSettings
from epcore.plugins import Plugins
from epcore.runtime.forkserver import (
    ForkServer,
    ForkServerError,
    Handler,
    ServerSide,
    start_fork_server,
)
from epcore.startd import backends
from epcore.startd.starters import wait_for_go
from epcore.starter.cgroups.home import OwnGroup, own_groups
from epcore.starter.claim_loop import PREPARED_BACKENDS
from epcore.starter.main import run_starter, starter_log_settings
from epcore.starter.prepared import give_up, prepare_job
from epcore.starter.starter import PreparedJob, StarterOrder, StarterRequest
from epcore.starter.supervisor_server import SupervisorServer
from epcore.types import ContainerRuntime, IsolationBackend, ScratchFilesystem, TrackingRequest


@attrs.frozen
class SpawnOrder:
    """Fork the starter of ``order``: a pickled :class:`StarterOrder`, read by the starter
    after the fork (the zygote does not build the job's ad, which it would then share with
    the starter and free again, copying the pages both touch). The zygote's part: the
    claim whose preparation the starter takes, its StarterLog, the container runtime
    (None: none) whose starter modules it imports first, and whether the job's files travel
    here (the zygote imports the file-transfer client first), and whether the starter runs
    the claim's next jobs (it gets a client of the supervisor server of its own)."""

    claim_id: str
    starter_log: str
    runtime: str | None
    order: bytes
    transfers: bool = False
    keeps: bool = False


@attrs.frozen
class PrepareOrder:
    """Prepare the next job of ``claim_id``: ``backend``'s tracking under ``request`` (its
    job key names the groups) and a supervisor inside them."""

    claim_id: str
    backend: str
    request: TrackingRequest


@attrs.frozen
class PrepareFailed:
    """A note from the zygote: the preparation of ``claim_id`` under ``job_key`` failed (or
    could not be given back), for ``why``."""

    claim_id: str
    job_key: str
    why: str


@attrs.frozen
class Spawned:
    """The zygote's reply to ``spawn``: the starter's PID and the key of the preparation it
    took (None: it prepares its job itself)."""

    pid: int
    job_key: str | None


@attrs.frozen
class PortableConfig:
    """What of a configuration can travel: its macro table and where it came from; the
    zygote puts it together with its own host and evaluation context."""

    table: MacroTable
    sources: tuple[str, ...]
    warnings: tuple[str, ...]

    @classmethod
    def of(cls, config: Config) -> PortableConfig:
        return cls(config.table, config.sources, config.warnings)

    def rebuild(self, base: Config) -> Config:
        return attrs.evolve(
            base,
            table=self.table,
            sources=self.sources,
            warnings=self.warnings,
            expanders={},
            values={},
            values_version=-1,
        )


class ZygoteWork:
    """What the zygote does for the startd; built in the startd, used only in the zygote."""

    def __init__(
        self,
        config: Config,
        plugins: Plugins,
        isolation: tuple[IsolationBackend, ...],
        containers: tuple[ContainerRuntime, ...],
        *,
        scratch: ScratchFilesystem | None = None,
        close_in_zygote: Callable[[], None] = lambda: None,
    ) -> None:
        self.config = config
        self.close_in_zygote = close_in_zygote
        self.plugins = plugins
        self.isolation = isolation
        self.containers = containers
        self.scratch = scratch if scratch is not None and scratch.available() else None
        self.prepared: dict[str, PreparedJob] = {}
        #: Where prepared supervisors come from (a small process of their own).
        self.supervisors = SupervisorServer()
        #: The modules each container runtime's starters need, by runtime name, until the
        #: zygote has imported them.
        self._starter_modules = {
            spec.name: spec.starter_modules for spec in plugins.container_runtimes()
        }
        self._transfer_client_imported = False
        #: Each slot's StarterLog settings, read from the configuration once, not per starter.
        self._log_settings: dict[str, LogSettings] = {}
        # The zygote's own groups, read once: it is not moved between groups while it runs.
        self._own_groups: tuple[OwnGroup, ...] | None = None

    def handlers(self) -> dict[str, Handler]:
        return {
            "prepare": self.prepare,
            "discard": self.discard,
            "spawn": self.spawn,
            "reconfig": self.reconfig,
        }

    # -- requests (in the zygote) ---------------------------------------------------------

    def prepare(self, server: ServerSide, order: object, fds: list[int]) -> None:
        assert isinstance(order, PrepareOrder)
        backend = next((b for b in self.isolation if b.name == order.backend), None)
        if backend is None or order.claim_id in self.prepared:
            return
        try:
            if self._own_groups is None:
                self._own_groups = own_groups()
            prepared = prepare_job(backend, order.request, self.supervisors, self._own_groups)
        except (EpError, OSError) as error:
            server.note(PrepareFailed(order.claim_id, order.request.job_key, str(error)))
            return
        self.prepared[order.claim_id] = prepared

    def discard(self, server: ServerSide, claim_id: object, fds: list[int]) -> None:
        assert isinstance(claim_id, str)
        failed = self._give_up(claim_id)
        if failed is not None:
            server.note(failed)

    def _give_up(self, claim_id: str) -> PrepareFailed | None:
        """Kill the supervisor of ``claim_id``'s preparation and remove its groups; why
        they could not be removed, or None."""
        prepared = self.prepared.pop(claim_id, None)
        if prepared is None:
            return None
        try:
            give_up(prepared)
        except EpError as error:
            why = f"cannot remove a prepared job's groups: {error}"
            return PrepareFailed(claim_id, prepared.job_key, why)
        return None

    def spawn(self, server: ServerSide, order: object, fds: list[int]) -> Spawned:
        """Fork the starter of ``order``; it runs once the startd writes on the pipe whose
        read end is ``fds[0]`` (:mod:`epcore.startd.starters`)."""
        assert isinstance(order, SpawnOrder) and len(fds) == 1
        go_read = fds[0]
        prepared = self.prepared.pop(order.claim_id, None)
        self._import_for(order.runtime)
        if order.transfers:
            self._import_transfer_client()
        log_settings = self._log_settings.get(order.starter_log)
        if log_settings is None:
            log_settings = starter_log_settings(self.config, order.starter_log)
            self._log_settings[order.starter_log] = log_settings

        # A starter that runs its claim's next jobs has their supervisors made by the same
        # server, over a socket of its own.
        supervisors = self._supervisors_for() if order.keeps else None

        def starter() -> int:
            # Another claim's supervisor is not this starter's business, nor their server.
            for other in self.prepared.values():
                other.supervisor.forget()
            self.supervisors.close_in_child()
            os.setsid()
            starter_order = pickle.loads(order.order)
            assert isinstance(starter_order, StarterOrder)
            request = StarterRequest(
                **attrs.asdict(starter_order, recurse=False),
                config=self.config,
                isolation=self.isolation,
                containers=self.containers,
                scratch=self.scratch,
                prepared=prepared,
                supervisors=supervisors,
            )
            return run_starter(request, log_settings) if wait_for_go(go_read) else 1

        try:
            pid = server.fork(starter, report=True)
        except OSError:
            if prepared is not None:
                self.prepared[order.claim_id] = prepared
            raise
        finally:
            os.close(go_read)
            if supervisors is not None:
                supervisors.close()  # the starter's client socket: the zygote keeps no copy
        if prepared is not None:
            prepared.supervisor.forget()
        return Spawned(pid, prepared.job_key if prepared is not None else None)

    def _supervisors_for(self) -> SupervisorServer | None:
        """A client of the supervisor server for a starter that runs its claim's next jobs
        (None: no backend has supervisors prepared, or no server can be had)."""
        if not any(b.name in PREPARED_BACKENDS for b in self.isolation):
            return None
        try:
            return self.supervisors.client()
        except (EpError, OSError) as error:
            logging.getLogger(__name__).warning("no supervisor server for a starter: %s", error)
            return None

    def _import_for(self, runtime: str | None) -> None:
        """Import what the container runtime named ``runtime`` (None: no container) needs in
        its starters, once."""
        if runtime is None:
            return
        for module in self._starter_modules.pop(runtime, ()):
            # A module that cannot be imported fails in the starter, where the job's failure
            # is reported.
            with contextlib.suppress(Exception):
                importlib.import_module(module)

    def _import_transfer_client(self) -> None:
        """Import the starter's file-transfer client (CEDAR, its cryptography) once, when the
        first job whose files travel here comes: a starter importing it itself paid 60-75 ms
        of CPU per job, and a zygote of a host whose jobs all run in place never holds it
        (about 7 MB, copied into page tables at every fork)."""
        if not self._transfer_client_imported:
            self._transfer_client_imported = True
            importlib.import_module("epcore.starter.fetch")

    def begin(self) -> None:
        """The zygote's first steps: close what the startd holds that starters must not
        (its loop's sockets, when a zygote is started again), expand the configuration."""
        self.close_in_zygote()
        self.warm()

    def warm(self) -> None:
        """Expand every knob the configuration sets or defaults once, here: each starter
        forked afterwards finds them expanded instead of expanding the ones it reads again."""
        config = self.config
        for name in {*config.names(), *config.table.defaults}:
            with contextlib.suppress(ConfigError):
                config.get(name)
        # The first evaluation in a process builds the ClassAd function table (about half a
        # millisecond); built here, every starter finds it made.
        ClassAd().evaluate("Warm")

    def reconfig(self, server: ServerSide, portable: object, fds: list[int]) -> None:
        assert isinstance(portable, PortableConfig)
        self.config = portable.rebuild(self.config)
        self._log_settings.clear()
        self.warm()
        # As the startd does at reconfig; what it logs the startd logged already.
        quiet = logging.getLogger("epcore.startd.zygote.quiet")
        quiet.propagate = False
        quiet.addHandler(logging.NullHandler())
        self.containers = backends.container_runtimes(self.plugins, self.config, quiet)

    def end(self, server: ServerSide) -> None:
        """The zygote ends: give up every preparation."""
        for claim_id in list(self.prepared):
            self._give_up(claim_id)
        self.supervisors.close()


#: How long a new zygote waits for the startd's own threads (Python cron jobs) to end, so
#: that none holds a lock at the fork.
QUIESCE_SECONDS = 5.0


class Zygote:
    """The startd's end of its zygote: forked at once from ``make_work()``'s work, and again
    (after ``threads_busy`` says no thread runs, or :data:`QUIESCE_SECONDS`) when it died.
    ``generation`` counts the zygotes started; OSError when none can be forked."""

    def __init__(
        self,
        make_work: Callable[[], ZygoteWork],
        *,
        log: logging.Logger,
        threads_busy: Callable[[], bool] = lambda: False,
        monotonic: Callable[[], float] = time.monotonic,
    ) -> None:
        self.make_work = make_work
        self.log = log
        self.threads_busy = threads_busy
        self.monotonic = monotonic
        self.generation = 0
        self.server = self._start()

    def _start(self) -> ForkServer:
        work = self.make_work()
        server = start_fork_server(work.handlers(), close_in_server=work.begin, on_exit=work.end)
        self.generation += 1
        return server

    @property
    def alive(self) -> bool:
        return self.server.alive

    @property
    def pid(self) -> int:
        return self.server.pid

    def restart(self) -> None:
        """Start a new zygote in place of one that died or hung."""
        old = self.server
        old.kill()
        deadline = self.monotonic() + QUIESCE_SECONDS
        while self.threads_busy() and self.monotonic() < deadline:
            time.sleep(0.01)
        if self.threads_busy():
            self.log.warning("starting a zygote while a Python cron job still runs")
        self.server = self._start()
        self.log.warning("the zygote %d is gone: started zygote %d", old.pid, self.server.pid)

    def post(self, operation: str, argument: object) -> None:
        """Send a request with no reply; a zygote gone is noticed by :meth:`notes`."""
        try:
            self.server.post(operation, argument)
        except ForkServerError as error:
            self.log.error("cannot reach the zygote: %s", error)

    def spawn(
        self, order: StarterOrder, runtime: str | None, go_read: int, *, transfers: bool = False
    ) -> Spawned:
        """Have the zygote fork the starter of ``order``, a job the container runtime named
        ``runtime`` runs (None: no container), whose files travel here when ``transfers``;
        ForkServerError when it could not."""
        spawn = SpawnOrder(
            order.claim_id,
            order.starter_log,
            runtime,
            pickle.dumps(order),
            transfers,
            keeps=order.keeps,
        )
        spawned = self.server.call("spawn", spawn, [go_read])
        if not isinstance(spawned, Spawned):
            raise ForkServerError(f"the zygote answered {spawned!r} to spawn")
        return spawned

    def reconfig(self, config: Config) -> None:
        self.post("reconfig", PortableConfig.of(config))

    def notes(self) -> list[object]:
        """The zygote's notes since the last call (empty once it is gone: see :attr:`alive`)."""
        return list(self.server.notes())

    def close(self) -> None:
        """End the zygote (it gives up its preparations; the starters live on)."""
        self.server.close()
