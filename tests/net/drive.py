"""Drive one command handler in memory: the messages it gets, the messages it sends."""

from __future__ import annotations

from epcore.net.codec import Reader
from epcore.net.conversation import Conversation, Receive, Send, Stream
from epcore.net.dispatch import CommandContext, Handler
from epcore.net.frames import Framer
from epcore.net.handshake import Peer
from epcore.net.methods import Identity


def drive(
    handler: Handler, command: int, messages: list[bytes], user: str = "admin"
) -> list[Reader]:
    """Run ``handler`` for ``command`` from ``user@example`` (FS) with ``messages`` to
    receive, one per Receive; the messages it sent, as readers."""
    stream = Stream(Framer(), ("127.0.0.1", 9618), ("127.0.0.1", 40000))
    peer = Peer(("127.0.0.1", 40000), Identity(user, "example", "FS"), command)
    return run_conversation(handler(CommandContext(stream, peer)), messages)


def run_conversation(conversation: Conversation[object], messages: list[bytes]) -> list[Reader]:
    """Feed ``messages`` to ``conversation``, one per Receive, then the end of the
    connection (None); the messages it sent, as readers."""
    pending = list(messages)
    sent: list[Reader] = []
    try:
        step = next(conversation)
        while True:
            if isinstance(step, Send):
                sent.append(Reader(step.message))
                step = conversation.send(None)
            else:
                assert isinstance(step, Receive)
                step = conversation.send(pending.pop(0) if pending else None)
    except StopIteration:
        pass
    return sent
