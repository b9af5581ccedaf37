"""The listener's log throttle tells kinds of refusal apart, not their varying details."""

from __future__ import annotations

from types import SimpleNamespace

from epcore.net.listener import _kind


def _of(reason: str) -> str:
    connection = SimpleNamespace(stream=SimpleNamespace(peer=("127.0.0.1", 40000)))
    return _kind("dropped", connection, reason)  # type: ignore[arg-type]


def test_kind_drops_numbers_and_bytes_but_keeps_the_words() -> None:
    """Two bad headers with different random bytes are one kind; a bad header and an absurd
    length are two, so that a flood of one cannot hide the other in the log."""
    first = _of("unrecognized packet header 41 ab c3 44 ff: end byte 65")
    second = _of("unrecognized packet header 00 ff 10 2e 30: end byte 7")
    absurd = _of("packet of 2147483647 bytes announced; the most a packet may hold")
    assert first == second
    assert first != absurd
    assert _of("no progress for 2 s while waiting") == _of("no progress for 20 s while waiting")
