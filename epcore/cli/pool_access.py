"""How the pool commands (``ep submit``, ``ep q``, ``ep rm``...) find and reach the pool.

Each takes ``--config FILE`` (else the configuration HTCondor would read, else the personal
pool's: :mod:`epcore.pool.personal`) and ``--pool SOCKET`` (else the configuration's
POOL_CONTROL_SOCKET), and prints failures as ``ep <command>: <message>`` with status 1.
Those that speak CEDAR too take ``-pool HOST[:PORT]`` (a collector, as condor_status's
``-pool``; single dash, unlike the socket's ``--pool``) and ``-name NAME`` (which daemon).
"""

from __future__ import annotations

import os
import pwd
from collections.abc import Callable
from typing import IO, Any, TypeVar

import click

from epcore.config import Config
from epcore.errors import EpError
from epcore.pool.personal import config_file_for
from epcore.pool.requests import PoolClient
from epcore.pool.setup import PoolPaths

F = TypeVar("F", bound=Callable[..., Any])


class PoolCommandError(click.ClickException):
    """A pool command that failed: printed as ``ep <command>: <message>``, exit status 1."""

    exit_code = 1

    def __init__(self, command: str, message: str) -> None:
        super().__init__(message)
        self.command = command

    def show(self, file: IO[str] | None = None) -> None:
        click.echo(f"ep {self.command}: {self.format_message()}", err=True)


def user_name() -> str:
    """Who runs the command: the account of the process's uid (not $USER, which anyone
    can set; the pool checks the uid anyway)."""
    try:
        return pwd.getpwuid(os.getuid()).pw_name
    except KeyError:
        return str(os.getuid())


def pool_options(function: F) -> F:
    """Add ``--config`` and ``--pool`` to a click command."""
    function = click.option(
        "--pool",
        "pool_socket",
        default=None,
        metavar="SOCKET",
        help="The pool's socket (default: POOL_CONTROL_SOCKET of the configuration).",
    )(function)
    return click.option(
        "--config",
        "config_file",
        default=None,
        metavar="FILE",
        help="Read FILE instead of the configuration HTCondor would read.",
    )(function)


def cedar_options(function: F) -> F:
    """Add ``-pool HOST[:PORT]`` and ``-name NAME`` (module docstring) to a click command."""
    function = click.option(
        "-name",
        "daemon_name",
        default=None,
        metavar="NAME",
        help="With -pool: the daemon of this name (a startd's Name or Machine).",
    )(function)
    return click.option(
        "-pool",
        "cedar_pool",
        default=None,
        metavar="HOST[:PORT]",
        help="Speak CEDAR to the pool whose collector is at HOST[:PORT] (default port 9618),"
        " as HTCondor's tools do, instead of the local pool's socket.",
    )(function)


def tool_config(command: str, config_file: str | None) -> Config:
    """The configuration a CEDAR client reads (its SEC_CLIENT_* knobs, its token
    directory): the pool configuration when there is one, HTCondor's defaults otherwise (a
    remote pool needs no local one)."""
    path, personal = config_file_for(
        config_file, os.environ, uid=os.getuid(), home=os.environ.get("HOME")
    )
    if personal and not os.path.exists(path):
        return Config.from_text("", subsystem="TOOL")
    return pool_config(command, config_file)


def pool_config(command: str, config_file: str | None) -> Config:
    """The configuration a pool command reads (PoolCommandError when it cannot be read)."""
    path, personal = config_file_for(
        config_file, os.environ, uid=os.getuid(), home=os.environ.get("HOME")
    )
    if personal and not os.path.exists(path):
        raise PoolCommandError(
            command, f"no pool is configured here ({path} does not exist); start one with: ep run"
        )
    try:
        return Config.load(path, subsystem="TOOL")
    except EpError as error:
        raise PoolCommandError(command, str(error)) from error


def connect(
    command: str, config_file: str | None, pool_socket: str | None, config: Config | None = None
) -> PoolClient:
    """A client of the pool the options name; ``config``, when given, is the configuration
    ``config_file`` names, already read (reading it again would double a command's start)."""
    if pool_socket:
        return PoolClient(pool_socket)
    if config is None:
        config = pool_config(command, config_file)
    try:
        return PoolClient(PoolPaths.from_config(config).control_socket)
    except EpError as error:
        raise PoolCommandError(command, str(error)) from error
