"""epcore's IDTOKENS against HTCondor's own code (libcondor_utils from the htcondor wheel,
through tests/net/htcondor_token_oracle.py): the same key file gives the same tokens, byte for
byte, and the key derivations and AKEP2 seeds agree."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import pytest

from epcore.net import auth_token, keyexchange, tokens
from epcore.net.tokens import TokenSettings

pytestmark = pytest.mark.oracle

ORACLE = Path(__file__).resolve().parent / "htcondor_token_oracle.py"


def _oracle(tmp_path: Path, identity: str, lifetime: int, *authz: str) -> dict[str, Any]:
    """HTCondor's answers for a pool whose POOL key epcore wrote in ``tmp_path``."""
    passwords = tmp_path / "passwords.d"
    tokens.create_signing_key(passwords / "POOL")
    config = tmp_path / "condor_config"
    config.write_text(
        f"SEC_PASSWORD_DIRECTORY = {passwords}\n"
        f"SEC_TOKEN_POOL_SIGNING_KEY_FILE = {passwords}/POOL\n"
        "TRUST_DOMAIN = oracle.example\n"
    )
    env = {k: v for k, v in os.environ.items() if not k.startswith(("_CONDOR", "CONDOR"))}
    env["CONDOR_CONFIG"] = str(config)
    done = subprocess.run(
        [sys.executable, str(ORACLE), identity, str(lifetime), *authz],
        capture_output=True,
        text=True,
        env=env,
        timeout=60,
        check=True,
    )
    answer: dict[str, Any] = json.loads(done.stdout.splitlines()[-1])
    assert answer["made"], done.stderr
    return answer


def _settings(tmp_path: Path) -> TokenSettings:
    return TokenSettings(
        password_directory=str(tmp_path / "passwords.d"),
        pool_key_file=str(tmp_path / "passwords.d" / "POOL"),
        trust_domain="oracle.example",
        system_token_directory=str(tmp_path / "tokens.d"),
    )


def test_condor_token_create_s_token_is_epcore_s_token_byte_for_byte(tmp_path: Path) -> None:
    """HTCondor signs a token with the key file epcore made; epcore verifies it, and making one
    with the same claims (iat, exp, jti) gives exactly the same text, signature included."""
    answer = _oracle(tmp_path, "bob@oracle.example", 600, "READ", "ADMINISTRATOR")
    theirs = tokens.verify_token(answer["token"], _settings(tmp_path), now=int(time.time()))
    assert theirs.subject == "bob@oracle.example"
    assert theirs.authorizations == ("READ", "ADMINISTRATOR")
    assert theirs.issued_at is not None and theirs.expires_at == theirs.issued_at + 600
    mine = tokens.create_token(
        tokens.read_signing_key(_settings(tmp_path), "POOL"),
        key_id="POOL",
        issuer="oracle.example",
        subject="bob@oracle.example",
        now=theirs.issued_at,
        authorizations=("READ", "ADMINISTRATOR"),
        lifetime=600,
        jti=theirs.jti,
    )
    assert mine == answer["token"]


def test_the_derivations_and_seeds_are_htcondor_s(tmp_path: Path) -> None:
    """setup_seed's two seeds are epcore's; Condor_Auth_Passwd::hkdf and the ECDH session
    key's Condor_Crypt_Base::hkdf give what epcore's derivations give; simple_scramble too."""
    answer = _oracle(tmp_path, "x@oracle.example", -1)
    assert answer["seed_ka"] == auth_token._SEED_KA.hex()
    assert answer["seed_kb"] == auth_token._SEED_KB.hex()
    assert (
        answer["hkdf"]
        == tokens.hkdf(b"input key material", salt=b"some salt", info=b"master ka", length=32).hex()
    )
    assert answer["keygen"] == keyexchange.key_from_secret(b"a shared secret").hex()
    assert answer["scramble"] == tokens.scramble(b"secret").hex()
