"""The startd <-> starter wire format: one ClassAd per line, framed by Channel over a socket."""

from __future__ import annotations

import os
import socket
import stat
import threading
from collections.abc import Iterator
from pathlib import Path

import pytest
from hypothesis import given
from hypothesis import strategies as st

from epcore.classad import ClassAd
from epcore.runtime import framing
from epcore.runtime.framing import Channel, ProtocolError
from epcore.starter import protocol

# Strings as a job's attributes may hold them: quotes, backslashes, newlines, any Unicode
# except NUL (ClassAd strings cannot hold it) and lone surrogates (not encodable).
_TEXT = st.text(alphabet=st.characters(blacklist_categories=("Cs",), blacklist_characters="\x00"))
_NAMES = st.from_regex(r"[A-Za-z_][A-Za-z0-9_]{0,12}", fullmatch=True).filter(
    lambda name: name.lower() != "command"
)
_SCALARS = st.one_of(
    _TEXT,
    st.booleans(),
    st.integers(-(2**63), 2**63 - 1),
    # Reals with a short exact decimal form, so that equality of the ads is exact.
    st.integers(-(10**9), 10**9).map(lambda n: n / 8),
)


def _ads(depth: int = 2) -> st.SearchStrategy[ClassAd]:
    values: st.SearchStrategy[object] = _SCALARS
    if depth > 0:
        values = st.one_of(_SCALARS, st.lists(_SCALARS, max_size=4), _ads(depth - 1))
    return st.dictionaries(_NAMES, values, max_size=6).map(ClassAd)


@given(payload=_ads(), command=st.sampled_from(protocol.STARTER_COMMANDS))
def test_encode_decode_round_trip(payload: ClassAd, command: str) -> None:
    """Any ad encodes to exactly one line that decodes back to the same ad."""
    sent = framing.message(command, payload)
    line = framing.encode(sent)
    assert line.endswith(b"\n") and line.count(b"\n") == 1
    assert framing.decode(line.rstrip(b"\n"), protocol.STARTER_COMMANDS) == sent


def test_message_copies_the_payload_and_sets_command() -> None:
    """message() copies the payload's attributes and leaves the payload itself untouched."""
    payload = ClassAd({"ExitCode": 3, "Reason": 'a "quoted"\nline'})
    sent = framing.message(protocol.FINISHED, payload)
    assert sent.evaluate("Command") == "Finished"
    assert sent.evaluate("ExitCode") == 3
    assert sent.evaluate("Reason") == 'a "quoted"\nline'
    assert "Command" not in payload


@pytest.mark.parametrize(
    ("line", "known", "named"),
    [
        (b"this is not a ClassAd", None, "unreadable message"),
        (b"[ Command = 1", None, "unreadable message"),
        (b'[ Command = "Hello" ] trailing junk', None, "unreadable message"),
        (b'[ Command = "Hel\\0lo" ]', None, "unreadable message"),
        (b"\xff\xfe[ Command = 1 ]", None, "unreadable message"),
        (b'[ Command = "Caf\xc3" ]', None, "unreadable message"),
        (b'[ Command = "Bogus" ]', protocol.STARTER_COMMANDS, "unknown Command 'Bogus'"),
        (b'[ Command = "Hello" ]', protocol.STARTD_COMMANDS, "unknown Command 'Hello'"),
        (b"[ ExitCode = 0 ]", protocol.STARTER_COMMANDS, "unknown Command"),
        (b"", protocol.STARTD_COMMANDS, "unknown Command"),
        (b"[ Command = 7 ]", protocol.STARTD_COMMANDS, "unknown Command 7"),
    ],
    ids=[
        "prose",
        "unterminated",
        "junk-after",
        "nul-escape",
        "bad-utf8",
        "truncated-utf8",
        "unknown-command",
        "wrong-direction",
        "no-command",
        "empty",
        "non-string-command",
    ],
)
def test_decode_of_a_malformed_line_names_the_problem(
    line: bytes, known: tuple[str, ...] | None, named: str
) -> None:
    """A line that is not a ClassAd, or whose Command is unknown, is a ProtocolError saying so."""
    with pytest.raises(ProtocolError, match=named.replace("(", r"\(")):
        framing.decode(line, known)


@pytest.mark.parametrize("command", protocol.STARTER_COMMANDS + protocol.STARTD_COMMANDS)
def test_decode_accepts_any_command_when_known_is_none(command: str) -> None:
    """With known=None every Command is accepted, including unknown ones."""
    assert framing.decode(f'[ Command = "{command}x" ]'.encode(), None).evaluate("Command") == (
        command + "x"
    )


