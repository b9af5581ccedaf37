"""The listener's log throttle tells kinds of refusal apart, not their varying details."""

from __future__ import annotations

from epcore.net.listener import reason_kind


def test_reason_kind_drops_numbers_and_bytes_but_keeps_the_words() -> None:
    """Two bad headers with different bytes are one kind; a bad header and an absurd
    length are two, so that a flood of one cannot hide the other in the log."""
    first = reason_kind("unrecognized packet header 41 42 43 44 45: end byte 65")
    second = reason_kind("unrecognized packet header 00 ff 10 20 30: end byte 7")
    absurd = reason_kind("packet of 2147483647 bytes announced; the most a packet may hold")
    assert first == second
    assert first != absurd
    assert reason_kind("no progress for 2 s while waiting for the command") == reason_kind(
        "no progress for 20 s while waiting for the command"
    )
