"""Bad input at a real ``ep run`` pool's CEDAR port, from many connections at once: random
bytes, truncated frames, absurd lengths, deeply nested ClassAds, half-finished handshakes and
idle connections, while htcondor2 (in a subprocess) keeps querying the collector. The pool
answers every query, its memory and descriptors stay bounded, and each kind of refusal is
logged with its reason."""

from __future__ import annotations

import os
import random
import socket
import threading
import time
from collections.abc import Callable
from pathlib import Path

import pytest

from epcore.classad import ClassAd
from epcore.net.codec import Writer
from epcore.net.frames import Framer
from epcore.testing.cedar import run_htcondor2
from epcore.testing.pool import PoolProcess

pytestmark = pytest.mark.system

#: Seconds the fuzzing lasts, and the htcondor2 queries with it.
FUZZ_SECONDS = 8.0
#: Connections fuzzing at once.
THREADS = 32
QUERIES = f"""
import time
c = htcondor2.Collector()
answered, failures, slowest = 0, [], 0.0
end = time.time() + {FUZZ_SECONDS + 2}
while time.time() < end:
    started = time.time()
    try:
        n = len(c.query(htcondor2.AdType.Startd, True, ["Name"]))
        assert n >= 1, n
        answered += 1
    except Exception as error:
        failures.append(str(error))
    slowest = max(slowest, time.time() - started)
result = {{"answered": answered, "failures": failures, "slowest": slowest}}
"""


def _rss_kb(pid: int) -> int:
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith("VmRSS:"):
            return int(line.split()[1])
    raise AssertionError("no VmRSS")


def _descriptors(pid: int) -> int:
    return len(os.listdir(f"/proc/{pid}/fd"))


def _framed(message: bytes) -> bytes:
    return Framer().frame(message)


def _nested_query() -> bytes:
    # A raw QUERY_STARTD_ADS whose query ad holds one attribute nested 100,000 deep.
    depth = 100_000
    line = "Requirements = " + "(" * depth + "true" + ")" * depth
    writer = Writer().put_int(5).put_int(1).put_string(line).put_string("").put_string("")
    return _framed(writer.bytes())


def _half_handshake() -> bytes:
    policy = ClassAd()
    policy["Command"] = 5
    policy["AuthMethods"] = "FS"
    policy["Authentication"] = "REQUIRED"
    policy["NewSession"] = "YES"
    return _framed(Writer().put_int(60010).put_classad(policy).bytes())


#: The kinds of bad input: the bytes sent, and whether to hold the connection open after.
KINDS: dict[str, Callable[[random.Random], tuple[bytes, float]]] = {
    "random bytes": lambda rng: (rng.randbytes(rng.randint(1, 4096)), 0.0),
    "truncated frame": lambda rng: (b"\x01" + (1000).to_bytes(4, "big") + b"x" * 10, 0.0),
    "absurd length": lambda rng: (b"\x00\x7f\xff\xff\xff" + b"x" * 64, 0.0),
    "nested ad": lambda rng: (_nested_query(), 0.5),
    "half handshake": lambda rng: (_half_handshake(), 3.0),
    "idle": lambda rng: (b"", 3.0),
}


def _fuzz(host: str, port: int, seed: int, stop: float, counts: dict[str, int]) -> None:
    rng = random.Random(seed)
    while time.monotonic() < stop:
        kind = rng.choice(sorted(KINDS))
        data, hold = KINDS[kind](rng)
        try:
            with socket.create_connection((host, port), timeout=5) as sock:
                if data:
                    sock.sendall(data)
                if hold:
                    sock.settimeout(hold)
                    try:
                        while sock.recv(65536):
                            pass
                    except TimeoutError:
                        pass
        except OSError:
            pass  # the pool may close on us mid-send: that is the point
        counts[kind] = counts.get(kind, 0) + 1


def test_bad_input_from_many_connections_leaves_queries_answered(pool_factory) -> None:
    """Under FUZZ_SECONDS of bad input from THREADS connections at once, every htcondor2
    query is answered (none slower than 5 s), the pool's RSS grows by less than 64 MB and
    its descriptors return to what they were, and each kind of refusal is in the log."""
    pool: PoolProcess = pool_factory("CEDAR_CLIENT_TIMEOUT = 2\n")
    assert pool.process is not None
    pid = pool.process.pid
    address = (pool.directory / "log" / ".collector_address").read_text().splitlines()[0]
    host, _, port = address.strip("<>").partition(":")
    run_htcondor2(str(pool.config_path), "htcondor2.Collector().query(htcondor2.AdType.Startd)")
    rss_before, fds_before = _rss_kb(pid), _descriptors(pid)
    outcome: dict[str, object] = {}
    querier = threading.Thread(
        target=lambda: outcome.update(
            run_htcondor2(str(pool.config_path), QUERIES, timeout=FUZZ_SECONDS + 60)
        )
    )
    querier.start()
    stop = time.monotonic() + FUZZ_SECONDS
    counts: list[dict[str, int]] = [{} for _ in range(THREADS)]
    fuzzers = [
        threading.Thread(target=_fuzz, args=(host, int(port), seed, stop, counts[seed]))
        for seed in range(THREADS)
    ]
    for thread in fuzzers:
        thread.start()
    for thread in fuzzers:
        thread.join()
    querier.join()
    sent = {kind: sum(c.get(kind, 0) for c in counts) for kind in KINDS}
    assert all(sent.values()), sent
    assert outcome["failures"] == [], outcome
    assert isinstance(outcome["answered"], int) and outcome["answered"] >= 5, outcome
    assert isinstance(outcome["slowest"], float) and outcome["slowest"] < 5.0, outcome
    pool.wait_for(
        lambda: _descriptors(pid) <= fds_before + 2, 10, "the fuzzers' connections to close"
    )
    growth_mb = (_rss_kb(pid) - rss_before) / 1024
    assert growth_mb < 64, f"RSS grew by {growth_mb:.1f} MB ({sent})"
    log = pool.log("CollectorLog")
    for reason in (
        "unrecognized packet header",
        "packet of 2147483647 bytes announced",
        "the peer closed mid-message",
        "nested too deeply",
        "no progress for 2 s while waiting for",
    ):
        assert reason in log, reason
    assert pool.process.poll() is None
    print(
        f"fuzz: {sent}; htcondor2: {outcome['answered']} queries, slowest "
        f"{outcome['slowest']:.3f} s; RSS +{growth_mb:.1f} MB"
    )
