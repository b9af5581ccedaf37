"""Tests of epcore.jobs.command: a job ad read into the command the starter runs."""

from __future__ import annotations

import signal

import pytest
from param_oracle import ParamOracle

from epcore.classad import ClassAd, parse_ad
from epcore.jobs.command import (
    DEFAULT_THREAD_VARS,
    JobCommand,
    job_command,
    job_environment,
)
from epcore.jobs.syntax import JobSpecError

SCRATCH = "/var/lib/condor/execute/dir_42"


def _ad(text: str) -> ClassAd:
    return parse_ad(text)


def test_minimal_fetched_job_gets_defaults() -> None:
    """A job with only Cmd runs in the sandbox with /dev/null streams, SIGTERM and vanilla."""
    command = job_command(_ad('[ Cmd = "/bin/true" ]'), SCRATCH)
    assert command == JobCommand(
        executable="/bin/true",
        arguments=(),
        environment=(),
        iwd=SCRATCH,
        stdin="/dev/null",
        stdout="/dev/null",
        stderr="/dev/null",
        kill_signal=signal.SIGTERM,
        universe=5,
    )


def test_full_job_ad_is_interpreted() -> None:
    """Relative Cmd/In/Out/Err go under IWD, V2 wins over V1, KillSig and universe are read."""
    ad = _ad(
        """[ Cmd = "bin/run"; IWD = "/home/u/job"; In = "in.txt"; Out = "/tmp/out";
             Err = "err.txt"; Args = "v1 args"; Arguments = "a 'b c'"; Env = "X=1";
             Environment = "Y='2 3'"; KillSig = "SIGQUIT"; JobUniverse = 10 ]"""
    )
    command = job_command(ad, SCRATCH)
    assert command == JobCommand(
        executable="/home/u/job/bin/run",
        arguments=("a", "b c"),
        environment=(("Y", "2 3"),),
        iwd="/home/u/job",
        stdin="/home/u/job/in.txt",
        stdout="/tmp/out",
        stderr="/home/u/job/err.txt",
        kill_signal=signal.SIGQUIT,
        universe=10,
    )


@pytest.mark.parametrize(
    ("attrs_text", "arguments", "environment"),
    [
        ('Args = "x  y"; Env = "A=1;B=2"', ("x", "y"), (("A", "1"), ("B", "2"))),
        ('Args = "x"; Env = "A=1|B=2"; EnvDelim = "|"', ("x",), (("A", "1"), ("B", "2"))),
        ('Arguments = ""; Args = "ignored"', (), ()),
        ("Args = undefined; Env = undefined", (), ()),
    ],
    ids=["v1", "v1-delim", "empty-v2-wins", "undefined"],
)
def test_v1_attributes_used_without_v2(
    attrs_text: str, arguments: tuple[str, ...], environment: tuple[tuple[str, str], ...]
) -> None:
    """Args and Env (with EnvDelim) apply when Arguments and Environment are absent."""
    command = job_command(_ad(f'[ Cmd = "/bin/x"; {attrs_text} ]'), SCRATCH)
    assert (command.arguments, command.environment) == (arguments, environment)


def test_relative_iwd_is_under_the_sandbox() -> None:
    """A relative Iwd is taken inside the scratch directory, and Cmd under it."""
    command = job_command(_ad('[ Cmd = "run"; Iwd = "work" ]'), SCRATCH)
    assert (command.iwd, command.executable) == (f"{SCRATCH}/work", f"{SCRATCH}/work/run")


