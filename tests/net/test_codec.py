"""The CEDAR codec: 8-byte integers, NUL-terminated strings and ClassAds as HTCondor codes them."""

from __future__ import annotations

from typing import Any

import pytest
from hypothesis import assume, given
from hypothesis import strategies as st

from epcore.classad import ClassAd, parse_ad, parse_expr
from epcore.net.codec import CodecError, Reader, Writer, is_private
from tests.collector.ad_strategies import attribute_names, values


def test_integer_is_eight_bytes_big_endian() -> None:
    """An integer is 8 bytes, big-endian, two's complement, as Stream::put(long long) writes."""
    assert Writer().put_int(60010).bytes() == b"\x00\x00\x00\x00\x00\x00\xeaj"
    assert Writer().put_int(-1).bytes() == b"\xff" * 8
    assert Reader(b"\xff" * 8).get_int() == -1


def test_string_is_nul_terminated_in_the_clear() -> None:
    """In the clear a string is its UTF-8 bytes and a NUL."""
    assert Writer().put_string("Enact").bytes() == b"Enact\0"
    assert Reader(b"caf\xc3\xa9\0").get_string() == "café"


def test_string_is_length_prefixed_when_encrypted() -> None:
    """On an encrypted stream a string is its length (NUL included) then its bytes."""
    data = Writer(encrypted=True).put_string("ab").bytes()
    assert data == b"\x00" * 7 + b"\x03ab\0"
    assert Reader(data, encrypted=True).get_string() == "ab"


def test_null_string_is_the_0xad_byte() -> None:
    """None is the single byte 0xAD both ways (CONFIG_VAL's 'not defined')."""
    assert Writer().put_string(None).bytes() == b"\xad"
    assert Reader(b"\xad").get_optional_string() is None
    assert Reader(b"\xad").get_string() == ""


def test_classad_layout_matches_htcondors() -> None:
    """An ad is the attribute count, one 'Name = Expr' string each, then two empty strings."""
    ad = ClassAd({"Enact": "NO", "Command": 5})
    data = Writer().put_classad(ad).bytes()
    assert data == (b"\x00" * 7 + b"\x02" + b'Enact = "NO"\0' + b"Command = 5\0" + b"\0\0")


def test_htcondors_own_bytes_read_back() -> None:
    """The start of the auth ad htcondor2 sent (captured) reads as an ad of those attributes."""
    data = (
        b"\x00\x00\x00\x00\x00\x00\x00\x03"
        b'Enact = "NO"\x00Command = 5\x00SessionLease = 3600\x00\x00\x00'
    )
    ad = Reader(data).get_classad()
    assert ad.evaluate("Enact") == "NO"
    assert ad.evaluate("Command") == 5
    assert ad.evaluate("SessionLease") == 3600


def test_expressions_and_old_strings_survive() -> None:
    """Expressions travel unevaluated; backslashes in strings are literal (old syntax)."""
    ad = parse_ad('[ Start = KeyboardIdle > 15 * 60; Path = "C:\\\\dir"; Q = "say \\"hi\\"" ]')
    back = Reader(Writer().put_classad(ad).bytes()).get_classad()
    assert back == ad


def test_private_attributes_only_over_encryption() -> None:
    """Claim ids and _condor_priv* attributes are left out unless the stream is encrypted."""
    ad = ClassAd({"Name": "slot1", "ClaimId": "secret", "_condor_privKey": "k"})
    clear = Reader(Writer().put_classad(ad).bytes()).get_classad()
    assert set(clear) == {"Name"}
    sealed = Writer(encrypted=True).put_classad(ad).bytes()
    everything = set(Reader(sealed, encrypted=True).get_classad())
    assert everything == {"Name", "ClaimId", "_condor_privKey"}
    assert is_private("CLAIMID") and not is_private("Claim")


def test_secret_marker_is_followed_by_the_attribute() -> None:
    """'ZKM' announces that the next string is a secret attribute, as HTCondor sends it."""
    data = b"\x00" * 7 + b"\x01" + b"ZKM\0" + b'ClaimId = "c"\0' + b"\0\0"
    assert Reader(data).get_classad().evaluate("ClaimId") == "c"


def test_projection_keeps_only_the_named_attributes() -> None:
    """A projection (any case) cuts the ad to its attributes."""
    ad = ClassAd({"Name": "a", "Cpus": 4, "Memory": 8})
    back = Reader(Writer().put_classad(ad, projection=["name", "CPUS"]).bytes()).get_classad()
    assert dict(back.items()).keys() == {"Name", "Cpus"}


