"""The pool's CEDAR port: where ``ep run`` listens, what it answers there, how clients find it.

- **Where**: 127.0.0.1 unless the configuration opens it (NETWORK_INTERFACE names the
  address; BIND_ALL_INTERFACES = True, set in a file, listens on every interface). The port
  is COLLECTOR_HOST's when the collector runs here and that names one (HTCondor's 9618 when
  it names a host alone); ``host:0``, the personal pool's setting, or no collector here,
  takes any free port. Either way the address is written to COLLECTOR_ADDRESS_FILE (and the
  running daemons' <SUBSYS>_ADDRESS_FILE), whose first line HTCondor's clients read when
  COLLECTOR_HOST's port is 0: so ``htcondor2`` finds the pool with CONDOR_CONFIG alone.
  A free port once taken is kept in SPOOL (``.cedar_port``) and taken again by the next
  ``ep run`` while it is free: the claim ids a startd gave and the address a schedd gave
  its startds name that port, and stay valid when the process restarts within a lease.
- **What**: the commands of each role running here (:mod:`epcore.collector.cedar`,
  :mod:`epcore.startd.cedar`, :mod:`epcore.negotiator.cedar`), and
  what every daemon answers: DC_NOP at every level (``htcondor2.ping``), DC_CONFIG_VAL and
  CONFIG_VAL (``htcondor2.RemoteParam``: the names defined, a knob's value), and, at the
  ADMINISTRATOR level, reconfiguration and shutdown (DC_RECONFIG*, DC_OFF_*), which the
  process takes as it takes SIGHUP, SIGTERM and SIGQUIT.
- **Who**: the SEC_* and ALLOW_* / DENY_* knobs (:mod:`epcore.net`); the personal pool's
  configuration sets them (:mod:`epcore.pool.personal`).
"""

from __future__ import annotations

import contextlib
import logging
import os
import pwd
import re
import resource
import signal
import socket
import time
from collections.abc import Callable, Collection, Generator, Iterable, Mapping
from pathlib import Path
from typing import Final

import attrs

from epcore.classad import ClassAd
from epcore.config import Config
from epcore.interfaces import CollectorLink
from epcore.net import commands
from epcore.net.commands import Command
from epcore.net.conversation import Step, send
from epcore.net.dispatch import CommandContext, CommandTable, Handler
from epcore.net.handshake import SecurityServer
from epcore.net.keyexchange import EcdhKeyExchange
from epcore.net.listener import CedarListener, ListenerLimits
from epcore.net.methods import default_registry
from epcore.net.policy import VERSION
from epcore.net.sinful import SinfulError, parse_sinful
from epcore.pool.roles import COLLECTOR, DEFRAG, NEGOTIATOR, SCHEDD, STARTD
from epcore.runtime.loop import LoopHandle
from epcore.runtime.persist import replace_private

#: The file in SPOOL keeping the free port ``ep run`` took (module docstring).
PORT_FILE: Final = ".cedar_port"
#: HTCondor's collector port, when COLLECTOR_HOST names a host without one (COLLECTOR_PORT).
COLLECTOR_PORT: Final = 9618
#: CONFIG_VAL, the old remote-param command (condor_commands.h: SCHED_VERS + 57).
CONFIG_VAL: Final = Command(457, "CONFIG_VAL", commands.READ)
#: How often the collector's own ad is published, in seconds.
SELF_AD_INTERVAL: Final = 60.0
#: HTCondor's COLLECTOR_MAX_FILE_DESCRIPTORS: the descriptors a collector may hold.
COLLECTOR_MAX_FILE_DESCRIPTORS: Final = 10240
#: The part of a collector's descriptors its hosts' connections may take (HTCondor's daemon
#: core keeps a fifth back for its own files and outgoing connections likewise).
COLLECTOR_CONNECTION_SHARE: Final = 0.8
#: The platform line of an address file.
PLATFORM: Final = "$CondorPlatform: epcore $"
_SUBSYSTEMS: Final = {
    COLLECTOR: "COLLECTOR",
    SCHEDD: "SCHEDD",
    STARTD: "STARTD",
    NEGOTIATOR: "NEGOTIATOR",
    DEFRAG: "DEFRAG",
}


