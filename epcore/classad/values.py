"""Run-time values of the ClassAd language.

Values are plain Python objects wherever Python has a faithful type:

=============  ==========================================================
ClassAd type   Python representation
=============  ==========================================================
undefined      :data:`UNDEFINED` (a singleton; falsy)
error          :data:`ERROR` (a singleton; falsy)
boolean        :class:`bool`
integer        :class:`int`, always inside the signed 64-bit range
real           :class:`float`
string         :class:`str`
list           :class:`list` of values
classad        :class:`epcore.classad.ClassAd`
absolute time  :class:`AbsTime`
relative time  :class:`RelTime`
=============  ==========================================================

``bool`` is a subclass of ``int`` in Python but a separate type in ClassAds, so
code here always tests ``type(v) is int`` rather than ``isinstance``.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Final, TypeGuard, Union

import attrs

if TYPE_CHECKING:
    from epcore.classad.classad import ClassAd

INT64_MIN: Final = -(1 << 63)
INT64_MAX: Final = (1 << 63) - 1
_MASK64: Final = (1 << 64) - 1


class _Singleton:
    __slots__ = ()
    _name = ""

    def __repr__(self) -> str:
        return self._name

    def __bool__(self) -> bool:
        return False

    def __reduce__(self) -> str:
        return self._name


class _Undefined(_Singleton):
    """The ClassAd ``undefined`` value."""

    __slots__ = ()
    _name = "UNDEFINED"


class _Error(_Singleton):
    """The ClassAd ``error`` value."""

    __slots__ = ()
    _name = "ERROR"


UNDEFINED: Final = _Undefined()
ERROR: Final = _Error()


@attrs.frozen(slots=True)
class AbsTime:
    """An absolute time: epoch seconds (UTC) and the zone offset in seconds east of UTC."""

    secs: int
    offset: int = 0


@attrs.frozen(slots=True)
class RelTime:
    """A relative time (a duration) in seconds."""

    secs: float


Value = Union[_Undefined, _Error, bool, int, float, str, list["Value"], "ClassAd", AbsTime, RelTime]


def wrap_int(value: int) -> int:
    """Bring a Python integer into the signed 64-bit range the way C arithmetic wraps it."""
    if INT64_MIN <= value <= INT64_MAX:
        return value
    value &= _MASK64
    return value - (1 << 64) if value > INT64_MAX else value


def is_value(candidate: object) -> TypeGuard[Value]:
    """Whether ``candidate`` is a ClassAd value (a list: when every element is one)."""
    from epcore.classad.classad import ClassAd

    if candidate is UNDEFINED or candidate is ERROR:
        return True
    if isinstance(candidate, list):
        return all(is_value(element) for element in candidate)
    if isinstance(candidate, float | str | AbsTime | RelTime | ClassAd):
        return True
    # bool is an int; an int beyond 64 bits is none: the language has no such number.
    return isinstance(candidate, int) and INT64_MIN <= candidate <= INT64_MAX
