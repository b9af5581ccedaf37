"""The file-transfer conversations (epcore.transfer.wire), a sender and a receiver over a
real socket pair, each driven as a blocking client drives it."""

from __future__ import annotations

import errno
import os
import socket
import threading
from collections.abc import Iterator
from pathlib import Path

import attrs
import pytest

from epcore.net.conversation import Refused, Stream, run_blocking
from epcore.net.frames import Framer
from epcore.transfer import wire


@attrs.define
class _DirSink:
    """Writes what arrives below ``root``; names in ``refused`` fail with EACCES."""

    root: Path
    refused: frozenset[str] = frozenset()

    def target(self, name: str) -> str:
        return str(self.root / name)

    def mkdir(self, name: str, mode: int) -> None:
        (self.root / name).mkdir(exist_ok=True)

    def create(self, name: str, mode: int) -> int:
        if name in self.refused:
            raise OSError(errno.EACCES, os.strerror(errno.EACCES))
        return os.open(self.root / name, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, mode)


def _file(name: str, path: Path) -> wire.Outgoing:
    def opener() -> tuple[int, int]:
        return os.open(path, os.O_RDONLY), 0o640

    return wire.Outgoing(name, str(path), opener=opener)


def _exchange(
    items: Iterator[wire.Outgoing], sink: _DirSink, *, limit: int | None = None
) -> tuple[wire.Outcome, wire.Outcome]:
    """Run a sender and a receiver against each other; both outcomes."""
    left, right = socket.socketpair()
    left.settimeout(10)
    right.settimeout(10)
    results: dict[str, object] = {}

    def receiver() -> None:
        stream = Stream(Framer(), ("r", 1), ("s", 2))
        try:
            results["received"] = run_blocking(
                right, stream, wire.receive_files(stream, sink, 12, limit=limit)
            )
        except Exception as error:  # reported by the assertion below
            results["received"] = error

    thread = threading.Thread(target=receiver)
    thread.start()
    stream = Stream(Framer(), ("s", 2), ("r", 1))
    try:
        sent = run_blocking(left, stream, wire.send_files(stream, items, 13))
    finally:
        thread.join(10)
        left.close()
        right.close()
    received = results["received"]
    assert isinstance(received, wire.Outcome), received
    return sent, received


def test_files_and_directories_arrive_whole(tmp_path: Path) -> None:
    """Files (one larger than the acknowledgement window), empty ones and directories arrive
    with their contents and modes; both sides count the same bytes and report success."""
    source = tmp_path / "src"
    source.mkdir()
    big = os.urandom(wire.WINDOW + wire.CHUNK + 17)
    (source / "big").write_bytes(big)
    (source / "empty").write_bytes(b"")
    (source / "small").write_bytes(b"hello")
    target = tmp_path / "dst"
    target.mkdir()
    items = iter(
        [
            _file("big", source / "big"),
            wire.Outgoing("d", "", 0o755, directory=True),
            _file("d/small", source / "small"),
            _file("empty", source / "empty"),
        ]
    )
    sent, received = _exchange(items, _DirSink(target))
    assert (target / "big").read_bytes() == big
    assert (target / "d" / "small").read_bytes() == b"hello"
    assert (target / "empty").read_bytes() == b""
    assert (target / "big").stat().st_mode & 0o777 == 0o640
    assert sent.bytes == received.bytes == len(big) + 5
    assert sent.failure is None and received.failure is None
    assert sent.peer.evaluate("Result") == 0 and received.peer.evaluate("Result") == 0


def test_a_file_the_sender_cannot_read_ends_the_transfer_with_its_errno(tmp_path: Path) -> None:
    """A missing source stops the sender, whose report names the file with errno 2."""
    (tmp_path / "dst").mkdir()
    items = iter([_file("gone", tmp_path / "gone"), _file("never", tmp_path / "never")])
    sent, received = _exchange(items, _DirSink(tmp_path / "dst"))
    assert sent.failure is not None and sent.failure.code == errno.ENOENT
    assert received.peer.evaluate("HoldReasonCode") == 13
    assert received.peer.evaluate("HoldReasonSubCode") == errno.ENOENT
    reason = str(received.peer.evaluate("HoldReason"))
    assert reason == f"reading from file {tmp_path}/gone: (errno 2) No such file or directory"


def test_a_file_the_receiver_cannot_write_is_reported_to_the_sender(tmp_path: Path) -> None:
    """The receiver reads and drops the rest of the stream after a file it may not write
    (writing nothing more) and reports that first failure to the sender with its errno."""
    (tmp_path / "a").write_bytes(b"a" * 100)
    (tmp_path / "b").write_bytes(b"b" * 100)
    target = tmp_path / "dst"
    target.mkdir()
    items = iter([_file("a", tmp_path / "a"), _file("b", tmp_path / "b")])
    sent, received = _exchange(items, _DirSink(target, frozenset({"a"})))
    assert not (target / "a").exists()
    assert not (target / "b").exists()
    assert received.bytes == 200
    assert received.failure is not None
    assert sent.peer.evaluate("HoldReasonCode") == 12
    assert sent.peer.evaluate("HoldReasonSubCode") == errno.EACCES
    assert str(sent.peer.evaluate("HoldReason")).startswith(f"writing to file {target}/a:")


def test_the_receiver_refuses_bytes_over_its_limit(tmp_path: Path) -> None:
    """A file that would take the transfer past the receiver's limit is not written."""
    (tmp_path / "a").write_bytes(b"a" * 1000)
    target = tmp_path / "dst"
    target.mkdir()
    sent, received = _exchange(iter([_file("a", tmp_path / "a")]), _DirSink(target), limit=999)
    assert not (target / "a").exists()
    assert received.failure is not None and received.failure.code == errno.EFBIG
    assert sent.peer.evaluate("Result") == 1


def test_a_chunk_longer_than_announced_is_refused(tmp_path: Path) -> None:
    """A sender whose contents overrun the size it announced is cut off."""
    left, right = socket.socketpair()
    right.settimeout(5)
    framer = Framer()
    stream = Stream(framer, ("s", 2), ("r", 1))
    header = stream.writer().put_int(wire.XFER_FILE).put_string("f").put_int(0o600).put_int(4)
    chunk = stream.writer().put_int(8).put_bytes(b"12345678")
    left.sendall(framer.frame(header.bytes()) + framer.frame(chunk.bytes()))
    receiving = Stream(Framer(), ("r", 1), ("s", 2))
    with pytest.raises(Refused, match="a chunk of 8 bytes, 4 left"):
        run_blocking(right, receiving, wire.receive_files(receiving, _DirSink(tmp_path), 12))
    left.close()
    right.close()