def _explicit(config: Config, name: str) -> str | None:
    """``name``'s value when a file or the environment sets it (not HTCondor's default)."""
    if name not in set(config.names()):
        return None
    return config.get(name)


def listen_address(config: Config, daemons: Collection[str]) -> tuple[str, int]:
    """The host and port ``ep run`` listens on (module docstring)."""
    host = "127.0.0.1"
    interface = _explicit(config, "NETWORK_INTERFACE")
    bind_all = _explicit(config, "BIND_ALL_INTERFACES")
    if interface and interface.strip() not in ("*", ""):
        host = interface.strip()
    elif bind_all is not None and bind_all.strip().lower() in ("true", "yes", "1"):
        host = "0.0.0.0"
    port = 0
    where = config.get("COLLECTOR_HOST")
    if COLLECTOR in daemons and where and where.strip():
        first = where.replace(",", " ").split()[0]
        default = config.get_int("COLLECTOR_PORT", COLLECTOR_PORT)
        try:
            port = parse_sinful(first).port if ":" in first.strip("<>") else default
        except SinfulError:
            port = 0 if first.strip("<>").endswith(":0") else default
    return host, port


def pool_user(config: Config) -> str:
    """Who root maps to under FS (HTCondor's condor user: CONDOR_IDS' owner, else condor)."""
    ids = config.get("CONDOR_IDS")
    if ids and "." in ids:
        with contextlib.suppress(KeyError, ValueError):
            return pwd.getpwuid(int(ids.split(".")[0])).pw_name
    return "condor"


def daemon_core_handlers(config: Callable[[], Config]) -> dict[Command, Handler]:
    """What every daemon answers (module docstring)."""

    def config_val(context: CommandContext) -> Generator[Step, bytes | None, bool | None]:
        reader = yield from context.receive("the knob's name")
        name = reader.get_string("the knob's name")
        current = config()
        writer = context.stream.writer()
        if context.peer.command == CONFIG_VAL.number:
            writer.put_string(current.get(name) or "Not defined")
        elif name.startswith("?names"):
            pattern = name.partition(":")[2] or ".*"
            try:
                wanted = re.compile(pattern, re.IGNORECASE)
            except re.error as error:
                writer.put_string(f"!error:regex:{error.pos or 0}: {error.msg}")
            else:
                names = sorted({n for n in current.names() if wanted.search(n)})
                for found in names or [""]:
                    writer.put_string(found)
        elif name.startswith("?"):
            writer.put_string(f"!error:unsup:1: '{name}' is not supported")
        else:
            value = current.get(name)
            writer.put_string(value)
            if value is not None:
                writer.put_string(f"{name.upper()} = {value}")
                writer.put_string("")
                writer.put_string(None)
                writer.put_string("0")
        yield from send(writer)
        return None

    def signaller(signum: int) -> Handler:
        def handler(context: CommandContext) -> Generator[Step, bytes | None, bool | None]:
            # The loop takes it at its next turn, as it takes the signal from a shell.
            os.kill(os.getpid(), signum)
            return None
            yield

        return handler

    return {
        commands.DC_CONFIG_VAL: config_val,
        CONFIG_VAL: config_val,
        commands.DC_RECONFIG: signaller(signal.SIGHUP),
        commands.DC_RECONFIG_FULL: signaller(signal.SIGHUP),
        commands.DC_OFF_GRACEFUL: signaller(signal.SIGTERM),
        commands.DC_OFF_PEACEFUL: signaller(signal.SIGTERM),
        commands.DC_OFF_FAST: signaller(signal.SIGQUIT),
    }


