"""Which code answers each command number: the table the roles fill and the listener reads.

A role registers a handler for each command it answers (with the command's record from
:mod:`epcore.net.commands`, whose level the handshake authorizes against). A handler is a
conversation: it gets a :class:`CommandContext` (the stream, the authenticated peer, and the
rest of the first message when the payload came with the command) and yields its steps;
it may keep the connection for more commands (:data:`Handler`).
Daemon-core commands every daemon answers (DC_NOP and its levels) are in every table.
"""

from __future__ import annotations

from collections.abc import Callable, Generator

import attrs

from epcore.errors import EpError
from epcore.net import commands
from epcore.net.codec import Reader
from epcore.net.commands import Command
from epcore.net.conversation import Step, Stream, receive
from epcore.net.handshake import Peer


@attrs.define
class CommandContext:
    """What a handler gets: the stream, the peer, and the unread rest of the first message."""

    stream: Stream
    peer: Peer
    first: Reader | None = None

    def receive(self, what: str) -> Generator[Step, bytes | None, Reader]:
        """The rest of the first message if the payload came with the command, else the
        next message."""
        if self.first is not None and not self.first.at_end:
            reader, self.first = self.first, None
            return reader
        return (yield from receive(self.stream, what))


#: A command's handler; it returns True to keep the connection for further commands of
#: the same session (HTCondor's stashSocket: a daemon advertising several ads sends each
#: update's number and ad on the same connection, and DC_NOP at the end).
Handler = Callable[[CommandContext], Generator[Step, bytes | None, bool | None]]


def _nop(context: CommandContext) -> Generator[Step, bytes | None, bool | None]:
    # DC_NOP: the start (authentication, authorization) was the point; nothing follows.
    return None
    yield


class CommandTable:
    """Handlers by command number (module docstring)."""

    def __init__(self) -> None:
        self._entries: dict[int, tuple[Command, Handler]] = {}
        for nop in (
            commands.DC_NOP,
            commands.DC_NOP_READ,
            commands.DC_NOP_WRITE,
            commands.DC_NOP_NEGOTIATOR,
            commands.DC_NOP_ADMINISTRATOR,
            commands.DC_NOP_OWNER,
            commands.DC_NOP_CONFIG,
            commands.DC_NOP_DAEMON,
        ):
            self.register(nop, _nop)

    def register(self, command: Command, handler: Handler) -> None:
        """Answer ``command`` with ``handler`` (EpError if something answers it already)."""
        if command.number in self._entries and self._entries[command.number][1] is not _nop:
            raise EpError(f"{commands.describe(command.number)} has a handler already")
        self._entries[command.number] = (command, handler)

    def levels(self) -> dict[int, str]:
        """The level each answered command needs, by number."""
        return {number: command.level for number, (command, _) in self._entries.items()}

    def handler(self, number: int) -> Handler | None:
        entry = self._entries.get(number)
        return None if entry is None else entry[1]
