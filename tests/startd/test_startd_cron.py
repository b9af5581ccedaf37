"""Startd cron with real scripts through a real startd (seed 000, "Daemon ClassAd Hooks"): the
seed's three-ad output merged by SlotId, every MODE, KILL of a hung job while the startd keeps
answering, RECONFIG and RECONFIG_RERUN, garbage output, and the output in policy expressions."""

from __future__ import annotations

import time
from pathlib import Path

import pytest

from epcore.classad import parse_ad
from epcore.runtime.control import ControlError

pytestmark = pytest.mark.system

SEED_OUTPUT = """\
Value=1
SlotId=1
-s1
Value=2
SlotId=2
-s2
Value=10
- update:true
"""


def _script(directory: Path, name: str, body: str) -> Path:
    path = directory / name
    path.write_text("#!/bin/sh\n" + body)
    path.chmod(0o755)
    return path


def _values(startd, attribute: str) -> dict[str, object]:
    """``attribute`` of every slot that has it, by short slot name."""
    found = {}
    for ad in startd.client.query():
        if attribute in ad:
            name = str(ad.evaluate("Name")).split("@", 1)[0]
            found[name] = ad.evaluate(attribute)
    return found


def _wait_values(startd, attribute: str, expected: dict[str, object], timeout: float = 30):
    startd.wait_for(
        lambda: _values(startd, attribute) == expected,
        timeout,
        f"{attribute} to become {expected} (now {_values(startd, attribute)})",
    )


def _job_ad() -> object:
    return parse_ad('[ ClusterId = 1; ProcId = 0; Owner = "nobody"; Cmd = "/bin/true" ]')


def test_seed_output_merges_by_slot_id_and_start_sees_it(startd_factory, tmp_path) -> None:
    """The seed's output gives slot1 Value=1, slot2 Value=2 and every other slot Value=10, in
    the ads the control socket serves, and a START that refers to Value admits accordingly."""
    script = _script(tmp_path, "seed", f"cat <<'EOF'\n{SEED_OUTPUT}EOF\n")
    startd = startd_factory(
        f"NUM_SLOTS = 4\nSTART = Value >= 2\nSTARTD_CRON_JOBLIST = seed\n"
        f"STARTD_CRON_SEED_EXECUTABLE = {script}\nSTARTD_CRON_SEED_MODE = OneShot\n"
    )
    _wait_values(startd, "Value", {"slot1": 1, "slot2": 2, "slot3": 10, "slot4": 10})
    with pytest.raises(ControlError):
        startd.client.claim("slot1", _job_ad())
    assert startd.client.claim("slot3", _job_ad())
    requirements = {
        str(ad.evaluate("Name")).split("@")[0]: ad.evaluate("Requirements")
        for ad in startd.client.query()
    }
    assert requirements["slot2"] is True and requirements["slot1"] is False


def test_prefix_slots_args_env_and_cwd(startd_factory, tmp_path) -> None:
    """PREFIX names the attributes, SLOTS limits them to slot 2, ARGS and ENV reach the
    program, CWD is its working directory, STARTD_CRON_CONFIG_VAL is in its environment."""
    work = tmp_path / "work"
    work.mkdir()
    script = _script(
        tmp_path,
        "echoer",
        'echo "Args = \\"$1 $2\\""\necho "Colour = \\"$COLOUR\\""\n'
        'echo "Where = \\"$(pwd)\\""\necho "ConfigVal = \\"$STARTD_CRON_CONFIG_VAL\\""\n'
        'echo "PrefixVal = \\"$test_CONFIG_VAL\\""\n',
    )
    startd = startd_factory(
        "NUM_SLOTS = 2\nSTARTD_CRON_JOBLIST = echoer\n"
        f"STARTD_CRON_ECHOER_EXECUTABLE = {script}\nSTARTD_CRON_ECHOER_MODE = OneShot\n"
        "STARTD_CRON_ECHOER_ARGS = abc 123\nSTARTD_CRON_ECHOER_ENV = COLOUR=blue\n"
        f"STARTD_CRON_ECHOER_CWD = {work}\nSTARTD_CRON_ECHOER_PREFIX = test_\n"
        "STARTD_CRON_ECHOER_SLOTS = 2\nSTARTD_CRON_CONFIG_VAL = /opt/bin/ccv\n"
    )
    _wait_values(startd, "test_Args", {"slot2": "abc 123"})
    ad = next(a for a in startd.client.query() if str(a.evaluate("Name")).startswith("slot2@"))
    assert ad.evaluate("test_Colour") == "blue"
    assert ad.evaluate("test_Where") == str(work)
    assert ad.evaluate("test_ConfigVal") == "/opt/bin/ccv"
    assert ad.evaluate("test_PrefixVal") == "/opt/bin/ccv"
    assert "Args" not in ad


