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

The module reads files and the clock only where a function's name says so (``read_*``,
``create_*``, ``find_*``); everything else takes ``now`` and bytes as arguments.
"""

from __future__ import annotations

import base64
import binascii
import contextlib
import hmac
import json
import os
import re
import secrets
import stat
from collections.abc import Callable, Iterator, Mapping
from pathlib import Path

import attrs
from cryptography.hazmat.primitives import hashes
from cryptography.hazmat.primitives.kdf.hkdf import HKDF

from epcore.classad import ClassAd, ClassAdSyntaxError, parse_expr
from epcore.errors import EpError

#: The key name HTCondor uses for SEC_TOKEN_POOL_SIGNING_KEY_FILE.
POOL = "POOL"
#: Bytes of randomness in a signing key HTCondor creates.
KEY_FILE_BYTES = 64
#: Bytes of the HMAC key derived from a signing key (AUTH_PW_KEY_STRENGTH).
JWT_KEY_BYTES = 32
_SCRAMBLE = bytes((0xDE, 0xAD, 0xBE, 0xEF))
_DIGESTS = {"HS256": "sha256", "HS384": "sha384", "HS512": "sha512"}
#: The scope prefix that turns a scope into an authorization level.
SCOPE_PREFIX = "condor:/"
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


class TokenError(EpError):
    """A token or a signing key that cannot be used; the message says why."""


@attrs.frozen
class TokenSettings:
    """The knobs IDTOKENS reads, with HTCondor's defaults filled in."""

    password_directory: str
    pool_key_file: str
    trust_domain: str
    system_token_directory: str
    token_directory: str | None = None
    issuer_key: str = POOL
    revocation_expr: str | None = None
    max_age: int | None = None
    exclude_regexp: str | None = None

    @classmethod
    def from_lookup(cls, get: Callable[[str], str | None]) -> TokenSettings:
        """Read the knobs through ``get`` (a configuration's ``get``): unset ones take the
        defaults HTCondor's parameter table gives them."""
        etc = get("ETC") or ""
        password_directory = get("SEC_PASSWORD_DIRECTORY") or f"{etc}/passwords.d"
        pool_key_file = (
            get("SEC_TOKEN_POOL_SIGNING_KEY_FILE")
            or get("SEC_PASSWORD_FILE")
            or f"{password_directory}/{POOL}"
        )
        trust_domain = get("TRUST_DOMAIN") or get("UID_DOMAIN") or get("FULL_HOSTNAME") or ""
        max_age = get("SEC_TOKEN_MAX_AGE")
        return cls(
            password_directory=password_directory,
            pool_key_file=pool_key_file,
            trust_domain=trust_domain,
            system_token_directory=get("SEC_TOKEN_SYSTEM_DIRECTORY") or f"{etc}/tokens.d",
            token_directory=get("SEC_TOKEN_DIRECTORY") or None,
            issuer_key=get("SEC_TOKEN_ISSUER_KEY") or POOL,
            # The old name still counts when the new one is unset, as in HTCondor.
            revocation_expr=get("SEC_TOKEN_REVOCATION_EXPR")
            or get("SEC_TOKEN_BLACKLIST_EXPR")
            or None,
            max_age=int(max_age) if max_age and max_age.strip().lstrip("-").isdigit() else None,
            exclude_regexp=get("LOCAL_CONFIG_DIR_EXCLUDE_REGEXP") or None,
        )

    def key_path(self, key_id: str) -> Path:
        """The file of the signing key ``key_id`` (POOL, or a name in the password directory).

        A name with a directory part is refused: the key id comes from a token, which anyone
        can write, and must not lead the daemon to read a file outside the directory.
        """
        if key_id in ("", POOL):
            return Path(self.pool_key_file)
        if key_id != os.path.basename(key_id) or key_id in (".", ".."):
            raise TokenError(f"signing key name {key_id!r} is not a plain file name")
        return Path(self.password_directory) / key_id


# -- signing keys ----------------------------------------------------------------------------


def scramble(data: bytes) -> bytes:
    """HTCondor's trivial scramble of password files (XOR with DE AD BE EF); its own inverse."""
    return bytes(b ^ _SCRAMBLE[i % 4] for i, b in enumerate(data))


