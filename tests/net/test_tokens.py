"""IDTOKENS: signing key files, the token format, verification, revocation, scopes, discovery."""

from __future__ import annotations

import base64
import json
import os
from pathlib import Path

import attrs
import pytest
from hypothesis import given
from hypothesis import strategies as st
from param_oracle import ParamOracle

from epcore.config import Config
from epcore.net import tokens
from epcore.net.tokens import TokenError, TokenSettings

NOW = 1_700_000_000
KEY = bytes(range(64))

#: A token from HTCondor's manual (admin-manual/security.rst): the header and payload
#: condor_token_create wrote for these claims (the manual's signature is cut short).
MANUAL_SIGNED_PART = (
    "eyJhbGciOiJIUzI1NiIsImtpZCI6IlBPT0wifQ.eyJpYXQiOjE1ODg0NzQ3MTksImlzcyI6ImhjYy1icmlhbnRlc3"
    "Q3LnVubC5lZHUiLCJqdGkiOiJjNzYwYzJhZjE5M2ExZmQ0ZTQwYmM5YzUzYzk2ZWU3YyIsInN1YiI6ImJib2NrZWxt"
    "QGhjYy1icmlhbnRlc3Q3LnVubC5lZHUifQ"
)


def _settings(tmp_path: Path, **changes: object) -> TokenSettings:
    base = TokenSettings(
        password_directory=str(tmp_path / "passwords.d"),
        pool_key_file=str(tmp_path / "passwords.d" / "POOL"),
        trust_domain="pool.example",
        system_token_directory=str(tmp_path / "tokens.d"),
    )
    return attrs.evolve(base, **changes)


def _pool(tmp_path: Path) -> TokenSettings:
    settings = _settings(tmp_path)
    assert tokens.create_signing_key(Path(settings.pool_key_file), KEY)
    return settings


def _b64(part: str) -> bytes:
    return base64.urlsafe_b64decode(part + "=" * (-len(part) % 4))


def test_the_token_text_is_what_condor_token_create_wrote_for_the_same_claims() -> None:
    """Header and payload come out byte for byte as in the token of HTCondor's manual."""
    token = tokens.create_token(
        KEY,
        key_id="POOL",
        issuer="hcc-briantest7.unl.edu",
        subject="bbockelm@hcc-briantest7.unl.edu",
        now=1588474719,
        jti="c760c2af193a1fd4e40bc9c53c96ee7c",
    )
    assert token.rpartition(".")[0] == MANUAL_SIGNED_PART


def test_scopes_and_expiry_are_written_as_htcondor_writes_them() -> None:
    """Levels become ``condor:/LEVEL`` words with the slash escaped; exp is iat + lifetime."""
    token = tokens.create_token(
        KEY,
        key_id="POOL",
        issuer="pool.example",
        subject="alice@pool.example",
        now=NOW,
        authorizations=("READ", "WRITE"),
        lifetime=3600,
        jti="00" * 16,
    )
    header, payload, signature = token.split(".")
    assert _b64(header) == b'{"alg":"HS256","kid":"POOL"}'
    assert _b64(payload) == (
        b'{"exp":1700003600,"iat":1700000000,"iss":"pool.example","jti":"'
        + b"0" * 32
        + b'","scope":"condor:\\/READ condor:\\/WRITE","sub":"alice@pool.example"}'
    )
    assert len(_b64(signature)) == 32


def test_the_hmac_key_is_hkdf_of_the_signing_key() -> None:
    """The token key is HKDF-SHA256(key, salt "htcondor", info "master jwt"), as RFC 5869
    computes it by hand."""
    import hashlib
    import hmac

    prk = hmac.new(b"htcondor", KEY, hashlib.sha256).digest()
    okm = hmac.new(prk, b"master jwt" + b"\x01", hashlib.sha256).digest()
    assert tokens.jwt_key(KEY) == okm


def test_a_new_pool_key_file_is_private_scrambled_and_never_overwritten(tmp_path: Path) -> None:
    """The key is 64 random bytes, written 0600 and scrambled; a second creation keeps it."""
    path = tmp_path / "passwords.d" / "POOL"
    assert tokens.create_signing_key(path)
    first = path.read_bytes()
    assert len(first) == 64
    assert os.stat(path).st_mode & 0o777 == 0o600
    assert os.stat(path.parent).st_mode & 0o777 == 0o700
    assert not tokens.create_signing_key(path)
    assert path.read_bytes() == first


def test_the_pool_key_is_read_unscrambled_and_doubled(tmp_path: Path) -> None:
    """POOL is the file's bytes XOR DEADBEEF, twice over; another key is read once."""
    settings = _pool(tmp_path)
    assert (Path(settings.pool_key_file).read_bytes()[:4]) == bytes(
        (0x00 ^ 0xDE, 0x01 ^ 0xAD, 0x02 ^ 0xBE, 0x03 ^ 0xEF)
    )
    assert tokens.read_signing_key(settings, "POOL") == KEY + KEY
    tokens.create_signing_key(Path(settings.password_directory) / "other", b"xyz")
    assert tokens.read_signing_key(settings, "other") == b"xyz"
    assert tokens.key_names(settings) == ("POOL", "other")


