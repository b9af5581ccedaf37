"""The values inside a CEDAR message, as HTCondor's Stream codes them.

- An integer of any C width is 8 bytes, big-endian, two's complement.
- A floating-point number is two integers, ``frexp``'s fraction scaled by 2**31 - 1 and
  its exponent (HTCondor's Stream::put(double)), so it keeps about 31 bits of mantissa
  (read back rounded to 9 significant digits).
- A string is its bytes and a terminating NUL; one NUL-less byte 0xAD stands for a null
  string (CONFIG_VAL's "not defined"). Once the stream is encrypted a string is instead its
  length (an integer, NUL included) then its bytes, so a reader must know which
  (``encrypted``).
- A ClassAd is the number of attributes, one ``Name = Expr`` string per attribute in old
  syntax, then two strings that once were MyType and TargetType (HTCondor sends them empty;
  those attributes travel as ordinary ones). A private attribute (a claim id...) is sent
  only over an encrypted stream: :class:`Writer` leaves them out otherwise; HTCondor
  announces one sent in the clear-but-secret form with the string ``ZKM`` before it, which
  :class:`Reader` accepts.

A :class:`Reader` refuses, with :class:`CodecError` naming what it was reading, a message
that ends early, an integer out of its range, a string without its NUL, an absurd count or
length, or an attribute that does not parse (through :mod:`epcore.classad`'s parser, whose
nesting bound keeps a hostile ad from exhausting the stack).
"""

from __future__ import annotations

import builtins
import functools
import math
from collections.abc import Iterable
from typing import Final

from epcore.classad import ClassAd, ast
from epcore.classad.formats import old_lines_by_key, set_old_line
from epcore.errors import ClassAdError, EpError

#: The byte that stands for a null string in the clear.
NULL_STRING: Final = 0xAD
#: The marker before a secret attribute (classad_oldnew.cpp).
SECRET_MARKER: Final = "ZKM"
#: Most attributes an ad on the wire may have (HTCondor's getClassAd refuses more).
MAX_ATTRIBUTES: Final = 1_000_000
#: Most attributes of an ad read before authentication (HTCondor's getPODClassAd).
MAX_POD_ATTRIBUTES: Final = 100
#: The longest encrypted string HTCondor reads.
MAX_STRING: Final = 10_000_000
#: Attributes that are private to daemons (compat_classad.cpp's list) and the prefix that
#: makes any attribute private (HTCondor 9.9 and later).
PRIVATE_ATTRIBUTES: Final = frozenset(
    {"capability", "childclaimids", "claimid", "claimidlist", "claimids", "transferkey"}
)
PRIVATE_PREFIX: Final = "_condor_priv"

_INT64_MIN: Final = -(2**63)
_INT64_MAX: Final = 2**63 - 1
_INT32_MIN: Final = -(2**31)
_INT32_MAX: Final = 2**31 - 1
#: The scale of a double's fraction on the wire (stream.cpp's FRAC_CONST).
_FRACTION_SCALE: Final = 2**31 - 1
#: Raw parts at least this long are kept whole by a Writer rather than copied in.
_KEEP_WHOLE: Final = 1024


class CodecError(EpError):
    """A message whose contents are not what the conversation expects."""


@functools.lru_cache(maxsize=4096)
def is_private(name: str) -> bool:
    """Whether attribute ``name`` is private (sent only over an encrypted stream)."""
    lowered = name.lower()
    return lowered in PRIVATE_ATTRIBUTES or lowered.startswith(PRIVATE_PREFIX)


def _any_private(keys: list[str]) -> bool:
    """Whether any of these lower-case names is private (one pass in C for the prefix)."""
    if not PRIVATE_ATTRIBUTES.isdisjoint(keys):
        return True
    return ("\0" + "\0".join(keys)).find("\0" + PRIVATE_PREFIX) >= 0


