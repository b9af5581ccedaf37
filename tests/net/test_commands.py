"""HTCondor's command numbers and levels as epcore keeps them."""

from __future__ import annotations

from epcore.net import commands
from epcore.net.commands import BY_NUMBER, describe, implied


def test_numbers_are_htcondors() -> None:
    """A few numbers checked against condor_commands.h: the ones htcondor2 sends most."""
    assert commands.DC_AUTHENTICATE.number == 60010
    assert commands.DC_NOP_READ.number == 60020
    assert commands.DC_CONFIG_VAL.number == 60007
    assert commands.QUERY_STARTD_ADS.number == 5
    assert commands.UPDATE_STARTD_AD.number == 0
    assert commands.INVALIDATE_STARTD_ADS.number == 13
    assert commands.QUERY_ANY_ADS.number == 48


def test_every_command_is_found_by_number_and_named_in_logs() -> None:
    """BY_NUMBER holds each command once; describe names known ones and numbers the rest."""
    assert len({command.name for command in BY_NUMBER.values()}) == len(BY_NUMBER)
    assert describe(5) == "QUERY_STARTD_ADS (5)"
    assert describe(4242) == "command 4242"


def test_levels_imply_as_htcondors_do() -> None:
    """DAEMON implies WRITE implies READ; ADMINISTRATOR implies WRITE; READ implies nothing."""
    assert implied(commands.DAEMON) == (commands.DAEMON, commands.WRITE, commands.READ)
    assert implied(commands.ADMINISTRATOR) == (
        commands.ADMINISTRATOR,
        commands.WRITE,
        commands.READ,
    )
    assert implied(commands.READ) == (commands.READ,)
