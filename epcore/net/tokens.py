"""IDTOKENS: the pool's signing keys and the JSON Web Tokens they sign, as HTCondor makes them.

A signing key is a file of random bytes stored XOR-scrambled with ``DE AD BE EF`` (HTCondor's
guard against reading it by accident, not a protection). The POOL key
(``SEC_TOKEN_POOL_SIGNING_KEY_FILE``) is read doubled (its bytes twice over, as HTCondor has
since 8.9 so that tokens signed before then stay valid); any other key is the file of that name
in ``SEC_PASSWORD_DIRECTORY``, read once. The token's HMAC key is HKDF-SHA256 of the key with
salt ``htcondor`` and info ``master jwt``, 32 bytes; tokens are HS256 JWTs whose header is
``{"alg":"HS256","kid":KEY}`` and whose payload has ``exp``, ``iat``, ``iss`` (TRUST_DOMAIN),
``jti`` (16 random bytes in hex), ``scope`` (``condor:/LEVEL`` words) and ``sub``, serialized
as HTCondor's JSON library does (sorted keys, no spaces, ``/`` escaped) so that the text is
byte for byte what condor_token_create prints for the same claims.

The parts: the knobs and the error (:mod:`~epcore.net.token_settings`), the signing keys
(:mod:`~epcore.net.signing_keys`), the token format (:mod:`~epcore.net.token_format`), and here
what a server accepts (signature, claims, revocation, the levels a token's scopes allow) and
what a client offers (the token it finds for a server). Every name of the parts is importable
from here, the face of IDTOKENS the rest of epcore uses.

Files and the clock are read only where a function's name says so (``read_*``, ``create_*``,
``find_*``); everything else takes ``now`` and bytes as arguments.
"""

from __future__ import annotations

import hmac
import os
import re
from collections.abc import Callable, Iterator, Mapping
from pathlib import Path

import attrs

from epcore.classad import ClassAd, ClassAdSyntaxError, parse_expr
from epcore.net.signing_keys import (
    JWT_KEY_BYTES,
    KEY_FILE_BYTES,
    create_signing_key,
    hkdf,
    jwt_key,
    key_names,
    read_secure_file,
    read_signing_key,
    scramble,
)
from epcore.net.token_format import (
    SCOPE_PREFIX,
    Token,
    create_token,
    decode_token,
    picojson,
    sign,
)
from epcore.net.token_settings import POOL, TokenError, TokenSettings

__all__ = [
    "IMPLIED",
    "JWT_KEY_BYTES",
    "KEY_FILE_BYTES",
    "POOL",
    "SCOPE_PREFIX",
    "FoundToken",
    "Token",
    "TokenError",
    "TokenSettings",
    "authorization_bounds",
    "check_claims",
    "client_token_directory",
    "create_signing_key",
    "create_token",
    "decode_token",
    "find_client_token",
    "hkdf",
    "is_authorized",
    "is_revoked",
    "jwt_key",
    "key_names",
    "picojson",
    "read_secure_file",
    "read_signing_key",
    "scramble",
    "sign",
    "token_files",
    "usable",
    "verify_token",
]

#: The levels a level implies (HTCondor's DCpermissionHierarchy): a token limited to WRITE
#: may also READ; ADMINISTRATOR and DAEMON reach READ through WRITE.
IMPLIED: Mapping[str, str] = {
    "WRITE": "READ",
    "NEGOTIATOR": "READ",
    "ADMINISTRATOR": "WRITE",
    "CONFIG": "READ",
    "DAEMON": "WRITE",
    "ADVERTISE_STARTD": "READ",
    "ADVERTISE_SCHEDD": "READ",
    "ADVERTISE_MASTER": "READ",
}


# -- what a server accepts -------------------------------------------------------------------


def check_claims(
    token: Token, *, now: int, revocation_expr: str | None = None, max_age: int | None = None
) -> None:
    """Raise TokenError unless the claims pass HTCondor's checks: not too old, not expired,
    an issuer, a jti, a subject, and not revoked."""
    issued = token.issued_at
    # As in HTCondor, 0 (like -1 or unset) means no limit.
    if max_age and max_age > 0 and issued is not None and now - issued > max_age:
        raise TokenError(f"token age ({now - issued}s) is greater than SEC_TOKEN_MAX_AGE")
    expires = token.expires_at
    if expires is not None and now > expires:
        raise TokenError(f"token has been expired for {now - expires} seconds")
    if not token.issuer:
        raise TokenError("token has no issuer")
    if not token.jti:
        raise TokenError("token has no jti")
    if not token.subject:
        # HTCondor looks such tokens (capabilities) up in its tokens database, which epcore
        # does not keep.
        raise TokenError("token has no subject")
    if is_revoked(token, revocation_expr):
        raise TokenError(f"token {token.jti} has been revoked")


