"""The fresh corpus's own expression writer (fresh_corpus.py), apart from the hypothesis strategies.

Each shape is a function of a :class:`Writer` (a seeded random source) returning one
expression's text. Clock readers without an argument, ``CurrentTime`` and ``random()`` are
never written: classad2 reads the real clock and a random source.
"""

from __future__ import annotations

import random
from collections.abc import Callable, Sequence

from sample_ads import JOB_AD_TEXT, MACHINE_AD_TEXT, attribute_names

NAMES = sorted(set(attribute_names(MACHINE_AD_TEXT)) | set(attribute_names(JOB_AD_TEXT)))
UNKNOWN = ["NoSuchAttr", "x", "a", "b", "ResidentSetSize", "MemoryUsage2"]
SCOPES = ["MY.", "TARGET.", "other.", "my.", "target.", ""]
PATHS = ["GPUs_GPU_c4a646d7.DeviceName", "AvailableGPUs[0].Id", "TransferInputStats", "ChildCpus"]
UNICODE = ["é", "ß", "İ", "\u0131", "ﬁ", "Σ", "ς", "日本", "😀", "e\u0301", "Ǆ", "\u00a0", "ÿ", "Å"]
ASCII = ["a", "b", "A", "Z", "0", "9", " ", ",", ";", ":", ".", "-", "_", "x", "*", "%", "/"]
ESCAPES = ["\\n", "\\t", "\\\\", '\\"', "\\101", "\\7", "\\r"]
REL_TEXTS = ["01:00:01", "2+25:14:16.123", "1d2h3m4.5s", "-1:00", "90", "bogus", "", "+5", "1.5"]
ABS_TEXTS = [
    "2004-01-01", "2004-01-01T12:00:00Z", "1997-08-30T16:04:05-0500", "2024-03-10T02:30:00",
    "20040101T120000Z", "1970-01-01T00:00:00+14:00", "2038-01-19T03:14:08Z", "x", "",
]  # fmt: skip
LIST_TEXTS = [
    "a,b,c", " 1, 2 ,3 ", "1,x", " ", ",", ",,a,,", "a, b;c d", " 7 ", "1e3,2", "-0,inf,nan",
    "A,a,B", "3.5,2,-1", "", "x", "é,É,ß", "1;2;3", "a b c", "10,9,100", "true,false",
]  # fmt: skip
SEPARATORS = [",", ";", " ", "", ", ", ";,", "ab", "\\t", "\\n", ",;: ", "1", ".", "é", ",,"]
PATTERNS = [
    "a.*b", "^a", "b$", "[abc]+", "(a|b)c", "", "A", "\\\\d+", "([a-z]+)@([a-z.]+)", "[", "(",
    "a{2,3}", ".", "^$", "é", "\\\\w+", "(?i)x", "(?<n>a)\\\\k<n>", "a(?=b)", "\\\\bb",
    "[[:alpha:]]", "\\\\1", "(a)|b", "^", "ß|ss", ".{2}", "\\\\s", "😀", "[^,]+",
]  # fmt: skip
OPTIONS = ["", "i", "I", "m", "s", "x", "g", "f", "ig", "z", "gi", "ms"]
SUBSTITUTIONS = ["x", "\\\\1", "\\\\0", "[\\\\2]", "", "é", "\\\\9", "$1", "\\\\\\\\"]
FORMATS = [
    "%c", "%Y-%m-%d", "%H:%M:%S", "%A %a %B %b", "%j %U %w", "%%", "%e", "", "%Z %z", "%s",
    "%D %T", "%I %p", "%y %C %G %g %V", "%u %W", "%n%t", "%k %l", "%h", "%x %X", "%R %r",
    "%q", "%", "%-d", "%Ey %Od", "%F", "é %Y", "%10Y", "%+",
]  # fmt: skip
VERSIONS = ["8.9.1", "10.0.0", "23.9.6", "1.2a", "1.10", "1.9", "", "9", "23.9.6-1", "a.b", "1..2"]
ENVIRONMENTS = ["A=1;B=2", "A=1 B=2", "A='x y' B=2", "", "=bad", "A", "A=é", "A=1;;B=", "'A=1'"]
ARGUMENTS = ["-n 10", "'a b' c", '\\"a b\\" c', "", "x 'y z'", "a\\\\ b", "'", "é ß"]
USERS = ["root", "nobody", "", "alice@example.org", "slot1@exec01", "@", "a@b@c", "slot1_2@x"]
COMPARE = ["<", "<=", "==", "!=", ">", ">=", "is", "isnt", "=?=", "=!=", "bad", "IS", ""]
BINARY = [
    "||", "&&", "|", "^", "&", "==", "!=", "=?=", "=!=", "is", "isnt", "<", "<=", ">", ">=",
    "<<", ">>", ">>>", "+", "-", "*", "/", "%",
]  # fmt: skip
FUNCTIONS = {
    "string": [
        "strcat", "substr", "toUpper", "toLower", "size", "strcmp", "stricmp", "join", "split",
        "string", "int", "real", "bool", "unparse", "length",
    ],
    "lists": [
        "member", "identicalMember", "anyCompare", "allCompare", "sum", "avg", "min", "max",
        "size", "join", "quantize", "isList", "splitSlotName", "splitUserName",
    ],
    "time": [
        "splitTime", "formatTime", "getYear", "getMonth", "getDayOfYear", "getDayOfMonth",
        "getDayOfWeek", "getHours", "getMinutes", "getSeconds", "getDays", "interval",
        "absTime", "relTime", "isAbsTime", "isRelTime",
    ],
    "maths": ["floor", "ceil", "ceiling", "round", "pow", "int", "real", "quantize", "bool"],
    "misc": [
        "ifThenElse", "isUndefined", "isError", "isString", "isInteger", "isReal", "isBoolean",
        "isClassAd", "eval", "debug", "unresolved", "versioncmp", "versionLE", "versionGT",
        "versionEQ", "version_in_range", "envV1ToV2", "mergeEnvironment", "listToArgs",
        "argsToList", "userHome", "userMap",
    ],
    "regex": ["regexp", "regexps", "replace", "replaceAll", "regexpMember"],
    "stringlist": [
        "stringListSize", "stringListSum", "stringListAvg", "stringListMin", "stringListMax",
        "stringListMember", "stringListIMember", "stringListSubsetMatch",
        "stringListISubsetMatch", "stringListsIntersect", "stringList_regexpMember",
    ],
}  # fmt: skip
#: Functions that read the clock when called with no argument.
CLOCK_WITHOUT_ARGUMENTS = {
    "time", "currenttime", "daytime", "timezoneoffset", "abstime", "formattime"
}  # fmt: skip
ALL_FUNCTIONS = sorted({name for names in FUNCTIONS.values() for name in names})


