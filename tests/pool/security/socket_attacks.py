"""Floods of a pool's socket, each run by a real unprivileged user in a forked process.

:func:`start_as` forks; the child raises its descriptor limit (it is still root then),
becomes the user (setgroups, setgid, setuid) and runs one attack against the socket until its
deadline; what it saw comes back as JSON through a pipe (:meth:`Attack.result`). The attacks
are plain functions of (socket path, deadline, arguments) using only sockets, so that the
child needs nothing the user cannot reach. :class:`MemoryWatch` samples the pool's resident
memory (with its children) in a thread while an attack runs.
"""

from __future__ import annotations

import contextlib
import errno
import json
import os
import random
import resource
import select
import selectors
import socket
import threading
import time
from collections.abc import Callable
from typing import Any

import psutil

from epcore.classad import ClassAd
from epcore.runtime import framing
from epcore.runtime.control import request
from epcore.testing.system import SlotUser

Outcome = dict[str, Any]


class Attack:
    """A running attack: its child process and the pipe its outcome comes back on."""

    def __init__(self, pid: int, pipe: int, name: str) -> None:
        self.pid = pid
        self.pipe = pipe
        self.name = name

    def result(self, timeout: float = 120.0) -> Outcome:
        """The attack's outcome (AssertionError when it failed or did not end in time)."""
        deadline = time.monotonic() + timeout
        chunks: list[bytes] = []
        os.set_blocking(self.pipe, False)
        while True:
            with contextlib.suppress(BlockingIOError):
                chunk = os.read(self.pipe, 65536)
                if not chunk:
                    break
                chunks.append(chunk)
                continue
            if time.monotonic() > deadline:
                os.kill(self.pid, 9)
                break
            time.sleep(0.05)
        os.close(self.pipe)
        os.waitpid(self.pid, 0)
        text = b"".join(chunks).decode()
        assert text, f"attack {self.name} reported nothing"
        outcome: Outcome = json.loads(text)
        assert "crash" not in outcome, f"attack {self.name} failed: {outcome['crash']}"
        return outcome


def start_as(
    user: SlotUser, attack: Callable[..., Outcome], *args: object, descriptors: int = 4096
) -> Attack:
    """Run ``attack(*args)`` in a child that is ``user``, allowed ``descriptors`` open files."""
    read_end, write_end = os.pipe()
    pid = os.fork()
    if pid == 0:  # pragma: no cover - the child
        os.close(read_end)
        outcome: Outcome
        try:
            # Within the hard limit: this container does not let even root raise it.
            hard = resource.getrlimit(resource.RLIMIT_NOFILE)[1]
            allowed = descriptors if hard == resource.RLIM_INFINITY else min(descriptors, hard)
            resource.setrlimit(resource.RLIMIT_NOFILE, (allowed, hard))
            os.setgroups([])
            os.setgid(user.gid)
            os.setuid(user.uid)
            outcome = attack(*args)
        except BaseException as error:
            outcome = {"crash": repr(error)}
        data = json.dumps(outcome).encode()
        with contextlib.suppress(OSError):
            while data:
                data = data[os.write(write_end, data) :]
        os._exit(0)
    os.close(write_end)
    return Attack(pid, read_end, attack.__name__)


def run_as(user: SlotUser, attack: Callable[..., Outcome], *args: object, **kw: Any) -> Outcome:
    """Run an attack as ``user`` and wait for its outcome."""
    return start_as(user, attack, *args, **kw).result()


class MemoryWatch:
    """Samples the resident memory of ``pid`` and its children every ``period`` seconds."""

    def __init__(self, pid: int, period: float = 0.1) -> None:
        self.process = psutil.Process(pid)
        self.period = period
        self.samples: list[int] = []
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, daemon=True)

    def rss(self) -> int:
        total = 0
        for process in (self.process, *self.process.children(recursive=True)):
            with contextlib.suppress(psutil.Error):
                total += process.memory_info().rss
        return total

    def _run(self) -> None:
        while not self._stop.is_set():
            with contextlib.suppress(psutil.Error):
                self.samples.append(self.rss())
            self._stop.wait(self.period)

    def __enter__(self) -> MemoryWatch:
        self._thread.start()
        return self

    def __exit__(self, *_exc: object) -> None:
        self._stop.set()
        self._thread.join(10)

    @property
    def peak_mb(self) -> float:
        return max(self.samples, default=0) / 2**20


