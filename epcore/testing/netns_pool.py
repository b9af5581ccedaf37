"""A whole pool of hosts in network namespaces: a central manager, a submit host and execute
hosts, each a separate ``ep run`` (issue 23's multi-host tests).

Public for plugin authors: ``pytest_plugins = ["epcore.testing.system",
"epcore.testing.netns", "epcore.testing.netns_pool"]`` gives ``netns_hosts`` (a started pool
of two execute hosts) and ``netns_hosts_factory`` (choose the number of execute hosts, their
CPUs and extra configuration). Every host has its own LOCAL_DIR and configuration
(:class:`epcore.testing.netns.NetnsPool`), CONDOR_HOST naming the central manager's address
on the bridge, a DAEMON token made by ``ep token create`` and the pool's signing key (to verify
its callers' tokens). The key is made before anything starts and copied to every host, as an
admin installs it, so every host starts at once and
the pool is ready in about one UPDATE_INTERVAL after the slowest ``ep run`` is up; the
fixture returns once every execute host's slots are in the collector. The hosts go with the
:class:`NetnsPool` (no process, namespace, veth, LOCAL_DIR or cgroup left).

The test process stays in the root namespace, where the hosts' addresses do not exist: it
reaches them from a thread that entered a host's namespace (:func:`inside`), or runs ``ep``
commands in a forked child that entered it (:meth:`NetnsHosts.ep`).
"""

from __future__ import annotations

import ctypes
import os
import shutil
import threading
import time
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import TypeVar

import pytest

from epcore.classad import ClassAd
from epcore.config import Config
from epcore.net import commands
from epcore.net.client import query_collector
from epcore.net.tokens import POOL, TokenSettings, create_signing_key
from epcore.runtime.control import ControlError
from epcore.testing.netns import COLLECTOR_PORT, NETNS_DIR, Host, NetnsPool
from epcore.testing.pool import CommandResult, pool_token, run_ep
from epcore.testing.system import SlotUser

Result = TypeVar("Result")

#: setns(2)'s flag for a network namespace (os.setns exists only from Python 3.12).
CLONE_NEWNET = 0x40000000


def enter_namespace(namespace: str) -> None:
    """Move the calling thread into the network namespace ``namespace`` (setns(2) changes
    only the calling thread: sockets it opens afterwards live in that namespace)."""
    libc = ctypes.CDLL(None, use_errno=True)
    descriptor = os.open(NETNS_DIR / namespace, os.O_RDONLY | os.O_CLOEXEC)
    try:
        if libc.setns(descriptor, CLONE_NEWNET) != 0:
            number = ctypes.get_errno()
            raise OSError(number, f"setns into {namespace}: {os.strerror(number)}")
    finally:
        os.close(descriptor)


def inside(namespace: str, call: Callable[[], Result], timeout: float = 60.0) -> Result:
    """``call()`` run in a thread of its own inside ``namespace``; its result or its error."""
    outcome: list[Result] = []
    failure: list[BaseException] = []

    def run() -> None:
        try:
            enter_namespace(namespace)
            outcome.append(call())
        except BaseException as error:  # handed to the caller's thread
            failure.append(error)

    thread = threading.Thread(target=run, name=f"in-{namespace}", daemon=True)
    thread.start()
    thread.join(timeout)
    if thread.is_alive():
        raise TimeoutError(f"a call inside {namespace} took more than {timeout} s")
    if failure:
        raise failure[0]
    return outcome[0]


def _key_path(host: Host) -> Path:
    """Where ``host``'s daemons read the pool's signing key."""
    settings = TokenSettings.from_lookup(Config.load(host.config_path).get)
    return settings.key_path(POOL)


