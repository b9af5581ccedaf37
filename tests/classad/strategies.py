"""Hypothesis strategies that write ClassAd expression text.

Every strategy yields source text, so that exactly the same characters reach epcore and the
oracle. Operators are joined with spaces and sub-expressions are parenthesised only sometimes, so
that precedence and associativity are exercised too.

Calls that read the clock or a random source (``time()``, ``currentTime()``, ``dayTime()``,
``timezoneoffset()``, ``absTime()``, ``formatTime()`` with no argument, ``random()`` and the
``CurrentTime`` attribute) are never generated here: classad2 reads the real clock, so no two
evaluations agree. test_differential.test_clock_functions covers them with a tolerance.
"""

from __future__ import annotations

from collections.abc import Sequence

import hypothesis.strategies as st
from hypothesis import settings
from sample_ads import JOB_AD_TEXT, MACHINE_AD_TEXT, attribute_names

from epcore.testing.hypothesis_profiles import full_examples

Text = st.SearchStrategy[str]


def scaled(factor: float) -> settings:
    """The active profile's settings with ``factor`` times its full example count (the counts
    the acceptance criteria ask for under CI; epcore.testing.hypothesis_profiles)."""
    return settings(settings(), max_examples=max(1, int(full_examples() * factor)))


def _spellings(name: str) -> Text:
    # Names, keywords and function names are case-insensitive; the oracle must agree on that.
    return st.sampled_from([name, name.lower(), name.upper()])


# ----------------------------------------------------------------------------- literals

# Integers with a leading zero ("017", "0x1F") are left out: classad2 reads them as 17 and 0 in a
# fresh process but rejects them after any classad2.parseOne call, so the oracle has no answer.
ODD_INTEGERS = ["9223372036854775807", "9223372036854775808", "18446744073709551617"]

integer_literals: Text = st.one_of(
    st.integers(0, 20).map(str),
    st.sampled_from([0, 1, 2, 3, 7, 31, 32, 63, 64, 100, 1024, 65535, 2**31 - 1, 2**31, 2**32]).map(
        str
    ),
    st.integers(0, 2**63 - 1).map(str),
    st.sampled_from(ODD_INTEGERS),
)

_finite = st.floats(allow_nan=False, allow_infinity=False)
real_literals: Text = st.one_of(
    st.sampled_from(["0.0", "1.0", "0.5", "2.5", "3.9", "-0.0", "1e10", "1E-3", ".5", "1.5e308"]),
    _finite.map(lambda x: repr(abs(x))),
    _finite.map(lambda x: f"{abs(x):.17e}"),
    st.floats(0, 1e6, allow_nan=False).map(lambda x: f"{x:.6f}"),
)

_ESCAPES = ["\\n", "\\t", "\\\\", '\\"', "\\'", "\\r", "\\b", "\\f", "\\101", "\\44", "\\7"]
_string_piece = st.one_of(
    st.characters(min_codepoint=32, max_codepoint=126, exclude_characters='"\\'),
    st.sampled_from(_ESCAPES),
    st.characters(min_codepoint=0xA0, max_codepoint=0x2FFF, exclude_categories=["Cs"]),
)
string_literals: Text = st.one_of(
    st.lists(_string_piece, max_size=8).map(lambda parts: '"' + "".join(parts) + '"'),
    st.sampled_from(['""', '"alice"', '"LINUX"', '"X86_64"', '"a,b,c"', '"  spaced  "', '"10"']),
    # Lines, for multiline regular expressions (^ after a newline that ends the subject).
    st.sampled_from(['"x\\n"', '"a\\nb"', '"\\n\\n"', '"x\\ny\\n"']),
)

bool_literals: Text = st.sampled_from(["true", "false", "TRUE", "False"])
special_literals: Text = st.sampled_from(["undefined", "error", "UNDEFINED", "Error"])