def test_periodic_runs_every_period(startd_factory, tmp_path) -> None:
    """A Periodic job with PERIOD 1s runs again and again; each run replaces its attribute."""
    counter = tmp_path / "count"
    script = _script(tmp_path, "tick", f'echo x >> {counter}\necho "Runs = $(wc -l < {counter})"\n')
    startd = startd_factory(
        f"STARTD_CRON_JOBLIST = tick\nSTARTD_CRON_TICK_EXECUTABLE = {script}\n"
        "STARTD_CRON_TICK_MODE = Periodic\nSTARTD_CRON_TICK_PERIOD = 1s\n"
    )
    startd.wait_for(lambda: (_values(startd, "Runs").get("slot1") or 0) >= 3, 30, "three runs")


def test_wait_for_exit_publishes_while_running_and_restarts(startd_factory, tmp_path) -> None:
    """A WaitForExit job's ads are taken at each '-' line while it runs, and the job is
    started again PERIOD after it exits."""
    counter = tmp_path / "starts"
    script = _script(
        tmp_path,
        "stream",
        f"echo x >> {counter}\nn=$(wc -l < {counter})\n"
        'echo "Started = $n"\necho "Phase = 1"\necho "-"\nsleep 2\necho "Phase = 2"\n'
        'echo "-"\n',
    )
    startd = startd_factory(
        f"STARTD_CRON_JOBLIST = stream\nSTARTD_CRON_STREAM_EXECUTABLE = {script}\n"
        "STARTD_CRON_STREAM_MODE = WaitForExit\nSTARTD_CRON_STREAM_PERIOD = 1\n"
    )
    _wait_values(startd, "Phase", {"slot1": 1})
    # The first run is still sleeping: its first ad is already in the slot ad.
    assert _values(startd, "Started") == {"slot1": 1}
    startd.wait_for(lambda: (_values(startd, "Started").get("slot1") or 0) >= 2, 30, "a restart")


def test_oneshot_reruns_on_reconfig_and_ondemand_never_runs_alone(startd_factory, tmp_path):
    """A OneShot job runs once; with RECONFIG_RERUN it runs again on reconfig. An OnDemand job
    is not run without being asked."""
    counter = tmp_path / "shots"
    once = _script(tmp_path, "once", f'echo x >> {counter}\necho "Shots = $(wc -l < {counter})"\n')
    marker = tmp_path / "demand-ran"
    demand = _script(tmp_path, "demand", f"touch {marker}\necho 'Demanded = true'\n")
    startd = startd_factory(
        "STARTD_CRON_JOBLIST = once demand\n"
        f"STARTD_CRON_ONCE_EXECUTABLE = {once}\nSTARTD_CRON_ONCE_MODE = OneShot\n"
        "STARTD_CRON_ONCE_RECONFIG_RERUN = true\n"
        f"STARTD_CRON_DEMAND_EXECUTABLE = {demand}\nSTARTD_CRON_DEMAND_MODE = OnDemand\n"
    )
    _wait_values(startd, "Shots", {"slot1": 1})
    time.sleep(2)
    assert _values(startd, "Shots") == {"slot1": 1}
    startd.client.reconfig()
    _wait_values(startd, "Shots", {"slot1": 2})
    assert not marker.exists()
    assert _values(startd, "Demanded") == {}


