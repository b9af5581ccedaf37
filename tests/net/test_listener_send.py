"""The listener sends a long answer as it seals it: packets in order, partial sends resumed."""

from __future__ import annotations

import logging
import os
import selectors
import socket
import threading
from collections.abc import Generator

from epcore.classad import ClassAd
from epcore.config import Config
from epcore.net import commands
from epcore.net.aesgcm import AesGcmProtection
from epcore.net.client import query_collector
from epcore.net.conversation import Step, send
from epcore.net.dispatch import CommandContext, CommandTable
from epcore.net.frames import SEND_PACKET, Framer
from epcore.net.handshake import SecurityServer
from epcore.net.keyexchange import EcdhKeyExchange
from epcore.net.listener import CedarListener, _Outbox
from epcore.net.methods import default_registry

SERVER = """
ALLOW_READ = *
SEC_READ_ENCRYPTION = REQUIRED
SEC_READ_INTEGRITY = REQUIRED
"""
#: Enough ads that the answer spans many packets and more than a small socket buffer.
ADS = [ClassAd({"Name": f"slot{n}@test", "Blob": "x" * 3000, "N": n}) for n in range(600)]


class _Loop:
    def __init__(self) -> None:
        self.selector = selectors.DefaultSelector()


def _protected(key: bytes, iv: bytes) -> Framer:
    framer = Framer()
    framer.protect(AesGcmProtection(key, iv))
    return framer


def test_sealed_packets_are_made_as_they_are_taken() -> None:
    """Over a protected framer, taking the first packet of a long message seals only that
    one, so a listener can send it while the rest are still to be sealed."""
    sealed: list[int] = []
    framer = _protected(os.urandom(32), os.urandom(16))
    protection = framer.protection
    assert protection is not None
    real_seal = protection.seal

    def counting_seal(*args: object) -> bytes:
        sealed.append(1)
        return real_seal(*args)  # type: ignore[arg-type]

    protection.seal = counting_seal  # type: ignore[method-assign]
    packets = framer.packets(bytes(3 * SEND_PACKET))
    next(packets), next(packets)  # the first packet's header and body
    assert len(sealed) == 1
    assert len(list(packets)) == 4
    assert len(sealed) == 3


def test_outbox_sends_the_same_bytes_as_framing_the_whole_message() -> None:
    """Taken in uneven partial sends, the outbox yields exactly the bytes frame() makes for
    the same messages under the same key, in order."""
    key, iv = os.urandom(32), os.urandom(16)
    messages = [os.urandom(5 * SEND_PACKET + 17), b"short", os.urandom(SEND_PACKET)]
    whole = _protected(key, iv)
    expected = b"".join(whole.frame(message) for message in messages)
    streamed = _protected(key, iv)
    outbox = _Outbox()
    for message in messages:
        outbox.add(streamed.packets(message))
    got = bytearray()
    step = 1
    while outbox:
        outbox.fill(3 * SEND_PACKET)
        batch = b"".join(outbox.batch())
        taken = min(len(batch), 7919 * step)  # a kernel taking an odd part of what it got
        got += batch[:taken]
        outbox.sent(taken)
        step += 1
    assert bytes(got) == expected


def test_a_long_encrypted_answer_crosses_a_small_socket_buffer_intact() -> None:
    """A 1.8 MB answer over AES-GCM, through a listener whose socket takes 16 KiB at a time,
    reaches epcore's client whole: every ad, in order."""
    config = Config.from_text(SERVER, subsystem="COLLECTOR")
    seen_encrypted: list[bool] = []

    def answer(context: CommandContext) -> Generator[Step, bytes | None, bool | None]:
        reader = yield from context.receive("the query")
        reader.get_classad("the query")
        seen_encrypted.append(context.stream.encrypted)
        writer = context.stream.writer()
        for ad in ADS:
            writer.put_int(1).put_classad(ad)
        writer.put_int(0)
        yield from send(writer)
        return None

    table = CommandTable()
    table.register(commands.QUERY_STARTD_ADS, answer)
    log = logging.getLogger("test.cedar.listener_send")
    security = SecurityServer(
        lambda: config,
        table.levels,
        methods=default_registry(),
        log=log,
        key_exchange=EcdhKeyExchange(),
    )
    listener = CedarListener("127.0.0.1", 0, table, security, config=lambda: config, log=log)
    loop = _Loop()
    listener.open(loop)  # type: ignore[arg-type]
    nodelay: list[int] = []
    stop = threading.Event()

    def serve() -> None:
        while not stop.is_set():
            ready = loop.selector.select(0.02)
            for sock in listener.connections:
                sock.setsockopt(socket.SOL_SOCKET, socket.SO_SNDBUF, 16384)
                nodelay.append(sock.getsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY))
            listener.ready([(key.fileobj, key.data) for key, _ in ready])
            listener.tick()
            listener.flush()

    thread = threading.Thread(target=serve)
    thread.start()
    try:
        client_config = Config.from_text("", subsystem="TOOL")
        ads = query_collector("127.0.0.1", listener.port, 5, client_config)
    finally:
        stop.set()
        thread.join()
        listener.close()
    assert seen_encrypted == [True]
    assert [ad.evaluate("N") for ad in ads] == list(range(len(ADS)))
    assert ads[-1].evaluate("Blob") == "x" * 3000
    assert nodelay and all(nodelay)
