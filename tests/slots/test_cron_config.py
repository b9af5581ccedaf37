"""Startd cron and benchmark jobs read from the configuration (seed 000, "Configuration"):
the seed's example, every knob, the StartdCron templates, and malformed knobs named."""

from __future__ import annotations

import sys

import pytest

from epcore.builtin.benchmarks import benchmark_defaults
from epcore.config import Config
from epcore.slots.cron_config import (
    BENCHMARKS,
    STARTD_CRON,
    CronConfigError,
    CronJobSpec,
    parse_period,
    read_cron_job,
    read_cron_plan,
)

#: The startd cron part of the seed's complete configuration example.
SEED_CONFIG = """\
MODULES = $(ROOT)/modules
ROOT = /opt/condor
STARTD_CRON_CONFIG_VAL = $(RELEASE_DIR)/bin/condor_config_val
STARTD_CRON_MAX_JOB_LOAD = 0.2
STARTD_CRON_JOBLIST =
STARTD_CRON_LOG_NON_ZERO_EXIT = true
STARTD_CRON_JOBLIST = $(STARTD_CRON_JOBLIST) test
STARTD_CRON_TEST_MODE = OneShot
STARTD_CRON_TEST_RECONFIG_RERUN = True
STARTD_CRON_TEST_PREFIX = test_
STARTD_CRON_TEST_EXECUTABLE = $(MODULES)/test
STARTD_CRON_TEST_KILL = True
STARTD_CRON_TEST_ARGS = abc 123
STARTD_CRON_TEST_SLOTS = 1
STARTD_CRON_TEST_JOB_LOAD = 0.01
STARTD_CRON_JOBLIST = $(STARTD_CRON_JOBLIST) date
STARTD_CRON_DATE_MODE = Periodic
STARTD_CRON_DATE_EXECUTABLE = $(MODULES)/date
STARTD_CRON_DATE_PERIOD = 15s
STARTD_CRON_DATE_JOB_LOAD = 0.01
STARTD_CRON_JOBLIST = $(STARTD_CRON_JOBLIST) foo
STARTD_CRON_FOO_EXECUTABLE = $(MODULES)/foo
STARTD_CRON_FOO_PREFIX = Foo
STARTD_CRON_FOO_MODE = Periodic
STARTD_CRON_FOO_PERIOD = 10m
STARTD_CRON_FOO_JOB_LOAD = 0.2
BENCHMARKS_JOBLIST = mips kflops
BENCHMARKS_MIPS_EXECUTABLE = $(LIBEXEC)/condor_mips
BENCHMARKS_MIPS_JOB_LOAD = 1.0
BENCHMARKS_KFLOPS_EXECUTABLE = $(LIBEXEC)/condor_kflops
BENCHMARKS_KFLOPS_JOB_LOAD = 1.0
"""


def test_seed_example_configuration() -> None:
    """The seed's three cron jobs and two benchmarks read as it describes them."""
    config = Config.from_text(SEED_CONFIG)
    plan = read_cron_plan(config)
    assert plan.errors == () and plan.max_job_load == 0.2
    assert plan.jobs == (
        CronJobSpec(
            STARTD_CRON,
            "test",
            "/opt/condor/modules/test",
            args=("abc", "123"),
            prefix="test_",
            mode="OneShot",
            reconfig_rerun=True,
            kill=True,
            job_load=0.01,
            slots=(1,),
        ),
        CronJobSpec(STARTD_CRON, "date", "/opt/condor/modules/date", period=15.0, job_load=0.01),
        CronJobSpec(
            STARTD_CRON,
            "foo",
            "/opt/condor/modules/foo",
            prefix="Foo",
            period=600.0,
            job_load=0.2,
        ),
    )
    benchmarks = read_cron_plan(config, BENCHMARKS)
    assert [(j.name, j.executable, j.mode, j.job_load) for j in benchmarks.jobs] == [
        ("mips", "/usr/libexec/condor_mips", "OnDemand", 1.0),
        ("kflops", "/usr/libexec/condor_kflops", "OnDemand", 1.0),
    ]
    assert benchmarks.max_job_load == 1.0


def test_startd_benchmark_defaults_run_epcores_programs() -> None:
    """With the startd's defaults the benchmarks are epcore's programs, run by this Python."""
    config = Config.from_text("", defaults=benchmark_defaults())
    jobs = read_cron_plan(config, BENCHMARKS).jobs
    assert [(j.name, j.executable, j.args) for j in jobs] == [
        ("mips", sys.executable, ("-m", "epcore.builtin.benchmarks", "mips")),
        ("kflops", sys.executable, ("-m", "epcore.builtin.benchmarks", "kflops")),
    ]


@pytest.mark.parametrize(
    ("text", "seconds"),
    [("30", 30.0), ("15s", 15.0), ("10m", 600.0), ("5M", 300.0), ("1h", 3600.0), ("0.5", 0.5)],
)
def test_period_units(text: str, seconds: float) -> None:
    """PERIOD is seconds, or a number with an s, m or h suffix."""
    assert parse_period(text) == seconds


