"""ClassAd objects: what ads built alike share (keys, literals, bindings), and that sharing
changes no ad's contents."""

from __future__ import annotations

import math

import pytest

from epcore.classad import ClassAd, SharedBindings, parse_ad, parse_expr


def test_ads_setting_the_same_name_share_one_key_string() -> None:
    """Two ads that set the same attribute, in any spelling, key it by one string object."""
    first, second = ClassAd(), ClassAd()
    first["MyName" + "Here"] = 1
    second["MYNAME" + "here"] = 2
    [key_one] = first._bindings
    [key_two] = second._bindings
    assert key_one == "mynamehere"
    assert key_one is key_two


def test_small_integers_and_booleans_share_their_literals() -> None:
    """Small non-negative integers and booleans set in different ads are one literal node each;
    a large integer is a node of its own, and True is not the literal of 1."""
    first, second = ClassAd(), ClassAd()
    for ad in (first, second):
        ad["Cpus"] = 1
        ad["Flag"] = True
        ad["Big"] = 10**12
    assert first["Cpus"].node is second["Cpus"].node
    assert first["Flag"].node is second["Flag"].node
    assert first["Flag"].node is not first["Cpus"].node
    assert first.evaluate("Flag") is True and first.evaluate("Cpus") == 1
    assert first["Big"].node is not second["Big"].node


def test_shared_bindings_share_equal_scalars_and_expressions() -> None:
    """Ads set through one table bind equal scalars (and one expression tree) to the very same
    binding, and equal the ads ``ad[name] = value`` makes."""
    shared = SharedBindings()
    start = parse_expr("KeyboardIdle > 900")
    values: dict[str, object] = {"Cpus": 1, "Arch": "X86_64", "Load": 0.25, "On": False}
    values["Start"] = start
    ads = [ClassAd(), ClassAd()]
    for ad in ads:
        for name, value in values.items():
            shared.set(ad, name, value)
    plain = ClassAd(values)
    for name in values:
        assert ads[0]._bindings[name.lower()] is ads[1]._bindings[name.lower()]
    assert ads[0] == ads[1] == plain
    assert str(ads[0]) == str(plain)


def test_shared_bindings_tell_values_that_compare_equal_apart() -> None:
    """True and 1, 1 and 1.0, 0.0 and -0.0 stay different literals; NaN is set unshared."""
    shared = SharedBindings()
    values: list[object] = [1, True, 1.0, 0.0, -0.0, math.nan]
    ads = [ClassAd() for _ in values]
    for ad, value in zip(ads, values, strict=True):
        shared.set(ad, "X", value)
    found = [ad.evaluate("X") for ad in ads]
    assert [type(value) for value in found] == [int, bool, float, float, float, float]
    assert [math.copysign(1.0, v) for v in found[3:5]] == [1.0, -1.0]  # type: ignore[arg-type]
    assert math.isnan(found[5])  # type: ignore[arg-type]


def test_shared_bindings_keep_the_first_spelling_and_set_other_values_plainly() -> None:
    """A name already set keeps its spelling (as ``ad[name] = value``); lists are set as they
    are; a NUL in a string is refused as ``ad[name] = value`` refuses it."""
    shared = SharedBindings()
    ad = ClassAd({"Memory": 1})
    shared.set(ad, "MEMORY", 2)
    shared.set(ad, "Items", [1, 2])
    assert list(ad) == ["Memory", "Items"]
    assert ad.evaluate("memory") == 2
    assert str(ad) == "[ Memory = 2; Items = { 1,2 } ]"
    with pytest.raises(ValueError, match="NUL"):
        shared.set(ad, "Bad", "a\x00b")


def test_shared_bindings_empty_the_table_when_full() -> None:
    """The table holds at most its limit of values: one more empties it, and the ads set
    before keep their values."""
    shared = SharedBindings(limit=3)
    ads = [ClassAd() for _ in range(5)]
    for number, ad in enumerate(ads):
        shared.set(ad, "N", 1000 + number)
    assert len(shared) == 2
    assert [ad.evaluate("N") for ad in ads] == [1000, 1001, 1002, 1003, 1004]


def test_line_is_the_ads_text_and_follows_its_changes() -> None:
    """``ClassAd.line`` gives the same text as ``str`` for ads of every kind of value, empty
    ones included, and again after an attribute is replaced, added or removed."""
    ad = parse_ad(
        '[ Name = "slot1@h"; Cpus = 4; Load = 0.25; Start = TARGET.RequestCpus <= Cpus && '
        'MY.Memory > 10; L = { 1, "a\\"b", [ x = 1 ] }; U = undefined ]'
    )
    assert ad.line() == str(ad)
    ad["Cpus"] = 2
    ad["Added"] = parse_expr("Cpus * 2")
    del ad["U"]
    assert ad.line() == str(ad)
    assert "Cpus = 2" in ad.line() and "U = " not in ad.line()
    assert ClassAd().line() == str(ClassAd())


def test_line_reuses_the_text_of_bindings_an_ad_shares() -> None:
    """A copy that shares its bindings gets each attribute's text from the binding, made
    once; only a binding set afresh is unparsed again."""
    ad = parse_ad("[ A = 1 + 2; B = Foo ]")
    ad.line()
    copy = ad.copy()
    copy["B"] = parse_expr("Bar")
    assert copy._bindings["a"]._piece is ad._bindings["a"]._piece is not None
    assert copy._bindings["b"]._piece is None
    assert copy.line() == "[ A = 1 + 2; B = Bar ]"