def quoted(text: str) -> str:
    """A string literal of ``text`` (already escaped as ClassAd text wants it)."""
    return f'"{text}"'


class Writer:
    """Writes expression text from a seeded random source."""

    def __init__(self, rng: random.Random) -> None:
        self.rng = rng

    def pick(self, items: Sequence[str]) -> str:
        return self.rng.choice(items)

    def chance(self, p: float) -> bool:
        return self.rng.random() < p

    def spell(self, name: str) -> str:
        return self.pick([name, name, name.lower(), name.upper()])

    # ------------------------------------------------------------------ leaves

    def integer(self) -> str:
        r = self.rng.random()
        if r < 0.5:
            return str(self.rng.randint(0, 20))
        if r < 0.8:
            return self.pick(["31", "32", "63", "64", "65", "2147483648", "4294967296", "1000"])
        huge = str(self.rng.getrandbits(62))
        return self.pick(["9223372036854775807", "9223372036854775808", huge])

    def real(self) -> str:
        drawn = [repr(self.rng.uniform(-1e6, 1e6)), repr(self.rng.random())]
        return self.pick(
            [
                "0.0",
                "1.0",
                "0.5",
                "2.5",
                "-0.0",
                "1e10",
                "1E-3",
                ".5",
                "1.5e308",
                "3.9",
                "1e400",
                *drawn,
            ]
        )

    def string_text(self, unicode: float = 0.3) -> str:
        parts = []
        for _ in range(self.rng.randint(0, 7)):
            r = self.rng.random()
            parts.append(
                self.pick(UNICODE) if r < unicode else self.pick(ESCAPES) if r < unicode + 0.1
                else self.pick(ASCII)
            )  # fmt: skip
        return "".join(parts)

    def string(self) -> str:
        if self.chance(0.3):
            return quoted(self.pick(["", "alice", "LINUX", "a,b,c", "  spaced  ", "10", "é"]))
        return quoted(self.string_text())

    def time(self) -> str:
        r = self.rng.random()
        if r < 0.3:
            return f"absTime({quoted(self.pick(ABS_TEXTS))})"
        if r < 0.55:
            return f"relTime({quoted(self.pick(REL_TEXTS))})"
        if r < 0.75:
            return f"absTime({self.rng.randint(-(2**31), 2**33)})"
        if r < 0.85:
            return f"absTime({self.rng.randint(0, 2**31)}, {self.rng.randint(-50000, 50000)})"
        return f"relTime({self.pick([self.integer(), self.real(), '-5', '0.25'])})"

    def reference(self) -> str:
        r = self.rng.random()
        if r < 0.55:
            return self.pick(SCOPES) + self.spell(self.pick(NAMES))
        if r < 0.75:
            return self.pick(SCOPES) + self.pick(UNKNOWN)
        if r < 0.9:
            return self.pick(["", "MY.", "TARGET."]) + self.pick(PATHS)
        return self.pick(["MY", "TARGET", "parent", "Memory", "Cpus"])

    def literal(self) -> str:
        make = self.pick_fn([self.integer, self.real, self.string, self.time, self._special])
        return make()

    def _special(self) -> str:
        return self.pick(["true", "false", "undefined", "error", "TRUE", "Undefined"])

    def pick_fn(self, makers: Sequence[Callable[[], str]]) -> Callable[[], str]:
        return makers[self.rng.randrange(len(makers))]

    def leaf(self) -> str:
        return self.literal() if self.chance(0.6) else self.reference()

    # ------------------------------------------------------------------ composites

    def expr(self, depth: int = 2) -> str:
        if depth <= 0 or self.chance(0.3):
            return self.leaf()
        r = self.rng.random()
        sub = lambda: self.maybe_paren(self.expr(depth - 1))  # noqa: E731
        if r < 0.3:
            return f"{sub()} {self.pick(BINARY)} {sub()}"
        if r < 0.38:
            return f"{self.pick(['-', '+', '!', '~'])}{sub()}"
        if r < 0.45:
            return f"{sub()} ? {sub()} : {sub()}"
        if r < 0.5:
            return f"{sub()} ?: {sub()}"
        if r < 0.58:
            return self.list_(depth - 1)
        if r < 0.65:
            return self.ad(depth - 1)
        if r < 0.7:
            return f"({sub()})[{sub()}]"
        return self.call(self.pick(ALL_FUNCTIONS), depth - 1)

    def maybe_paren(self, text: str) -> str:
        return f"({text})" if self.chance(0.5) else text

    def list_(self, depth: int) -> str:
        return "{" + ", ".join(self.expr(depth) for _ in range(self.rng.randint(0, 4))) + "}"

    def ad(self, depth: int, names: Sequence[str] = ("a", "b", "c", "Memory", "x")) -> str:
        chosen = self.rng.sample(list(names), self.rng.randint(0, len(names)))
        return "[" + "; ".join(f"{name} = {self.expr(depth)}" for name in chosen) + "]"

    def call(self, name: str, depth: int, args: Sequence[str] | None = None) -> str:
        if args is None:
            args = [self.expr(depth) for _ in range(self.rng.randint(0, 4))]
        if not args and name.lower() in CLOCK_WITHOUT_ARGUMENTS:
            args = [self.expr(depth)]
        return f"{self.spell(name)}({', '.join(args)})"

    def argument(self, pool: Sequence[str], depth: int = 1) -> str:
        """Mostly a value from ``pool`` (quoted), sometimes anything at all."""
        return quoted(self.pick(pool)) if self.chance(0.75) else self.expr(depth)


