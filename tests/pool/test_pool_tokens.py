"""The pool and IDTOKENS: the signing key is made on the first start and kept afterwards."""

from __future__ import annotations

import os
import signal
import time
from collections.abc import Callable
from pathlib import Path

import pytest
from click.testing import CliRunner

from epcore.cli.main import ep
from epcore.config import Config
from epcore.net import tokens
from epcore.testing.cedar import Htcondor2Error, run_htcondor2
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


def test_a_reconfig_makes_the_signing_key_when_it_is_missing(
    pool_factory: Callable[..., PoolProcess],
) -> None:
    """A reconfig (SIGHUP) makes the signing key SEC_TOKEN_POOL_SIGNING_KEY_FILE now names
    when that file is missing, 0600, as the first start does; the old key stays as it was."""
    pool = pool_factory()
    old = pool.directory / "passwords.d" / "POOL"
    before = old.read_bytes()
    new = pool.directory / "keys" / "POOL"
    with open(pool.config_path, "a", encoding="utf-8") as handle:
        handle.write(f"SEC_TOKEN_POOL_SIGNING_KEY_FILE = {new}\n")
    assert pool.process is not None
    pool.process.send_signal(signal.SIGHUP)
    pool.wait_for(new.is_file, 20, "the new signing key")
    assert os.stat(new).st_mode & 0o777 == 0o600
    assert len(new.read_bytes()) == 64 and new.read_bytes() != before
    assert old.read_bytes() == before
    assert f"Created POOL token signing key in file {new}" in pool.log("CollectorLog")


#: The pool refuses FS for reading (only a token proves who reads) and revokes one token.
TOKEN_ONLY = """
SEC_READ_AUTHENTICATION = REQUIRED
SEC_READ_AUTHENTICATION_METHODS = IDTOKENS
SEC_TOKEN_REVOCATION_EXPR = jti == "{revoked}"
"""
REVOKED = "5eed" * 8
CLIENT = """\
COLLECTOR_HOST = {address}
SEC_CLIENT_AUTHENTICATION_METHODS = TOKEN
SEC_CLIENT_ENCRYPTION = REQUIRED
SEC_TOKEN_DIRECTORY = {tokens}
"""
QUERY = """
htcondor2.enable_debug()
result = sorted(ad["Name"] for ad in htcondor2.Collector().query(htcondor2.AdType.Startd))
"""


@pytest.mark.system
@pytest.mark.oracle
def test_htcondor2_with_only_a_token_reads_the_pool_and_bad_tokens_are_refused(
    pool_factory: Callable[..., PoolProcess], tmp_path: Path
) -> None:
    """Against ``ep run`` that accepts only IDTOKENS for READ, htcondor2 with a client
    configuration of its own (the pool's address, TOKEN only, encryption REQUIRED, a token
    directory) lists the slots ``ep status`` lists, with the token ``ep token create`` made;
    a forged, an expired and a revoked token are refused, the CollectorLog saying why."""
    pool = pool_factory(TOKEN_ONLY.format(revoked=REVOKED))
    address = (pool.directory / "log" / ".collector_address").read_text().splitlines()[0]
    settings = tokens.TokenSettings.from_lookup(Config.load(pool.config_path).get)
    key = tokens.read_signing_key(settings, "POOL")
    now = int(time.time())

    def client(name: str, token: str) -> Path:
        directory = tmp_path / name
        directory.mkdir(mode=0o700)
        (directory / "token").write_text(token + "\n")
        (directory / "token").chmod(0o600)
        config = tmp_path / f"{name}.config"
        config.write_text(CLIENT.format(address=address, tokens=directory))
        return config

    made = CliRunner().invoke(
        ep,
        ["token", "create", "--config", str(pool.config_path), "--identity",
         f"alice@{settings.trust_domain}", "--authz", "READ"],
    )  # fmt: skip
    assert made.exit_code == 0, made.stderr
    answer = run_htcondor2(str(client("good", made.stdout.strip())), QUERY)
    local = pool.client.query_ads("Machine")
    assert answer == sorted(str(ad.evaluate("Name")) for ad in local) and answer

    def make(**claims: object) -> str:
        options: dict[str, object] = {
            "key_id": "POOL",
            "issuer": settings.trust_domain,
            "subject": f"alice@{settings.trust_domain}",
            "now": now,
        }
        options.update(claims)
        signing = options.pop("signing", key)
        return tokens.create_token(signing, **options)  # type: ignore[arg-type]

    debug = {"_CONDOR_TOOL_DEBUG": "D_SECURITY:2"}
    for name, token, reason in (
        ("forged", make(signing=b"f" * 64), "does not match this server's signing key"),
        ("expired", make(now=now - 600, lifetime=60), "token has been expired for"),
        ("revoked", make(jti=REVOKED), f"token {REVOKED} has been revoked"),
    ):
        with pytest.raises(Htcondor2Error) as refused:
            run_htcondor2(str(client(name, token)), QUERY, environ=debug)
        assert "Failed communication with collector" in str(refused.value), name
        log = (pool.directory / "log" / "CollectorLog").read_text()
        assert reason in log, name
    assert "refused QUERY_STARTD_ADS (5) from unauthenticated at <127.0.0.1:" in log


SUBMIT = """
sub = htcondor2.Submit({"executable": "/bin/true", "hold": "true"})
htcondor2.Schedd().submit(sub, count=1)
"""


@pytest.mark.system
def test_a_token_naming_no_local_account_cannot_submit_where_jobs_run_as_their_owner(
    pool_factory: Callable[..., PoolProcess], tmp_path: Path
) -> None:
    """In a pool that runs jobs as their owner, a submission authenticated by a token whose
    name has no account here is refused with the reason, which htcondor2 shows; nothing is
    queued. A super user's submission is not refused for want of an account."""
    pool = pool_factory()
    address = (pool.directory / "log" / ".collector_address").read_text().splitlines()[0]
    settings = tokens.TokenSettings.from_lookup(Config.load(pool.config_path).get)
    made = CliRunner().invoke(
        ep,
        ["token", "create", "--config", str(pool.config_path), "--identity",
         f"no-such-account-x@{settings.trust_domain}"],
    )  # fmt: skip
    assert made.exit_code == 0, made.stderr
    directory = tmp_path / "tokens"
    directory.mkdir(mode=0o700)
    (directory / "token").write_text(made.stdout.strip() + "\n")
    (directory / "token").chmod(0o600)
    config = tmp_path / "client.config"
    config.write_text(CLIENT.format(address=address, tokens=directory))
    with pytest.raises(Htcondor2Error) as refused:
        run_htcondor2(str(config), SUBMIT)
    assert "no-such-account-x has no account on this host" in str(refused.value)
    assert pool.jobs() == []
    # root's tools authenticate (FS) as the pool's own user, condor, a QUEUE_SUPER_USERS
    # name, which may submit whether or not it is an account here.
    run_htcondor2(str(pool.config_path), SUBMIT)
    assert [job.evaluate("Owner") for job in pool.jobs()] == ["condor"]
