"""IDTOKENS' signing keys: files of random bytes stored XOR-scrambled with ``DE AD BE EF``
(HTCondor's guard against reading them by accident, not a protection), and the HMAC key a
signing key gives its tokens (HKDF-SHA256). :mod:`epcore.net.tokens` says how the parts fit.

Files are read and written only by the functions whose names say so (``read_*``,
``create_*``, :func:`key_names`).
"""

from __future__ import annotations

import contextlib
import os
import secrets
import stat
from pathlib import Path

from cryptography.hazmat.primitives import hashes
from cryptography.hazmat.primitives.kdf.hkdf import HKDF

from epcore.net.token_settings import POOL, TokenError, TokenSettings

#: Bytes of randomness in a signing key HTCondor creates.
KEY_FILE_BYTES = 64
#: Bytes of the HMAC key derived from a signing key (AUTH_PW_KEY_STRENGTH).
JWT_KEY_BYTES = 32
_SCRAMBLE = bytes((0xDE, 0xAD, 0xBE, 0xEF))


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
    if path.exists():
        return False
    # Written whole under a private name, then linked into place: a reader never sees the
    # file empty, and link() fails when the name exists, so two daemons starting at once
    # cannot both make it (and differ).
    draft = path.with_name(f".{path.name}.{os.getpid()}.{secrets.token_hex(4)}")
    fd = os.open(draft, os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW, 0o600)
    try:
        with os.fdopen(fd, "wb") as file:
            file.write(scramble(random_bytes or secrets.token_bytes(KEY_FILE_BYTES)))
        try:
            os.link(draft, path)
        except FileExistsError:
            return False
        return True
    finally:
        os.unlink(draft)


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