@pytest.mark.parametrize(
    ("data", "message"),
    [
        (b"\x00\x00\x00", "ends before the attribute count"),
        (b"\x00" * 7 + b"\x01" + b"abc", "attribute 1 of a ClassAd: no terminating NUL"),
        (b"\x00" * 7 + b"\x01" + b"\xff\xfe\0", "not UTF-8"),
        (b"\xff" * 8, "attribute count -1"),
        (b"\x7f" + b"\xff" * 7, "out of range"),
        (b"\x00" * 7 + b"\x05" + b"A = 1\0", "ends before attribute 2"),
        (b"\x00" * 7 + b"\x01" + b"not an attribute\0\0\0", "attribute 1"),
        (b"\x00" * 7 + b"\x01" + b"A = (1\0\0\0", "attribute 1"),
        (b"\x00" * 7 + b"\x01" + b"A = 1\0", "MyType"),
    ],
)
def test_malformed_classads_are_refused_with_what_was_read(data: bytes, message: str) -> None:
    """Every malformed ad raises CodecError naming what was being read."""
    with pytest.raises(CodecError, match=message):
        Reader(data).get_classad()


def test_deeply_nested_attribute_is_refused() -> None:
    """An attribute nested past the parser's bound is a CodecError, not a RecursionError."""
    line = "A = " + "(" * 5000 + "1" + ")" * 5000
    data = b"\x00" * 7 + b"\x01" + line.encode() + b"\0\0\0"
    with pytest.raises(CodecError, match="attribute 1"):
        Reader(data).get_classad()


def test_encrypted_string_lengths_are_bounded() -> None:
    """An encrypted string announcing an absurd length is refused before reading it."""
    with pytest.raises(CodecError, match="length 999999999 is out of range"):
        Reader((999_999_999).to_bytes(8, "big"), encrypted=True).get_string()


def test_int32_range_is_checked() -> None:
    """get_int32 refuses an integer a C int cannot hold."""
    with pytest.raises(CodecError, match="32-bit"):
        Reader((2**40).to_bytes(8, "big")).get_int32("the method bitmask")


def test_nul_inside_a_string_is_refused_on_writing() -> None:
    """A string with a NUL cannot be written (the peer would read it cut short)."""
    with pytest.raises(CodecError, match="NUL"):
        Writer().put_string("a\0b")


def _ends_a_list_string_with_a_backslash(value: object) -> bool:
    return isinstance(value, list) and any(
        isinstance(item, str) and item.endswith("\\") for item in value
    )


def test_a_list_string_ending_in_a_backslash_does_not_travel_as_in_htcondor() -> None:
    """Old syntax escapes only quotes, so a list's string ending in a backslash reads as an
    escaped quote: epcore refuses the ad naming the attribute, where libclassad (checked with
    classad2 25.14.1: ``A = { "\\" }`` parses to an empty ad) loses it silently."""
    data = Writer().put_classad(ClassAd({"A": ["\\"]}), private=True).bytes()
    with pytest.raises(CodecError, match="attribute 1 of a ClassAd: 1:7: unterminated string"):
        Reader(data).get_classad()
    # A string ending the line is read to its last quote, as libclassad's old parser does.
    data = Writer().put_classad(ClassAd({"B": "\\"}), private=True).bytes()
    assert Reader(data).get_classad() == ClassAd({"B": "\\"})


@given(
    st.dictionaries(attribute_names, values, max_size=8),
    st.booleans(),
    st.lists(st.integers(-(2**63), 2**63 - 1), max_size=3),
)
def test_round_trip(attributes: dict[str, Any], encrypted: bool, numbers: list[int]) -> None:
    """Integers, strings and ads written are read back equal, in the clear and encrypted."""
    assume(not any(_ends_a_list_string_with_a_backslash(value) for value in attributes.values()))
    ad = ClassAd(attributes)
    writer = Writer(encrypted=encrypted)
    for number in numbers:
        writer.put_int(number)
    writer.put_string("Name = x").put_classad(ad, private=True)
    reader = Reader(writer.bytes(), encrypted=encrypted)
    assert [reader.get_int() for _ in numbers] == numbers
    assert reader.get_string() == "Name = x"
    assert reader.get_classad() == ad
    reader.expect_end("the round trip")


def test_double_is_htcondors_fraction_and_exponent() -> None:
    """A double travels as frexp's fraction times 2**31-1 and its exponent, and reads back
    rounded to the 9 digits the fraction keeps (250 stays 250)."""
    data = Writer().put_double(1.5).bytes()
    assert data == (int(0.75 * (2**31 - 1))).to_bytes(8, "big") + (1).to_bytes(8, "big")
    for value in (0.0, 1.0, -2.5, 250.0, 1e-9, 123456.789):
        assert Reader(Writer().put_double(value).bytes()).get_double() == value


def test_double_out_of_range_is_refused() -> None:
    """Infinities are not sent, and an exponent no double has is refused on reading."""
    with pytest.raises(CodecError, match="cannot travel"):
        Writer().put_double(float("inf"))
    with pytest.raises(CodecError, match="out of range"):
        Reader(Writer().put_int(1).put_int(100000).bytes()).get_double("the factor")