TIME_STRINGS = [
    "2004-01-01",
    "2004-01-01T12:00:00Z",
    "2003-09-03T",
    "1997-08-30T16:04:05-0500",
    "1970-01-02T03:04:05-06:00",
    "2024-03-10T02:30:00",
    "2024-11-03T01:30:00",
    "20040101T120000Z",
    "not a time",
    "",
]
RELTIME_STRINGS = ["01:00:01", "2+25:14:16.123", "1d2h3m4.5s", "-1:00", "90", "00:00", "bogus", ""]
time_literals: Text = st.one_of(
    st.sampled_from(TIME_STRINGS).map(lambda s: f'absTime("{s}")'),
    st.sampled_from(RELTIME_STRINGS).map(lambda s: f'relTime("{s}")'),
    st.integers(-(2**31), 2**33).map(lambda n: f"absTime({n})"),
    st.integers(-(10**6), 10**6).map(lambda n: f"relTime({n})"),
)

literals: Text = st.one_of(
    integer_literals,
    real_literals,
    string_literals,
    bool_literals,
    special_literals,
    time_literals,
)

# ----------------------------------------------------------------------------- references

MACHINE_NAMES = attribute_names(MACHINE_AD_TEXT)
JOB_NAMES = attribute_names(JOB_AD_TEXT)
UNKNOWN_NAMES = ["NoSuchAttr", "foo", "ResidentSetSize", "MachineLastMatchTime", "x"]
ALL_NAMES = sorted(set(MACHINE_NAMES) | set(JOB_NAMES)) + UNKNOWN_NAMES
NESTED_PATHS = [
    "GPUs_GPU_c4a646d7.DeviceName",
    "GPUs_GPU_c4a646d7.GlobalMemoryMb",
    "AvailableGPUs[0].Id",
    "TransferInputStats.CedarFilesCount",
    "ChildCpus[1]",
    "ChildState[0]",
]

names: Text = st.sampled_from(ALL_NAMES).flatmap(_spellings)
scopes: Text = st.sampled_from(["MY.", "TARGET.", "my.", "target.", "Target.", "other.", "."])
references: Text = st.one_of(
    names,
    st.tuples(scopes, names).map("".join),
    st.sampled_from(NESTED_PATHS),
    st.tuples(st.sampled_from(["MY.", "TARGET."]), st.sampled_from(NESTED_PATHS)).map("".join),
    st.sampled_from(["MY", "TARGET"]),
)

numbers: Text = st.one_of(
    integer_literals,
    real_literals,
    st.sampled_from(["Cpus", "Memory", "LoadAvg", "RequestMemory", "ImageSize", "TotalCpus"]),
)
strings: Text = st.one_of(
    string_literals, st.sampled_from(["Name", "OpSys", "Owner", "Cmd", "Arch", "User"])
)
scalars: Text = st.one_of(literals, references)
scalar_lists: Text = st.one_of(
    st.lists(scalars, max_size=5).map(lambda items: "{" + ", ".join(items) + "}"),
    st.sampled_from(["ChildCpus", "ChildState", "AvailableGPUs", "{}"]),
)

# ----------------------------------------------------------------------------- operators

BINARY_OPERATORS = [
    "||", "&&", "|", "^", "&", "==", "!=", "=?=", "=!=", "is", "isnt", "IS", "ISNT",
    "<", "<=", ">", ">=", "<<", ">>", ">>>", "+", "-", "*", "/", "%",
]  # fmt: skip
UNARY_OPERATORS = ["+", "-", "!", "~"]


def _maybe_paren(child: Text) -> Text:
    return st.one_of(child, child.map(lambda text: f"({text})"))


def _operators(children: Text) -> Text:
    operand = _maybe_paren(children)
    return st.one_of(
        st.tuples(operand, st.sampled_from(BINARY_OPERATORS), operand).map(" ".join),
        st.tuples(st.sampled_from(UNARY_OPERATORS), operand).map("".join),
        st.tuples(operand, operand, operand).map(lambda t: f"{t[0]} ? {t[1]} : {t[2]}"),
        st.tuples(operand, operand).map(lambda t: f"{t[0]} ?: {t[1]}"),
        st.tuples(operand, operand).map(lambda t: f"({t[0]})[{t[1]}]"),
        st.tuples(operand, names).map(lambda t: f"({t[0]}).{t[1]}"),
        children.map(lambda text: f"({text})"),
    )


