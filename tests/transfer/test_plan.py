"""Which files of a job travel and where each lands (epcore.transfer.plan), from ads alone."""

from __future__ import annotations

import pytest
from hypothesis import given
from hypothesis import strategies as st

from epcore.classad import ClassAd
from epcore.config import Config, MemoryHost
from epcore.transfer.plan import (
    STDERR_NAME,
    STDOUT_NAME,
    InputFile,
    Remap,
    TransferPlanError,
    check_relative,
    input_files,
    max_megabytes,
    output_names,
    output_target,
    parse_remaps,
    sandbox_ad,
    travels_here,
    wants_transfer,
)


def _job(**attributes: object) -> ClassAd:
    ad = ClassAd()
    ad["Iwd"] = "/home/u/run"
    ad["Cmd"] = "/home/u/run/prog"
    for name, value in attributes.items():
        ad[name] = value
    return ad


@pytest.mark.parametrize(
    ("should", "job_domain", "host_domain", "expected"),
    [
        ("YES", "a.org", "a.org", True),
        ("NO", "a.org", "b.org", False),
        ("IF_NEEDED", "a.org", "a.org", False),
        ("IF_NEEDED", "a.org", "b.org", True),
        ("IF_NEEDED", "A.org", "a.ORG", False),
        (None, "a.org", "b.org", True),
    ],
)
def test_wants_transfer_follows_should_transfer_files_and_the_domain(
    should: str | None, job_domain: str, host_domain: str, expected: bool
) -> None:
    """YES always transfers, NO never, IF_NEEDED (the default) when the domains differ."""
    job = _job(FileSystemDomain=job_domain)
    if should is not None:
        job["ShouldTransferFiles"] = should
    assert wants_transfer(job, host_domain) is expected


@pytest.mark.parametrize(
    ("config_text", "key", "expected"),
    [
        ("FILESYSTEM_DOMAIN = a.org\n", True, False),
        ("FILESYSTEM_DOMAIN = b.org\n", True, True),
        ("FILESYSTEM_DOMAIN = b.org\n", False, False),
        ("UID_DOMAIN = a.org\n", True, True),
    ],
)
def test_files_travel_here_only_when_offered_and_the_domains_differ(
    config_text: str, key: bool, expected: bool
) -> None:
    """A job's files travel to this host when the schedd gave it a TransferKey and this host's
    FILESYSTEM_DOMAIN (by default the host's full name, whatever UID_DOMAIN says) differs
    from the job's."""
    job = _job(FileSystemDomain="a.org", ShouldTransferFiles="IF_NEEDED")
    if key:
        job["TransferKey"] = "k"
    config = Config.from_text(config_text, host=MemoryHost())
    assert travels_here(job, config) is expected


@pytest.mark.parametrize(
    ("attributes", "expected"),
    [
        ({}, [InputFile("/home/u/run/prog", "prog", is_executable=True)]),
        ({"TransferExecutable": False}, []),
        (
            {"In": "in.txt", "TransferInput": "a.txt, /abs/b.txt, dir, dir2/"},
            [
                InputFile("/home/u/run/prog", "prog", is_executable=True),
                InputFile("/home/u/run/in.txt", "in.txt"),
                InputFile("/home/u/run/a.txt", "a.txt"),
                InputFile("/abs/b.txt", "b.txt"),
                InputFile("/home/u/run/dir", "dir"),
                InputFile("/home/u/run/dir2", ""),
            ],
        ),
        (
            {"TransferExecutable": False, "In": "/dev/null", "TransferInput": "x\ny"},
            [InputFile("/home/u/run/x", "x"), InputFile("/home/u/run/y", "y")],
        ),
        ({"TransferExecutable": False, "In": "in.txt", "TransferIn": False}, []),
    ],
)
def test_input_files_lists_executable_stdin_and_inputs(
    attributes: dict[str, object], expected: list[InputFile]
) -> None:
    """The executable, stdin and TransferInput go, ``dir/`` meaning the directory's contents."""
    assert list(input_files(_job(**attributes))) == expected


def test_sandbox_ad_points_the_job_at_its_sandbox_copies() -> None:
    """The ad the job runs with has the sandbox as Iwd, the copied executable and stdin and
    HTCondor's sandbox names for stdout and stderr."""
    ad = sandbox_ad(_job(In="in.txt", Out="out", Err="/dev/null"), "/sb")
    assert ad.evaluate("Iwd") == "/sb"
    assert ad.evaluate("Cmd") == "/sb/prog"
    assert ad.evaluate("In") == "/sb/in.txt"
    assert ad.evaluate("Out") == f"/sb/{STDOUT_NAME}"
    assert ad.evaluate("Err") == "/dev/null"