# -- the attacks (they run in the child, as the user) --------------------------------------


def _connect(path: str, blocking: bool = False, patience: float = 5.0) -> socket.socket | None:
    """A connection to ``path`` (None when none came within ``patience`` seconds)."""
    sock = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    sock.setblocking(False)
    give_up = time.monotonic() + patience
    while True:
        try:
            sock.connect(path)
            break
        except (BlockingIOError, InterruptedError):
            # A Unix socket's full backlog: wait for the pool to accept some.
            if time.monotonic() > give_up:
                sock.close()
                return None
            time.sleep(0.001)
        except OSError:
            sock.close()
            return None
    sock.setblocking(blocking)
    return sock


def _answers(data: bytes) -> list[str]:
    """The Error texts (or "ok") of the answer ads in ``data``."""
    found = []
    for line in data.split(b"\n"):
        if not line.strip():
            continue
        try:
            ad = framing.decode(line, None)
        except framing.ProtocolError:
            found.append("unreadable")
            continue
        error = ad.evaluate("Error")
        found.append(error if isinstance(error, str) else "ok")
    return found


def _pump(
    socks: list[socket.socket],
    payload: Callable[[int], bytes],
    total: int,
    deadline: float,
    until_answered: bool = False,
) -> dict[int, bytes]:
    """Send ``total`` bytes of ``payload(i)`` on each socket (as fast as each takes them)
    while reading whatever comes back, until each is closed (or, ``until_answered``, has an
    answer) or ``deadline`` passes."""
    selector = selectors.DefaultSelector()
    sent = dict.fromkeys(range(len(socks)), 0)
    received: dict[int, bytes] = dict.fromkeys(range(len(socks)), b"")
    for index, sock in enumerate(socks):
        selector.register(sock, selectors.EVENT_READ | selectors.EVENT_WRITE, index)
    while selector.get_map() and time.monotonic() < deadline:
        for key, events in selector.select(0.2):
            index, sock = key.data, socks[key.data]
            try:
                if events & selectors.EVENT_READ:
                    chunk = sock.recv(65536)
                    if not chunk:
                        selector.unregister(sock)
                        continue
                    received[index] += chunk
                    if until_answered and sent[index] >= total and chunk.endswith(b"\n"):
                        selector.unregister(sock)
                        continue
                if events & selectors.EVENT_WRITE and sent[index] < total:
                    data = payload(index)  # sent over and over until ``total`` bytes
                    start = sent[index] % len(data)
                    sent[index] += sock.send(data[start : start + total - sent[index]])
                    if sent[index] >= total:
                        selector.modify(sock, selectors.EVENT_READ, index)
            except BlockingIOError:
                continue
            except OSError:
                # Refused: the pool's answer may still wait in the buffer.
                selector.unregister(sock)
                with contextlib.suppress(OSError):
                    received[index] += sock.recv(65536)
    selector.close()
    return received


def unfinished_ads(
    path: str, seconds: float, connections: int, size: int, again: bool = False
) -> Outcome:
    """Open ``connections`` connections and send each an ad of ``size`` bytes that never ends
    (no newline), once or (``again``) round after round until ``seconds`` pass; what the
    pool answered on each."""
    deadline = time.monotonic() + seconds
    chunk = b'[ Command = "QueryJobs"; Blob = "' + b"x" * 65536
    answers: list[list[str]] = []
    connected = 0
    while time.monotonic() < deadline:
        socks = [s for s in (_connect(path) for _ in range(connections)) if s is not None]
        connected += len(socks)
        received = _pump(socks, lambda _i: chunk, size, deadline)
        for sock in socks:
            sock.close()
        answers.extend(_answers(d) for d in received.values())
        if not again:
            break
    return {"connected": connected, "answers": answers}