class PoolListener(CedarListener):
    """The listener of ``ep run``: writes the address files once it listens, publishes the
    collector's own ad when the collector runs here, and removes the files at the end."""

    def __init__(
        self,
        host: str,
        port: int,
        table: CommandTable,
        security: SecurityServer,
        *,
        config: Callable[[], Config],
        daemons: Collection[str],
        collector: CollectorLink | None,
        local_address: str,
        log: logging.Logger,
        clock: Callable[[], float] = time.time,
    ) -> None:
        super().__init__(host, port, table, security, config=config, log=log)
        self.daemons = frozenset(daemons)
        self.collector = collector
        self.local_address = local_address
        self.clock = clock
        self.written: list[str] = []
        self.next_self_ad = 0.0
        self.limits = self._fitted(self.limits)

    def address_files(self) -> list[str]:
        """The <SUBSYS>_ADDRESS_FILE of every daemon running here that has one, and its
        <SUBSYS>_SUPER_ADDRESS_FILE (``<file>.super`` by default, as HTCondor's): a client
        running as root reads only the latter."""
        config = self.current_config()
        files: list[str] = []
        for daemon in sorted(self.daemons):
            subsystem = _SUBSYSTEMS[daemon]
            path = config.get(f"{subsystem}_ADDRESS_FILE")
            if path:
                files.append(path)
                files.append(config.get(f"{subsystem}_SUPER_ADDRESS_FILE") or f"{path}.super")
        return files

    def open(self, loop: LoopHandle) -> None:
        free = self.port == 0
        kept = self._kept_port() if free else None
        if kept is not None:
            self.port = kept
        super().open(loop)
        if self.sock is None and kept is not None:
            self.port = 0  # taken by another program since: any free port
            super().open(loop)
        if self.sock is None:
            return  # not listening (logged): no address to give
        if free:
            self._keep_port(kept)
        host = "127.0.0.1" if self.host in ("0.0.0.0", "") else self.host
        text = f"<{host}:{self.port}>\n{VERSION}\n{PLATFORM}\n"
        for path in self.address_files():
            try:
                os.makedirs(os.path.dirname(path) or ".", exist_ok=True)
                temporary = f"{path}.new"
                with open(temporary, "w", encoding="utf-8") as handle:
                    handle.write(text)
                os.chmod(temporary, 0o644)
                os.replace(temporary, path)
                self.written.append(path)
            except OSError as error:
                self.log.error("cannot write the address file %s: %s", path, error.strerror)

    def _port_file(self) -> str | None:
        spool = self.current_config().get("SPOOL")
        return os.path.join(spool, PORT_FILE) if spool else None

    def _kept_port(self) -> int | None:
        """The port the last ``ep run`` here listened on, when it is free now."""
        path = self._port_file()
        try:
            with open(path or "", encoding="ascii") as handle:
                port = int(handle.read().strip())
        except (OSError, ValueError):
            return None
        family = socket.AF_INET6 if ":" in self.host else socket.AF_INET
        with socket.socket(family, socket.SOCK_STREAM) as probe:
            probe.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
            try:
                probe.bind((self.host, port))
            except OSError:
                return None
        return port

    def _keep_port(self, kept: int | None) -> None:
        path = self._port_file()
        if path is None or kept == self.port:
            return
        try:
            replace_private(path, f"{self.port}\n".encode("ascii"))
        except OSError as error:
            self.log.warning("cannot keep the CEDAR port in %s: %s", path, error.strerror)

    def _fitted(self, limits: ListenerLimits) -> ListenerLimits:
        """A collector's limits: each host keeps its update connection (HTCondor's kept TCP
        update sockets), so that a pool of thousands of hosts needs thousands; unless
        CEDAR_MAX_CONNECTIONS says otherwise, the cap follows the descriptors the process
        may hold, raised (within the hard limit) to COLLECTOR_MAX_FILE_DESCRIPTORS as
        HTCondor's daemon core raises them."""
        config = self.current_config()
        if COLLECTOR not in self.daemons or _explicit(config, "CEDAR_MAX_CONNECTIONS"):
            return limits
        wanted = config.get_int(
            "COLLECTOR_MAX_FILE_DESCRIPTORS",
            config.get_int("MAX_FILE_DESCRIPTORS", COLLECTOR_MAX_FILE_DESCRIPTORS, minimum=0),
            minimum=0,
        )
        soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
        if wanted > 0 and soft != resource.RLIM_INFINITY and soft < wanted:
            raised = wanted if hard == resource.RLIM_INFINITY else min(wanted, hard)
            try:
                resource.setrlimit(resource.RLIMIT_NOFILE, (raised, hard))
                soft = raised
            except (OSError, ValueError) as error:
                self.log.warning("cannot raise the descriptor limit to %d: %s", raised, error)
        usable = wanted if soft == resource.RLIM_INFINITY else min(wanted or soft, soft)
        cap = int(usable * COLLECTOR_CONNECTION_SHARE)
        return attrs.evolve(limits, max_connections=max(limits.max_connections, cap))

    def reconfig(self) -> None:
        super().reconfig()
        self.limits = self._fitted(self.limits)
        # As at the start: SEC_TOKEN_POOL_SIGNING_KEY_FILE may name a new file, or the key
        # may have been removed to be made again.
        create_signing_key_if_missing(self.current_config(), self.daemons, self.log)

    def tick(self) -> None:
        super().tick()
        now = self.monotonic()
        if self.collector is not None and not self.stopping and now >= self.next_self_ad:
            self.next_self_ad = now + SELF_AD_INTERVAL
            self.collector.update([self._collector_ad()], self.clock())

    def timeout(self) -> float:
        wait = super().timeout()
        if self.collector is not None:
            wait = min(wait, max(0.0, self.next_self_ad - self.monotonic()))
        return wait

    def _collector_ad(self) -> ClassAd:
        config = self.current_config()
        host = config.get("FULL_HOSTNAME") or "localhost"
        ad = ClassAd()
        ad["MyType"] = "Collector"
        ad["Name"] = config.get("COLLECTOR_NAME") or host
        ad["Machine"] = host
        ad["MyAddress"] = self.local_address
        ad["CondorVersion"] = VERSION
        ad["CondorPlatform"] = PLATFORM
        ad["UpdateInterval"] = int(SELF_AD_INTERVAL)
        return ad

    def close(self) -> None:
        super().close()
        for path in self.written:
            with contextlib.suppress(OSError):
                os.unlink(path)
        self.written.clear()