@st.composite
def _entries(draw: st.DrawFn, keys: Text, values: Text, max_size: int) -> list[tuple[str, str]]:
    """Up to ``max_size`` (name, value) pairs whose names differ in more than case.

    The names are drawn as a list of their own: when hypothesis retries a draw to keep a list
    unique it writes a description of the element strategy, and a strategy holding the
    expression grammar describes itself in gigabytes (that was the fuzz tests' 21 GB peak).
    """
    chosen = draw(st.lists(keys, max_size=max_size, unique_by=str.lower))
    return [(name, draw(values)) for name in chosen]


def _containers(children: Text) -> Text:
    ad_names = st.one_of(names, st.sampled_from(["a", "b", "c", "Memory", "Cpus"]))
    return st.one_of(
        st.lists(children, max_size=4).map(lambda items: "{" + ", ".join(items) + "}"),
        # Distinct names: a repeated name is legal, but JSON cannot carry it through a round trip.
        _entries(ad_names, children, 4).map(
            lambda pairs: "[" + "; ".join(f"{n} = {e}" for n, e in pairs) + "]"
        ),
    )


# ----------------------------------------------------------------------------- functions

REGEX_PATTERNS = [
    "a.*b", "^a", "b$", "[abc]+", "(a|b)c", ".*\\\\.cs\\\\.wisc\\\\.edu", "x*", "", "A", "\\\\d+",
    "([a-z]+)@([a-z.]+)", "[", "(", "a{2,3}", ".", "slot[0-9]+", "^$", "^", "(?m)^$", "^b",
]  # fmt: skip
REGEX_OPTIONS = ["", "i", "I", "m", "s", "x", "g", "f", "ig", "z"]
FORMATS = ["%c", "%Y-%m-%d", "%H:%M:%S", "%A %a %B %b", "%j %U %w", "%%", "%e", "", "%Z %z"]
VERSIONS = ["8.9.1", "10.0.0", "23.9.6", "1.2a", "1.10", "1.9", "", "9", "23.9.6-1"]
STRING_LISTS = ["a,b,c", "one, two", "1,2,3", "1 2 3", "", "a;b", "x", "3.5,2,-1", "b,a,b"]
DELIMITERS = [",", ";", " ,", "", ":"]
COMPARE_OPS = ["<", "<=", "==", "!=", ">", ">=", "is", "isnt", "=?=", "=!=", "bad"]
ENVIRONMENTS = ["A=1;B=2", "A=1 B=2", "A='x y' B=2", "", "=bad", "PATH=/bin:/usr/bin"]
ARGUMENTS = ["-n 10", "'a b' c", '"a b" c', "", "x 'y z'", "a\\ b"]
USERS = ["root", "nobody", "no_such_user_zz", "", "alice@example.org", "slot1@exec01"]


def _pool(values: Sequence[str]) -> Text:
    return st.sampled_from(list(values)).map(lambda s: '"' + s.replace('"', '\\"') + '"')


regexes, regex_options, formats, versions = (
    _pool(REGEX_PATTERNS), _pool(REGEX_OPTIONS), _pool(FORMATS), _pool(VERSIONS)
)  # fmt: skip
string_lists, delimiters, compare_ops = _pool(STRING_LISTS), _pool(DELIMITERS), _pool(COMPARE_OPS)
environments, arguments, users = _pool(ENVIRONMENTS), _pool(ARGUMENTS), _pool(USERS)
numeric_strings: Text = _pool(
    ["3.9", "-3", "INF", "-INF", "NaN", "1e3", " 7 ", "0x10", "abc", "", "true", "-0.0"]
)
times: Text = st.one_of(time_literals, st.sampled_from(["EnteredCurrentState", "QDate"]))
ad_lists: Text = st.sampled_from(
    ["{[a = 1], [a = 2], [a = 3]}", "{[a = 1; b = 2], [b = 3]}", "{}", "{[Memory = 4]}"]
)
ArgSpec = tuple[Text, ...]