def big_requests(path: str, seconds: float, size: int, connections: int = 4) -> Outcome:
    """Send valid requests of about ``size`` bytes, again and again on ``connections``
    connections, for ``seconds``; the answers seen."""

    def query(count: int) -> bytes:
        names = [f"Attribute{n:07d}" for n in range(count)]
        return framing.encode(request("QueryJobs", Projection=names, Constraint="false"))

    line = query(size // 20)
    line = query(int(size // 20 * size / len(line)) - 1)
    deadline = time.monotonic() + seconds
    answers: list[str] = []
    requests = 0
    while time.monotonic() < deadline:
        socks = [s for s in (_connect(path) for _ in range(connections)) if s is not None]
        requests += len(socks)
        received = _pump(socks, lambda _i: line, len(line), deadline, until_answered=True)
        for sock in socks:
            sock.close()
        for data in received.values():
            answers.extend(_answers(data))
    return {"requests": requests, "answers": answers, "size": len(line)}


def unread_queries(path: str, seconds: float, count: int, history: bool = True) -> Outcome:
    """Send ``count`` history queries on one connection and never read the answers; whether
    the pool closed the connection before ``seconds`` passed, and after how long."""
    sock = _connect(path, blocking=False)
    assert sock is not None, "cannot connect"
    line = framing.encode(request("QueryJobs", History=history))
    started = time.monotonic()
    deadline = started + seconds
    queued = line * count
    sent = 0
    closed_after = None
    # The pool's end closing shows as a hang-up, without reading a byte of the answers.
    poller = select.poll()
    poller.register(sock, select.POLLHUP)
    while time.monotonic() < deadline:
        if sent < len(queued):
            try:
                sent += sock.send(queued[sent : sent + 65536])
            except BlockingIOError:
                pass
            except OSError:
                closed_after = time.monotonic() - started
                break
        if any(event & select.POLLHUP for _, event in poller.poll(50)):
            closed_after = time.monotonic() - started
            break
    sock.close()
    return {"sent_requests": sent // len(line), "closed_after": closed_after}


def idle_connections(path: str, seconds: float, count: int) -> Outcome:
    """Try to open ``count`` connections as fast as possible and hold them until ``seconds``
    pass; how many connected, how many were refused with an answer, and the answers."""
    deadline = time.monotonic() + seconds
    socks: list[socket.socket] = []
    failures: dict[str, int] = {}
    for _ in range(count):
        if time.monotonic() > deadline:
            break
        sock = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        sock.setblocking(False)
        while True:
            try:
                sock.connect(path)
                socks.append(sock)
                break
            except (BlockingIOError, InterruptedError):
                time.sleep(0.001)  # the backlog is full: wait for the pool to take some
                if time.monotonic() > deadline:
                    sock.close()
                    break
            except OSError as error:
                name = errno.errorcode.get(error.errno or 0, str(error))
                failures[name] = failures.get(name, 0) + 1
                sock.close()
                break
    refusals: dict[str, int] = {}
    open_ones = 0
    while time.monotonic() < deadline:
        time.sleep(0.2)
    for sock in socks:
        try:
            data = sock.recv(65536)
        except BlockingIOError:
            open_ones += 1
            continue
        except OSError:
            data = b""
        for answer in _answers(data) or ["closed without an answer"]:
            refusals[answer[:120]] = refusals.get(answer[:120], 0) + 1
    for sock in socks:
        sock.close()
    return {
        "connected": len(socks),
        "still_open": open_ones,
        "refusals": refusals,
        "failures": failures,
    }


def garbage_lines(path: str, seconds: float, seed: int = 1) -> Outcome:
    """Send random bytes and random broken lines on fresh connections for ``seconds``."""
    rng = random.Random(seed)
    deadline = time.monotonic() + seconds
    sent = 0
    while time.monotonic() < deadline:
        sock = _connect(path, blocking=True)
        if sock is None:
            time.sleep(0.05)
            continue
        with contextlib.suppress(OSError):
            for _ in range(rng.randint(1, 20)):
                kind = rng.random()
                if kind < 0.4:
                    line = bytes(rng.getrandbits(8) for _ in range(rng.randint(1, 2000)))
                elif kind < 0.8:
                    line = str(ClassAd({"Command": rng.choice(["Submit", "QueryJobs", "x"])}))[
                        : rng.randint(1, 40)
                    ].encode()
                else:
                    line = b"[ Command = " + b"(" * rng.randint(1, 50)
                sock.sendall(line + b"\n")
                sent += 1
        sock.close()
    return {"sent_lines": sent}