class Writer:
    """Builds one message (module docstring); ``encrypted`` codes strings by length."""

    def __init__(self, *, encrypted: bool = False) -> None:
        self.encrypted = encrypted
        self._out = bytearray()
        # Whole parts put by put_bytes, kept as they are: a 1,000-ad answer is then copied
        # once, by the join in bytes(), not grown piece by piece and copied again.
        self._parts: list[builtins.bytes] = []

    def bytes(self) -> bytes:
        if not self._parts:
            return bytes(self._out)
        return b"".join([*self._parts, self._out])

    def put_int(self, value: int) -> Writer:
        if not _INT64_MIN <= value <= _INT64_MAX:
            raise CodecError(f"integer {value} does not fit in 8 bytes")
        self._out += value.to_bytes(8, "big", signed=True)
        return self

    def put_double(self, value: float) -> Writer:
        """A floating-point number (module docstring); CodecError if not finite."""
        if not math.isfinite(value):
            raise CodecError(f"{value} cannot travel as a CEDAR number")
        fraction, exponent = math.frexp(value)
        return self.put_int(int(fraction * _FRACTION_SCALE)).put_int(exponent)

    def put_byte(self, value: int) -> Writer:
        """One unsigned byte (HTCondor's ``unsigned char``: SetAttribute's flags)."""
        if not 0 <= value <= 255:
            raise CodecError(f"{value} does not fit in a byte")
        self._out.append(value)
        return self

    def put_string(self, value: str | None) -> Writer:
        """A string; None is the null string (only CONFIG_VAL's answers use it)."""
        if value is None:
            data = bytes((NULL_STRING,))
        elif "\0" in value:
            raise CodecError("a string on the wire cannot hold a NUL character")
        else:
            data = value.encode() + b"\0"
        if self.encrypted:
            self.put_int(len(data))
        self._out += data
        return self

    def put_bytes(self, data: builtins.bytes) -> Writer:
        """Raw bytes, as HTCondor's put_bytes sends them: no length, no NUL (the length
        travels before them as an integer of its own)."""
        if len(data) < _KEEP_WHOLE:
            self._out += data
            return self
        if self._out:
            self._parts.append(bytes(self._out))
            self._out.clear()
        self._parts.append(data)
        return self

    def put_classad(
        self,
        ad: ClassAd,
        *,
        projection: Iterable[str] | None = None,
        private: bool | None = None,
        types: bool = True,
    ) -> Writer:
        """An ad, cut to ``projection`` when given; private attributes only when
        ``private`` (by default: when the stream is encrypted); without the two type
        strings when not ``types`` (HTCondor's PUT_CLASSAD_NO_TYPES, the negotiator's
        priority answers)."""
        send_private = self.encrypted if private is None else private
        entries = old_lines_by_key(ad)
        if projection is not None:
            wanted = {name.lower() for name in projection}
            entries = [entry for entry in entries if entry[0] in wanted]
        if not send_private and _any_private([key for key, _ in entries]):
            entries = [entry for entry in entries if not is_private(entry[0])]
        lines = [line for _, line in entries]
        self.put_int(len(lines))
        # The lines in one join: a query's answer holds tens of thousands of them, and a
        # negotiator's matches as many ads.
        joined = "\0".join(lines)
        if joined.count("\0") != max(len(lines) - 1, 0):
            raise CodecError("a string on the wire cannot hold a NUL character")
        if self.encrypted:
            # Each string after its length (NUL included), as put_string sends it.
            parts: list[builtins.bytes] = []
            for line in lines:
                data = line.encode()
                parts.append((len(data) + 1).to_bytes(8, "big"))
                parts.append(data)
                parts.append(b"\0")
            self._out += b"".join(parts)
        else:
            self._out += joined.encode() + (b"\0" if lines else b"")
        if types:
            self.put_string("")
            self.put_string("")
        return self