def test_a_key_others_may_read_or_another_user_owns_is_refused(tmp_path: Path) -> None:
    """A key file readable by group or others, or owned by someone else, is not used."""
    settings = _pool(tmp_path)
    os.chmod(settings.pool_key_file, 0o640)
    with pytest.raises(TokenError, match="group or others"):
        tokens.read_signing_key(settings, "POOL")
    os.chmod(settings.pool_key_file, 0o600)
    with pytest.raises(TokenError, match="must be owned by uid 12345"):
        tokens.read_signing_key(settings, "POOL", owner=12345)


def test_a_key_reached_through_a_symbolic_link_is_read_with_the_target_s_checks(
    tmp_path: Path,
) -> None:
    """As in HTCondor, a link is followed; the owner and mode checks apply to its target."""
    real = tmp_path / "elsewhere" / "POOL"
    tokens.create_signing_key(real, KEY)
    settings = _settings(tmp_path)
    Path(settings.pool_key_file).parent.mkdir()
    Path(settings.pool_key_file).symlink_to(real)
    assert tokens.read_signing_key(settings, "POOL") == KEY + KEY
    real.chmod(0o644)
    with pytest.raises(TokenError, match="group or others"):
        tokens.read_signing_key(settings, "POOL")


def test_a_key_name_that_leaves_the_password_directory_is_refused(tmp_path: Path) -> None:
    """A kid like ``../POOL`` never leads the daemon to a file outside the directory."""
    with pytest.raises(TokenError, match="plain file name"):
        _settings(tmp_path).key_path("../etc/shadow")


def test_a_good_token_verifies_and_reports_its_claims(tmp_path: Path) -> None:
    """A token signed with the pool key verifies; subject, issuer and limits come back."""
    settings = _pool(tmp_path)
    key = tokens.read_signing_key(settings, "POOL")
    text = tokens.create_token(
        key, key_id="POOL", issuer="pool.example", subject="alice@pool.example", now=NOW,
        authorizations=("READ",), lifetime=60,
    )  # fmt: skip
    token = tokens.verify_token(text, settings, now=NOW + 60)
    assert (token.subject, token.issuer, token.authorizations) == (
        "alice@pool.example",
        "pool.example",
        ("READ",),
    )


@pytest.mark.parametrize(
    ("change", "message"),
    [
        pytest.param(lambda t: t[:-2] + ("A" if t[-2] != "A" else "B") + t[-1], "signature",
                     id="tampered signature"),
        pytest.param(lambda t: t.replace(".", ".e30", 1), "JSON|base64", id="tampered payload"),
        pytest.param(lambda t: t.rpartition(".")[0], "three", id="no signature"),
        pytest.param(lambda t: "not a token", "three", id="garbage"),
        pytest.param(lambda t: "a.b.c", "JSON|base64", id="not base64 json"),
        pytest.param(lambda t: "W10.W10.AA", "object", id="json array"),
    ],
)  # fmt: skip
def test_a_malformed_or_tampered_token_is_refused(
    tmp_path: Path, change: object, message: str
) -> None:
    """Each broken token raises TokenError with its reason; none verifies."""
    settings = _pool(tmp_path)
    text = tokens.create_token(
        KEY + KEY, key_id="POOL", issuer="pool.example", subject="a@b", now=NOW
    )
    assert callable(change)
    with pytest.raises(TokenError, match=message):
        tokens.verify_token(change(text), settings, now=NOW)


def test_a_token_whose_subject_was_changed_is_refused(tmp_path: Path) -> None:
    """Rewriting the payload (another subject, well-formed) breaks the signature."""
    settings = _pool(tmp_path)
    text = tokens.create_token(KEY + KEY, key_id="POOL", issuer="i", subject="a@b", now=NOW)
    header, payload, signature = text.split(".")
    forged = base64.urlsafe_b64encode(_b64(payload).replace(b"a@b", b"root@b")).rstrip(b"=")
    with pytest.raises(TokenError, match="signature does not match"):
        tokens.verify_token(f"{header}.{forged.decode()}.{signature}", settings, now=NOW)


def test_a_token_signed_with_another_key_is_refused(tmp_path: Path) -> None:
    """A token made with a different signing key fails the signature check."""
    settings = _pool(tmp_path)
    text = tokens.create_token(b"x" * 64, key_id="POOL", issuer="i", subject="a@b", now=NOW)
    with pytest.raises(TokenError, match="signature does not match"):
        tokens.verify_token(text, settings, now=NOW)


