"""The ECDH key exchange HTCondor (9.0 and later) runs inside the DC_AUTHENTICATE handshake.

The client puts a fresh P-256 public key in its security ad (``ECDHPublicKey``); a server that
sees one answers with its own key in the response ad. After authentication each side derives the
session's AES-GCM key from the shared secret: HKDF-SHA256 with salt ``htcondor`` and info
``keygen``, 32 bytes. A key on the wire is the curve point as OpenSSL's ``i2d_PublicKey``
writes it (uncompressed: ``04 || X || Y``, 65 bytes) in standard base64 with padding and no
line breaks. Pure functions: no sockets, no clock; only :func:`generate` draws randomness.
"""

from __future__ import annotations

import base64
import binascii
from collections.abc import Callable

import attrs
from cryptography.hazmat.primitives import hashes
from cryptography.hazmat.primitives.asymmetric import ec
from cryptography.hazmat.primitives.kdf.hkdf import HKDF
from cryptography.hazmat.primitives.serialization import Encoding, PublicFormat

from epcore.errors import EpError
from epcore.net.aesgcm import AesGcmProtection

#: The security ad attribute that carries a side's public key.
ATTRIBUTE = "ECDHPublicKey"
#: Bytes of the session key for AES (SEC_SESSION_KEY_LENGTH_V9).
SESSION_KEY_BYTES = 32
#: Longest base64 text accepted for a public key: a compressed or uncompressed P-256 point
#: fits in 88 characters; anything far longer is not a key and is refused before decoding.
_MAX_TEXT = 256


class KeyExchangeError(EpError):
    """A peer's public key that cannot be used; the message says why."""


@attrs.frozen
class KeyPair:
    """One side's ephemeral key: the private half stays here, ``public_text`` goes in the ad."""

    private: ec.EllipticCurvePrivateKey = attrs.field(repr=False)
    public_text: str


def encode_public_key(key: ec.EllipticCurvePublicKey) -> str:
    """A public key as HTCondor writes it into a security ad."""
    point = key.public_bytes(Encoding.X962, PublicFormat.UncompressedPoint)
    return base64.b64encode(point).decode("ascii")


def decode_public_key(text: str) -> ec.EllipticCurvePublicKey:
    """The P-256 public key a peer's ad carries; KeyExchangeError when it is not one."""
    if len(text) > _MAX_TEXT:
        raise KeyExchangeError(f"{ATTRIBUTE} is {len(text)} characters, too long for a key")
    try:
        point = base64.b64decode(text.strip(), validate=True)
    except (binascii.Error, ValueError) as error:
        raise KeyExchangeError(f"{ATTRIBUTE} is not base64") from error
    try:
        return ec.EllipticCurvePublicKey.from_encoded_point(ec.SECP256R1(), point)
    except ValueError as error:
        raise KeyExchangeError(f"{ATTRIBUTE} is not a point of curve P-256") from error


def from_private(private: ec.EllipticCurvePrivateKey) -> KeyPair:
    """The key pair of a given private key (tests pin keys this way)."""
    if not isinstance(private.curve, ec.SECP256R1):
        raise KeyExchangeError("HTCondor's key exchange uses curve P-256")
    return KeyPair(private, encode_public_key(private.public_key()))


def generate() -> KeyPair:
    """A fresh ephemeral key pair for one handshake."""
    return from_private(ec.generate_private_key(ec.SECP256R1()))


def session_key(mine: KeyPair, peer_text: str, length: int = SESSION_KEY_BYTES) -> bytes:
    """The session key both sides derive: HKDF-SHA256(ECDH secret, salt ``htcondor``, info
    ``keygen``)."""
    secret = mine.private.exchange(ec.ECDH(), decode_public_key(peer_text))
    return key_from_secret(secret, length)


def key_from_secret(secret: bytes, length: int = SESSION_KEY_BYTES) -> bytes:
    """HTCondor's derivation of a session key from a shared secret (Condor_Crypt_Base::hkdf)."""
    derivation = HKDF(algorithm=hashes.SHA256(), length=length, salt=b"htcondor", info=b"keygen")
    return derivation.derive(secret)


class EcdhKeyExchange:
    """The server's half of the exchange for the handshake: AES only (HTCondor's BLOWFISH and
    3DES are not offered). :meth:`start` answers the client's key with ours and gives what
    makes the stream's protection once the session's encryption and integrity are settled."""

    methods: tuple[str, ...] = ("AES",)

    def start(
        self, client_public_key: str, method: str
    ) -> tuple[str, Callable[[bool, bool], AesGcmProtection | None]]:
        if method.upper() != "AES":
            raise KeyExchangeError(f"crypto method {method} is not supported (only AES)")
        mine = generate()
        key = session_key(mine, client_public_key)

        def protection(encrypt: bool, integrity: bool) -> AesGcmProtection | None:
            # AES-GCM always encrypts and authenticates together, as in HTCondor.
            return AesGcmProtection(key) if encrypt or integrity else None

        return mine.public_text, protection


class EcdhClientKeyExchange:
    """The client's half: a fresh key for the policy ad, and, from the server's answer, what
    makes the session's AES-GCM protection (one instance per new session)."""

    methods: tuple[str, ...] = ("AES",)

    def __init__(self) -> None:
        self._mine = generate()

    def public_key(self) -> str:
        return self._mine.public_text

    def finish(
        self, server_public_key: str, method: str
    ) -> Callable[[bool, bool], AesGcmProtection | None]:
        if method.upper() != "AES":
            raise KeyExchangeError(f"crypto method {method} is not supported (only AES)")
        key = session_key(self._mine, server_public_key)

        def protection(encrypt: bool, integrity: bool) -> AesGcmProtection | None:
            return AesGcmProtection(key) if encrypt or integrity else None

        return protection