def _signatures(any_arg: Text) -> dict[str, list[ArgSpec]]:
    """For each built-in (sections A and B), argument lists of the right kinds."""
    one_any: list[ArgSpec] = [(any_arg,)]
    version_pair: list[ArgSpec] = [(versions, versions)]
    return {
        **{
            name: one_any
            for name in [
                "isUndefined",
                "isError",
                "isString",
                "isInteger",
                "isReal",
                "isList",
                "isClassAd",
                "isBoolean",
                "isAbsTime",
                "isRelTime",
                "debug",
                "unparse",
                "bool",
                "string",
                "floor",
                "ceil",
                "ceiling",
                "round",
                "eval",
            ]
        },
        "unresolved": [(any_arg,), (references, strings), (references, references)],
        "member": [(scalars, scalar_lists)],
        "identicalMember": [(scalars, scalar_lists)],
        "size": [(scalar_lists,), (strings,), (ad_lists,)],
        **{name: [(scalar_lists,), (any_arg,)] for name in ["sum", "avg", "min", "max"]},
        "anyCompare": [(compare_ops, scalar_lists, scalars)],
        "allCompare": [(compare_ops, scalar_lists, scalars)],
        **{name: [(times,), (any_arg,)] for name in ["splitTime", "getDays"]},
        **{
            name: [(times,)]
            for name in [
                "getYear",
                "getMonth",
                "getDayOfYear",
                "getDayOfMonth",
                "getDayOfWeek",
                "getHours",
                "getMinutes",
                "getSeconds",
            ]
        },
        "time": [(any_arg,)],
        "currentTime": [(any_arg,)],
        "dayTime": [(any_arg,)],
        "timezoneoffset": [(any_arg,)],
        "formatTime": [(times,), (times, formats), (any_arg, formats)],
        "strcat": [(), (strings,), (strings, any_arg), (any_arg, any_arg, any_arg)],
        "join": [(strings, scalar_lists), (strings, strings, strings), (scalar_lists,)],
        "toUpper": [(strings,)],
        "toLower": [(strings,)],
        "substr": [(strings, numbers), (strings, numbers, numbers)],
        "strcmp": [(strings, strings), (any_arg, any_arg)],
        "stricmp": [(strings, strings), (any_arg, any_arg)],
        "versioncmp": version_pair,
        **{name: version_pair for name in ["versionLE", "versionLT", "versionGE", "versionGT"]},
        "versionEQ": version_pair,
        "version_in_range": [(versions, versions, versions)],
        "regexp": [(regexes, strings), (regexes, strings, regex_options)],
        "regexpMember": [(regexes, scalar_lists), (regexes, scalar_lists, regex_options)],
        "regexps": [(regexes, strings, strings), (regexes, strings, strings, regex_options)],
        "replace": [(regexes, strings, strings), (regexes, strings, strings, regex_options)],
        "replaceAll": [(regexes, strings, strings), (regexes, strings, strings, regex_options)],
        "int": [(any_arg,), (numeric_strings,)],
        "real": [(any_arg,), (numeric_strings,)],
        "absTime": [(times,), (strings,), (numbers, numbers), (_pool(TIME_STRINGS),)],
        "relTime": [(numbers,), (strings,), (_pool(RELTIME_STRINGS),)],
        "pow": [(numbers, numbers)],
        "quantize": [(numbers, numbers), (numbers, scalar_lists)],
        "ifThenElse": [(any_arg, any_arg, any_arg)],
        "interval": [(numbers,)],
        "stringListsIntersect": [
            (string_lists, string_lists),
            (string_lists, string_lists, delimiters),
        ],
        "envV1ToV2": [(environments,)],
        "mergeEnvironment": [(environments, environments), (environments,)],
        "listToArgs": [(scalar_lists,)],
        "argsToList": [(arguments,)],
        "stringListSize": [(string_lists,), (string_lists, delimiters)],
        **{
            name: [(string_lists,), (string_lists, delimiters)]
            for name in ["stringListSum", "stringListAvg", "stringListMin", "stringListMax"]
        },
        **{
            name: [(strings, string_lists), (strings, string_lists, delimiters)]
            for name in ["stringListMember", "stringListIMember"]
        },
        **{
            name: [(string_lists, string_lists), (string_lists, string_lists, delimiters)]
            for name in ["stringListSubsetMatch", "stringListISubsetMatch"]
        },
        "stringList_regexpMember": [
            (regexes, string_lists),
            (regexes, string_lists, delimiters),
            (regexes, string_lists, delimiters, regex_options),
        ],
        "userHome": [(users,), (users, strings)],
        "userMap": [(strings, users), (strings, users, strings)],
        "splitUserName": [(users,)],
        "splitSlotName": [(users,)],
        "split": [(string_lists,), (string_lists, delimiters)],
        "evalInEachContext": [(any_arg, ad_lists)],
        "countMatches": [(any_arg, ad_lists)],
    }