def test_reconfig_sends_sighup_to_wait_for_exit_job(startd_factory, tmp_path) -> None:
    """RECONFIG true: a running WaitForExit job gets SIGHUP on reconfig (it reports it)."""
    script = _script(
        tmp_path,
        "hup",
        "trap 'echo \"Hupped = true\"; echo -' HUP\necho 'Hupped = false'\necho -\n"
        "while true; do sleep 0.2; done\n",
    )
    startd = startd_factory(
        f"STARTD_CRON_JOBLIST = hup\nSTARTD_CRON_HUP_EXECUTABLE = {script}\n"
        "STARTD_CRON_HUP_MODE = WaitForExit\nSTARTD_CRON_HUP_RECONFIG = true\n"
    )
    _wait_values(startd, "Hupped", {"slot1": False})
    startd.client.reconfig()
    _wait_values(startd, "Hupped", {"slot1": True})


@pytest.mark.parametrize(
    "hang", ["exec sleep 1000\n", "trap '' TERM\nwhile true; do sleep 1; done\n"]
)
def test_hung_job_is_killed_and_never_blocks_the_startd(startd_factory, tmp_path, hang) -> None:
    """A job that hangs with KILL true is killed when next due (SIGKILL when it ignores
    SIGTERM); meanwhile (and after) the startd answers queries at once."""
    starts = tmp_path / "starts"
    script = _script(tmp_path, "hang", f"echo $$ >> {starts}\necho 'Hung = true'\n{hang}")
    startd = startd_factory(
        f"STARTD_CRON_JOBLIST = hang\nSTARTD_CRON_HANG_EXECUTABLE = {script}\n"
        "STARTD_CRON_HANG_MODE = Periodic\nSTARTD_CRON_HANG_PERIOD = 2s\n"
        "STARTD_CRON_HANG_KILL = true\n"
    )
    # The shell makes the file for its ">>" before echo writes the pid into it.
    startd.wait_for(
        lambda: starts.exists() and bool(starts.read_text().strip()), 30, "the job to start"
    )
    first = int(starts.read_text().split()[0])
    for _ in range(10):
        began = time.monotonic()
        assert startd.client.query()
        assert time.monotonic() - began < 2.0
        time.sleep(0.3)
    startd.wait_for(lambda: not Path(f"/proc/{first}").exists(), 30, "the hung job to die")
    startd.wait_for(lambda: len(starts.read_text().split()) >= 2, 30, "the job to run again")
    assert "killing it (KILL is true)" in startd.log()
    assert _values(startd, "Hung") == {}


def test_garbage_output_is_logged_and_changes_nothing(startd_factory, tmp_path) -> None:
    """Output that is not ads changes no attribute; the parse error names the line, and with
    STARTD_CRON_LOG_NON_ZERO_EXIT the failing job's stdout and stderr go to the StartLog."""
    state = tmp_path / "second"
    script = _script(
        tmp_path,
        "flaky",
        f"if [ -e {state} ]; then echo 'this is not = = an ad'; echo 'oops' >&2; exit 3; fi\n"
        f"touch {state}\necho 'Good = 7'\n",
    )
    startd = startd_factory(
        f"STARTD_CRON_JOBLIST = flaky\nSTARTD_CRON_FLAKY_EXECUTABLE = {script}\n"
        "STARTD_CRON_FLAKY_MODE = Periodic\nSTARTD_CRON_FLAKY_PERIOD = 1\n"
        "STARTD_CRON_LOG_NON_ZERO_EXIT = true\n"
    )
    _wait_values(startd, "Good", {"slot1": 7})
    startd.wait_for(lambda: "flaky stderr: oops" in startd.log(), 30, "the logged stderr")
    log = startd.log()
    assert "cron job flaky output, line 1" in log
    assert "flaky stdout: this is not = = an ad" in log
    assert "exited with status 3" in log
    assert _values(startd, "Good") == {"slot1": 7}


def test_non_zero_exit_is_not_dumped_without_the_knob(startd_factory, tmp_path) -> None:
    """Without STARTD_CRON_LOG_NON_ZERO_EXIT a failing job's stderr stays out of the log."""
    script = _script(tmp_path, "fail", "echo 'secret-stderr' >&2\nexit 2\n")
    startd = startd_factory(
        f"STARTD_CRON_JOBLIST = fail\nSTARTD_CRON_FAIL_EXECUTABLE = {script}\n"
        "STARTD_CRON_FAIL_MODE = OneShot\n"
    )
    startd.wait_for(lambda: "exited with status 2" in startd.log(), 30, "the job's end")
    assert "secret-stderr" not in startd.log()


