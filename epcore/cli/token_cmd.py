"""``ep token``: IDTOKENS for remote users, like condor_token_create.

``ep token create --identity USER@DOMAIN`` signs a token with the pool's signing key (POOL,
SEC_TOKEN_POOL_SIGNING_KEY_FILE, or ``--key NAME`` in SEC_PASSWORD_DIRECTORY) and prints it,
or writes it (0600) to ``--token NAME`` in the token directory a client reads, or to ``--file
PATH``. The key is read only if this process's user owns it and nobody else can read it, so in
practice only root (or the key's owner) makes tokens.
"""

from __future__ import annotations

import os
import time
from pathlib import Path
from typing import IO, Any

import click

from epcore.cli.pool_access import config_option
from epcore.config import Config
from epcore.errors import EpError

_SETTINGS = {"help_option_names": ["-h", "--help"]}


class TokenFailure(click.ClickException):
    """A token that cannot be made: ``ep token create: <message>``, status 2 as
    condor_token_create exits."""

    exit_code = 2

    def show(self, file: IO[Any] | None = None) -> None:
        click.echo(f"ep token create: {self.format_message()}", err=True)


@click.group(name="token", context_settings=_SETTINGS)
def token_command() -> None:
    """Make IDTOKENS for remote users, like condor_token_create."""


def _config(config_file: str | None) -> Config:
    """The configuration the pool commands read: ``--config``, else where HTCondor looks,
    else the personal pool's (``ep run``'s own), whose key is the one to sign with."""
    from epcore.pool.personal import config_file_for

    path, personal = config_file_for(
        config_file, os.environ, uid=os.getuid(), home=os.environ.get("HOME")
    )
    if personal and not os.path.exists(path):
        raise TokenFailure(f"no pool is configured here ({path} does not exist)")
    try:
        return Config.load(path, subsystem="TOOL")
    except EpError as error:
        raise TokenFailure(str(error)) from error


def _write(path: Path, token: str) -> None:
    """Write ``token`` to ``path``: 0600, never through a symbolic link."""
    try:
        fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_TRUNC | os.O_NOFOLLOW, 0o600)
    except OSError as error:
        raise TokenFailure(f"cannot write token to {path}: {error.strerror}") from error
    with os.fdopen(fd, "w") as file:
        # An existing file keeps its owner but must not stay readable by others.
        os.fchmod(file.fileno(), 0o600)
        file.write(token + "\n")


@token_command.command(name="create", context_settings=_SETTINGS)
@click.option(
    "-identity", "--identity", required=True, metavar="USER@DOMAIN", help="Whom the token names."
)
@click.option(
    "-authz",
    "--authz",
    "authz",
    multiple=True,
    metavar="LEVEL",
    help="Limit the token to this authorization level (READ, WRITE...); repeatable.",
)
@click.option(
    "-lifetime", "--lifetime", type=int, default=None, metavar="SECONDS", help="Expire after."
)
@click.option("-key", "--key", default="POOL", show_default=True, help="The signing key.")
@click.option(
    "-token", "--token", "token_name", default=None, metavar="NAME", help="Save in tokens.d."
)
@click.option("-file", "--file", "file_name", default=None, metavar="PATH", help="Save to PATH.")
@config_option
def create_command(
    identity: str,
    authz: tuple[str, ...],
    lifetime: int | None,
    key: str,
    token_name: str | None,
    file_name: str | None,
    config_file: str | None,
) -> None:
    """Sign a token for USER@DOMAIN with the pool's key and print it, like condor_token_create.

    The token is an HS256 JWT naming the TRUST_DOMAIN as issuer; with --authz it is good only
    for those levels (and the ones they imply), with --lifetime only that long. --token NAME
    writes it to NAME in SEC_TOKEN_DIRECTORY (else ~/.condor/tokens.d, or for root
    SEC_TOKEN_SYSTEM_DIRECTORY), where HTCondor's clients look; --file PATH writes it to PATH.
    """
    from epcore.net import tokens

    if token_name and file_name:
        raise click.UsageError("give --token or --file, not both")
    settings = tokens.TokenSettings.from_lookup(_config(config_file).get)
    try:
        signing_key = tokens.read_signing_key(settings, key)
        token = tokens.create_token(
            signing_key,
            key_id=key,
            issuer=settings.trust_domain,
            subject=identity,
            now=int(time.time()),
            authorizations=tuple(level.upper() for level in authz),
            lifetime=lifetime,
        )
    except tokens.TokenError as error:
        raise TokenFailure(f"failed to generate a token: {error}") from error
    if file_name:
        _write(Path(file_name), token)
    elif token_name:
        if token_name != os.path.basename(token_name) or token_name in (".", ".."):
            raise TokenFailure("the token name must be a plain file name")
        directory = Path(
            tokens.client_token_directory(settings, os.geteuid(), os.path.expanduser("~"))
        )
        directory.mkdir(mode=0o700, parents=True, exist_ok=True)
        _write(directory / token_name, token)
    else:
        click.echo(token)
