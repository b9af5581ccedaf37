"""The security policy of each authorization level, and its negotiation, as HTCondor does it.

Each side of a connection states, for the level of the command, how much it wants
authentication, encryption and integrity (REQUIRED, PREFERRED, OPTIONAL or NEVER), which
authentication and crypto methods it offers, and how long a session may last
(SEC_<level>_AUTHENTICATION, _ENCRYPTION, _INTEGRITY, _NEGOTIATION,
_AUTHENTICATION_METHODS, _CRYPTO_METHODS, _SESSION_DURATION, _SESSION_LEASE; a level's knob
falls back to SEC_DEFAULT_*, then to HTCondor's built-in default: OPTIONAL, PREFERRED
negotiation, methods FS,IDTOKENS,KERBEROS,SCITOKENS,SSL, crypto AES,BLOWFISH,3DES, a day
for a daemon's session and a minute for a tool's, an hour's lease; condor_secman.cpp).

:func:`reconcile` turns the client's and the server's policy ads into the actions of the
session with HTCondor's table (either side REQUIRED or PREFERRED and the other not NEVER:
YES; a REQUIRED against a NEVER fails; otherwise NO), the methods both offer in the
server's order, the shorter duration and lease; and, as HTCondor 9 does, when
authentication happens with AES first among the crypto methods, encryption and integrity
are on too. Only the methods and crypto a process can run are offered: a policy that
requires crypto it does not have is refused with the knob to blame.
"""

from __future__ import annotations

from collections.abc import Collection
from typing import Final

import attrs

from epcore.classad import ClassAd
from epcore.config import Config
from epcore.errors import EpError
from epcore.net.commands import CLIENT

REQUIRED: Final = "REQUIRED"
PREFERRED: Final = "PREFERRED"
OPTIONAL: Final = "OPTIONAL"
NEVER: Final = "NEVER"
#: The requirement levels, weakest first (the order ReconcileSecurityDependency compares).
_STRENGTH: Final = {NEVER: 0, OPTIONAL: 1, PREFERRED: 2, REQUIRED: 3}

#: HTCondor's built-in defaults (the param table and condor_secman.cpp).
DEFAULT_METHODS: Final = ("FS", "IDTOKENS", "KERBEROS", "SCITOKENS", "SSL")
DEFAULT_CRYPTO: Final = ("AES", "BLOWFISH", "3DES")
DAEMON_SESSION: Final = 86400
TOOL_SESSION: Final = 60
SESSION_LEASE: Final = 3600
#: The version epcore states in RemoteVersion (clients compare it to decide what a peer
#: understands; epcore speaks what HTCondor 25 does).
VERSION: Final = "$CondorVersion: 25.0.0 2025-01-01 BuildID: epcore $"

#: The policy ad's attribute names (condor_attributes.h).
AUTHENTICATION: Final = "Authentication"
AUTHENTICATION_NEW: Final = "AuthenticationNew"
ENCRYPTION: Final = "Encryption"
INTEGRITY: Final = "Integrity"
NEGOTIATION: Final = "OutgoingNegotiation"
METHODS: Final = "AuthMethods"
METHODS_LIST: Final = "AuthMethodsList"
CRYPTO_METHODS: Final = "CryptoMethods"
CRYPTO_METHODS_LIST: Final = "CryptoMethodsList"
SESSION_DURATION: Final = "SessionDuration"
SESSION_LEASE_ATTR: Final = "SessionLease"
ENACT: Final = "Enact"
AUTH_REQUIRED: Final = "AuthRequired"


class PolicyError(EpError):
    """A policy that cannot hold (a REQUIRED against a NEVER, crypto required but none)."""


def _aliases(method: str) -> str:
    """HTCondor's spellings of the token method all mean TOKEN in negotiation."""
    upper = method.upper()
    return "TOKEN" if upper in ("TOKENS", "IDTOKENS", "IDTOKEN") else upper


