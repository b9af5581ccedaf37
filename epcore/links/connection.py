"""Reaching the pool's collector from another process: where it is (COLLECTOR_HOST, else
CONDOR_HOST; port 0: its address file), and a connection to it from this host's
NETWORK_INTERFACE, for the links of :mod:`epcore.links`."""

from __future__ import annotations

import socket
from typing import Final

from epcore.config import Config
from epcore.errors import EpError
from epcore.net.client import connect
from epcore.net.conversation import Refused, Stream
from epcore.net.frames import FrameError, Framer
from epcore.net.sinful import parse_sinful
from epcore.net.tools import parse_pool

#: Seconds a connection to the collector and each of its steps may take.
CONNECT_TIMEOUT: Final = 5.0
#: What a broken or refused conversation raises.
FAILURES: Final = (OSError, Refused, FrameError, EpError)


def collector_host(config: Config) -> str | None:
    """Where the pool's collector is: COLLECTOR_HOST's first entry, else CONDOR_HOST's
    (HTCondor's default COLLECTOR_HOST is $(CONDOR_HOST)); None when neither names one."""
    for knob in ("COLLECTOR_HOST", "CONDOR_HOST"):
        text = (config.get(knob) or "").replace(",", " ").split()
        if text:
            return text[0]
    return None


def tcp_address(host: str, port: int) -> str:
    """The sinful string of a TCP address."""
    return f"<[{host}]:{port}>" if ":" in host else f"<{host}:{port}>"


def open_connection(config: Config, host: str, port: int) -> tuple[socket.socket, Stream]:
    """A connection to ``host:port`` from NETWORK_INTERFACE's address when it names one (as
    HTCondor binds its outgoing sockets), so that the peer sees this host's address."""
    interface = (config.get("NETWORK_INTERFACE") or "").strip()
    if not interface or interface == "*" or interface.startswith("0.0.0.0"):
        return connect(host, port, CONNECT_TIMEOUT)
    sock = socket.create_connection(
        (host, port), timeout=CONNECT_TIMEOUT, source_address=(interface, 0)
    )
    local, peer = sock.getsockname(), sock.getpeername()
    stream = Stream(Framer(), (str(local[0]), int(local[1])), (str(peer[0]), int(peer[1])))
    return sock, stream


def address_file(path: str | None) -> tuple[str, int]:
    """The host and port in the first line of a daemon's address file."""
    if not path:
        raise EpError("COLLECTOR_HOST's port is 0 and no COLLECTOR_ADDRESS_FILE is set")
    try:
        with open(path, encoding="utf-8") as handle:
            first = handle.readline().strip()
    except OSError as error:
        raise EpError(f"cannot read the collector's address in {path}: {error.strerror}") from None
    where = parse_sinful(first)
    return where.host, where.port


def collector_address(config: Config) -> tuple[str, int]:
    """The collector's host and port (EpError when no knob names one)."""
    where = collector_host(config)
    if where is None:
        raise EpError("neither COLLECTOR_HOST nor CONDOR_HOST names the pool's collector")
    host, port = parse_pool(where)
    if port == 0:
        # Port 0: the collector took a free port and wrote it to its address file, as
        # HTCondor's clients read it on the collector's own host.
        return address_file(config.get("COLLECTOR_ADDRESS_FILE"))
    return host, port