def test_an_expired_or_too_old_token_is_refused(tmp_path: Path) -> None:
    """Past exp the token is refused, and past SEC_TOKEN_MAX_AGE too."""
    settings = _pool(tmp_path)
    text = tokens.create_token(
        KEY + KEY, key_id="POOL", issuer="i", subject="a@b", now=NOW, lifetime=10
    )
    assert tokens.verify_token(text, settings, now=NOW + 10)
    with pytest.raises(TokenError, match="expired for 1 seconds"):
        tokens.verify_token(text, settings, now=NOW + 11)
    aged = _settings(tmp_path, max_age=5)
    with pytest.raises(TokenError, match="SEC_TOKEN_MAX_AGE"):
        tokens.verify_token(text, aged, now=NOW + 6)
    for unlimited in (0, -1):
        assert tokens.verify_token(text, _settings(tmp_path, max_age=unlimited), now=NOW + 6)


@pytest.mark.parametrize(
    ("expr", "revoked"),
    [
        ('jti == "bad"', True),
        ('jti == "good"', False),
        ('sub == "a@b" && iat < 1700000001', True),
        ("exp > 0", True),  # no exp claim: undefined, not a boolean, so revoked
        ("1", True),
        ("0", False),
        ("(", True),
    ],
)
def test_revocation_follows_sec_token_revocation_expr(expr: str, revoked: bool) -> None:
    """The expression sees the claims; anything but a true/false answer counts as revoked."""
    token = tokens.decode_token(
        tokens.create_token(KEY, key_id="POOL", issuer="i", subject="a@b", now=NOW, jti="bad")
    )
    assert tokens.is_revoked(token, expr) is revoked


def test_a_revoked_token_is_refused(tmp_path: Path) -> None:
    """verify_token refuses a token the revocation expression names."""
    settings = _settings(tmp_path, revocation_expr='sub == "mallory@b"')
    tokens.create_signing_key(Path(settings.pool_key_file), KEY)
    bad = tokens.create_token(KEY + KEY, key_id="POOL", issuer="i", subject="mallory@b", now=NOW)
    good = tokens.create_token(KEY + KEY, key_id="POOL", issuer="i", subject="alice@b", now=NOW)
    with pytest.raises(TokenError, match="revoked"):
        tokens.verify_token(bad, settings, now=NOW)
    assert tokens.verify_token(good, settings, now=NOW).subject == "alice@b"


@pytest.mark.parametrize(
    ("limits", "level", "allowed"),
    [
        ((), "ADMINISTRATOR", True),
        (("READ",), "READ", True),
        (("READ",), "WRITE", False),
        (("WRITE",), "READ", True),
        (("ADMINISTRATOR",), "READ", True),
        (("ADMINISTRATOR",), "DAEMON", False),
        (("DAEMON",), "WRITE", True),
        (("ADVERTISE_STARTD",), "DAEMON", False),
        (("READ",), "ALLOW", True),
    ],
)
def test_scopes_bound_the_levels_as_htcondor_implies_them(
    limits: tuple[str, ...], level: str, allowed: bool
) -> None:
    """A limited token may use its levels and the ones they imply, nothing else."""
    assert tokens.is_authorized(limits, level) is allowed


@given(
    subject=st.text(min_size=1, max_size=40),
    issuer=st.from_regex(r"[a-z0-9.\-]{1,30}", fullmatch=True),
    levels=st.lists(st.sampled_from(["READ", "WRITE", "ADMINISTRATOR", "DAEMON"]), max_size=4),
    lifetime=st.none() | st.integers(min_value=0, max_value=10**9),
    key=st.binary(min_size=1, max_size=128),
)
def test_any_token_round_trips(
    subject: str, issuer: str, levels: list[str], lifetime: int | None, key: bytes
) -> None:
    """Whatever the claims, a created token decodes to them and its signature checks out."""
    text = tokens.create_token(
        key, key_id="POOL", issuer=issuer, subject=subject, now=NOW,
        authorizations=tuple(levels), lifetime=lifetime,
    )  # fmt: skip
    token = tokens.decode_token(text)
    assert json.loads(_b64(text.split(".")[1])) == dict(token.claims)
    assert (token.subject, token.issuer, token.authorizations) == (subject, issuer, tuple(levels))
    assert token.expires_at == (None if lifetime is None else NOW + lifetime)
    assert token.signature == tokens.sign(token.signed_part, tokens.jwt_key(key))