@attrs.frozen
class LevelPolicy:
    """One side's policy for one level (module docstring)."""

    authentication: str = OPTIONAL
    encryption: str = OPTIONAL
    integrity: str = OPTIONAL
    negotiation: str = PREFERRED
    methods: tuple[str, ...] = DEFAULT_METHODS
    crypto_methods: tuple[str, ...] = DEFAULT_CRYPTO
    session_duration: int = DAEMON_SESSION
    session_lease: int = SESSION_LEASE

    @classmethod
    def from_config(
        cls,
        config: Config,
        level: str,
        *,
        tool: bool = False,
        methods: Collection[str] | None = None,
        crypto: Collection[str] | None = None,
    ) -> LevelPolicy:
        """The policy of ``level`` as ``config`` sets it; only the ``methods`` and the
        ``crypto`` this process can run are offered (None: every one named)."""

        def setting(name: str) -> str | None:
            for prefix in (level, "DEFAULT"):
                value = config.get(f"SEC_{prefix}_{name}")
                if value is not None and value.strip():
                    return value.strip()
            return None

        def requirement(name: str, default: str) -> str:
            value = setting(name)
            if value is None:
                return default
            for word in _STRENGTH:
                if word.startswith(value[:1].upper()):
                    return word
            raise PolicyError(
                f"SEC_{level}_{name} = {value} is not REQUIRED, PREFERRED, OPTIONAL or NEVER"
            )

        def integer(name: str, default: int) -> int:
            value = setting(name)
            try:
                return int(value) if value is not None else default
            except ValueError:
                raise PolicyError(f"SEC_{level}_{name} = {value} is not a number") from None

        def names(
            name: str, default: tuple[str, ...], available: Collection[str] | None
        ) -> tuple[str, ...]:
            value = setting(name)
            listed = tuple(value.replace(",", " ").split()) if value is not None else default
            if available is None:
                return listed
            runnable = {_aliases(item) for item in available}
            return tuple(item for item in listed if _aliases(item) in runnable)

        policy = cls(
            authentication=requirement("AUTHENTICATION", OPTIONAL),
            encryption=requirement("ENCRYPTION", OPTIONAL),
            integrity=requirement("INTEGRITY", OPTIONAL),
            negotiation=requirement("NEGOTIATION", PREFERRED),
            methods=names("AUTHENTICATION_METHODS", DEFAULT_METHODS, methods),
            crypto_methods=names("CRYPTO_METHODS", DEFAULT_CRYPTO, crypto),
            session_duration=integer("SESSION_DURATION", TOOL_SESSION if tool else DAEMON_SESSION),
            session_lease=integer("SESSION_LEASE", SESSION_LEASE),
        )
        return policy.consistent(level)

    def consistent(self, level: str) -> LevelPolicy:
        """This policy with HTCondor's dependencies applied (encryption or integrity
        raise authentication; a NEVER negotiation forbids the rest; no methods or no
        crypto turn those off); PolicyError when a REQUIRED cannot be met."""
        authentication, encryption, integrity = self.authentication, self.encryption, self.integrity
        if not self.methods:
            if authentication == REQUIRED:
                raise PolicyError(
                    f"SEC_{level}_AUTHENTICATION is REQUIRED but no method of "
                    f"SEC_{level}_AUTHENTICATION_METHODS can run here"
                )
            authentication = NEVER
        if not self.crypto_methods:
            for name, value in (("ENCRYPTION", encryption), ("INTEGRITY", integrity)):
                if value == REQUIRED:
                    raise PolicyError(
                        f"SEC_{level}_{name} is REQUIRED but no crypto method of "
                        f"SEC_{level}_CRYPTO_METHODS can run here"
                    )
            encryption = integrity = NEVER
        if self.negotiation == NEVER and REQUIRED in (authentication, encryption, integrity):
            raise PolicyError(f"SEC_{level}_NEGOTIATION is NEVER but a feature is REQUIRED")
        return attrs.evolve(
            self, authentication=authentication, encryption=encryption, integrity=integrity
        )

    def ad(self, *, subsystem: str) -> ClassAd:
        """The policy ad a side sends (or keeps) for the negotiation."""
        ad = ClassAd()
        if self.methods:
            ad[METHODS] = ",".join(self.methods)
        if self.crypto_methods:
            ad[CRYPTO_METHODS] = ",".join(self.crypto_methods)
        ad[NEGOTIATION] = self.negotiation
        ad[AUTHENTICATION] = self.authentication
        ad[AUTHENTICATION_NEW] = self.authentication
        ad[ENCRYPTION] = self.encryption
        ad[INTEGRITY] = self.integrity
        ad[ENACT] = "NO"
        ad["Subsystem"] = subsystem
        ad[SESSION_DURATION] = str(self.session_duration)
        ad[SESSION_LEASE_ATTR] = self.session_lease
        return ad


def client_policy(
    config: Config, *, methods: Collection[str], crypto: Collection[str], tool: bool = True
) -> LevelPolicy:
    """The CLIENT level's policy for a tool of this process (``tool`` False: for a daemon,
    whose sessions last a day, not a minute, as in condor_secman.cpp)."""
    return LevelPolicy.from_config(config, CLIENT, tool=tool, methods=methods, crypto=crypto)


