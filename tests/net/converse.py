"""Two conversations talking to each other in memory, through real framing both ways."""

from __future__ import annotations

from typing import Any

import attrs

from epcore.net.conversation import Conversation, Receive, Send, Step, Stream
from epcore.net.frames import Framer

CLIENT_ADDRESS = ("127.0.0.1", 40000)
SERVER_ADDRESS = ("127.0.0.1", 9618)


def streams() -> tuple[Stream, Stream]:
    """A client's and a server's stream of one imaginary connection."""
    return (
        Stream(Framer(), CLIENT_ADDRESS, SERVER_ADDRESS),
        Stream(Framer(), SERVER_ADDRESS, CLIENT_ADDRESS),
    )


@attrs.define
class Side:
    """One conversation's state: its next step, or how it ended."""

    conversation: Conversation[Any]
    stream: Stream
    step: Step | None = None
    result: Any = None
    error: BaseException | None = None
    done: bool = False

    def advance(self, message: bytes | None, first: bool = False) -> None:
        try:
            self.step = next(self.conversation) if first else self.conversation.send(message)
        except StopIteration as stop:
            self.done, self.result = True, stop.value
        except Exception as error:
            self.done, self.error = True, error


def converse(
    client: Conversation[Any], server: Conversation[Any], pair: tuple[Stream, Stream]
) -> tuple[Side, Side]:
    """Run both until neither can go on; each side's result or error."""
    sides = (Side(client, pair[0]), Side(server, pair[1]))
    for side in sides:
        side.advance(None, first=True)
    while True:
        progressed = False
        for side, other in (sides, sides[::-1]):
            if side.done:
                continue
            if isinstance(side.step, Send):
                other.stream.framer.receive(side.stream.framer.frame(side.step.message))
                side.advance(None)
                progressed = True
            elif isinstance(side.step, Receive):
                message = side.stream.framer.next_message()
                if message is not None:
                    side.advance(message)
                    progressed = True
                elif other.done:
                    side.advance(None)  # the peer hung up
                    progressed = True
        if not progressed:
            return sides