#: Functions whose result depends on the clock when they get no argument at all.
CLOCK_WITHOUT_ARGUMENTS = {
    "time", "currenttime", "daytime", "timezoneoffset", "abstime", "formattime"
}  # fmt: skip


def _call(name: Text, args: st.SearchStrategy[list[str]]) -> Text:
    return st.tuples(name, args).map(lambda t: f"{t[0]}({', '.join(t[1])})")


def _well_typed_calls(any_arg: Text) -> Text:
    table = _signatures(any_arg)
    calls = [
        _call(_spellings(name), st.tuples(*spec).map(lambda args: list(args)))
        for name, specs in table.items()
        for spec in specs
    ]
    return st.one_of(calls)


def _wrong_calls(any_arg: Text) -> Text:
    """Any built-in with 0 to 4 arbitrary arguments: wrong types and wrong arities."""

    def call(name: str) -> Text:
        fewest = 1 if name.lower() in CLOCK_WITHOUT_ARGUMENTS else 0
        return _call(_spellings(name), st.lists(any_arg, min_size=fewest, max_size=4))

    return st.sampled_from(FUNCTION_NAMES).flatmap(call)


FUNCTION_NAMES = sorted(_signatures(st.just("0")))


def _extend(children: Text) -> Text:
    return st.one_of(
        _operators(children),
        _containers(children),
        _well_typed_calls(children),
        _wrong_calls(children),
    )


leaves: Text = st.one_of(literals, references)
expressions: Text = st.recursive(leaves, _extend, max_leaves=10)
function_calls: Text = st.deferred(lambda: _well_typed_calls(expressions))
wrong_calls: Text = st.deferred(lambda: _wrong_calls(expressions))
operator_expressions: Text = st.recursive(
    leaves, lambda c: st.one_of(_operators(c), _containers(c)), max_leaves=12
)


RESERVED = {"true", "false", "undefined", "error", "is", "isnt", "parent", "my", "target"}


def ad_texts(values: Text = expressions) -> Text:
    """New-syntax ClassAd text with distinct attribute names and generated values."""
    attr_names = st.from_regex(r"[A-Za-z_][A-Za-z0-9_]{0,8}", fullmatch=True).filter(
        lambda n: n.lower() not in RESERVED
    )
    return _entries(attr_names, values, 6).map(
        lambda pairs: "[" + "; ".join(f"{n} = {v}" for n, v in pairs) + "]"
    )


_NOISE = [*"()[]{}\"'\\.,;:?!=<>&|^~+-*/%$@#` \n\t0aZ_", "/*", "//", "\x00", "\u00e9"]