def read_secure_file(path: Path, owner: int | None = None) -> bytes:
    """The bytes of ``path``, which must be a regular file owned by ``owner`` (default: this
    process's real uid, as HTCondor checks) that neither group nor others may access."""
    owner = os.getuid() if owner is None else owner
    try:
        # A symbolic link is followed, as HTCondor follows it: the checks below are made on
        # the file actually opened.
        fd = os.open(path, os.O_RDONLY | os.O_CLOEXEC)
    except OSError as error:
        raise TokenError(f"cannot read {path}: {error.strerror}") from error
    with os.fdopen(fd, "rb") as file:
        info = os.fstat(file.fileno())
        if not stat.S_ISREG(info.st_mode):
            raise TokenError(f"{path} is not a regular file")
        if info.st_uid != owner:
            raise TokenError(f"{path} must be owned by uid {owner}, not uid {info.st_uid}")
        if info.st_mode & 0o077:
            raise TokenError(
                f"{path} must not be accessible by group or others"
                f" (mode {stat.S_IMODE(info.st_mode):o})"
            )
        return file.read()


def read_signing_key(settings: TokenSettings, key_id: str, owner: int | None = None) -> bytes:
    """The signing key ``key_id`` as HTCondor uses it: unscrambled, and doubled for POOL."""
    key = scramble(read_secure_file(settings.key_path(key_id), owner))
    if not key:
        raise TokenError(f"signing key {key_id or POOL} is empty")
    return key + key if key_id in ("", POOL) else key


def create_signing_key(path: Path, random_bytes: bytes | None = None) -> bool:
    """Write a new signing key to ``path`` (0600, scrambled) unless the file exists; True when
    this call made it. The directory is made 0700 when missing."""
    path.parent.mkdir(mode=0o700, parents=True, exist_ok=True)
    try:
        # O_EXCL: two daemons starting at once must not both write (and differ).
        fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW, 0o600)
    except FileExistsError:
        return False
    with os.fdopen(fd, "wb") as file:
        file.write(scramble(random_bytes or secrets.token_bytes(KEY_FILE_BYTES)))
    return True


def key_names(settings: TokenSettings, owner: int | None = None) -> tuple[str, ...]:
    """The names of the signing keys this process can read (POOL first), as a server announces
    them in IssuerKeys."""
    names: list[str] = []
    candidates = [POOL]
    # A missing password directory only means there is no key but POOL.
    with contextlib.suppress(OSError):
        candidates += sorted(e.name for e in os.scandir(settings.password_directory))
    for name in candidates:
        if name in names or (name != POOL and settings.key_path(name) == settings.key_path(POOL)):
            continue
        try:
            read_signing_key(settings, name, owner)
        except TokenError:
            continue
        names.append(name)
    return tuple(names)


def jwt_key(signing_key: bytes) -> bytes:
    """The HMAC key of the tokens a signing key signs (HKDF-SHA256, salt ``htcondor``, info
    ``master jwt``)."""
    return hkdf(signing_key, salt=b"htcondor", info=b"master jwt", length=JWT_KEY_BYTES)


def hkdf(secret: bytes, *, salt: bytes, info: bytes, length: int) -> bytes:
    """RFC 5869 HKDF with SHA-256, as every HTCondor key derivation uses it."""
    return HKDF(algorithm=hashes.SHA256(), length=length, salt=salt, info=info).derive(secret)


# -- the token format ------------------------------------------------------------------------


def _b64url(data: bytes) -> str:
    return base64.urlsafe_b64encode(data).rstrip(b"=").decode("ascii")


def _unb64url(text: str) -> bytes:
    if not re.fullmatch(r"[A-Za-z0-9_-]*", text) or len(text) % 4 == 1:
        raise TokenError("token part is not base64url")
    return base64.urlsafe_b64decode(text + "=" * (-len(text) % 4))


_JSON_ESCAPES = {'"': '\\"', "\\": "\\\\", "/": "\\/", "\b": "\\b", "\f": "\\f"}
_JSON_ESCAPES |= {"\n": "\\n", "\r": "\\r", "\t": "\\t"}


def _json_string(text: str) -> str:
    out = []
    for char in text:
        if char in _JSON_ESCAPES:
            out.append(_JSON_ESCAPES[char])
        elif ord(char) < 0x20 or ord(char) == 0x7F:
            out.append(f"\\u{ord(char):04x}")
        else:
            out.append(char)
    return '"' + "".join(out) + '"'


def picojson(claims: Mapping[str, str | int | bool]) -> str:
    """``claims`` as the JSON text HTCondor's JWT library writes: keys sorted, no spaces, ``/``
    escaped as ``\\/``, non-ASCII left as UTF-8."""
    parts = []
    for name in sorted(claims):
        value = claims[name]
        if isinstance(value, bool):
            text = "true" if value else "false"
        elif isinstance(value, int):
            text = str(value)
        else:
            text = _json_string(value)
        parts.append(f"{_json_string(name)}:{text}")
    return "{" + ",".join(parts) + "}"