def create_signing_key_if_missing(
    config: Config, daemons: Collection[str], log: logging.Logger
) -> None:
    """Make the pool's token signing key (SEC_TOKEN_POOL_SIGNING_KEY_FILE) if it is missing,
    as HTCondor's collector does when it starts and reconfigures: tokens for remote users
    need it."""
    if COLLECTOR not in daemons:
        return
    from epcore.net.tokens import POOL, TokenSettings, create_signing_key

    path = Path(TokenSettings.from_lookup(config.get).pool_key_file)
    try:
        if create_signing_key(path):
            log.info("Created %s token signing key in file %s", POOL, path)
    except OSError as error:
        log.warning("Failed to create %s token signing key in file %s: %s", POOL, path, error)


def build_listener(
    config: Callable[[], Config],
    daemons: Collection[str],
    *,
    collector_handlers: dict[Command, Handler] | None,
    collector: CollectorLink | None,
    role_handlers: Iterable[Mapping[Command, Handler]] = (),
    schedd_handlers: dict[Command, Handler] | None = None,
    local_address: str,
    log: logging.Logger,
) -> PoolListener:
    """The pool's listener with its command table and security (module docstring)."""
    table = CommandTable()
    for command, handler in daemon_core_handlers(config).items():
        table.register(command, handler)
    for handlers in (collector_handlers or {}, schedd_handlers or {}, *role_handlers):
        for command, handler in handlers.items():
            table.register(command, handler)
    security = SecurityServer(
        config,
        table.levels,
        methods=default_registry(),
        log=log,
        pool_user=pool_user(config()),
        # AES-GCM after an ECDH exchange, as HTCondor 9+ negotiates it.
        key_exchange=EcdhKeyExchange(),
    )
    host, port = listen_address(config(), daemons)
    return PoolListener(
        host,
        port,
        table,
        security,
        config=config,
        daemons=daemons,
        collector=collector,
        local_address=local_address,
        log=log,
    )
