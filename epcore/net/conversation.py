"""A CEDAR exchange as a generator, so that one piece of code serves both drivers.

A conversation yields :class:`Send` (one whole message to send) and :data:`RECEIVE` (it
needs the next message, which the driver sends into it as bytes), and returns its result.
The listener drives conversations without blocking, one step whenever a message arrives;
:func:`run_blocking` drives one over a connected socket for a client. The conversation
reads and writes through its :class:`Stream`: the connection's framing (whose protection the
handshake turns on), whether strings are coded encrypted, and who is at either end.

HTCondor never sends an empty message (an end-of-message with nothing put sends no
packet), so a conversation never yields an empty :class:`Send`, and the places where
HTCondor "reads" an empty end-of-message read nothing.
"""

from __future__ import annotations

import contextlib
import socket
from collections.abc import Generator
from typing import Final, TypeVar

import attrs

from epcore.errors import EpError
from epcore.net.codec import Reader, Writer
from epcore.net.frames import FrameError, Framer


@attrs.frozen
class Send:
    """Send one message (the bytes a :class:`~epcore.net.codec.Writer` made)."""

    message: bytes


@attrs.frozen
class Receive:
    """Wait for the next message; ``what`` names it for timeouts and logs. ``may_end``: the
    peer may close the connection instead (an answer it gives only sometimes), and the
    conversation then gets None where it would get the message."""

    what: str = "the next message"
    may_end: bool = False


#: The common receive step.
RECEIVE: Final = Receive()

Step = Send | Receive
Result = TypeVar("Result")
#: A conversation: steps out, received messages in, a result at the end.
Conversation = Generator[Step, bytes | None, Result]


class Refused(EpError):
    """The conversation ends because the peer may not go on: the message says why (for the
    log line that names who and where); ``logged`` when that line is written already."""

    def __init__(self, reason: str, *, logged: bool = False) -> None:
        super().__init__(reason)
        self.logged = logged


@attrs.define(eq=False)
class Stream:
    """What a conversation knows of its connection: the framing, whether strings travel
    encrypted, the local and peer addresses (host, port)."""

    framer: Framer
    local: tuple[str, int]
    peer: tuple[str, int]
    encrypted: bool = False

    def writer(self) -> Writer:
        return Writer(encrypted=self.encrypted)

    def reader(self, data: bytes) -> Reader:
        return Reader(data, encrypted=self.encrypted)

    @property
    def peer_description(self) -> str:
        host, port = self.peer
        return f"<{host}:{port}>"


def receive(stream: Stream, what: str) -> Generator[Step, bytes | None, Reader]:
    """Wait for the next message and read it (``reader = yield from receive(...)``)."""
    data = yield Receive(what)
    if data is None:
        raise Refused(f"the connection ended before {what}")
    return stream.reader(data)


def send(writer: Writer) -> Generator[Step, bytes | None, None]:
    """Send what ``writer`` holds as one message (nothing if it holds nothing)."""
    message = writer.bytes()
    if message:
        yield Send(message)


#: Bytes of consecutive messages :func:`run_blocking` hands to the kernel at once, at most.
SEND_COALESCE: Final = 256 * 1024


def run_blocking(sock: socket.socket, stream: Stream, conversation: Conversation[Result]) -> Result:
    """Drive ``conversation`` over the connected blocking ``sock`` to its result (the
    socket's own timeout bounds each wait). FrameError or Refused when the peer breaks off.

    Messages sent one after the other with nothing received between them go out together
    (each framed, sealed and in order as it comes; :data:`SEND_COALESCE` bytes at most in
    one ``sendall``): a negotiator's 20,000 matches are a few dozen system calls, not
    20,000."""
    pending: list[bytes] = []
    size = 0

    def flush() -> None:
        nonlocal size
        if pending:
            data = b"".join(pending)
            pending.clear()
            size = 0
            sock.sendall(data)

    try:
        step = next(conversation)
        while True:
            if isinstance(step, Send):
                framed = stream.framer.frame(step.message)
                pending.append(framed)
                size += len(framed)
                if size >= SEND_COALESCE:
                    flush()
                step = conversation.send(None)
                continue
            flush()
            # Packets are opened only when the conversation asks for its next message, so
            # that protection turned on in between applies to the right ones.
            message: bytes | None
            while (message := stream.framer.next_message()) is None:
                data = sock.recv(256 * 1024)
                if not data:
                    if stream.framer.mid_message:
                        raise FrameError(
                            f"the peer closed the connection mid-message ({what(step)})"
                        )
                    if not step.may_end:
                        raise Refused(f"the peer closed the connection before {what(step)}")
                    break  # closed instead of an answer it need not give: None
                stream.framer.receive(data)
            step = conversation.send(message)
    except StopIteration as done:
        flush()
        return done.value  # type: ignore[no-any-return]
    except BaseException:
        # What the conversation sent before it failed goes out, as it would have alone.
        with contextlib.suppress(OSError):
            flush()
        raise
    finally:
        conversation.close()


def what(step: Step) -> str:
    """What a step waits for, for messages."""
    return step.what if isinstance(step, Receive) else "sending"
