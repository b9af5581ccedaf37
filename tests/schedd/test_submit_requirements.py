"""SUBMIT_REQUIREMENT_NAMES: the schedd's checks of every submitted job, as HTCondor's."""

from __future__ import annotations

import pytest

from epcore.classad import ClassAd
from epcore.config import Config, MemoryHost
from epcore.errors import ConfigError
from epcore.schedd.submit_requirements import check_submit_requirements, submit_requirements

SCHEDD = ClassAd({"MyType": "Scheduler", "Name": "ap.example.org", "UidDomain": "example.org"})


def requirements_of(text: str) -> Config:
    return Config.from_text(text, host=MemoryHost(), subsystem="SCHEDD")


def verdict(text: str, job: ClassAd) -> tuple[str | None, tuple[str, ...]]:
    found = check_submit_requirements(submit_requirements(requirements_of(text)), SCHEDD, job)
    return found.refusal, found.warnings


OWN = """\
SUBMIT_REQUIREMENT_NAMES = Own Small
SUBMIT_REQUIREMENT_Own = JOB.AcctGroupUser is undefined || JOB.AcctGroupUser == TARGET.Owner
SUBMIT_REQUIREMENT_Own_REASON = strcat("accounting_group_user must be ", Owner)
SUBMIT_REQUIREMENT_Small = RequestCpus <= 4
"""


@pytest.mark.parametrize(
    ("job", "refusal"),
    [
        ({"Owner": "alice", "RequestCpus": 1}, None),
        ({"Owner": "alice", "AcctGroupUser": "alice", "RequestCpus": 1}, None),
        ({"Owner": "alice", "AcctGroupUser": "bob"}, "accounting_group_user must be alice"),
        ({"Owner": "alice", "RequestCpus": 8}, "Submit requirement Small not met."),
        ({"Owner": "alice"}, "Submit requirement Small evaluated to non-boolean."),
    ],
)
def test_requirements_refuse_with_their_reason(job: dict[str, object], refusal: str | None) -> None:
    """The first unmet requirement refuses the job with its REASON (or HTCondor's default
    message); a requirement that is not a boolean refuses it too."""
    assert verdict(OWN, ClassAd(job)) == (refusal, ())


def test_the_schedd_ad_is_my_and_schedd() -> None:
    """The schedd's ad is MY (and SCHEDD.), the job TARGET (and JOB.)."""
    text = (
        "SUBMIT_REQUIREMENT_NAMES = Here\n"
        'SUBMIT_REQUIREMENT_Here = MY.UidDomain == "example.org" && SCHEDD.Name == Name\n'
    )
    assert verdict(text, ClassAd({"Owner": "alice"})) == (None, ())


def test_a_warning_requirement_only_warns() -> None:
    """With _IS_WARNING true, an unmet requirement gives its reason as a warning and the job
    is accepted."""
    text = OWN.replace("Own Small", "Own") + "SUBMIT_REQUIREMENT_Own_IS_WARNING = true\n"
    job = ClassAd({"Owner": "alice", "AcctGroupUser": "bob"})
    assert verdict(text, job) == (None, ("accounting_group_user must be alice",))


def test_names_without_expression_are_skipped_and_a_bad_reason_falls_back() -> None:
    """A listed name with no expression is ignored; a REASON that is not a string gives the
    default message."""
    text = (
        "SUBMIT_REQUIREMENT_NAMES = Ghost Never\n"
        "SUBMIT_REQUIREMENT_Never = false\n"
        "SUBMIT_REQUIREMENT_Never_REASON = 42\n"
    )
    assert verdict(text, ClassAd()) == ("Submit requirement Never not met.", ())
    assert submit_requirements(requirements_of("")) == ()


@pytest.mark.parametrize("knob", ["SUBMIT_REQUIREMENT_Bad", "SUBMIT_REQUIREMENT_Bad_REASON"])
def test_a_malformed_expression_names_the_knob_file_and_line(knob: str) -> None:
    """An expression that does not parse is a ConfigError naming the knob, file and line."""
    text = f"SUBMIT_REQUIREMENT_NAMES = Bad\nSUBMIT_REQUIREMENT_Bad = true\n{knob} = (1 +\n"
    with pytest.raises(ConfigError) as raised:
        submit_requirements(requirements_of(text))
    assert raised.value.line == 3 and knob in str(raised.value)
