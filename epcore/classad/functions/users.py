"""Users and names: ``userHome``, ``userMap``, ``splitUserName``, ``splitSlotName``, ``split``.

Home directories and user maps come from the evaluation context; without a resolver
every user is unknown, as in an HTCondor configuration that enables neither.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Final

from epcore.classad.functions._support import arity_ok
from epcore.classad.functions.stringlists import tokens
from epcore.classad.functions.strings import ascii_lower, from_bytes, to_bytes
from epcore.classad.runtime import EvaluationFailure
from epcore.classad.values import ERROR, UNDEFINED, Value

if TYPE_CHECKING:
    from epcore.classad.calls import FunctionCall, FunctionImpl

_SPLIT_SEPARATORS: Final = ", \t"
_C_SPACE: Final = frozenset(b" \t\n\v\f\r")


def user_home(call: FunctionCall) -> Value:
    """``userHome(user[, default])``: the user's home directory, else default or UNDEFINED.

    With another number of arguments libclassad's evaluation itself fails (HTCondor's
    userHome returns false), which no operator or function around it turns into a value.
    """
    if not arity_ok(call, 1, 2):
        raise EvaluationFailure(f"userHome() takes one or two arguments, not {len(call.args)}")
    default = call.value(1) if len(call.args) == 2 else ""
    default_text = default if type(default) is str else ""
    assert isinstance(default_text, str)
    user = call.value(0)
    if user is UNDEFINED and not default_text:
        return UNDEFINED
    if type(user) is not str:
        return default_text or ERROR
    assert isinstance(user, str)
    resolver = call.context.user_home
    home = resolver(user) if resolver is not None else None
    if home is not None:
        return home
    return default_text or UNDEFINED


def user_map(call: FunctionCall) -> Value:
    """``userMap(map, user[, preferred[, default]])``: map a name through a named user map.

    Two arguments give the mapped names as a comma-separated string; three or four
    give one name, the preferred one (compared case-insensitively) when present.
    """
    if not arity_ok(call, 2, 4):
        return ERROR
    values = call.values()
    # With four arguments the default is the answer unless a mapping says otherwise.
    fallback: Value = values[3] if len(values) == 4 else UNDEFINED
    map_name, user = values[0], values[1]
    if type(map_name) is not str or type(user) is not str:
        if map_name is ERROR or user is ERROR:
            return ERROR
        return fallback
    assert isinstance(map_name, str) and isinstance(user, str)
    mapper = call.context.user_map
    mapped = mapper(map_name, user) if mapper is not None else None
    if mapped is None:
        return fallback
    items = tokens(",".join(mapped), ",")
    if len(values) == 2:
        return ",".join(mapped)
    preferred = values[2]
    if type(preferred) is str:
        assert isinstance(preferred, str)
        for item in items:
            if ascii_lower(item) == ascii_lower(preferred):
                return item
    if items:
        return items[0]
    return fallback


def _split_at(slot: bool) -> FunctionImpl:
    def impl(call: FunctionCall) -> Value:
        if not arity_ok(call, 1):
            return ERROR
        text = call.value(0)
        if type(text) is not str:
            return ERROR
        assert isinstance(text, str)
        before, at, after = text.partition("@")
        if at:
            return [before, after]
        return ["", text] if slot else [text, ""]

    return impl


def split(call: FunctionCall) -> Value:
    """``split(text[, separators])``: items between separators; repeated non-space ones give ""."""
    if not arity_ok(call, 1, 2):
        return ERROR
    values = call.values()
    if any(type(v) is not str for v in values):
        return ERROR
    data = to_bytes(str(values[0]))
    separators = to_bytes(str(values[1])) if len(values) == 2 else _SPLIT_SEPARATORS.encode()
    items: list[Value] = []
    last = 0
    previous = -1
    if separators:
        for index, byte in enumerate(data):
            if byte not in separators:
                continue
            if index > last:
                items.append(from_bytes(data[last:index]))
            elif previous not in _C_SPACE and previous == byte:
                items.append("")
            if byte not in _C_SPACE:
                previous = byte
            last = index + 1
    if len(data) > last:
        items.append(from_bytes(data[last:]))
    return items


def functions() -> dict[str, FunctionImpl]:
    """The functions of this module by lower-case name."""
    return {
        "userhome": user_home,
        "usermap": user_map,
        "splitusername": _split_at(slot=False),
        "splitslotname": _split_at(slot=True),
        "split": split,
    }
