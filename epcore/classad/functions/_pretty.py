"""libclassad's ``PrettyPrint`` layout, which ``unparse()`` uses: lists and ads on many lines.

A list opens three columns deeper than its context and an ad four, each on a new
line; items and attributes sit one step deeper still. Everything else is written
as the ordinary one-line unparser writes it.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Final

from epcore.classad.ast import AdExpr, ListExpr, Node
from epcore.classad.functions._text import in_ad_order, literal_text, unparse_substituting
from epcore.classad.unparse import attribute_name

if TYPE_CHECKING:
    from epcore.classad.calls import FunctionCall

_LIST_STEP: Final = 3
_AD_STEP: Final = 4


def pretty(call: FunctionCall, node: Node, level: int = 0) -> str:
    """The multi-line text of ``node`` at indentation ``level``."""
    if type(node) is ListExpr:
        assert isinstance(node, ListExpr)
        inner = level + _LIST_STEP
        items = ",".join(
            f"\n{' ' * (inner + _LIST_STEP)}{pretty(call, item, inner + _LIST_STEP)}"
            for item in node.items
        )
        return f"\n{' ' * inner}{{{items}\n{' ' * inner}}}"
    if type(node) is AdExpr:
        assert isinstance(node, AdExpr)
        inner = level + _AD_STEP
        entries = "; ".join(
            f"\n{' ' * (inner + _AD_STEP)}{attribute_name(name)} = "
            f"{pretty(call, value, inner + _AD_STEP)}"
            for name, value in node.attrs
        )
        return f"\n{' ' * inner}[{entries}\n{' ' * inner}]"
    return unparse_substituting(call, node, lambda child: _nested(call, child, level))


def pretty_in_ad_order(call: FunctionCall, node: Node) -> str:
    """``pretty`` of ``node`` with its nested ads' attributes in libclassad's order."""
    return pretty(call, in_ad_order(node))


def _nested(call: FunctionCall, node: Node, level: int) -> str | None:
    if type(node) is ListExpr or type(node) is AdExpr:
        return pretty(call, node, level)
    return literal_text(node)
