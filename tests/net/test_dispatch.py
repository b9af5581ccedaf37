"""The command table the roles fill and the listener reads."""

from __future__ import annotations

from collections.abc import Generator

import pytest

from epcore.errors import EpError
from epcore.net import commands
from epcore.net.conversation import Step
from epcore.net.dispatch import CommandContext, CommandTable


def _handler(context: CommandContext) -> Generator[Step, bytes | None, bool | None]:
    return None
    yield


def test_table_knows_dc_nop_at_every_level_and_registered_commands() -> None:
    """DC_NOP and its levels are always answered; a registered command is found with its level."""
    table = CommandTable()
    assert table.levels()[commands.DC_NOP_DAEMON.number] == commands.DAEMON
    table.register(commands.QUERY_STARTD_ADS, _handler)
    assert table.handler(commands.QUERY_STARTD_ADS.number) is _handler
    assert table.levels()[commands.QUERY_STARTD_ADS.number] == commands.READ
    assert table.handler(4242) is None


def test_two_handlers_for_one_command_are_refused() -> None:
    """A command answered twice is a programming error, named."""
    table = CommandTable()
    table.register(commands.QUERY_STARTD_ADS, _handler)
    with pytest.raises(EpError, match="QUERY_STARTD_ADS"):
        table.register(commands.QUERY_STARTD_ADS, _handler)
