"""ClassAds pickle (a startd sends its zygote the job and machine ads of every starter)."""

from __future__ import annotations

import pickle

from hypothesis import given
from strategies import ad_texts, expressions, scaled

from epcore.classad import ClassAdSyntaxError, parse_ad, parse_expr
from epcore.classad.values import ERROR, UNDEFINED


@scaled(1.0)
@given(text=expressions)
def test_an_expression_survives_a_pickle(text: str) -> None:
    """Any expression that parses comes back from a pickle as the same tree, unparsed the
    same way and evaluating to the same value."""
    try:
        expr = parse_expr(text)
    except ClassAdSyntaxError:
        return
    back = pickle.loads(pickle.dumps(expr, protocol=pickle.HIGHEST_PROTOCOL))
    assert back == expr
    assert str(back) == str(expr)
    assert repr(back.evaluate()) == repr(expr.evaluate())


@scaled(1.0)
@given(text=ad_texts())
def test_an_evaluated_ad_survives_a_pickle(text: str) -> None:
    """An ad whose attributes were evaluated (so compiled) pickles without its compiled
    code and comes back equal, evaluating every attribute to the same value."""
    try:
        ad = parse_ad(text)
    except ClassAdSyntaxError:
        return
    before = {name: repr(ad.evaluate(name)) for name in ad}
    back = pickle.loads(pickle.dumps(ad, protocol=pickle.HIGHEST_PROTOCOL))
    assert back == ad
    assert {name: repr(back.evaluate(name)) for name in back} == before


def test_the_special_values_stay_themselves() -> None:
    """UNDEFINED and ERROR come back as the very singletons the evaluator compares with."""
    ad = parse_ad("[U = undefined; E = error; L = {undefined, error}]")
    back = pickle.loads(pickle.dumps(ad))
    assert back.evaluate("U") is UNDEFINED and back.evaluate("E") is ERROR
