"""condor_defrag's knobs: the per-interval arithmetic, the checks, the built constraints and
the defaults against htcondor2.param."""

from __future__ import annotations

import pytest
from defrag_helpers import REASON, pslot, settings
from param_oracle import ParamOracle

from epcore.config import Config
from epcore.defrag.settings import DefragSettings, Rate, daemon_name, split_rate
from epcore.errors import ConfigError


@pytest.mark.parametrize(
    ("per_hour", "interval", "expected"),
    [
        # One an hour every 10 minutes: none per poll, the one added once an hour.
        (1, 600, Rate(1, 0, 1, 0)),
        # Six an hour every 10 minutes: exactly one a poll (the tolerance absorbs rounding).
        (6, 600, Rate(6, 1, 0, 0)),
        # Half a machine an hour: twelve a day.
        (0.5, 600, Rate(0.5, 0, 0, 12)),
        # 2.5 an hour, hourly polls: two a poll and the half left over, twelve a day.
        (2.5, 3600, Rate(2.5, 2, 0, 12)),
        # 7200 an hour every 2 s: four a poll.
        (7200, 2, Rate(7200, 4, 0, 0)),
        # HTCondor's quirk: an interval over an hour zeroes the hourly rate (draining off).
        (10, 7200, Rate(0, 20, 0, 0)),
    ],
)
def test_rate_is_split_into_per_poll_per_hour_and_per_day(
    per_hour: float, interval: int, expected: Rate
) -> None:
    """The hourly rate splits into machines per poll, the fraction left per hour, and what
    is left of that per day, as HTCondor's configuration of the daemon computes them."""
    assert split_rate(per_hour, interval) == expected


def test_negative_rate_is_raised_to_zero() -> None:
    """A negative DEFRAG_DRAINING_MACHINES_PER_HOUR reads as 0 (HTCondor's minimum)."""
    assert settings("DEFRAG_DRAINING_MACHINES_PER_HOUR = -3").rate == Rate(0, 0, 0, 0)


@pytest.mark.parametrize(
    ("name", "host", "expected"),
    [
        (None, "cm.example", "cm.example"),
        ("", "cm.example", "cm.example"),
        ("defrag", "cm.example", "defrag@cm.example"),
        ("a@b", "cm.example", "a@b"),
        ("cm.example", "cm.example", "cm.example"),
    ],
)
def test_daemon_name_is_built_as_htcondor_builds_it(
    name: str | None, host: str, expected: str
) -> None:
    """An unset name is the host, a bare one gets ``@host``, one with ``@`` stays."""
    assert daemon_name(name, host) == expected


@pytest.mark.parametrize("schedule", ["graceful", "QUICK", "Fast"])
def test_draining_schedule_is_case_insensitive(schedule: str) -> None:
    """graceful, quick and fast are taken in any case, with their DRAIN_JOBS numbers."""
    got = settings(f"DEFRAG_DRAINING_SCHEDULE = {schedule}")
    assert got.schedule_number == {"graceful": 0, "quick": 10, "fast": 20}[schedule.lower()]


@pytest.mark.parametrize(
    ("text", "message"),
    [
        ("DEFRAG_DRAINING_SCHEDULE = slow", "Invalid draining schedule: slow"),
        ("DEFRAG_REQUIREMENTS = (Cpus >", "DEFRAG_REQUIREMENTS"),
        ("DEFRAG_WHOLE_MACHINE_EXPR = Cpus ==", "DEFRAG_WHOLE_MACHINE_EXPR"),
        ("DEFRAG_RANK = -", "DEFRAG_RANK"),
        ("DEFRAG_CANCEL_REQUIREMENTS = )", "DEFRAG_CANCEL_REQUIREMENTS"),
    ],
)
def test_bad_knob_is_a_configuration_error_naming_it(text: str, message: str) -> None:
    """An unknown schedule or an expression that does not parse stops the daemon with an
    error naming the knob (HTCondor's daemon exits on both)."""
    with pytest.raises(ConfigError, match=message):
        settings(text)


def test_whole_machine_expression_is_appended_to_without_parentheses() -> None:
    """A top-level ``||`` in DEFRAG_WHOLE_MACHINE_EXPR binds looser than the appended
    constraint, as in HTCondor: a static slot with all its cpus then counts as whole."""
    got = settings("DEFRAG_WHOLE_MACHINE_EXPR = Cpus == TotalSlotCpus || Cpus > 100")
    static = pslot("a", 8, 8, PartitionableSlot=False)
    assert got.whole_machine.evaluate(static) is True
    plain = settings()
    assert plain.whole_machine.evaluate(static) is False


