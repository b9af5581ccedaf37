"""IDTOKENS' configuration: the knobs it reads (with HTCondor's defaults), where each signing key
is, and the error every part of IDTOKENS raises. :mod:`epcore.net.tokens` says how the parts fit.
"""

from __future__ import annotations

import os
from collections.abc import Callable
from pathlib import Path

import attrs

from epcore.errors import EpError

#: The key name HTCondor uses for SEC_TOKEN_POOL_SIGNING_KEY_FILE.
POOL = "POOL"


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