class NetnsHosts:
    """A central manager, a submit host and execute hosts on one :class:`NetnsPool`."""

    def __init__(self, netns: NetnsPool, *, lifetime: int = 600) -> None:
        self.netns = netns
        self.manager = netns.add_host("cm", "CentralManager", lifetime=lifetime)
        self.submit = netns.add_host("submit", "Submit")
        self.executes: list[Host] = []
        self.key = _key_path(self.manager)
        create_signing_key(self.key)
        self.token = pool_token(self.manager.config_path)
        self.share_key(self.submit)

    def share_key(self, host: Host) -> None:
        """Give ``host`` the pool's signing key, as an admin copies it to every host of a
        pool: a daemon verifies the tokens of the peers that call it with that key."""
        path = _key_path(host)
        path.parent.mkdir(mode=0o700, parents=True, exist_ok=True)
        shutil.copy2(self.key, path)
        path.chmod(0o600)

    def add_execute(
        self,
        name: str | None = None,
        *,
        token: str | None = "pool",
        cpus: int = 1,
        memory: int = 1024,
        extra: str = "",
    ) -> Host:
        """A new execute host, started, holding the pool's token and key (``token="pool"``),
        or, as a host from outside the pool, no key and another token (its text) or none
        (None)."""
        host = self.netns.add_host(
            name or f"exec{len(self.executes) + 1}", "Execute", cpus=cpus, memory=memory,
            extra=extra,
        )  # fmt: skip
        if token == "pool":
            self.share_key(host)
        host.start(self.token if token == "pool" else token)
        self.executes.append(host)
        return host

    def start(self) -> None:
        """Start the central manager and the submit host (execute hosts start when added)."""
        self.manager.start()
        self.submit.start(self.token)

    @property
    def collector(self) -> str:
        """The collector's address, as ``-pool`` takes it."""
        return f"{self.manager.address}:{COLLECTOR_PORT}"

    def query(
        self,
        command: commands.Command = commands.QUERY_STARTD_ADS,
        *,
        constraint: str | None = None,
        viewer: Host | None = None,
    ) -> list[ClassAd]:
        """The collector's ads of ``command``, asked from ``viewer``'s namespace (the submit
        host by default)."""
        config = Config.load(self.manager.config_path)
        where = viewer or self.submit
        return inside(
            where.namespace,
            lambda: query_collector(
                self.manager.address, COLLECTOR_PORT, command.number, config,
                constraint=constraint,
            ),
        )  # fmt: skip

    def slots_of(self, host: Host) -> list[ClassAd]:
        """The collector's slot ads whose MyAddress is ``host``'s."""
        prefix = f"<{host.address}:"
        return [ad for ad in self.query() if str(ad.evaluate("MyAddress")).startswith(prefix)]

    def check_alive(self) -> None:
        """AssertionError with its log's end when a host's ``ep run`` has exited (one the
        test killed on purpose is gone as it should be)."""
        for host in (self.manager, self.submit, *self.executes):
            if not host.killed:
                host.process.check_alive()

    def wait(self, condition: Callable[[], bool], timeout: float, what: str) -> None:
        """Poll ``condition`` until true; fails after ``timeout`` s or when a host died."""
        deadline = time.monotonic() + timeout
        while True:
            self.check_alive()
            if condition():
                return
            if time.monotonic() >= deadline:
                raise AssertionError(f"timed out after {timeout} s waiting for {what}{self.hint()}")
            time.sleep(0.25)

    def hint(self) -> str:
        """The ends of every host's daemon logs, for a failed wait's message."""
        parts = []
        for host in (self.manager, self.submit, *self.executes):
            for name in ("CollectorLog", "NegotiatorLog", "SchedLog", "StartLog"):
                text = host.log(name)
                if text:
                    parts.append(f"\n-- {host.name} {name}:\n{text[-800:]}")
        return "".join(parts)

    def wait_for_slots(self, hosts: list[Host] | None = None, timeout: float = 90.0) -> None:
        """Wait until each of ``hosts`` (every execute host) has its slot ads in the
        collector; a timeout names the hosts missing."""
        chosen = self.executes if hosts is None else hosts
        missing = list(chosen)

        def advertised() -> bool:
            try:
                ads = self.query()
            except OSError:  # the collector is not listening yet
                return False
            addresses = {str(ad.evaluate("MyAddress")).split(":")[0] for ad in ads}
            missing[:] = [host for host in chosen if f"<{host.address}" not in addresses]
            return not missing

        try:
            self.wait(advertised, timeout, "every execute host's slots in the collector")
        except AssertionError as error:
            raise AssertionError(f"missing {[h.name for h in missing]}: {error}") from None

    def wait_for_schedd(self, timeout: float = 60.0) -> None:
        """Wait until the submit host's schedd answers on its control socket."""

        def answers() -> bool:
            try:
                self.submit.process.jobs()
            except ControlError:
                return False
            return True

        self.wait(answers, timeout, "the submit host's schedd")

    def ep(
        self, host: Host, *args: str, user: SlotUser | None = None, cwd: str | None = None
    ) -> CommandResult:
        """``ep ARGS --config <host's>`` run inside ``host``'s namespace as ``user`` (root
        when None), from ``cwd``."""
        return run_ep(
            [*args, "--config", str(host.config_path)],
            uid=user.uid if user else 0,
            gid=user.gid if user else 0,
            cwd=cwd,
            enter=lambda: enter_namespace(host.namespace),
        )


@pytest.fixture
def netns_hosts_factory(netns_pool: NetnsPool) -> Callable[..., NetnsHosts]:
    """``netns_hosts_factory(executes=2, cpus=1, memory=1024, extra="", lifetime=600)``: a
    started :class:`NetnsHosts`, every execute host's slots in the collector."""

    def make(
        executes: int = 2, *, cpus: int = 1, memory: int = 1024, extra: str = "",
        lifetime: int = 600,
    ) -> NetnsHosts:  # fmt: skip
        hosts = NetnsHosts(netns_pool, lifetime=lifetime)
        hosts.start()
        for _ in range(executes):
            hosts.add_execute(cpus=cpus, memory=memory, extra=extra)
        hosts.wait_for_slots()
        hosts.wait_for_schedd()
        return hosts

    return make


@pytest.fixture
def netns_hosts(netns_hosts_factory: Callable[..., NetnsHosts]) -> Iterator[NetnsHosts]:
    """A started pool: central manager, submit host, two execute hosts (one CPU each)."""
    yield netns_hosts_factory()