@st.composite
def mutations(draw: st.DrawFn, seed: Text = expressions) -> str:
    """Valid expression text with characters deleted, inserted, duplicated or cut off."""
    text = draw(seed)
    for _ in range(draw(st.integers(1, 4))):
        where = draw(st.integers(0, len(text)))
        kind = draw(st.sampled_from(["delete", "insert", "duplicate", "truncate"]))
        if kind == "delete":
            text = text[:where] + text[where + 1 :]
        elif kind == "insert":
            text = text[:where] + draw(st.sampled_from(_NOISE)) + text[where:]
        elif kind == "duplicate":
            text = text[:where] + text[where:][:3] * 2 + text[where + 3 :]
        else:
            text = text[:where]
    return text


# ----------------------------------------------------------------------------- targeted shapes
# Shapes where epcore and libclassad used to part (issue 21): each draws its operands from the
# general expressions too, so that a fix for one literal case does not hide the general one.

small_expressions: Text = st.recursive(leaves, _extend, max_leaves=4)

_attribute_holders: Text = st.one_of(
    references,
    st.tuples(st.sampled_from(["a", "b"]), small_expressions, small_expressions).map(
        lambda t: f"[a = {t[1]}; b = {t[2]}].{t[0]}"
    ),
)
#: unparse() of attributes (whose text libclassad prints), of unparse() and of any expression.
unparse_shapes: Text = st.recursive(
    st.one_of(
        st.one_of(_attribute_holders, small_expressions).map(lambda text: f"unparse({text})"),
        # An attribute of a nested ad, unparsed from inside that ad.
        st.tuples(small_expressions, st.sampled_from(["a", "MY.a", "unparse(a)", "x"])).map(
            lambda t: f"[a = {t[0]}; b = unparse({t[1]})].b"
        ),
    ),
    lambda inner: st.one_of(
        inner.map(lambda text: f"unparse({text})"),
        st.tuples(inner, st.sampled_from(["+", "==", "=?=", "<"]), small_expressions).map(" ".join),
        st.tuples(inner, small_expressions).map(lambda t: f"strcat({t[0]}, {t[1]})"),
    ),
    max_leaves=3,
)

_reltimes: Text = st.one_of(
    st.sampled_from(RELTIME_STRINGS).map(lambda s: f'relTime("{s}")'),
    st.sampled_from(["relTime(1e400)", "-relTime(1e400)", 'relTime(real("NaN"))']),
    st.one_of(numbers, small_expressions).map(lambda text: f"relTime({text})"),
)
_RELTIME_READERS = st.sampled_from(
    ["int", "real", "string", "unparse", "isRelTime", "isReal", "splitTime", "getDays"]
)
_ARITHMETIC = ["+", "-", "*", "/", "%", "<", "<=", "==", "!=", "=?=", "is", ">", "&&", "||"]
#: relTime() under unary minus and plus and in arithmetic with numbers, times and itself.
reltime_shapes: Text = st.one_of(
    st.tuples(st.sampled_from(["-", "+", "- -", "!"]), _reltimes).map(lambda t: f"{t[0]}{t[1]}"),
    st.tuples(
        st.one_of(_reltimes, _reltimes.map(lambda text: f"-{text}")),
        st.sampled_from(_ARITHMETIC),
        st.one_of(_reltimes, numbers, times, small_expressions),
    ).map(" ".join),
    st.tuples(
        st.one_of(numbers, times, small_expressions), st.sampled_from(_ARITHMETIC), _reltimes
    ).map(" ".join),
    st.tuples(_RELTIME_READERS, _reltimes).map(lambda t: f"{t[0]}(-{t[1]})"),
)

