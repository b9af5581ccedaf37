"""The pool and IDTOKENS: the signing key is made on the first start and kept afterwards."""

from __future__ import annotations

import os
import time
from collections.abc import Callable

from click.testing import CliRunner

from epcore.cli.main import ep
from epcore.config import Config
from epcore.net import tokens
from epcore.testing.pool import PoolProcess


def test_the_first_start_makes_a_private_signing_key_that_signs_tokens(
    pool_factory: Callable[..., PoolProcess],
) -> None:
    """A personal pool (with its collector) writes passwords.d/POOL, 0600 in a 0700
    directory, logs it, and keeps it on restart; ``ep token create`` signs with it."""
    pool = pool_factory()
    key = pool.directory / "passwords.d" / "POOL"
    assert key.is_file()
    assert os.stat(key).st_mode & 0o777 == 0o600
    assert os.stat(key.parent).st_mode & 0o777 == 0o700
    assert len(key.read_bytes()) == 64
    config = pool.config_path
    settings = tokens.TokenSettings.from_lookup(Config.load(config).get)
    assert settings.pool_key_file == str(key)
    result = CliRunner().invoke(
        ep, ["token", "create", "--config", str(config), "--identity", "alice@x"]
    )
    assert result.exit_code == 0, result.stderr
    assert tokens.verify_token(result.stdout, settings, now=int(time.time())).subject == "alice@x"
    before = key.read_bytes()
    pool.stop()
    pool.start()
    assert key.read_bytes() == before