# ------------------------------------------------------------------------- shapes


def general(w: Writer) -> str:
    return w.expr(3)


def unparse_shapes(w: Writer) -> str:
    r = w.rng.random()
    if r < 0.3:
        inner = w.reference()
    elif r < 0.55:
        inner = f"[a = {w.expr(2)}; b = {w.expr(1)}].{w.pick(['a', 'b'])}"
    elif r < 0.75:
        return f"[a = {w.expr(2)}; b = unparse({w.pick(['a', 'MY.a', 'unparse(a)', 'x', 'b'])})].b"
    else:
        inner = w.expr(3)
    for _ in range(w.rng.randint(0, 2)):
        inner = f"unparse({inner})"
    text = f"unparse({inner})"
    return text if w.chance(0.7) else f"{text} {w.pick(['+', '==', '=?=', '<', 'isnt'])} {w.leaf()}"


def reltime_shapes(w: Writer) -> str:
    rel = lambda: w.maybe_paren(  # noqa: E731
        w.pick([f"relTime({quoted(w.pick(REL_TEXTS))})", f"relTime({w.expr(1)})", w.time()])
    )
    r = w.rng.random()
    if r < 0.25:
        return f"{w.pick(['-', '+', '- -', '!', '~'])}{rel()}"
    if r < 0.7:
        left, right = rel(), w.pick_fn([rel, w.leaf, lambda: w.expr(1)])()
        op = w.pick([*BINARY, "+", "-", "*", "/"])
        return f"{left} {op} {right}" if w.chance(0.5) else f"{right} {op} {left}"
    reader = w.pick(
        [
            "int",
            "real",
            "string",
            "unparse",
            "isRelTime",
            "isReal",
            "floor",
            "round",
            "formatTime",
            "splitTime",
            "getDays",
            "getHours",
            "interval",
            "bool",
        ]
    )
    return f"{reader}({w.pick(['-', '', '+'])}{rel()})"


