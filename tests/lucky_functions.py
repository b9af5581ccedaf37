"""A plugin ClassAd function for the tests of every place plugin functions reach:
``isLucky(n)``, TRUE when the integer ``n`` is a multiple of 7, FALSE for another integer,
ERROR for anything else. Built-in evaluation does not know it (ERROR), so a test whose result
follows it shows that the plugin's function table reached the evaluation."""

from __future__ import annotations

from epcore.classad import ERROR, EvalContext, FunctionCall, Value
from epcore.config import Config
from epcore.testing.offers import FunctionOffer
from epcore.types import ClassAdFunction


def is_lucky(call: FunctionCall) -> Value:
    """isLucky(n)."""
    values = call.values()
    if len(values) != 1 or isinstance(values[0], bool) or not isinstance(values[0], int):
        return ERROR
    return values[0] % 7 == 0


LUCKY = ClassAdFunction("isLucky", is_lucky)


def lucky_context() -> EvalContext:
    """The context of a daemon whose only plugin offers isLucky."""
    return FunctionOffer(LUCKY).eval_context()


def lucky_config(text: str = "") -> Config:
    """``text`` read as a daemon with the isLucky plugin reads its configuration."""
    return Config.from_text(text, eval_context=lucky_context())
