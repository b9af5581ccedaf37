"""HTCondor's compat-layer functions (section B): string lists, environments, arguments, names."""

from __future__ import annotations

import pytest
from fn_oracle import assert_agree
from oracle import World

pytestmark = [pytest.mark.oracle, pytest.mark.usefixtures("compat")]

STRING_LISTS = [
    'stringListSize("a, b,c ,, d")', 'stringListSize("")', 'stringListSize(" , ")',
    'stringListSize("a;b;c", ";")', 'stringListSize("a b\\tc")', 'stringListSize("a b\\tc", ",")',
    "stringListSize(undefined)", 'stringListSize("a", undefined)', "stringListSize(1)",
    'stringListSize("a", "")', "stringListSize()", 'stringListSize("a", ",", 1)',
    'stringListSum("1, 2, 3")', 'stringListSum("1, 2.5")', 'stringListSum("")',
    'stringListAvg("")', 'stringListAvg("1,2")', 'stringListAvg("1,2,4")', 'stringListAvg("1.0,2")',
    'stringListMin("")', 'stringListMin("3, 1, 2")', 'stringListMax("3, -1, 2")',
    'stringListMax("-3, -1")', 'stringListMin("a")', 'stringListSum("1x, 2")',
    'stringListSum("0x10")', 'stringListSum("1e2")', 'stringListSum(" +1, -2")',
    'stringListMax("1.5e300, 1")', 'stringListSum("inf")', 'stringListSum("nan")',
    'stringListMax("5,")', 'stringListSum("9223372036854775807, 1")', 'stringListMin("1e39")',
    'stringListMax("1e-39")', 'stringListSum("1;2", ";")', "stringListSum(undefined)",
    'stringListMember("b", "a, b, c")', 'stringListMember("B", "a, b, c")',
    'stringListIMember("B", "a, b, c")', 'stringListMember("b", "a; b; c", ";")',
    'stringListMember("a b", "a b, c")', 'stringListMember(" b", "a, b")',
    'stringListMember("", "a, , b")', 'stringListMember(undefined, "a")',
    'stringListMember("a", undefined)', "stringListMember(undefined, undefined)",
    'stringListMember(1, "1")', 'stringListMember("a", "a", undefined)',
    'stringListMember("a", "a\\tb")', 'stringListMember("a", "a;b", 5)', 'stringListMember("a")',
    'stringListMember("a", " a ;b", ";")', 'stringListSubsetMatch("a, b", "b, a, c")',
    'stringListSubsetMatch("a, d", "b, a, c")', 'stringListSubsetMatch("", "b, a, c")',
    'stringListSubsetMatch(undefined, "b, a, c")', 'stringListSubsetMatch("a", undefined)',
    'stringListSubsetMatch("A", "a")', 'stringListISubsetMatch("A", "a")',
    'stringListISubsetMatch(" , ", "a")', 'stringListISubsetMatch("a;B", "b;A", ";")',
    'stringList_regexpMember("^b", "a, b, c")',
    'stringList_regexpMember("^B", "a, b, c", ", ", "I")',
    'stringList_regexpMember("^B", "a, b, c", ", ", "i")', 'stringList_regexpMember("x", "")',
    'stringList_regexpMember("(", "a")', 'stringList_regexpMember("(", "")',
    'stringList_regexpMember("a", undefined)', 'stringList_regexpMember("a", "a", 1)',
    'stringList_regexpMember("b", "abc")', 'stringList_regexpMember("b", "a b;c", ";")',
    'stringList_regexpMember("^c$", "a b;c", ";")', 'stringList_regexpMember("a")',
    'stringListsIntersect("a, b", "c, b")', 'stringListsIntersect("a, b", "c, d")',
    'stringListsIntersect("a b", "b")', 'stringListsIntersect("a;b", "b", ";")',
    'stringListsIntersect("a;b", "b", "")', 'stringListsIntersect(undefined, "b")',
    "stringListsIntersect(error, undefined)", 'stringListsIntersect("a", "a", undefined)',
    'stringListsIntersect("a", 1)', 'stringListsIntersect("A", "a")',
    'stringListsIntersect(" a", "a")', 'stringListsIntersect("a\\tb", "b")',
]  # fmt: skip