def test_a_client_finds_the_token_for_the_server_in_its_directory(tmp_path: Path) -> None:
    """Files are read in order (own subsystem's first), comments and other issuers' or keys'
    tokens skipped, and files others could read ignored."""
    settings = _settings(tmp_path, token_directory=str(tmp_path / "mine"))
    directory = tmp_path / "mine"
    directory.mkdir()

    def write(name: str, *lines: str, mode: int = 0o600) -> None:
        (directory / name).write_text("\n".join(lines) + "\n")
        os.chmod(directory / name, mode)

    def make(issuer: str, kid: str, subject: str) -> str:
        return tokens.create_token(KEY, key_id=kid, issuer=issuer, subject=subject, now=NOW)

    write("a", "# comment", make("other.domain", "POOL", "x@other"))
    write("b", make("pool.example", "KEY2", "y@pool"), make("pool.example", "POOL", "z@pool"))
    write("c", make("pool.example", "POOL", "open@pool"), mode=0o644)
    write("d.sh", make("pool.example", "POOL", "excluded@pool"))
    # HTCondor's own pattern, which leaves out d.sh.
    pattern = Config.from_text("").get("LOCAL_CONFIG_DIR_EXCLUDE_REGEXP")
    found = tokens.find_client_token(
        _settings(tmp_path, token_directory=str(directory), exclude_regexp=pattern),
        issuer="pool.example",
        server_keys=frozenset({"POOL"}),
    )
    assert found is not None
    assert (found.token.subject, os.path.basename(found.path)) == ("z@pool", "b")
    write("TOOL_auto_generated_token", make("pool.example", "POOL", "auto@pool"))
    found = tokens.find_client_token(settings, issuer="pool.example", server_keys=frozenset())
    assert found is not None and found.token.subject == "auto@pool"


def test_a_client_looks_in_its_home_unless_root_or_told(tmp_path: Path) -> None:
    """SEC_TOKEN_DIRECTORY wins; else ~/.condor/tokens.d for a user, the system one for root."""
    settings = _settings(tmp_path)
    assert tokens.client_token_directory(settings, 1000, "/home/u") == "/home/u/.condor/tokens.d"
    assert tokens.client_token_directory(settings, 0, "/root") == str(tmp_path / "tokens.d")
    told = _settings(tmp_path, token_directory="/t")
    assert tokens.client_token_directory(told, 1000, "/home/u") == "/t"


def test_settings_fall_back_to_htcondor_defaults() -> None:
    """Unset knobs take the defaults of HTCondor's parameter table."""
    config = Config.from_text("ETC = /etc/condor\nUID_DOMAIN = example.org\n")
    settings = TokenSettings.from_lookup(config.get)
    assert settings.password_directory == "/etc/condor/passwords.d"
    assert settings.pool_key_file == "/etc/condor/passwords.d/POOL"
    assert settings.system_token_directory == "/etc/condor/tokens.d"
    assert settings.trust_domain == "example.org"
    assert settings.token_directory is None
    assert settings.issuer_key == "POOL"


@pytest.mark.oracle
def test_defaults_agree_with_htcondor_param(param_oracle: ParamOracle) -> None:
    """For the same configuration, htcondor2.param gives the same paths and trust domain."""
    text = "ETC = /etc/condor\nUID_DOMAIN = example.org\nSEC_TOKEN_DIRECTORY = /tok\n"
    names = ["SEC_PASSWORD_DIRECTORY", "SEC_TOKEN_POOL_SIGNING_KEY_FILE", "TRUST_DOMAIN"]
    names += ["SEC_TOKEN_SYSTEM_DIRECTORY", "SEC_TOKEN_DIRECTORY", "SEC_TOKEN_ISSUER_KEY"]
    answer = param_oracle.load(text, names)
    assert answer.error is None
    settings = TokenSettings.from_lookup(Config.from_text(text).get)
    mine = [settings.password_directory, settings.pool_key_file, settings.trust_domain]
    mine += [settings.system_token_directory, settings.token_directory, settings.issuer_key]
    assert mine == [answer.values[name].text for name in names]


@given(st.text(max_size=300) | st.from_regex(r"[A-Za-z0-9_\-]{0,40}(\.[A-Za-z0-9_\-]{0,40}){0,4}"))
def test_any_text_decodes_to_a_token_or_a_token_error(text: str) -> None:
    """Whatever a token file or a client holds, decoding raises nothing but TokenError."""
    try:
        token = tokens.decode_token(text)
    except TokenError:
        return
    assert isinstance(token.claims, dict) and token.signed_part.count(".") == 1


def test_a_signing_key_appears_whole_and_leaves_no_draft(tmp_path: Path) -> None:
    """create_signing_key links a fully written file into place (never an empty key file for
    a reader to find), leaves no draft beside it, and a second call keeps the first key."""
    path = tmp_path / "keys" / "POOL"
    assert tokens.create_signing_key(path, b"first")
    assert not tokens.create_signing_key(path, b"second")
    assert path.read_bytes() == tokens.scramble(b"first")
    assert sorted(p.name for p in path.parent.iterdir()) == ["POOL"]
    assert path.stat().st_mode & 0o777 == 0o600