def test_classad_without_types_has_no_trailing_strings() -> None:
    """types=False leaves out the two type strings (PUT_CLASSAD_NO_TYPES) and reads back
    the same way; a reader expecting them finds the message short."""
    ad = parse_ad("[ A = 1 ]")
    data = Writer().put_classad(ad, types=False).bytes()
    assert data == (1).to_bytes(8, "big") + b"A = 1\0"
    assert Reader(data).get_classad(types=False).evaluate("A") == 1
    with pytest.raises(CodecError, match="MyType"):
        Reader(data).get_classad()


@pytest.mark.parametrize(
    ("line", "accepted"),
    [
        (b'Enact = "NO"', True),
        (b"SessionLease = 3600", True),
        (b"NegotiatedSession = true", True),
        (b"Command = 2 + 3", False),
        (b"Command = Other", False),
        (b'Command = strcat("a", "b")', False),
        (b"Command = { 1, 2 }", False),
        (b"ZKM", False),
    ],
)
def test_security_ads_take_literals_only(line: bytes, accepted: bool) -> None:
    """Before authentication an ad may hold only literals, as HTCondor's getPODClassAd reads."""
    data = b"\x00" * 7 + b"\x01" + line + b"\0" + b"\0\0"
    if accepted:
        assert len(Reader(data).get_classad(literals_only=True)) == 1
    else:
        with pytest.raises(CodecError):
            Reader(data).get_classad(literals_only=True)


def test_security_ads_are_bounded_to_100_attributes() -> None:
    """More than 100 attributes in a security ad is refused from the count alone."""
    with pytest.raises(CodecError, match=r"out of range 0\.\.100"):
        Reader((101).to_bytes(8, "big")).get_classad("the policy", literals_only=True)


def test_writer_keeps_long_raw_parts_whole_and_in_order() -> None:
    """Raw parts long enough to be kept whole come out with the small values around them in
    the order they were put."""
    long_a, long_b = b"a" * 5000, b"b" * 3000
    writer = Writer().put_int(1).put_bytes(long_a).put_bytes(b"xy").put_bytes(long_b).put_int(0)
    expected = (1).to_bytes(8, "big") + long_a + b"xy" + long_b + (0).to_bytes(8, "big")
    assert writer.bytes() == expected


def test_an_encrypted_ad_is_its_lines_each_sent_as_a_string() -> None:
    """put_classad on an encrypted stream writes the count, then each line as put_string
    writes it (its length first), then the two type strings; a string holding NUL is
    refused."""
    ad = ClassAd({"Name": "slot1@h", "Cpus": 4, "Memory": 1024.5})
    ad["Requirements"] = parse_expr('TARGET.Owner != "x"')
    expected = Writer(encrypted=True).put_int(4)
    for line in (
        'Name = "slot1@h"',
        "Cpus = 4",
        "Memory = 1024.5",
        'Requirements = TARGET.Owner != "x"',
    ):
        expected.put_string(line)
    expected.put_string("").put_string("")
    assert Writer(encrypted=True).put_classad(ad).bytes() == expected.bytes()
    read = Reader(Writer(encrypted=True).put_classad(ad).bytes(), encrypted=True).get_classad()
    assert read == ad
    with pytest.raises(CodecError):
        Writer(encrypted=True).put_string("a\0b")


_LINES = st.one_of(
    st.binary(max_size=12),
    st.sampled_from([b"A = 1", b'B = "x"', b"C = A + 1", b"\xad", b"", b"ZKM", b"D = \xff"]),
)


@given(st.lists(_LINES, max_size=6), st.booleans(), st.integers(0, 3), st.binary(max_size=3))
def test_an_ads_lines_read_as_get_string_reads_them(
    lines: list[bytes], encrypted: bool, cut: int, end: bytes
) -> None:
    """Whatever bytes an ad's lines are (null strings, no NUL, bad UTF-8, the secret
    marker, a line not ended by NUL, the message cut short), they are read as get_string
    reads them: the same ad, or CodecError with the same message."""
    body = bytearray((len(lines)).to_bytes(8, "big"))
    for line in lines:
        if encrypted:
            body += (len(line) + 1).to_bytes(8, "big") + line + (end[:1] or b"\0")
        else:
            body += line + (end[:1] or b"\0")
    data = bytes(body[: len(body) - cut])

    def read(plain: bool) -> object:
        reader = Reader(data, encrypted=encrypted)
        if not plain:
            reader._plain_string = lambda: None  # type: ignore[method-assign]
        try:
            return dict(reader.get_classad(types=False))
        except CodecError as error:
            return str(error)

    assert read(True) == read(False)
