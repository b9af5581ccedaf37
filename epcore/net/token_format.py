"""IDTOKENS' token format: HS256 JSON Web Tokens, decoded, signed and made byte for byte as
condor_token_create makes them (HTCondor's JSON library: sorted keys, no spaces, ``/``
escaped). :mod:`epcore.net.tokens` says how the parts fit.

Pure: no files and no clock; time arrives as ``now``.
"""

from __future__ import annotations

import base64
import binascii
import hmac
import json
import re
import secrets
from collections.abc import Mapping

import attrs

from epcore.net.signing_keys import jwt_key
from epcore.net.token_settings import POOL, TokenError

_DIGESTS = {"HS256": "sha256", "HS384": "sha384", "HS512": "sha512"}
#: The scope prefix that turns a scope into an authorization level.
SCOPE_PREFIX = "condor:/"


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