class Reader:
    """Reads one received message from the start (module docstring)."""

    def __init__(self, data: bytes, *, encrypted: bool = False) -> None:
        self.data = data
        self.encrypted = encrypted
        self.offset = 0

    @property
    def at_end(self) -> bool:
        return self.offset >= len(self.data)

    def _take(self, size: int, what: str) -> bytes:
        if self.offset + size > len(self.data):
            raise CodecError(
                f"the message ends before {what} ({len(self.data) - self.offset} bytes left, "
                f"{size} needed)"
            )
        chunk = self.data[self.offset : self.offset + size]
        self.offset += size
        return chunk

    def get_int(self, what: str = "an integer") -> int:
        """An 8-byte integer."""
        return int.from_bytes(self._take(8, what), "big", signed=True)

    def get_byte(self, what: str = "a byte") -> int:
        """One unsigned byte."""
        return self._take(1, what)[0]

    def get_int32(self, what: str = "an integer") -> int:
        """An integer the peer codes from a C int (refused beyond its range)."""
        value = self.get_int(what)
        if not _INT32_MIN <= value <= _INT32_MAX:
            raise CodecError(f"{what}: {value} is out of range for a 32-bit integer")
        return value

    def get_double(self, what: str = "a number") -> float:
        """A floating-point number (module docstring); CodecError when it is out of range."""
        fraction = self.get_int32(f"the fraction of {what}")
        exponent = self.get_int32(f"the exponent of {what}")
        try:
            value = math.ldexp(fraction / _FRACTION_SCALE, exponent)
        except OverflowError:
            raise CodecError(f"{what}: exponent {exponent} is out of range") from None
        # The fraction keeps 31 bits, about 9.3 digits: rounding to 9 gives back the number
        # the peer meant (250, not 249.9999999972) and loses nothing it sent.
        return float(f"{value:.9g}")

    def get_optional_string(self, what: str = "a string") -> str | None:
        """A string, or None for the null string."""
        if self.encrypted:
            size = self.get_int(f"the length of {what}")
            if not 0 < size <= MAX_STRING:
                raise CodecError(f"{what}: length {size} is out of range")
            raw = self._take(size, what)
            if raw[0] == NULL_STRING:
                return None
            if raw[-1] != 0:
                raise CodecError(f"{what}: not NUL-terminated")
            raw = raw[:-1]
        else:
            if self.at_end:
                raise CodecError(f"the message ends before {what}")
            if self.data[self.offset] == NULL_STRING:
                self.offset += 1
                return None
            end = self.data.find(b"\0", self.offset)
            if end < 0:
                raise CodecError(f"{what}: no terminating NUL before the message ends")
            raw = self.data[self.offset : end]
            self.offset = end + 1
        try:
            return raw.decode()
        except UnicodeDecodeError as error:
            raise CodecError(f"{what}: not UTF-8 ({error.reason})") from None

    def get_string(self, what: str = "a string") -> str:
        """A string (the null string reads as empty, as HTCondor's get does)."""
        return self.get_optional_string(what) or ""

    def _plain_string(self) -> str | None:
        """The next string when it is an ordinary one (not the null string, whole, UTF-8),
        with the offset moved past it; else None and the offset unmoved, for
        :meth:`get_string` to read or refuse with its message. An ad's lines are read so:
        a negotiator's matches are tens of thousands of ads of about 70 lines."""
        data, offset = self.data, self.offset
        if self.encrypted:
            start = offset + 8
            size = int.from_bytes(data[offset:start], "big", signed=True)
            stop = start + size
            if not 0 < size <= MAX_STRING or stop > len(data) or data[stop - 1] != 0:
                return None
            raw = data[start : stop - 1]
        else:
            stop = data.find(b"\0", offset)
            if stop < 0:
                return None
            raw = data[offset:stop]
            stop += 1
        try:
            # The null string (0xAD first) is never UTF-8: it is get_string's to read.
            text = raw.decode()
        except UnicodeDecodeError:
            return None
        self.offset = stop
        return text

    def get_bytes(self, size: int, what: str = "bytes") -> bytes:
        """``size`` raw bytes (put_bytes's counterpart)."""
        if size < 0:
            raise CodecError(f"{what}: negative length {size}")
        return self._take(size, what)

    def get_classad(
        self, what: str = "a ClassAd", *, literals_only: bool = False, types: bool = True
    ) -> ClassAd:
        """An ad (``types``: followed by the two type strings); CodecError on a bad count
        or an attribute that does not parse.

        ``literals_only`` reads as HTCondor reads the security negotiation's ads, before
        anyone is authenticated (getPODClassAd): at most :data:`MAX_POD_ATTRIBUTES`
        attributes, each a single literal (no expression, reference, list or nested ad is
        ever evaluated for a peer not yet known)."""
        count = self.get_int(f"the attribute count of {what}")
        limit = MAX_POD_ATTRIBUTES if literals_only else MAX_ATTRIBUTES
        if not 0 <= count <= limit:
            raise CodecError(f"{what}: attribute count {count} is out of range 0..{limit}")
        ad = ClassAd()
        for index in range(count):
            line = self._plain_string()
            if line is None:
                line = self.get_string(f"attribute {index + 1} of {what}")
            if line == SECRET_MARKER and not literals_only:
                line = self.get_string(f"secret attribute {index + 1} of {what}")
            try:
                node = set_old_line(ad, line, keep=not literals_only)
            except ClassAdError as error:
                raise CodecError(f"attribute {index + 1} of {what}: {error}") from None
            if literals_only and not isinstance(node, ast.Literal):
                name, _, text = line.partition("=")
                raise CodecError(
                    f"attribute {name.strip()} of {what} is not a literal: {text.strip()}"
                )
        if types:
            self.get_string(f"the MyType string of {what}")
            self.get_string(f"the TargetType string of {what}")
        return ad

    def expect_end(self, what: str) -> None:
        """CodecError when bytes are left after ``what``."""
        if not self.at_end:
            raise CodecError(f"{len(self.data) - self.offset} unexpected bytes after {what}")