@given(line=st.binary(max_size=200) | _TEXT.map(lambda t: f"[ Command = {t} ]".encode()))
def test_decode_never_raises_anything_but_protocol_error(line: bytes) -> None:
    """Whatever bytes arrive, decode either returns an ad or raises ProtocolError."""
    try:
        ad = framing.decode(line, protocol.STARTD_COMMANDS)
    except ProtocolError:
        return
    assert ad.evaluate("Command") in protocol.STARTD_COMMANDS


# -- Channel over a real socketpair -------------------------------------------------------


@pytest.fixture
def pair() -> Iterator[tuple[Channel, socket.socket]]:
    """A Channel (the startd's side) and the raw peer socket (the starter's side)."""
    ours, theirs = socket.socketpair()
    channel = Channel(ours, protocol.STARTER_COMMANDS)
    theirs.settimeout(10)
    try:
        yield channel, theirs
    finally:
        channel.close()
        theirs.close()


def _hello(n: int) -> ClassAd:
    return framing.message(protocol.HELLO, ClassAd({"N": n, "Text": f"line {n}\nnext"}))


def test_partial_line_waits_for_the_rest(pair: tuple[Channel, socket.socket]) -> None:
    """A message that arrives in pieces is delivered once, when its newline arrives."""
    channel, peer = pair
    line = framing.encode(_hello(1))
    peer.sendall(line[:10])
    assert list(channel.receive()) == []
    peer.sendall(line[10:-1])
    assert list(channel.receive()) == []
    peer.sendall(line[-1:])
    assert list(channel.receive()) == [_hello(1)]
    assert not channel.closed


def test_several_messages_in_one_chunk_come_out_in_order(
    pair: tuple[Channel, socket.socket],
) -> None:
    """Several messages (and blank lines) sent at once come out as separate ads, in order."""
    channel, peer = pair
    peer.sendall(b"".join(framing.encode(_hello(n)) + b"\n" for n in range(5)))
    assert list(channel.receive()) == [_hello(n) for n in range(5)]


def test_unknown_command_on_a_channel_raises(pair: tuple[Channel, socket.socket]) -> None:
    """A message whose Command the channel does not accept is a ProtocolError."""
    channel, peer = pair
    peer.sendall(b'[ Command = "Ack" ]\n')
    with pytest.raises(ProtocolError, match="unknown Command 'Ack'"):
        list(channel.receive())


def test_peer_close_delivers_what_was_sent_and_closes(
    pair: tuple[Channel, socket.socket],
) -> None:
    """Messages sent just before the peer closed are delivered, and the channel is closed."""
    channel, peer = pair
    peer.sendall(framing.encode(_hello(1)) + b'[ Command = "Upd')
    peer.close()
    assert list(channel.receive()) == [_hello(1)]
    assert channel.closed
    assert list(channel.receive()) == []


def test_send_to_a_closed_peer_closes_the_channel(pair: tuple[Channel, socket.socket]) -> None:
    """Writing to a peer that went away closes the channel instead of raising."""
    channel, peer = pair
    peer.close()
    channel.send(framing.message(protocol.ACK))
    assert channel.closed
    assert channel.fileno() >= 0


def test_send_queues_what_the_socket_does_not_take(pair: tuple[Channel, socket.socket]) -> None:
    """A message larger than the socket buffer stays pending and is written by later flushes."""
    channel, peer = pair
    big = framing.message(protocol.ACK, ClassAd({"Blob": "x" * (2 * 1024 * 1024)}))
    channel.send(big)
    assert channel.pending
    received = b""
    while not received.endswith(b"\n"):
        received += peer.recv(1 << 20)
        channel.flush()
    assert not channel.pending
    assert framing.decode(received.rstrip(b"\n"), None) == big


