"""Sinful strings: HTCondor's daemon addresses parsed, formatted and refused with a place."""

from __future__ import annotations

import pytest
from hypothesis import given
from hypothesis import strategies as st

from epcore.net.sinful import Sinful, SinfulError, parse_sinful


def test_plain_address_parses() -> None:
    """``<127.0.0.1:9618>`` is host 127.0.0.1, port 9618, no parameters."""
    assert parse_sinful("<127.0.0.1:9618>") == Sinful("127.0.0.1", 9618)


def test_parameters_keep_their_order_and_decode() -> None:
    """Parameters come back in order, percent-decoded, and format back to the same text."""
    text = "<127.0.0.1:9618?addrs=127.0.0.1-9618&alias=cm.example.org&sock=collector>"
    sinful = parse_sinful(text)
    assert sinful.params == (
        ("addrs", "127.0.0.1-9618"),
        ("alias", "cm.example.org"),
        ("sock", "collector"),
    )
    assert sinful.param("alias") == "cm.example.org"
    assert str(sinful) == text


def test_ipv6_host_is_bracketed() -> None:
    """An IPv6 host is written in brackets and read back without them."""
    sinful = parse_sinful("<[::1]:9618>")
    assert sinful.host == "::1"
    assert sinful.ip_and_port == "[::1]:9618"
    assert str(sinful) == "<[::1]:9618>"


def test_brackets_may_be_left_off() -> None:
    """COLLECTOR_HOST's ``host:port`` parses as the same address."""
    assert parse_sinful("cm.example.org:9618") == Sinful("cm.example.org", 9618)


def test_with_param_replaces() -> None:
    """with_param sets one parameter, replacing an earlier value."""
    sinful = parse_sinful("<10.0.0.1:1?alias=a>").with_param("alias", "b")
    assert str(sinful) == "<10.0.0.1:1?alias=b>"


@pytest.mark.parametrize(
    ("text", "column", "reason"),
    [
        ("<127.0.0.1:9618", 16, "missing the closing"),
        ("<>", 2, "no host"),
        ("<127.0.0.1>", 2, "expected host:port"),
        ("<127.0.0.1:http>", 12, "not a number"),
        ("<127.0.0.1:0>", 12, "not a number"),
        ("<127.0.0.1:70000>", 12, "not a number"),
        ("<[::1:9618>", 2, "without its ']'"),
        ("<127.0.0.1:9618?alias>", 17, "not name=value"),
        ("<127.0.0.1:1?a=b&c>", 18, "not name=value"),
    ],
)
def test_bad_strings_are_refused_with_their_column(text: str, column: int, reason: str) -> None:
    """A string that is not an address raises SinfulError naming the column of the fault."""
    with pytest.raises(SinfulError) as caught:
        parse_sinful(text)
    assert caught.value.column == column
    assert reason in caught.value.reason


_HOSTS = st.one_of(
    st.ip_addresses(v=4).map(str),
    st.ip_addresses(v=6).map(str),
    st.from_regex(r"\A[a-z][a-z0-9-]{0,10}(\.[a-z][a-z0-9-]{0,10}){0,2}\Z"),
)
_PARAM_TEXT = st.text(st.characters(blacklist_categories=("Cs",)), min_size=1, max_size=12)


@given(
    _HOSTS,
    st.integers(1, 65535),
    st.lists(st.tuples(_PARAM_TEXT, st.text(max_size=12)), max_size=4),
)
def test_format_then_parse_round_trips(host: str, port: int, params: list[tuple[str, str]]) -> None:
    """Any address formats to a string that parses back to it."""
    sinful = Sinful(host, port, tuple(params))
    assert parse_sinful(str(sinful)) == sinful