def _requirement(ad: ClassAd, name: str, alternate: str | None = None) -> tuple[str, bool]:
    value = ad.evaluate(name)
    used_alternate = False
    if not isinstance(value, str) and alternate is not None:
        value = ad.evaluate(alternate)
        used_alternate = isinstance(value, str)
    if not isinstance(value, str) or not value:
        return NEVER, used_alternate  # a missing attribute: the side cannot do it
    for word in _STRENGTH:
        if word.startswith(value[:1].upper()):
            return word, used_alternate
    raise PolicyError(f"{name} = {value!r} is not REQUIRED, PREFERRED, OPTIONAL or NEVER")


def _action(client: str, server: str, what: str) -> bool:
    """HTCondor's table (condor_secman.cpp's ReconcileSecurityAttribute)."""
    if NEVER in (client, server) and REQUIRED in (client, server):
        raise PolicyError(f"{what}: one side requires it and the other never does it")
    if NEVER in (client, server):
        return False
    return REQUIRED in (client, server) or PREFERRED in (client, server)


def _common(client: str | None, server: str | None) -> list[str]:
    """The methods both lists name, in the server's order, in the client's spelling."""
    if not client or not server:
        return []
    theirs = [item.strip() for item in client.split(",") if item.strip()]
    common: list[str] = []
    for mine in (item.strip() for item in server.split(",")):
        for their in theirs:
            if _aliases(mine) == _aliases(their) and their not in common:
                common.append(their)
    return common


def reconcile(client: ClassAd, server: ClassAd) -> ClassAd:
    """The session's actions from the two policy ads (module docstring); PolicyError when
    they cannot agree."""
    server_auth, _ = _requirement(server, AUTHENTICATION_NEW, AUTHENTICATION)
    client_auth, old_client = _requirement(client, AUTHENTICATION_NEW, AUTHENTICATION)
    if old_client:  # an old client states only Authentication: compare like with like
        server_auth, _ = _requirement(server, AUTHENTICATION)
    authenticate = _action(client_auth, server_auth, "authentication")
    encrypt = _action(
        _requirement(client, ENCRYPTION)[0], _requirement(server, ENCRYPTION)[0], "encryption"
    )
    integrity = _action(
        _requirement(client, INTEGRITY)[0], _requirement(server, INTEGRITY)[0], "integrity"
    )
    actions = ClassAd()
    actions[AUTHENTICATION] = "YES" if authenticate else "NO"
    if authenticate and REQUIRED not in (client_auth, server_auth):
        actions[AUTH_REQUIRED] = False
    methods = _common(_text(client, METHODS), _text(server, METHODS))
    if _text(client, METHODS) is not None and _text(server, METHODS) is not None:
        actions[METHODS_LIST] = ",".join(methods)
        actions[METHODS] = methods[0] if methods else ""
    crypto = _common(_text(client, CRYPTO_METHODS), _text(server, CRYPTO_METHODS))
    if _text(client, CRYPTO_METHODS) is not None and _text(server, CRYPTO_METHODS) is not None:
        actions[CRYPTO_METHODS] = ",".join(crypto)
        actions[CRYPTO_METHODS_LIST] = ",".join(crypto)
        if authenticate and crypto and crypto[0].upper() == "AES":
            encrypt = integrity = True
    actions[ENCRYPTION] = "YES" if encrypt else "NO"
    actions[INTEGRITY] = "YES" if integrity else "NO"
    durations = [_integer(ad, SESSION_DURATION) for ad in (client, server)]
    actions[SESSION_DURATION] = str(min(value or 0 for value in durations))
    theirs, mine = client.evaluate(SESSION_LEASE_ATTR), server.evaluate(SESSION_LEASE_ATTR)
    if isinstance(theirs, int) and isinstance(mine, int):
        # A lease of 0 means none: the other side's applies.
        actions[SESSION_LEASE_ATTR] = min(theirs or mine, mine or theirs)
    actions[ENACT] = "YES"
    return actions


def _text(ad: ClassAd, name: str) -> str | None:
    value = ad.evaluate(name)
    return value if isinstance(value, str) else None


def _integer(ad: ClassAd, name: str) -> int | None:
    value = ad.evaluate(name)
    if type(value) is int:
        return value
    if isinstance(value, str) and value.strip().lstrip("-").isdigit():
        return int(value)
    return None


def is_yes(ad: ClassAd, name: str) -> bool:
    """Whether an action attribute says YES."""
    value = ad.evaluate(name)
    return isinstance(value, str) and value.upper().startswith("Y")