def test_cancel_requirements_default_to_the_whole_machine_expression() -> None:
    """Unset DEFRAG_CANCEL_REQUIREMENTS cancels my drains of machines that are whole; empty
    turns cancelling off."""
    got = settings("DEFRAG_WHOLE_MACHINE_EXPR = Cpus >= 4")
    assert got.cancel is not None
    assert got.cancel.evaluate(pslot("a", 4, 8, draining=True, reason=REASON)) is True
    assert got.cancel.evaluate(pslot("a", 3, 8, draining=True, reason=REASON)) is False
    assert settings("DEFRAG_CANCEL_REQUIREMENTS =").cancel is None


def test_name_and_state_file_default_to_the_local_name() -> None:
    """Without DEFRAG_NAME and DEFRAG_STATE_FILE the daemon is ``DEFRAG@host`` and keeps its
    state in $(LOCK)/DEFRAG_state: HTCondor's LOCALNAME is the subsystem's name when the
    daemon has no local name, so $(LOCALNAME:defrag) never takes its default."""
    config = Config.from_text("LOCK = /var/lock/condor")
    host = config.get("FULL_HOSTNAME")
    got = DefragSettings.from_config(config)
    assert (got.name, got.state_file) == (f"DEFRAG@{host}", "/var/lock/condor/DEFRAG_state")
    named = DefragSettings.from_config(Config.from_text("LOCK = /l", local_name="d2"))
    assert (named.name, named.state_file) == (f"d2@{host}", "/l/d2_state")


#: The knobs whose defaults the settings read, as htcondor2.param gives them.
DEFAULT_KNOBS = (
    "DEFRAG_INTERVAL",
    "DEFRAG_DRAINING_MACHINES_PER_HOUR",
    "DEFRAG_MAX_CONCURRENT_DRAINING",
    "DEFRAG_MAX_WHOLE_MACHINES",
    "DEFRAG_REQUIREMENTS",
    "DEFRAG_WHOLE_MACHINE_EXPR",
    "DEFRAG_CANCEL_REQUIREMENTS",
    "DEFRAG_RANK",
    "DEFRAG_DRAINING_SCHEDULE",
    "DEFRAG_DRAINING_START_EXPR",
    "DEFRAG_UPDATE_INTERVAL",
    "DEFRAG_NAME",
    "DEFRAG_STATE_FILE",
)


@pytest.mark.oracle
def test_defaults_are_htcondors(param_oracle: ParamOracle) -> None:
    """With no configuration the settings hold what htcondor2.param gives the defrag daemon
    for each knob (DEFRAG_NAME and DEFRAG_STATE_FILE unset in both)."""
    answer = param_oracle.load("", list(DEFAULT_KNOBS), subsystem="DEFRAG")
    assert answer.error is None, answer.error
    theirs = {name: answer.values[name] for name in DEFAULT_KNOBS}
    config = Config.from_text("", subsystem="DEFRAG")
    ours = DefragSettings.from_config(config)
    for name in DEFAULT_KNOBS:
        assert config.get(name) == theirs[name].text, name
    assert ours.interval == int(theirs["DEFRAG_INTERVAL"].text or "") == 600
    assert ours.rate.per_hour == float(theirs["DEFRAG_DRAINING_MACHINES_PER_HOUR"].text or "")
    assert ours.max_draining == int(theirs["DEFRAG_MAX_CONCURRENT_DRAINING"].text or "") == -1
    assert ours.max_whole_machines == int(theirs["DEFRAG_MAX_WHOLE_MACHINES"].text or "") == -1
    rank = theirs["DEFRAG_RANK"].text
    assert str(ours.rank).strip() == rank == "-ExpectedMachineGracefulDrainingBadput"
    assert ours.schedule == theirs["DEFRAG_DRAINING_SCHEDULE"].text == "graceful"
    assert ours.update_interval == int(theirs["DEFRAG_UPDATE_INTERVAL"].text or "") == 300
    assert ours.start_expr == theirs["DEFRAG_DRAINING_START_EXPR"].text
    assert theirs["DEFRAG_NAME"].text is None and theirs["DEFRAG_STATE_FILE"].text is None
    whole = theirs["DEFRAG_WHOLE_MACHINE_EXPR"].text
    assert whole == "Cpus == TotalSlotCpus" == theirs["DEFRAG_CANCEL_REQUIREMENTS"].text
