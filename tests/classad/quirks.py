"""libclassad's quirks that epcore does not copy: tests that tell whether a text may meet one.

Each is a deliberate difference asserted both ways in test_deliberate_differences.py; the
generated suites (oracle.assert_same_everywhere) and fresh_corpus.py leave such texts out.
The tests look at the text only and may hit more than the quirk (a name inside a string), which
only leaves an example out.
"""

from __future__ import annotations

import re

import attrs

from epcore.classad import ClassAdSyntaxError, ast, parse_expr

_UNRESOLVED_CALL = re.compile(r"unresolved\s*\(", re.IGNORECASE)
_ANOTHER_WHOLE_AD = re.compile(r"\s*(target|other|parent|root|toplevel)\s*[,)]", re.IGNORECASE)


def unresolved_quirk(text: str) -> bool:
    """Whether ``text`` may meet one of libclassad's unresolved() quirks (deliberate
    differences, test_deliberate_differences.DELIBERATE_DIFFERENCES): its lookup leaves the
    evaluation's current ad where it ended, so whatever the expression evaluates after the call
    resolves there; and it reads an ad given by another ad's name (TARGET, parent) as a copy
    out of the match. Strings can give false hits, which only leave an example out."""
    for found in _UNRESOLVED_CALL.finditer(text):
        if _ANOTHER_WHOLE_AD.match(text, found.end()):
            return True
        depth, index, quoted = 1, found.end(), False
        while index < len(text) and depth:
            char = text[index]
            if quoted:
                if char == "\\":
                    index += 1
                elif char == '"':
                    quoted = False
            elif char == '"':
                quoted = True
            elif char in "([{":
                depth += 1
            elif char in ")]}":
                depth -= 1
            index += 1
        if text[index:].strip(" \t\n)"):
            return True
    return False


#: Functions whose list values libclassad keeps as another kind of list than a list literal's.
LIST_BUILDERS = ("split(", "splitusername(", "splitslotname(", "argstolist(", "evalineachcontext(")
_IDENTITY = re.compile(r"=\?=|=!=|\bis\b|\bisnt\b", re.IGNORECASE)


def list_identity_quirk(text: str) -> bool:
    """Whether ``text`` may compare a built list with =?= or =!= (a deliberate difference,
    test_deliberate_differences): libclassad's is between a list a function built and a list
    literal is false, epcore's is ERROR between any two lists."""
    lower = text.lower().replace(" ", "")
    return any(name in lower for name in LIST_BUILDERS) and _IDENTITY.search(text) is not None


def _calls_that_fail(node: object, in_list: bool) -> bool:
    # userHome() with a wrong count of arguments and unresolved() with a pattern (which may be
    # no string) fail the evaluation; the walk says whether one sits in a list literal.
    if isinstance(node, ast.Call):
        name, count = node.name.lower(), len(node.args)
        if in_list and (
            (name == "userhome" and count not in (1, 2)) or (name == "unresolved" and count == 2)
        ):
            return True
    inside = in_list or isinstance(node, ast.ListExpr)
    if isinstance(node, tuple):
        return any(_calls_that_fail(item, in_list) for item in node)
    if not attrs.has(type(node)) or isinstance(node, ast.Literal):
        return False
    return any(
        _calls_that_fail(getattr(node, field.name), inside)
        for field in attrs.fields(type(node))  # type: ignore[arg-type]
    )


def failing_element_quirk(text: str) -> bool:
    """Whether ``text`` may hold a list element whose evaluation fails (a deliberate
    difference, test_deliberate_differences): libclassad evaluates the element when a function
    reads it (anyCompare, member), and the failure fails that function; epcore evaluates it with
    the list and keeps ERROR."""
    try:
        node = parse_expr(text).node
    except ClassAdSyntaxError:
        return False
    return _calls_that_fail(node, False)