@pytest.mark.parametrize(
    ("attributes", "changed", "expected"),
    [
        ({}, ["b", "a", ".job.ad", STDOUT_NAME], ("a", "b")),
        ({"Out": "o", "Err": "e"}, ["x"], (STDOUT_NAME, STDERR_NAME, "x")),
        ({"TransferOutput": "r1, dir/"}, ["x"], ("r1", "dir")),
    ],
)
def test_output_names_are_streams_then_listed_or_changed_files(
    attributes: dict[str, object], changed: list[str], expected: tuple[str, ...]
) -> None:
    """stdout and stderr go back, then TransferOutput, or without it the changed files."""
    assert output_names(_job(**attributes), changed) == expected


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("a = b", (Remap("a", "b"),)),
        (" a=b ; c = d/e ;", (Remap("a", "b"), Remap("c", "d/e"))),
        (r"a\;b = c\=d", (Remap("a;b", "c=d"),)),
        (r"a\\ = b", (Remap("a\\", "b"),)),
        ("", ()),
        (" ; ", ()),
    ],
)
def test_parse_remaps_reads_htcondors_syntax(text: str, expected: tuple[Remap, ...]) -> None:
    """Entries separated by ``;``, sides by ``=``, both escaped by a backslash."""
    assert parse_remaps(text) == expected


@pytest.mark.parametrize(
    ("text", "words"),
    [
        ("a", "not of the form"),
        ("a = b = c", "not of the form"),
        ("= b", "empty"),
        ("a =", "empty"),
        ("a = b\\", "lone backslash"),
    ],
)
def test_malformed_remaps_are_refused_naming_the_entry(text: str, words: str) -> None:
    """A remap without exactly one ``=``, with an empty side or a dangling escape is refused."""
    with pytest.raises(TransferPlanError, match=words):
        parse_remaps(text)


_NAME = st.text(
    alphabet=st.characters(blacklist_characters="\0", blacklist_categories=("Cs",)), min_size=1
).filter(lambda text: text.strip() == text and text.strip() != "")


def _escape(text: str) -> str:
    return text.replace("\\", "\\\\").replace(";", "\\;").replace("=", "\\=")


@given(st.lists(st.tuples(_NAME, _NAME), max_size=5))
def test_escaped_remaps_parse_back(pairs: list[tuple[str, str]]) -> None:
    """Any names, escaped and joined as a submit file writes them, parse back unchanged."""
    text = "; ".join(f"{_escape(a)} = {_escape(b)}" for a, b in pairs)
    assert parse_remaps(text) == tuple(Remap(a, b) for a, b in pairs)


@given(st.text(max_size=40))
def test_parse_remaps_either_parses_or_says_why(text: str) -> None:
    """Whatever the text, the parser returns entries with both sides or a TransferPlanError."""
    try:
        remaps = parse_remaps(text)
    except TransferPlanError as error:
        assert "TransferOutputRemaps" in str(error)
    else:
        assert all(remap.source and remap.target for remap in remaps)


@pytest.mark.parametrize(
    ("attributes", "name", "expected"),
    [
        ({"Out": "out"}, STDOUT_NAME, "/home/u/run/out"),
        ({"Err": "/elsewhere/err"}, STDERR_NAME, "/elsewhere/err"),
        ({}, "new.txt", "/home/u/run/new.txt"),
        ({"TransferOutput": "d/r.txt"}, "d/r.txt", "/home/u/run/r.txt"),
        ({"TransferOutput": "dir"}, "dir/sub/f", "/home/u/run/dir/sub/f"),
        ({"TransferOutput": "r", "TransferOutputRemaps": "r = o/r2"}, "r", "/home/u/run/o/r2"),
        (
            {"TransferOutput": "dir", "TransferOutputRemaps": "dir = res"},
            "dir/f",
            "/home/u/run/res/f",
        ),
        ({"TransferOutputRemaps": "r = /home/u/run/x/r"}, "r", "/home/u/run/x/r"),
    ],
)
def test_output_target_places_each_file_in_the_iwd(
    attributes: dict[str, object], name: str, expected: str
) -> None:
    """Streams go to Out/Err, listed paths land under their last name, remaps rename."""
    job = _job(**attributes)
    remaps = parse_remaps(str(attributes.get("TransferOutputRemaps", "")))
    assert output_target(job, name, remaps) == expected


@pytest.mark.parametrize(
    ("attributes", "name"),
    [
        ({}, "../up"),
        ({}, "/etc/passwd"),
        ({}, "sub/f"),
        ({"TransferOutput": "r"}, "other"),
        ({"TransferOutputRemaps": "r = ../r"}, "r"),
        ({"TransferOutputRemaps": "r = /tmp/r"}, "r"),
        ({"TransferOutputRemaps": "r = /home/u/runaway/r"}, "r"),
        ({}, STDOUT_NAME),
    ],
)
def test_output_target_refuses_names_leaving_the_iwd(
    attributes: dict[str, object], name: str
) -> None:
    """A name the ad does not account for or a remap leaving the Iwd is refused."""
    remaps = parse_remaps(str(attributes.get("TransferOutputRemaps", "")))
    with pytest.raises(TransferPlanError):
        output_target(_job(**attributes), name, remaps)


@pytest.mark.parametrize("name", ["", "/a", "a/../b", "..", "./.."])
def test_check_relative_refuses_paths_that_leave(name: str) -> None:
    """Absolute, empty and ``..`` paths are not relative names inside a directory."""
    with pytest.raises(TransferPlanError):
        check_relative(name)


def test_max_megabytes_prefers_the_job_and_negative_is_unlimited() -> None:
    """The job's attribute wins over the configured value; a negative one means no limit."""
    assert max_megabytes(_job(MaxTransferOutputMB=5), "MaxTransferOutputMB", 100) == 5
    assert max_megabytes(_job(), "MaxTransferOutputMB", 100) == 100
    assert max_megabytes(_job(), "MaxTransferOutputMB", -1) is None