def stringlist_shapes(w: Writer) -> str:
    name = w.pick(FUNCTIONS["stringlist"] + ["split"])
    args: list[str] = []
    for _ in range(w.rng.randint(0, 4)):
        kind = w.rng.random()
        if kind < 0.45:
            args.append(w.argument(LIST_TEXTS))
        elif kind < 0.7:
            args.append(quoted(w.pick(SEPARATORS)))
        elif kind < 0.8:
            args.append(quoted(w.pick(PATTERNS)))
        else:
            args.append(w.expr(1))
    return w.call(name, 0, args)


def shift_logic(w: Writer, depth: int = 3) -> str:
    if depth <= 0 or w.chance(0.25):
        operand = lambda: w.pick(  # noqa: E731
            ["-1", "~0", "-ConsoleIdle", "64", "-64", "65", "(1 << 63)", "true", "undefined",
             "error", "2.5", '"3"', "Cpus", w.integer(), w.leaf()]
        )  # fmt: skip
        return f"({operand()} {w.pick(['<<', '>>', '>>>'])} {operand()})"
    op = w.pick(
        [
            "&&",
            "||",
            "==",
            "!=",
            "=?=",
            "=!=",
            "is",
            "isnt",
            "<",
            ">=",
            "<<",
            ">>",
            ">>>",
            "&",
            "|",
            "^",
        ]
    )
    left, right = shift_logic(w, depth - 1), shift_logic(w, depth - 1)
    text = f"{left} {op} {w.pick([right, w.pick(['true', 'false', 'undefined'])])}"
    return f"!({text})" if w.chance(0.15) else text


