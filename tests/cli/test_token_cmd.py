"""``ep token create``: tokens signed with the pool key, printed or saved where clients look."""

from __future__ import annotations

import os
import pwd
import time
from pathlib import Path

import pytest
from click.testing import CliRunner

from epcore.cli.main import ep
from epcore.config import Config
from epcore.net import tokens
from epcore.testing.pool import run_ep, shared_dir

__all__ = ["shared_dir"]  # the fixture of a directory other users reach


@pytest.fixture
def pool(tmp_path: Path) -> tuple[Path, tokens.TokenSettings]:
    """A configuration naming a password directory with a POOL key, and its settings."""
    config = tmp_path / "condor_config"
    config.write_text(
        f"SEC_PASSWORD_DIRECTORY = {tmp_path}/passwords.d\n"
        f"SEC_TOKEN_POOL_SIGNING_KEY_FILE = {tmp_path}/passwords.d/POOL\n"
        f"SEC_TOKEN_DIRECTORY = {tmp_path}/tokens\n"
        "TRUST_DOMAIN = pool.example\n"
    )
    settings = tokens.TokenSettings.from_lookup(Config.load(config).get)
    tokens.create_signing_key(Path(settings.pool_key_file))
    return config, settings


def _run(config: Path, *args: str) -> tuple[int, str, str]:
    result = CliRunner().invoke(ep, ["token", "create", "--config", str(config), *args])
    return result.exit_code, result.stdout, result.stderr


def test_the_printed_token_verifies_with_the_pool_key(
    pool: tuple[Path, tokens.TokenSettings],
) -> None:
    """The token printed on standard output names the identity, the trust domain, the levels
    and the lifetime, and its signature checks out against the pool's key."""
    config, settings = pool
    code, out, err = _run(
        config, "--identity", "alice@pool.example", "--authz", "READ", "-authz", "write",
        "-lifetime", "600",
    )  # fmt: skip
    assert code == 0, err
    token = tokens.verify_token(out.strip(), settings, now=int(time.time()))
    assert (token.subject, token.issuer, token.key_id) == (
        "alice@pool.example",
        "pool.example",
        "POOL",
    )
    assert token.authorizations == ("READ", "WRITE")
    assert token.expires_at is not None and token.issued_at is not None
    assert token.expires_at - token.issued_at == 600


def test_token_saves_it_privately_where_clients_look(
    pool: tuple[Path, tokens.TokenSettings], tmp_path: Path
) -> None:
    """--token NAME writes the token (0600, one line) into SEC_TOKEN_DIRECTORY, made 0700, and
    a client then finds it there."""
    config, settings = pool
    code, out, err = _run(config, "-identity", "bob@pool.example", "-token", "bob")
    assert (code, out) == (0, ""), err
    path = tmp_path / "tokens" / "bob"
    assert os.stat(path).st_mode & 0o777 == 0o600
    assert os.stat(path.parent).st_mode & 0o777 == 0o700
    found = tokens.find_client_token(settings, issuer="pool.example", server_keys=frozenset())
    assert found is not None and found.token.subject == "bob@pool.example"
    assert path.read_text().count("\n") == 1


def test_file_writes_to_the_path(pool: tuple[Path, tokens.TokenSettings], tmp_path: Path) -> None:
    """--file PATH writes the token there, 0600, even over a file others could read."""
    config, _ = pool
    target = tmp_path / "out.token"
    target.write_text("old")
    os.chmod(target, 0o644)
    code, _, err = _run(config, "--identity", "c@d", "--file", str(target))
    assert code == 0, err
    assert os.stat(target).st_mode & 0o777 == 0o600
    assert tokens.decode_token(target.read_text()).subject == "c@d"


def test_a_token_name_with_a_directory_is_refused(pool: tuple[Path, tokens.TokenSettings]) -> None:
    """--token takes a plain name: ``../x`` would write outside the token directory."""
    config, _ = pool
    code, _, err = _run(config, "--identity", "c@d", "--token", "../escape")
    assert code == 2
    assert "plain file name" in err


def test_a_key_the_user_does_not_own_is_not_read(pool: tuple[Path, tokens.TokenSettings]) -> None:
    """A key owned by another user (or readable by others) makes no token: status 2 and why."""
    config, settings = pool
    os.chown(settings.pool_key_file, 4242, -1)
    code, out, err = _run(config, "--identity", "eve@pool.example")
    assert (code, out) == (2, "")
    assert "ep token create: failed to generate a token:" in err
    assert "must be owned by uid 0" in err


def test_an_unknown_key_makes_no_token(pool: tuple[Path, tokens.TokenSettings]) -> None:
    """--key names a file of the password directory; a missing one is an error."""
    config, _ = pool
    code, _, err = _run(config, "--identity", "a@b", "--key", "NOPE")
    assert code == 2
    assert "NOPE" in err


def test_the_help_reads_like_condor_token_create() -> None:
    """``ep token create --help`` lists the options condor_token_create has."""
    result = CliRunner().invoke(ep, ["token", "create", "--help"])
    assert result.exit_code == 0
    for option in ("--identity", "--authz", "--lifetime", "--key", "--token", "--file"):
        assert option in result.stdout


def test_an_ordinary_user_cannot_make_tokens(shared_dir: Path) -> None:
    """Run as nobody, ``ep token create`` cannot open root's 0600 key and makes no token."""
    config = shared_dir / "condor_config"
    config.write_text(
        f"SEC_PASSWORD_DIRECTORY = {shared_dir}/passwords.d\nTRUST_DOMAIN = pool.example\n"
    )
    config.chmod(0o644)
    tokens.create_signing_key(shared_dir / "passwords.d" / "POOL")
    (shared_dir / "passwords.d").chmod(0o755)  # even a reachable key stays unreadable
    nobody = pwd.getpwnam("nobody")
    result = run_ep(
        ["token", "create", "--config", str(config), "--identity", "nobody@pool.example"],
        uid=nobody.pw_uid,
        gid=nobody.pw_gid,
    )
    assert (result.status, result.stdout) == (2, "")
    assert "cannot read" in result.stderr and "Permission denied" in result.stderr


def test_without_config_the_personal_pool_s_key_signs(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """With no --config and no CONDOR_CONFIG, the personal pool's configuration (the one
    ``ep run`` wrote under HOME) names the key, as for the other pool commands."""
    if os.getuid() != 0:
        pytest.skip("the personal pool of a user is under HOME; this test plays root's")
    home = tmp_path / "home"
    local = home / ".epcore"
    local.mkdir(parents=True)
    (local / "condor_config").write_text(
        f"SEC_PASSWORD_DIRECTORY = {local}/passwords.d\nTRUST_DOMAIN = personal.example\n"
    )
    tokens.create_signing_key(local / "passwords.d" / "POOL")
    monkeypatch.setenv("HOME", str(home))
    monkeypatch.delenv("CONDOR_CONFIG", raising=False)
    monkeypatch.setattr("epcore.pool.personal.htcondor_config_file", lambda *_: None)
    monkeypatch.setattr("epcore.pool.personal.personal_local_dir", lambda uid, h: str(local))
    result = CliRunner().invoke(ep, ["token", "create", "--identity", "a@personal.example"])
    assert result.exit_code == 0, result.stderr
    assert tokens.decode_token(result.stdout).issuer == "personal.example"