STRING_LIST_FUNCTIONS = [
    "stringListSize", "stringListSum", "stringListAvg", "stringListMin", "stringListMax",
    "stringListMember", "stringListIMember", "stringListSubsetMatch", "stringListISubsetMatch",
    "stringListsIntersect", "stringList_regexpMember", "split",
]  # fmt: skip
_ODD_LISTS = [" 1, 2 ,3 ", "1,x", " ", ",", ",,a,,", "a, b;c d", " 7 ", "1e3,2", "-0,inf,nan"]
_ODD_DELIMITERS = ["", " ", ", ", ";,", "ab", "\\t", "\\n", ",;: ", "1", "."]
_list_texts: Text = st.one_of(string_lists, _pool(_ODD_LISTS), strings)
#: Every argument kind a string-list function can meet: texts, odd separators, anything at all.
_list_arguments: Text = st.one_of(
    _list_texts,
    _pool(_ODD_DELIMITERS),
    delimiters,
    regexes,
    scalars,
    scalar_lists,
    small_expressions,
)
string_list_shapes: Text = st.tuples(
    st.sampled_from(STRING_LIST_FUNCTIONS).flatmap(_spellings),
    st.lists(_list_arguments, max_size=4),
    st.integers(0, 3),
    st.one_of(_pool(_ODD_DELIMITERS), delimiters),
).map(
    # Often the separator sits where the function expects it, after one or two lists.
    lambda t: f"{t[0]}({', '.join([*t[1][: t[2]], t[3]] if t[2] < 3 else t[1])})"
)

_SHIFTS = ["<<", ">>", ">>>"]
_LOGIC_AND_SHIFTS = ["&&", "||", "==", "!=", "=?=", "=!=", "is", "isnt", "<", ">=", *_SHIFTS]
_shift_operands: Text = st.one_of(
    numbers,
    bool_literals,
    special_literals,
    st.sampled_from(["-1", "~0", "-ConsoleIdle", "-(2 << 62)", "64", "-64", "65", "(1 << 63)"]),
    small_expressions,
).map(lambda text: f"({text})")
_shift: Text = st.tuples(_shift_operands, st.sampled_from(_SHIFTS), _shift_operands).map(" ".join)
#: The shift operators mixed with && and ||, comparisons against booleans, and each other.
shift_logic_shapes: Text = st.recursive(
    st.one_of(_shift, bool_literals),
    lambda inner: st.one_of(
        st.tuples(
            _maybe_paren(inner),
            st.sampled_from(_LOGIC_AND_SHIFTS),
            _maybe_paren(inner),
        ).map(" ".join),
        _maybe_paren(inner).map(lambda text: f"!{text}"),
    ),
    max_leaves=5,
)

_UNDEFINED_LISTS = [
    "undefined", "error", "NoSuchAttr", "{undefined}", "{[a = 1], undefined}", "{undefined, error}",
    "{[a = 1], 2}", '"a"', "[a = 1]", "{}", "{NoSuchAttr}", "{[a = undefined]}", "ChildCpus",
    "MY", "self", "root", "{MY}", "ifThenElse(isError(MY), {[a = 1]}, {})",
    "ifThenElse((MY).Memory == 32000, {[a = 1]}, {})", "ifThenElse(size(root) > 5, {[a = 1]}, {})",
]  # fmt: skip
_FIRST_ARGUMENTS = [
    "a", "a + 1", "b", "undefined", "a > 1", "Memory", "NoSuchAttr", "NoSuchAttr.x", "(1).x",
    "TARGET.AvailableGPUs[0].Id", "GPUs_GPU_c4a646d7.Nope", "([a = 1]).Nope", "userHome()",
    "a + userHome(1, 2, 3)", "MY.Memory",
]  # fmt: skip
#: evalInEachContext and countMatches over undefined, erroneous and mixed lists.
context_list_shapes: Text = st.tuples(
    st.sampled_from(["evalInEachContext", "countMatches"]).flatmap(_spellings),
    st.one_of(st.sampled_from(_FIRST_ARGUMENTS), small_expressions),
    st.one_of(st.sampled_from(_UNDEFINED_LISTS), ad_lists, scalar_lists, small_expressions),
).map(lambda t: f"{t[0]}({t[1]}, {t[2]})")