def context_lists(w: Writer) -> str:
    lists = [
        "undefined", "error", "NoSuchAttr", "{undefined}", "{[a = 1], undefined}", "{}",
        "{[a = 1], 2}", '"a"', "[a = 1]", "{NoSuchAttr}", "{[a = undefined]}", "ChildCpus",
        "{[a = 1], [a = 2], [a = 3]}", "{[a = 1; b = 2], [b = 3]}", "{[Memory = 4]}",
        "AvailableGPUs", "MY.AvailableGPUs", "TARGET.AvailableGPUs", "{[a = x; x = 2]}",
        "{[a = parent.Memory]}", "{[a = MY.Memory]}", "{[a = TARGET.Memory]}",
    ]  # fmt: skip
    first = w.pick(
        [
            "a",
            "a + 1",
            "b",
            "undefined",
            "a > 1",
            "Memory",
            "Id",
            "x",
            "Owner",
            "MY.Memory",
            "TARGET.Memory",
            w.expr(1),
        ]
    )
    second = w.pick(lists) if w.chance(0.7) else w.expr(2)
    return w.call(w.pick(["evalInEachContext", "countMatches"]), 0, [first, second])


def ads_and_scopes(w: Writer) -> str:
    r = w.rng.random()
    inner = ["a", "b", "parent.a", "MY.a", "TARGET.Memory", "Memory", "c.d", "parent.parent.a"]
    if r < 0.4:
        ad = (
            f"[a = {w.expr(1)}; b = [c = {w.pick(inner)}; d = {w.pick(inner)}]; "
            f"e = {w.pick(['b.c', 'b.d', 'b', 'a', 'b.parent', 'parent'])}]"
        )
        return f"{ad}.{w.pick(['a', 'b', 'e', 'b.c', 'b.d', 'x'])}"
    if r < 0.6:
        items = ", ".join(w.ad(1, ("a", "b", "Memory")) for _ in range(w.rng.randint(0, 3)))
        return f"{{{items}}}.{w.pick(['a', 'b', 'Memory', 'x'])}"
    if r < 0.8:
        return w.ad(2) + w.pick([".a", ".b", '["a"]', ".Memory", ".x", ""])
    return f"{w.expr(2)}.{w.pick(['a', 'Memory', 'Id', 'DeviceName', 'CedarFilesCount'])}"


def unicode_strings(w: Writer) -> str:
    s = lambda: quoted(w.string_text(0.6)) if w.chance(0.8) else w.expr(1)  # noqa: E731
    n = lambda: w.pick(  # noqa: E731
        ["0", "1", "-1", "2", "-3", "100", "1.5", '"2"', "undefined", "true", w.integer()]
    )
    name = w.pick(FUNCTIONS["string"])
    args = {
        "substr": [s(), n()] + ([n()] if w.chance(0.5) else []),
        "strcat": [s() for _ in range(w.rng.randint(0, 3))],
        "join": [s(), s(), s()] if w.chance(0.5) else [s(), f"{{{s()}, {s()}}}"],
        "split": [s()] + ([quoted(w.pick(SEPARATORS))] if w.chance(0.6) else []),
        "strcmp": [s(), s()],
        "stricmp": [s(), s()],
    }.get(name, [s()])
    text = w.call(name, 0, args)
    return text if w.chance(0.8) else f"{text} {w.pick(['==', '=?=', '<', '+', 'is'])} {s()}"


def time_functions(w: Writer) -> str:
    name = w.pick(FUNCTIONS["time"])
    t = w.time() if w.chance(0.8) else w.expr(1)
    if name == "formatTime":
        args = [t, quoted(w.pick(FORMATS))] if w.chance(0.85) else [t]
    elif name in ("absTime", "relTime"):
        args = [w.pick([t, quoted(w.pick(ABS_TEXTS + REL_TEXTS)), w.leaf(), w.integer()])]
        if name == "absTime" and w.chance(0.3):
            args.append(w.pick(["0", "3600", "-18000", "1.5", '"x"', "undefined", w.integer()]))
    else:
        args = [t] if w.chance(0.9) else [t, w.leaf()]
    text = w.call(name, 0, args)
    if w.chance(0.3):
        text = f"{text}{w.pick(['.Year', '.Month', '.Offset', '.Type', '.Days', '.Seconds'])}"
    return text