ENVIRONMENT = [
    'envV1ToV2("B=1;A=2")', 'envV1ToV2("Z=1;A=2;M=3;a=4")', "envV1ToV2(\"A=x y;B='q'\")",
    'envV1ToV2("A=")', 'envV1ToV2("=x")', 'envV1ToV2("A")', 'envV1ToV2("A$$(x)")',
    'envV1ToV2("A=1|B=2")', 'envV1ToV2("|A=1|B=2")', 'envV1ToV2(";A=1;B=2")',
    'envV1ToV2("  A=1 ; B=2\\nC=3")', 'envV1ToV2("A=1;A=2")', 'envV1ToV2("")',
    "envV1ToV2(undefined)", "envV1ToV2(1)", "envV1ToV2(error)", 'envV1ToV2("A=\\"q\\"")',
    'envV1ToV2("A=a\\tb")', 'envV1ToV2("A=1;B")', 'envV1ToV2("A=1;;B=2")', 'envV1ToV2("A=b=c")',
    'envV1ToV2("A b=c")', 'envV1ToV2("|A=1;B=2")', 'envV1ToV2(";A=1|B=2")',
    'envV1ToV2("\\n|A=1|B=2")', 'envV1ToV2(" |A=1|B=2")', 'envV1ToV2("A=1\\r;B=2")', "envV1ToV2()",
    'envV1ToV2("A=1", "x")',
    "mergeEnvironment(\"A=1 B=2\", \"B=3 C='x y'\")", "mergeEnvironment()",
    'mergeEnvironment(undefined, "A=1")', 'mergeEnvironment("A=1", 5)',
    "mergeEnvironment(\"A='unterminated\")", 'mergeEnvironment("A=1 junk")',
    "mergeEnvironment(\"A='it''s'\")", 'mergeEnvironment("A=\\"dq\\"")',
    'mergeEnvironment("A=x\\\\ y")', 'mergeEnvironment("A= ")', 'mergeEnvironment("  A=1   B=2  ")',
    "mergeEnvironment(\"A='a b'c\")", 'mergeEnvironment("A b=c")', "mergeEnvironment(\"'A b'=c\")",
    'mergeEnvironment("A=1", undefined, "B=2")', 'mergeEnvironment("A=1", error)',
    'mergeEnvironment("")', 'mergeEnvironment("A$$(x)")', 'mergeEnvironment("a=1 A=2 _=3 1=4")',
    'mergeEnvironment("A")', 'mergeEnvironment("=A")', 'mergeEnvironment("A=1\\n B=2")',
    "mergeEnvironment(\"A='x''\")", "mergeEnvironment(\"A=''\")", "mergeEnvironment(\"''\")",
]  # fmt: skip