@pytest.mark.parametrize(
    ("body", "attribute", "hold_code"),
    [
        ('Owner = "u"', "Cmd", 6),
        ('Cmd = ""', "Cmd", 6),
        ("Cmd = 3", "Cmd", 6),
        ("Cmd = undefined", "Cmd", 6),
        ('Cmd = "/x"; Arguments = 7', "Arguments", 6),
        ('Cmd = "/x"; Arguments = "a \'b"', "Arguments", 6),
        ('Cmd = "/x"; Args = true', "Args", 6),
        ('Cmd = "/x"; Environment = "NOVALUE"', "Environment", 6),
        ('Cmd = "/x"; Env = 1.5', "Env", 6),
        ('Cmd = "/x"; In = 4', "In", 8),
        ('Cmd = "/x"; Out = false', "Out", 7),
        ('Cmd = "/x"; Err = 2', "Err", 7),
        ('Cmd = "/x"; Iwd = 9', "Iwd", 14),
        ('Cmd = "/x"; KillSig = "SIGNOPE"', "KillSig", 6),
        ('Cmd = "/x"; KillSig = 1.0', "KillSig", 6),
        ('Cmd = "/x"; JobUniverse = "vanilla"', "JobUniverse", 6),
        ('Cmd = "/x"; JobUniverse = 1/0', "JobUniverse", 6),
    ],
    ids=lambda value: value if isinstance(value, str) else None,
)
def test_bad_job_ads_are_refused_naming_attribute(
    body: str, attribute: str, hold_code: int
) -> None:
    """A missing Cmd or an attribute of the wrong type or syntax is an error naming it."""
    with pytest.raises(JobSpecError, match=f"job ad attribute {attribute}\\b") as caught:
        job_command(_ad(f"[ {body} ]"), SCRATCH)
    assert caught.value.hold_code == hold_code


def _environment(command: JobCommand, cpus: float = 3.0) -> dict[str, str]:
    return dict(
        job_environment(
            command,
            scratch_dir=SCRATCH,
            slot_name="slot1_1",
            job_ad_path=f"{SCRATCH}/.job.ad",
            machine_ad_path=f"{SCRATCH}/.machine.ad",
            cpus=cpus,
            thread_vars=("OMP_NUM_THREADS", "GOMAXPROCS"),
        )
    )


def test_job_environment_adds_starter_variables() -> None:
    """The starter adds the _CONDOR_* variables, TMPDIR/TMP/TEMP and the thread counts."""
    command = job_command(_ad('[ Cmd = "/bin/x"; Iwd = "/w"; Env = "MINE=1" ]'), SCRATCH)
    assert _environment(command) == {
        "MINE": "1",
        "_CONDOR_SCRATCH_DIR": SCRATCH,
        "_CONDOR_SLOT": "slot1_1",
        "_CONDOR_JOB_AD": f"{SCRATCH}/.job.ad",
        "_CONDOR_MACHINE_AD": f"{SCRATCH}/.machine.ad",
        "_CONDOR_JOB_IWD": "/w",
        "TMPDIR": SCRATCH,
        "TMP": SCRATCH,
        "TEMP": SCRATCH,
        "OMP_NUM_THREADS": "3",
        "GOMAXPROCS": "3",
    }


@pytest.mark.parametrize(
    ("cpus", "threads"), [(0, "1"), (0.5, "1"), (1, "1"), (2.9, "2"), (8, "8")]
)
def test_thread_count_is_whole_cpus_at_least_one(cpus: float, threads: str) -> None:
    """Thread variables are the slot's whole CPU count, never below 1."""
    command = job_command(_ad('[ Cmd = "/bin/x" ]'), SCRATCH)
    assert _environment(command, cpus)["OMP_NUM_THREADS"] == threads


def test_job_wins_for_thread_vars_but_not_condor_vars() -> None:
    """The job's own value wins for thread and temp variables, never for _CONDOR_ ones."""
    env = "OMP_NUM_THREADS=7 TMPDIR=/mine _CONDOR_SLOT=fake _CONDOR_SCRATCH_DIR=/fake"
    command = job_command(_ad(f'[ Cmd = "/bin/x"; Environment = "{env}" ]'), SCRATCH)
    result = _environment(command)
    assert result["OMP_NUM_THREADS"] == "7"
    assert result["TMPDIR"] == "/mine"
    assert result["_CONDOR_SLOT"] == "slot1_1"
    assert result["_CONDOR_SCRATCH_DIR"] == SCRATCH


@pytest.mark.oracle
def test_default_thread_vars_match_htcondor(param_oracle: ParamOracle) -> None:
    """DEFAULT_THREAD_VARS is HTCondor's default STARTER_NUM_THREADS_ENV_VARS list."""
    name = "STARTER_NUM_THREADS_ENV_VARS"
    answer = param_oracle.load("", [name], subsystem="STARTER")
    assert answer.error is None, answer.error
    text = answer.values[name].text
    assert text is not None
    assert tuple(text.replace(",", " ").split()) == DEFAULT_THREAD_VARS
