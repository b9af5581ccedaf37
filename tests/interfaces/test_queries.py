"""Query constraints: the literal true is recognized so that it is not evaluated per ad."""

from __future__ import annotations

import pytest

from epcore.classad import parse_expr
from epcore.interfaces.queries import passes_everything


@pytest.mark.parametrize(
    ("text", "expected"),
    [("true", True), ("TRUE", True), ("false", False), ("1", False), ("Cpus > 0", False)],
)
def test_only_the_literal_true_passes_everything(text: str, expected: bool) -> None:
    """The literal ``true`` in any case passes every ad; other constraints are evaluated."""
    assert passes_everything(parse_expr(text)) is expected
