"""HTCondor's own IDTOKENS code, called in the library the htcondor wheel ships, as an oracle.

Run as ``CONDOR_CONFIG=... python htcondor_token_oracle.py IDENTITY LIFETIME AUTHZ...``: it
prints one JSON object with what libcondor_utils computes:

- ``token``: Condor_Auth_Passwd::generate_token (condor_token_create's code) for IDENTITY,
  the POOL key and the AUTHZ levels, signed with the key file the configuration names;
- ``seed_ka`` / ``seed_kb``: Condor_Auth_Passwd::setup_seed, the AKEP2 seeds (hex);
- ``hkdf``: Condor_Auth_Passwd::hkdf of fixed inputs, and ``keygen``: Condor_Crypt_Base::hkdf
  (the ECDH session key's derivation) of a fixed secret;
- ``scramble``: simple_scramble of fixed bytes (hex).

The functions are reached through ctypes by their C++ names; std::string and std::vector are
laid out as libstdc++'s (pointer, size, 16-byte buffer; begin, end, capacity).
"""

from __future__ import annotations

import ctypes
import glob
import json
import os
import sys

import htcondor2  # reads CONDOR_CONFIG and loads libcondor_utils

_LIBRARY = glob.glob(
    os.path.join(os.path.dirname(htcondor2.__file__), "..", "htcondor.libs", "libcondor_utils*")
)[0]
_GENERATE = (
    "_ZN18Condor_Auth_Passwd14generate_tokenERKNSt7__cxx1112basic_stringIcSt11char_traitsIcES"
    "aIcEEES7_RKSt6vectorIS5_SaIS5_EElbRS5_iP11CondorErrorPKN7classad7ClassAdE"
)


class StdString(ctypes.Structure):
    """libstdc++'s std::string: data pointer, size, and the short-string buffer."""

    _fields_ = (("ptr", ctypes.c_void_p), ("size", ctypes.c_size_t), ("buf", ctypes.c_char * 16))

    def set(self, text: bytes, keep: list[object]) -> None:
        if len(text) < 16:
            self.ptr = ctypes.addressof(self) + StdString.buf.offset
            ctypes.memmove(self.ptr, text + b"\0", len(text) + 1)
        else:
            heap = ctypes.create_string_buffer(text + b"\0")
            keep.append(heap)
            self.ptr = ctypes.addressof(heap)
            ctypes.c_size_t.from_buffer(self, StdString.buf.offset).value = len(text)
        self.size = len(text)

    def value(self) -> bytes:
        return ctypes.string_at(self.ptr, self.size)


class StdVector(ctypes.Structure):
    _fields_ = (("begin", ctypes.c_void_p), ("end", ctypes.c_void_p), ("cap", ctypes.c_void_p))


def main(identity: str, lifetime: int, authz: list[str]) -> dict[str, object]:
    lib = ctypes.CDLL(_LIBRARY)
    keep: list[object] = []
    strings = (StdString * (3 + len(authz)))()
    who, key, out = strings[0], strings[1], strings[2]
    who.set(identity.encode(), keep)
    key.set(b"POOL", keep)
    out.set(b"", keep)
    for slot, level in zip(strings[3:], authz, strict=True):
        slot.set(level.encode(), keep)
    first = ctypes.addressof(strings) + 3 * ctypes.sizeof(StdString)
    end = ctypes.addressof(strings) + ctypes.sizeof(strings)
    levels = StdVector(first, end, end)
    generate = getattr(lib, _GENERATE)
    generate.restype = ctypes.c_bool
    made = generate(
        ctypes.byref(who), ctypes.byref(key), ctypes.byref(levels), ctypes.c_long(lifetime),
        ctypes.c_bool(False), ctypes.byref(out), ctypes.c_int(0), None, None,
    )  # fmt: skip

    seed_ka, seed_kb = ctypes.create_string_buffer(256), ctypes.create_string_buffer(256)
    lib._ZN18Condor_Auth_Passwd10setup_seedEPhS0_(seed_ka, seed_kb)

    derived = ctypes.create_string_buffer(32)
    lib._ZN18Condor_Auth_Passwd4hkdfEPKhmS1_mS1_mPhm(
        b"input key material", ctypes.c_size_t(18), b"some salt", ctypes.c_size_t(9),
        b"master ka", ctypes.c_size_t(9), derived, ctypes.c_size_t(32),
    )  # fmt: skip
    keygen = lib._ZN17Condor_Crypt_Base4hkdfEPKhmm
    keygen.restype = ctypes.c_void_p
    session = ctypes.string_at(
        keygen(b"a shared secret", ctypes.c_size_t(15), ctypes.c_size_t(32)), 32
    )

    scrambled = ctypes.create_string_buffer(6)
    lib._Z15simple_scramblePcPKci(scrambled, b"secret", ctypes.c_int(6))
    return {
        "made": bool(made),
        "token": out.value().decode(),
        "seed_ka": seed_ka.raw.hex(),
        "seed_kb": seed_kb.raw.hex(),
        "hkdf": derived.raw.hex(),
        "keygen": session.hex(),
        "scramble": scrambled.raw.hex(),
    }


if __name__ == "__main__":
    print(json.dumps(main(sys.argv[1], int(sys.argv[2]), sys.argv[3:])))