def regexps(w: Writer) -> str:
    name = w.pick(FUNCTIONS["regex"] + ["stringList_regexpMember"])
    pattern = w.argument(PATTERNS)
    subject = quoted(w.string_text(0.3)) if w.chance(0.7) else w.expr(1)
    args = [pattern, subject]
    if name in ("regexps", "replace", "replaceAll"):
        args.append(w.argument(SUBSTITUTIONS))
    if name == "regexpMember":
        args[1] = f"{{{subject}, {w.string()}}}" if w.chance(0.7) else w.expr(1)
    if name == "stringList_regexpMember":
        args[1] = w.argument(LIST_TEXTS)
        if w.chance(0.5):
            args.append(quoted(w.pick(SEPARATORS)))
    if w.chance(0.6):
        args.append(w.argument(OPTIONS))
    return w.call(name, 0, args)


def conditionals(w: Writer) -> str:
    cond = lambda: w.pick(  # noqa: E731
        ["true", "false", "undefined", "error", "0", "1", "2.5", '"x"', "{}", "[]", w.expr(2)]
    )
    value = lambda: w.expr(1)  # noqa: E731
    r = w.rng.random()
    if r < 0.3:
        return f"ifThenElse({', '.join(cond() for _ in range(w.rng.choice([3, 3, 2, 4])))})"
    if r < 0.55:
        return f"{cond()} ? {value()} : {value()}"
    if r < 0.75:
        return f"{cond()} ?: {value()}" + (f" ?: {value()}" if w.chance(0.3) else "")
    return f"{value()} {w.pick(['is', 'isnt', 'IS', 'ISNT', '=?=', '=!='])} {value()}"


def lists_and_conversions(w: Writer) -> str:
    name = w.pick(FUNCTIONS["lists"] + FUNCTIONS["maths"] + FUNCTIONS["misc"])
    pool = {
        "anyCompare": lambda: [quoted(w.pick(COMPARE)), w.list_(1), w.leaf()],
        "allCompare": lambda: [quoted(w.pick(COMPARE)), w.list_(1), w.leaf()],
        "versioncmp": lambda: [w.argument(VERSIONS), w.argument(VERSIONS)],
        "version_in_range": lambda: [w.argument(VERSIONS) for _ in range(3)],
        "envV1ToV2": lambda: [w.argument(ENVIRONMENTS)],
        "mergeEnvironment": lambda: [w.argument(ENVIRONMENTS) for _ in range(w.rng.randint(0, 3))],
        "argsToList": lambda: [w.argument(ARGUMENTS)],
        "splitUserName": lambda: [w.argument(USERS)],
        "splitSlotName": lambda: [w.argument(USERS)],
        "userHome": lambda: [w.argument(USERS)] + ([w.string()] if w.chance(0.5) else []),
        "int": lambda: [w.argument([" 7 ", "1e3", "0x10", "-0", "inf", "1e400", "-3.5", "x"])],
        "real": lambda: [w.argument([" 7 ", "1e3", "0x10", "-0", "inf", "NaN", "1e400", "x", ""])],
        "bool": lambda: [w.argument(["true", "FALSE", " true", "1", "0", "yes", "", "t"])],
    }
    maker = pool.get(name)
    args = maker() if maker else [w.expr(2) for _ in range(w.rng.randint(1, 3))]
    return w.call(name, 0, args)


def unparse_everything(w: Writer) -> str:
    """The printed text of any shape, through unparse() of the attribute holding it."""
    makers = [general, ads_and_scopes, conditionals, shift_logic, reltime_shapes, time_functions]
    makers += [regexps, unicode_strings, stringlist_shapes, lists_and_conversions, context_lists]
    text = w.pick_fn([lambda maker=maker: maker(w) for maker in makers])()
    if w.chance(0.2):
        return f"unparse({text})"
    return f"[a = {text}; b = unparse(a)].b"


SHAPES: list[tuple[str, Callable[[Writer], str]]] = [
    ("general", general),
    ("unparse", unparse_shapes),
    ("reltime", reltime_shapes),
    ("stringlist", stringlist_shapes),
    ("shift-logic", shift_logic),
    ("context-lists", context_lists),
    ("ads-scopes", ads_and_scopes),
    ("unicode-strings", unicode_strings),
    ("time-functions", time_functions),
    ("regexps", regexps),
    ("conditionals", conditionals),
    ("lists-conversions", lists_and_conversions),
    ("unparse-everything", unparse_everything),
]