def is_revoked(token: Token, revocation_expr: str | None) -> bool:
    """Whether SEC_TOKEN_REVOCATION_EXPR holds for the token's claims. As in HTCondor, an
    expression that does not evaluate to a boolean (or a number) counts as revoked: a broken
    revocation list must not let every token through."""
    if not revocation_expr:
        return False
    ad = ClassAd()
    for name, value in token.claims.items():
        if isinstance(value, bool | int | float | str):
            ad[name] = value
    try:
        result = parse_expr(revocation_expr).evaluate(ad)
    except ClassAdSyntaxError:
        return True
    if isinstance(result, bool):
        return result
    if isinstance(result, int | float):
        return result != 0
    return True


def verify_token(
    text: str,
    settings: TokenSettings,
    *,
    now: int,
    read_key: Callable[[str], bytes] | None = None,
) -> Token:
    """Decode a whole token, check its signature with the key its ``kid`` names and its claims;
    the token when it is good, TokenError saying why otherwise."""
    token = decode_token(text)
    if not token.key_id:
        raise TokenError("token has no key id (kid)")
    key = (read_key or (lambda kid: read_signing_key(settings, kid)))(token.key_id)
    expected = sign(token.signed_part, jwt_key(key), token.algorithm)
    if not hmac.compare_digest(expected, token.signature):
        raise TokenError(f"token signature does not match key {token.key_id}")
    check_claims(token, now=now, revocation_expr=settings.revocation_expr, max_age=settings.max_age)
    return token


def authorization_bounds(limits: tuple[str, ...]) -> frozenset[str] | None:
    """The levels a token limited to ``limits`` may use, implied levels included; None when the
    token is not limited."""
    if not limits:
        return None
    bound: set[str] = set()
    for level in limits:
        while level and level not in bound:
            bound.add(level)
            level = IMPLIED.get(level, "")
    return frozenset(bound)


def is_authorized(limits: tuple[str, ...], level: str) -> bool:
    """Whether a connection whose token is limited to ``limits`` may act at ``level``."""
    bounds = authorization_bounds(limits)
    return level == "ALLOW" or bounds is None or level in bounds


# -- what a client sends ---------------------------------------------------------------------


@attrs.frozen
class FoundToken:
    """A token a client found for a server: where, and what it says."""

    token: Token
    path: str


def client_token_directory(settings: TokenSettings, euid: int, home: str | None) -> str:
    """Where a client looks for tokens: SEC_TOKEN_DIRECTORY, else ``~/.condor/tokens.d`` for an
    ordinary user, else (root) SEC_TOKEN_SYSTEM_DIRECTORY."""
    if settings.token_directory:
        return settings.token_directory
    if euid != 0 and home:
        return os.path.join(home, ".condor", "tokens.d")
    return settings.system_token_directory


def usable(token: Token, issuer: str, server_keys: frozenset[str]) -> bool:
    """Whether a client may offer ``token`` to a server of trust domain ``issuer`` holding
    ``server_keys`` (either empty: not announced, anything goes)."""
    if not token.key_id or (server_keys and token.key_id not in server_keys):
        return False
    return not (issuer and token.issuer != issuer) and bool(token.subject or token.jti)


def token_files(directory: str, exclude_regexp: str | None, subsystem: str) -> Iterator[str]:
    """The files of a token directory in the order a client reads them: the subsystem's
    ``<SUBSYS>_auto_generated_token`` first, then the rest sorted; names matching
    LOCAL_CONFIG_DIR_EXCLUDE_REGEXP and directories left out."""
    exclude = re.compile(exclude_regexp) if exclude_regexp else None
    try:
        entries = sorted(os.scandir(directory), key=lambda e: e.path)
    except OSError:
        return
    files = [
        e.path
        for e in entries
        if not e.is_dir() and not (exclude is not None and exclude.search(e.name))
    ]
    own = f"{subsystem}_auto_generated_token".lower()
    first = [p for p in files if os.path.basename(p).lower() == own]
    yield from first + [p for p in files if p not in first]


def find_client_token(
    settings: TokenSettings,
    *,
    issuer: str,
    server_keys: frozenset[str],
    subsystem: str = "TOOL",
    euid: int | None = None,
    home: str | None = None,
) -> FoundToken | None:
    """The first token in the client's token directory usable with the server, or None. Files
    another user could read or write are skipped, as HTCondor does."""
    euid = os.geteuid() if euid is None else euid
    home = home if home is not None else os.path.expanduser("~")
    directory = client_token_directory(settings, euid, home)
    for path in token_files(directory, settings.exclude_regexp, subsystem):
        try:
            content = read_secure_file(Path(path)).decode("utf-8", "replace")
        except TokenError:
            continue
        for line in content.splitlines():
            line = line.strip()
            if not line or line.startswith("#"):
                continue
            try:
                token = decode_token(line)
            except TokenError:
                continue
            if usable(token, issuer, server_keys):
                return FoundToken(token, path)
    return None
