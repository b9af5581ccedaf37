"""How the pool commands (``ep submit``, ``ep q``, ``ep rm``...) find and reach the pool.

Each takes ``--config FILE`` (else the configuration HTCondor would read, else the personal
pool's: :mod:`epcore.pool.personal`) and ``-pool SOCKET`` (else the configuration's
POOL_CONTROL_SOCKET), and prints failures as ``ep <command>: <message>`` with status 1. The
jobs' commands also take ``-pool HOST[:PORT]`` and ``-name NAME``: they then speak CEDAR to
that pool's schedd (:mod:`epcore.net.schedd_client`, imported only then); ``ep userprio``,
``ep drain`` and ``ep vacate`` to its negotiator or startd (:mod:`epcore.net.tools`).
"""

from __future__ import annotations

import os
import pwd
from collections.abc import Callable
from typing import IO, TYPE_CHECKING, Any, TypeVar

import click

from epcore.config import Config
from epcore.errors import EpError
from epcore.pool.personal import config_file_for
from epcore.pool.requests import PoolClient
from epcore.pool.setup import PoolPaths

if TYPE_CHECKING:
    from epcore.net.schedd_client import RemoteSchedd

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
    """Add ``--config`` and ``-pool`` to a click command."""
    function = click.option(
        "-pool",
        "--pool",
        "pool_socket",
        default=None,
        metavar="SOCKET|HOST[:PORT]",
        help=(
            "The pool's socket (default: POOL_CONTROL_SOCKET of the configuration), or the"
            " collector of any HTCondor-compatible pool, reached over CEDAR."
        ),
    )(function)
    return config_option(function)


def config_option(function: F) -> F:
    """Add ``--config FILE`` to a click command: the file read instead of the configuration
    HTCondor would read (:func:`epcore.pool.personal.config_file_for` finds that one)."""
    return click.option(
        "--config",
        "config_file",
        default=None,
        metavar="FILE",
        help="Read FILE instead of the configuration HTCondor would read.",
    )(function)


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


def name_option(function: F) -> F:
    """Add ``-name`` (the schedd's Name, with ``-pool HOST``) to a click command."""
    return click.option(
        "-name",
        "--name",
        "schedd_name",
        default=None,
        metavar="NAME",
        help="The schedd named NAME in the pool -pool HOST names (default: any one).",
    )(function)


def daemon_name_option(function: F) -> F:
    """Add ``-name`` (with ``-pool HOST``: the startd's Name or Machine, the negotiator's
    Name) to a click command."""
    return click.option(
        "-name",
        "--name",
        "daemon_name",
        default=None,
        metavar="NAME",
        help="With -pool HOST: the daemon named NAME (default: the first the collector knows).",
    )(function)


def tool_config(command: str, config_file: str | None) -> Config:
    """The configuration a CEDAR client reads (its SEC_CLIENT_* knobs, its token
    directory): the pool configuration when there is one, HTCondor's defaults otherwise (a
    remote pool needs no local one)."""
    try:
        return pool_config(command, config_file)
    except PoolCommandError:
        return Config.from_text("", subsystem="TOOL")


def is_remote(pool: str | None) -> bool:
    """Whether ``-pool`` names a host (``HOST[:PORT]``, ``<sinful>``) rather than a socket."""
    return bool(pool) and "/" not in str(pool) and not os.path.exists(str(pool))


def remote_schedd(
    command: str, pool: str, name: str | None, config_file: str | None
) -> RemoteSchedd:
    """The schedd that ``-pool HOST[:PORT]`` and ``-name`` name, spoken to over CEDAR with
    the client's security configuration (``--config``, else HTCondor's, else the defaults).
    The network client is imported here only: without -pool a command starts without it."""
    from epcore.net.schedd_client import RemoteSchedd

    config = tool_config(command, config_file)
    try:
        return RemoteSchedd.locate(pool, name, config)
    except EpError as error:
        raise PoolCommandError(command, str(error)) from error


def connect(
    command: str, config_file: str | None, pool_socket: str | None, config: Config | None = None
) -> PoolClient:
    """A client of the pool the options name; ``config``, when given, is the configuration
    ``config_file`` names, already read (reading it again would double a command's start)."""
    if pool_socket and is_remote(pool_socket):
        raise PoolCommandError(command, "-pool HOST[:PORT] is not supported by this command")
    if pool_socket:
        return PoolClient(pool_socket)
    if config is None:
        config = pool_config(command, config_file)
    try:
        return PoolClient(PoolPaths.from_config(config).control_socket)
    except EpError as error:
        raise PoolCommandError(command, str(error)) from error


def connect_jobs(
    command: str,
    config_file: str | None,
    pool_socket: str | None,
    schedd_name: str | None,
    config: Config | None = None,
) -> PoolClient | RemoteSchedd:
    """The jobs' client of ``ep q / submit / rm / hold / release``: over CEDAR to the schedd
    ``-pool HOST[:PORT]`` and ``-name`` name (the same calls), else the pool's socket."""
    if pool_socket and is_remote(pool_socket):
        return remote_schedd(command, pool_socket, schedd_name, config_file)
    if schedd_name:
        raise PoolCommandError(command, "-name needs -pool HOST[:PORT]")
    return connect(command, config_file, pool_socket, config)