def test_malformed_job_is_logged_naming_the_knob(startd_factory, tmp_path) -> None:
    """A job with a bad MODE is not run and the log names the knob; the other jobs run."""
    good = _script(tmp_path, "good", "echo 'Fine = 1'\n")
    startd = startd_factory(
        "STARTD_CRON_JOBLIST = bad good\nSTARTD_CRON_BAD_EXECUTABLE = /bin/true\n"
        "STARTD_CRON_BAD_MODE = Sometimes\n"
        f"STARTD_CRON_GOOD_EXECUTABLE = {good}\nSTARTD_CRON_GOOD_MODE = OneShot\n"
    )
    _wait_values(startd, "Fine", {"slot1": 1})
    assert "STARTD_CRON_BAD_MODE: 'Sometimes' is not one of" in startd.log()


@pytest.mark.parametrize(("flag", "published"), [("update:true", True), ("update:false", False)])
def test_update_flag_forces_or_holds_the_collector_update(
    startd_factory, tmp_path, flag: str, published: bool
) -> None:
    """``- update:true`` sends the new attributes to the collector (here the startd_ads file)
    at once; ``update:false`` leaves them for the next UPDATE_INTERVAL, though queries see them."""
    script = _script(tmp_path, "upd", f"echo 'Fresh = 5'\necho '- {flag}'\n")
    startd = startd_factory(
        f"UPDATE_INTERVAL = 300\nSTARTD_CRON_JOBLIST = upd\nSTARTD_CRON_UPD_EXECUTABLE = {script}\n"
        "STARTD_CRON_UPD_MODE = OneShot\n"
    )
    _wait_values(startd, "Fresh", {"slot1": 5})
    sink = startd.directory / "spool" / "startd_ads"
    if published:
        startd.wait_for(lambda: "Fresh" in sink.read_text(), 10, "the published ad")
    else:
        time.sleep(2)
        assert sink.exists() and "Fresh" not in sink.read_text()


@pytest.mark.parametrize(("max_load", "overlap"), [("1.0", False), ("2.0", True)])
def test_job_load_limits_what_runs_at_once(startd_factory, tmp_path, max_load, overlap) -> None:
    """Two jobs of JOB_LOAD 0.6 never run together under STARTD_CRON_MAX_JOB_LOAD 1.0, and do
    under 2.0."""
    record = tmp_path / "record"
    config = f"STARTD_CRON_MAX_JOB_LOAD = {max_load}\nSTARTD_CRON_JOBLIST = a b\n"
    for name in ("a", "b"):
        script = _script(
            tmp_path,
            name,
            f"echo start {name} $(date +%s.%N) >> {record}\nsleep 1\n"
            f"echo end {name} $(date +%s.%N) >> {record}\necho 'Done{name} = true'\n",
        )
        config += (
            f"STARTD_CRON_{name.upper()}_EXECUTABLE = {script}\n"
            f"STARTD_CRON_{name.upper()}_MODE = OneShot\n"
            f"STARTD_CRON_{name.upper()}_JOB_LOAD = 0.6\n"
        )
    startd = startd_factory(config)
    _wait_values(startd, "Donea", {"slot1": True})
    _wait_values(startd, "Doneb", {"slot1": True})
    times = {}
    for line in record.read_text().splitlines():
        event, name, stamp = line.split()
        times[(event, name)] = float(stamp)
    first, second = sorted(("a", "b"), key=lambda n: times[("start", n)])
    overlapped = times[("start", second)] < times[("end", first)]
    assert overlapped is overlap


def test_job_removed_by_reconfig_takes_its_attributes_along(startd_factory, tmp_path) -> None:
    """A job taken out of STARTD_CRON_JOBLIST and reconfigured away leaves no attribute."""
    script = _script(tmp_path, "gone", "echo 'Leaving = 1'\n")
    job = (
        f"STARTD_CRON_JOBLIST = gone\nSTARTD_CRON_GONE_EXECUTABLE = {script}\n"
        "STARTD_CRON_GONE_MODE = OneShot\n"
    )
    startd = startd_factory(job)
    _wait_values(startd, "Leaving", {"slot1": 1})
    startd.config_path.write_text(startd.config_path.read_text().replace(job, ""))
    startd.client.reconfig()
    _wait_values(startd, "Leaving", {})