@attrs.frozen
class Token:
    """A decoded JWT: its header and claims, the ``header.payload`` text the signature covers,
    and the signature's bytes."""

    header: Mapping[str, object]
    claims: Mapping[str, object]
    signed_part: str
    signature: bytes

    @property
    def text(self) -> str:
        """The token as written in a token file."""
        return f"{self.signed_part}.{_b64url(self.signature)}"

    @property
    def key_id(self) -> str:
        kid = self.header.get("kid")
        return kid if isinstance(kid, str) else ""

    @property
    def algorithm(self) -> str:
        alg = self.header.get("alg")
        return alg if isinstance(alg, str) else ""

    def _string(self, name: str) -> str:
        value = self.claims.get(name)
        return value if isinstance(value, str) else ""

    @property
    def issuer(self) -> str:
        return self._string("iss")

    @property
    def subject(self) -> str:
        return self._string("sub")

    @property
    def jti(self) -> str:
        return self._string("jti")

    @property
    def scopes(self) -> tuple[str, ...]:
        """The scope claim's words."""
        return tuple(self._string("scope").replace(",", " ").split())

    @property
    def authorizations(self) -> tuple[str, ...]:
        """The levels the token is limited to (its ``condor:/LEVEL`` scopes); empty: no limit."""
        return tuple(s[len(SCOPE_PREFIX) :] for s in self.scopes if s.startswith(SCOPE_PREFIX))

    def _time(self, name: str) -> int | None:
        value = self.claims.get(name)
        if isinstance(value, bool) or not isinstance(value, int | float):
            return None
        return int(value)

    @property
    def expires_at(self) -> int | None:
        return self._time("exp")

    @property
    def issued_at(self) -> int | None:
        return self._time("iat")


def _json_object(part: str, what: str) -> dict[str, object]:
    try:
        value = json.loads(_unb64url(part).decode("utf-8"))
    except (UnicodeDecodeError, ValueError, binascii.Error) as error:
        raise TokenError(f"token {what} is not JSON") from error
    if not isinstance(value, dict):
        raise TokenError(f"token {what} is not a JSON object")
    return value


def decode_token(text: str, *, signed: bool = True) -> Token:
    """Split and decode a JWT without checking its signature. With ``signed=False``, ``text``
    is only ``header.payload`` (what a TOKEN client sends) and the signature is empty."""
    parts = text.strip().split(".")
    if len(parts) != (3 if signed else 2):
        raise TokenError("a token is three base64url parts separated by dots")
    header = _json_object(parts[0], "header")
    claims = _json_object(parts[1], "payload")
    signature = _unb64url(parts[2]) if signed else b""
    return Token(header, claims, f"{parts[0]}.{parts[1]}", signature)


def sign(signed_part: str, key: bytes, algorithm: str = "HS256") -> bytes:
    """The HMAC signature of ``header.payload`` with a token key (``jwt_key``)."""
    digest = _DIGESTS.get(algorithm)
    if digest is None:
        raise TokenError(f"token algorithm {algorithm!r} is not HS256, HS384 or HS512")
    return hmac.new(key, signed_part.encode("ascii"), digest).digest()


def create_token(
    signing_key: bytes,
    *,
    key_id: str,
    issuer: str,
    subject: str,
    now: int,
    authorizations: tuple[str, ...] = (),
    lifetime: int | None = None,
    jti: str | None = None,
) -> str:
    """A token as condor_token_create makes it (``lifetime`` None: no expiry)."""
    if not issuer or re.search(r"[, \t]", issuer):
        raise TokenError("TRUST_DOMAIN must be set, without spaces or commas")
    claims: dict[str, str | int | bool] = {
        "iat": now,
        "iss": issuer,
        "jti": jti or secrets.token_hex(16),
        "sub": subject,
    }
    if lifetime is not None and lifetime >= 0:
        claims["exp"] = now + lifetime
    if authorizations:
        claims["scope"] = " ".join(SCOPE_PREFIX + level for level in authorizations)
    header = picojson({"alg": "HS256", "kid": key_id or POOL})
    signed_part = f"{_b64url(header.encode())}.{_b64url(picojson(claims).encode())}"
    return f"{signed_part}.{_b64url(sign(signed_part, jwt_key(signing_key)))}"


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