def test_a_line_longer_than_max_line_is_refused(pair: tuple[Channel, socket.socket]) -> None:
    """A peer that sends more than MAX_LINE bytes without a newline gets its channel closed."""
    channel, peer = pair

    def flood() -> None:
        chunk = b"x" * 65536
        try:
            for _ in range(framing.MAX_LINE // len(chunk) + 64):
                peer.sendall(chunk)
        except OSError:
            return

    writer = threading.Thread(target=flood)
    writer.start()
    try:
        with pytest.raises(ProtocolError, match=f"longer than {framing.MAX_LINE}"):
            for _ in range(100000):
                list(channel.receive())
        assert channel.closed
    finally:
        channel.close()
        writer.join(10)
    assert not writer.is_alive()


# -- socket_address -----------------------------------------------------------------------


@pytest.mark.parametrize("length", [10, 100])
def test_short_socket_paths_are_used_as_they_are(length: int) -> None:
    """A path AF_UNIX accepts is returned unchanged."""
    path = "/" + "s" * (length - 1)
    with framing.socket_address(path) as address:
        assert address == path


def test_long_socket_path_binds_and_connects(tmp_path: Path) -> None:
    """A socket in a directory whose path is longer than 108 bytes can be bound and connected
    to, and the socket file is made at the long path itself."""
    directory = tmp_path / ("d" * 60) / ("e" * 60)
    directory.mkdir(parents=True)
    path = str(directory / "startd_starters")
    assert len(path.encode()) > 108
    with socket.socket(socket.AF_UNIX) as plain, pytest.raises(OSError, match="too long"):
        plain.bind(path)
    fds_before = set(os.listdir("/proc/self/fd"))
    with socket.socket(socket.AF_UNIX, socket.SOCK_STREAM) as server:
        with framing.socket_address(path) as address:
            assert address.startswith("/proc/self/fd/")
            server.bind(address)
        server.listen(1)
        assert stat.S_ISSOCK(os.stat(path).st_mode)
        with socket.socket(socket.AF_UNIX, socket.SOCK_STREAM) as client:
            client.settimeout(10)
            with framing.socket_address(path) as address:
                client.connect(address)
            accepted, _ = server.accept()
            with accepted:
                client.sendall(framing.encode(_hello(1)))
                assert accepted.recv(4096) == framing.encode(_hello(1))
    # The directory descriptors the long path needed are closed again.
    assert set(os.listdir("/proc/self/fd")) == fds_before


# -- framing for servers: fill with a budget, one message at a time -------------------------


@given(
    ads=st.lists(_ads(1), min_size=1, max_size=3),
    cuts=st.lists(st.integers(16, 400), min_size=1, max_size=30),
    budget=st.integers(64, 5000),
)
def test_messages_cut_anywhere_come_out_whole_and_in_order(
    ads: list[ClassAd], cuts: list[int], budget: int
) -> None:
    """Messages sent in pieces of any sizes, read with any budget and taken one at a time,
    come out exactly as sent, in order, and the inbox ends empty."""
    sent = [framing.message(protocol.UPDATE, ad) for ad in ads]
    data = b"".join(framing.encode(ad) for ad in sent)
    ours, theirs = socket.socketpair()
    channel = Channel(ours, protocol.STARTER_COMMANDS)
    received: list[ClassAd] = []

    def take() -> None:
        while (ad := channel.next_message()) is not None:
            received.append(ad)

    try:
        position, index = 0, 0
        while position < len(data):
            size = cuts[index % len(cuts)]
            theirs.sendall(data[position : position + size])
            position, index = position + size, index + 1
            channel.fill(budget)
            take()
        while channel.fill(budget):
            take()
        take()
        assert received == sent
        assert channel.unread == 0
    finally:
        channel.close()
        theirs.close()


def test_fill_reads_about_its_budget(pair: tuple[Channel, socket.socket]) -> None:
    """fill(limit) takes no more than ``limit`` bytes of a long line at a time."""
    channel, peer = pair
    peer.sendall(b"x" * 200_000)
    assert channel.fill(50_000) == 50_000
    assert channel.unread == 50_000
    assert not channel.has_message


def test_an_over_long_line_names_its_limit_and_leaves_the_channel_open(
    pair: tuple[Channel, socket.socket],
) -> None:
    """A line over max_line raises ProtocolError naming the limit, drops what was read, and
    leaves the channel open so that the refusal can be sent."""
    ours, peer = pair[0].sock, pair[1]
    channel = Channel(ours, None, max_line=1000, limit_name="POOL_MAX_REQUEST_SIZE")
    peer.sendall(b"y" * 5000)
    with pytest.raises(ProtocolError, match=r"longer than 1000 bytes \(POOL_MAX_REQUEST_SIZE\)"):
        channel.fill(100_000)
    assert not channel.closed and channel.unread == 0
    channel.send(framing.message(protocol.ACK))
    assert peer.recv(100).startswith(b"[")


def test_a_complete_line_over_the_limit_is_refused_too(
    pair: tuple[Channel, socket.socket],
) -> None:
    """A line that arrives whole (newline included) but is longer than max_line is refused."""
    ours, peer = pair[0].sock, pair[1]
    channel = Channel(ours, None, max_line=100)
    peer.sendall(b"[ A = " + b"1" * 200 + b" ]\n")
    with pytest.raises(ProtocolError, match="longer than 100 bytes"):
        channel.fill(100_000)


def test_unsent_counts_what_waits_for_the_peer(pair: tuple[Channel, socket.socket]) -> None:
    """unsent is the number of queued bytes, down to 0 once the peer took everything."""
    channel, peer = pair
    big = framing.message(protocol.ACK, ClassAd({"Blob": "x" * (1024 * 1024)}))
    channel.send(big)
    assert 0 < channel.unsent <= len(framing.encode(big))
    while channel.pending:
        peer.recv(1 << 20)
        channel.flush()
    assert channel.unsent == 0