@pytest.mark.parametrize("text", ["", "ten", "5d", "-3", "1 m s", "m"])
def test_period_that_is_not_one(text: str) -> None:
    """Anything else is not a period."""
    assert parse_period(text) is None


@pytest.mark.parametrize(
    ("extra", "knob", "words"),
    [
        ("STARTD_CRON_J_MODE = Sometimes", "STARTD_CRON_J_MODE", "'Sometimes' is not one of"),
        ("STARTD_CRON_J_PERIOD = 5 days", "STARTD_CRON_J_PERIOD", "not seconds or a number"),
        ("STARTD_CRON_J_PERIOD = 0", "STARTD_CRON_J_PERIOD", "needs a period above 0"),
        ("STARTD_CRON_J_EXECUTABLE =", "STARTD_CRON_J_EXECUTABLE", "has no executable"),
        ("STARTD_CRON_J_JOB_LOAD = lots", "STARTD_CRON_J_JOB_LOAD", "'lots' is not a number"),
        ("STARTD_CRON_J_JOB_LOAD = -1", "STARTD_CRON_J_JOB_LOAD", "not a load"),
        ("STARTD_CRON_J_KILL = maybe", "STARTD_CRON_J_KILL", "not true or false"),
        ("STARTD_CRON_J_SLOTS = 1, two", "STARTD_CRON_J_SLOTS", "'two' is not a slot number"),
        ('STARTD_CRON_J_ARGS = "\'open"', "STARTD_CRON_J_ARGS", "quote"),
        ("STARTD_CRON_J_ENV = NOEQUALS", "STARTD_CRON_J_ENV", "NOEQUALS"),
    ],
)
def test_malformed_knob_is_named_with_its_line(extra: str, knob: str, words: str) -> None:
    """A knob that cannot be used is a CronConfigError naming it, at its file and line; the
    plan leaves the job out and reports the error."""
    text = (
        "STARTD_CRON_JOBLIST = j\nSTARTD_CRON_J_EXECUTABLE = /bin/true\n"
        f"STARTD_CRON_J_PERIOD = 60\n{extra}\n"
    )
    config = Config.from_text(text)
    with pytest.raises(CronConfigError) as caught:
        read_cron_job(config, STARTD_CRON, "j")
    assert caught.value.knob == knob
    assert knob in str(caught.value) and words in str(caught.value)
    assert caught.value.line == 4
    plan = read_cron_plan(config)
    assert plan.jobs == () and [e.knob for e in plan.errors] == [knob]


def test_args_env_cwd_and_v2_quoting() -> None:
    """ARGS and ENV in V2 (double-quoted) form keep quoted spaces; CWD is taken as is."""
    config = Config.from_text(
        "STARTD_CRON_JOBLIST = j j\nSTARTD_CRON_J_EXECUTABLE = /bin/echo\n"
        "STARTD_CRON_J_MODE = waitforexit\n"
        "STARTD_CRON_J_ARGS = \"one 'two three'\"\n"
        "STARTD_CRON_J_ENV = \"A=1 B='x y'\"\nSTARTD_CRON_J_CWD = /tmp\n"
        "STARTD_CRON_J_RECONFIG = true\n"
    )
    (job,) = read_cron_plan(config).jobs
    assert job.mode == "WaitForExit" and job.period == 0.0 and job.reconfig
    assert job.args == ("one", "two three")
    assert job.env == (("A", "1"), ("B", "x y"))
    assert job.cwd == "/tmp"


@pytest.mark.parametrize(
    ("use", "mode", "period", "args", "extra"),
    [
        ("StartdCronPeriodic(date, 15s, /bin/date)", "Periodic", 15.0, (), {}),
        ("StartdCronPeriodic(date, 1m, /bin/date, -u)", "Periodic", 60.0, ("-u",), {}),
        (
            "StartdCronOneShot(date, /bin/date)",
            "OneShot",
            0.0,
            (),
            {"kill": True, "reconfig_rerun": True},
        ),
        ("StartdCronContinuous(date, /bin/date)", "WaitForExit", 0.0, (), {}),
    ],
)
def test_startd_cron_templates(use: str, mode: str, period: float, args, extra) -> None:
    """The FEATURE : StartdCron* templates declare a job as their names say."""
    config = Config.from_text(f"use FEATURE : {use}\n")
    (job,) = read_cron_plan(config).jobs
    assert (job.name, job.executable, job.mode, job.period, job.args) == (
        "date",
        "/bin/date",
        mode,
        period,
        args,
    )
    for field, value in extra.items():
        assert getattr(job, field) == value


def test_names_listed_twice_and_bad_names() -> None:
    """A name listed twice is one job; a name that is not an identifier is reported."""
    config = Config.from_text(
        "STARTD_CRON_JOBLIST = a A bad-name\nSTARTD_CRON_A_EXECUTABLE = /bin/true\n"
        "STARTD_CRON_A_PERIOD = 1\n"
    )
    plan = read_cron_plan(config)
    assert [job.name for job in plan.jobs] == ["a"]
    assert [error.knob for error in plan.errors] == ["STARTD_CRON_JOBLIST"]