ARGUMENTS = [
    "argsToList(\"a b  'c d' e''f\")", 'argsToList("a \\"b c\\"", 1)', "argsToList(\"a 'b\", 2)",
    "argsToList(\"a 'b\", 1)", 'argsToList("")', "argsToList(undefined)", 'argsToList("a", 3)',
    'argsToList("a", undefined)', 'argsToList("a", "2")', 'argsToList("a\\tb\\nc\\rd\\ve\\ff")',
    'argsToList("a\\tb\\nc\\rd\\ve\\ff", 1)', 'argsToList("  a   b  ", 1)',
    "argsToList(\"'a''b' 'c'\", 2)", "argsToList(\"''\", 2)", "argsToList(\"'' ''\", 2)",
    "argsToList(\"a'b c'd\", 2)", 'argsToList("a\\"b c\\"d", 2)', 'argsToList("\\"a b\\"", 1)',
    'argsToList("a", 1.0)', 'argsToList("a b", 4294967297)', "argsToList(1)", "argsToList()",
    'argsToList("a", 1, 2)',
    'listToArgs({"a", "b c", "it\'s", ""})', 'listToArgs({"a", "b c"}, 1)',
    'listToArgs({"a", "b"}, 1)', 'listToArgs({"a\\"b"}, 1)', "listToArgs({})", "listToArgs({1})",
    "listToArgs(undefined)", 'listToArgs("a")', 'listToArgs({"a", undefined})',
    'listToArgs({"a\\tb", "x\\ny"})', 'listToArgs({"a  b"})', "listToArgs({\"a ' b\"})",
    "listToArgs({\"'\"})", 'listToArgs({" "})', 'listToArgs({"a\\rb", "a\\vb", "a\\fb"})',
    'listToArgs({"a\\"b", "a\\\\b", "a$b"})', 'listToArgs({"a b", "c"}, 2)',
    'listToArgs({"a", ""}, 1)', 'listToArgs({"a\\rb"}, 1)', 'listToArgs({"a\\vb"}, 1)',
    "listToArgs({\"a'b\"}, 1)", 'listToArgs({"a", "b"}, 2.0)', 'listToArgs({"a", "b"}, true)',
    "listToArgs()",
]  # fmt: skip

NAMES = [
    'userHome("no_such_user_zz")', 'userHome("no_such_user_zz", "/def")', "userHome(undefined)",
    'userHome(undefined, "/def")', "userHome(5)", 'userHome(5, "/def")', 'userHome(error, "/def")',
    'userHome("no_such_user_zz", 5)', 'userHome("no_such_user_zz", "")', "userHome()",
    'userHome("a", "b", "c")', 'userHome("root")',
    'userMap("a", "b")', 'userMap("a", "b", "c")', 'userMap("a", "b", "c", "d")',
    'userMap("a", undefined)', 'userMap("a", undefined, "c", "d")', 'userMap(error, "b")',
    'userMap(5, "b", "c", "d")', 'userMap("a", "b", "c", 5)', 'userMap("a")',
    'userMap("a", "b", "c", "d", "e")',
    'splitUserName("a@b@c")', 'splitUserName("abc")', 'splitUserName("")', 'splitUserName("@")',
    'splitSlotName("slot1@host")', 'splitSlotName("host")', "splitSlotName(undefined)",
    "splitSlotName(5)", 'splitSlotName("a", "b")', "splitUserName()",
    'split("a, b,c  d")', 'split("a,,b")', 'split(",a,")', 'split(" a , , b ")',
    'split("a;b;;c", ";")', 'split("a;b; ;c", "; ")', 'split("a b", "")', 'split("")',
    "split(undefined)", 'split("a", undefined)', 'split("a", 5)', "split(5)", 'split("a\\tb\\nc")',
    'split("a  ,  b")', 'split("a,,,b")', 'split("a, ,b")', 'split("a ,, b")', "split()",
    'split("a", "b", "c")', 'split("x;;y", ";;")', 'split("aébéc", "é")',
]  # fmt: skip


@pytest.mark.parametrize("text", STRING_LISTS)
def test_string_lists(text: str, world: World) -> None:
    """stringList*() tokenise, trim and summarise exactly as HTCondor's compat layer does."""
    assert_agree([text], world)


@pytest.mark.parametrize("text", ENVIRONMENT)
def test_environment(text: str, world: World) -> None:
    """envV1ToV2() and mergeEnvironment() parse and print HTCondor's environment syntaxes."""
    assert_agree([text], world)


@pytest.mark.parametrize("text", ARGUMENTS)
def test_arguments(text: str, world: World) -> None:
    """argsToList() and listToArgs() speak V1 and V2 argument syntax, quoting included."""
    assert_agree([text], world)


@pytest.mark.parametrize("text", NAMES)
def test_names(text: str, world: World) -> None:
    """userHome(), userMap() (no maps configured), splitUserName(), splitSlotName(), split()."""
    assert_agree([text], world)
