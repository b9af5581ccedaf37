"""The daemons' logs: HTCondor's rotation knobs, private files, and the bound on repeats."""

from __future__ import annotations

import logging
import os
import sys
import threading
import time
from pathlib import Path

import pytest

from epcore.config import Config
from epcore.errors import ConfigError
from epcore.logs import (
    DaemonLogHandler,
    LogSettings,
    RepeatLimiter,
    file_logger,
    parse_log_size,
    rotated_files,
)


class FakeClock:
    """A clock the test moves."""

    def __init__(self, now: float = 1_700_000_000.0) -> None:
        self.now = now

    def __call__(self) -> float:
        return self.now


def _record(message: str, level: int = logging.ERROR) -> logging.LogRecord:
    return logging.LogRecord("t", level, __file__, 1, message, None, None)


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("10 Mb", (10 * 1024**2, False)),
        ("1000", (1000, False)),
        ("0", (0, False)),
        ("5 K", (5 * 1024, False)),
        ("5Kb", (5 * 1024, False)),
        ("2 Gb", (2 * 1024**3, False)),
        ("1 Tb", (1024**4, False)),
        ("64 B", (64, False)),
        ("3 M", (3 * 1024**2, False)),
        ("3 MB", (3 * 1024**2, False)),
        ("3 m", (180, True)),
        ("3 min", (180, True)),
        ("30 s", (30, True)),
        ("1 h", (3600, True)),
        ("2 d", (2 * 86400, True)),
        ("1 w", (7 * 86400, True)),
        ("  7  Mb  ", (7 * 1024**2, False)),
        ("4 MiB", (4 * 1024**2, False)),
        ("4 KiB", (4 * 1024, False)),
        ("2 minutes", (120, True)),
        ("2 hours", (7200, True)),
        ("100 bytes", (100, False)),
    ],
)
def test_log_sizes_read_as_htcondor_reads_them(text: str, expected: tuple[int, bool]) -> None:
    """A log size is a whole number with an optional unit in powers of 1024, or a time."""
    assert parse_log_size(text, "MAX_SCHEDD_LOG") == expected


@pytest.mark.parametrize(
    "text", ["", "   ", "abc", "-5", "1.5 Mb", "10 Zb", "Mb", "5 Mb extra", "3 Megabytes"]
)
def test_a_malformed_log_size_names_the_knob(text: str) -> None:
    """A log size that is not a whole number with a known unit is a ConfigError naming the
    knob and the value."""
    with pytest.raises(ConfigError, match="MAX_SCHEDD_LOG"):
        parse_log_size(text, "MAX_SCHEDD_LOG")


def test_settings_come_from_the_subsystem_knobs_then_the_default() -> None:
    """MAX_<SUBSYS>_LOG overrides MAX_DEFAULT_LOG; MAX_NUM and TRUNC come from their knobs."""
    config = Config.from_text(
        "MAX_DEFAULT_LOG = 1 Mb\nMAX_SCHEDD_LOG = 2 Kb\nMAX_NUM_SCHEDD_LOG = 4\n"
        "TRUNC_SCHEDD_LOG_ON_OPEN = true\nMAX_NEGOTIATOR_LOG = 1 h\n"
    )
    assert LogSettings.from_config(config, "SCHEDD", "/l/SchedLog") == LogSettings(
        "/l/SchedLog", 2048, 0, 4, True
    )
    assert LogSettings.from_config(config, "STARTD", "/l/StartLog") == LogSettings(
        "/l/StartLog", 1024**2, 0, 1, False
    )
    assert LogSettings.from_config(config, "NEGOTIATOR", "/l/N").max_seconds == 3600


def test_the_default_size_is_ten_megabytes() -> None:
    """With nothing configured, every daemon's log rotates at 10 Mb (MAX_DEFAULT_LOG)."""
    config = Config.from_text("")
    assert config.get("MAX_DEFAULT_LOG") == "10 Mb"
    assert LogSettings.from_config(config, "STARTD", "/l/StartLog").max_bytes == 10 * 1024**2


def test_the_default_size_must_not_be_a_time(tmp_path: Path) -> None:
    """MAX_DEFAULT_LOG given as a time is refused with the file and line that set it."""
    path = tmp_path / "condor_config"
    path.write_text("\nMAX_DEFAULT_LOG = 1 d\n")
    with pytest.raises(ConfigError, match=r"condor_config, line 2: MAX_DEFAULT_LOG = 1 d"):
        LogSettings.from_config(Config.load(str(path)), "STARTD", "/l/StartLog")


def _handler(tmp_path: Path, clock: FakeClock, **settings: object) -> DaemonLogHandler:
    handler = DaemonLogHandler(LogSettings(str(tmp_path / "SchedLog"), **settings), clock)  # type: ignore[arg-type]
    handler.setFormatter(logging.Formatter("%(message)s"))
    return handler


def test_one_rotated_file_is_named_old(tmp_path: Path) -> None:
    """With MAX_NUM 1 the log past its size becomes SchedLog.old (the previous .old
    replaced), and a new log starts; every file is mode 0600."""
    clock = FakeClock()
    handler = _handler(tmp_path, clock, max_bytes=100, max_num=1)
    for n in range(30):
        handler.emit(_record(f"line {n:04d} " + "x" * 20))
    handler.close()
    names = sorted(p.name for p in tmp_path.iterdir())
    assert names == ["SchedLog", "SchedLog.old"]
    assert (tmp_path / "SchedLog.old").stat().st_size >= 100
    assert (tmp_path / "SchedLog").stat().st_size < 100
    assert (
        "line 0029" in (tmp_path / "SchedLog").read_text() + (tmp_path / "SchedLog.old").read_text()
    )
    assert {p.stat().st_mode & 0o777 for p in tmp_path.iterdir()} == {0o600}


def test_more_rotated_files_are_timestamped_and_the_oldest_deleted(tmp_path: Path) -> None:
    """With MAX_NUM 3 each rotation is named by its local time; only the 3 newest stay."""
    clock = FakeClock()
    handler = _handler(tmp_path, clock, max_bytes=50, max_num=3)
    for n in range(8):
        clock.now += 1
        handler.emit(_record(f"rotation {n} " + "y" * 50))
    handler.close()
    rotated = rotated_files(str(tmp_path / "SchedLog"))
    assert len(rotated) == 3
    assert "rotation 7" in Path(rotated[-1]).read_text()
    assert "rotation 5" in Path(rotated[0]).read_text()
    assert not (tmp_path / "SchedLog.old").exists()


def test_a_time_rotates_the_log_by_age(tmp_path: Path) -> None:
    """MAX_<SUBSYS>_LOG given as a time rotates the log once its period has passed."""
    clock = FakeClock(3600.0 * 1000)
    handler = _handler(tmp_path, clock, max_bytes=0, max_seconds=3600)
    handler.emit(_record("first hour"))
    clock.now += 1800
    handler.emit(_record("same hour"))
    assert not (tmp_path / "SchedLog.old").exists()
    clock.now += 1800
    handler.emit(_record("next hour"))
    handler.close()
    assert (tmp_path / "SchedLog.old").read_text() == "first hour\nsame hour\n"
    assert (tmp_path / "SchedLog").read_text() == "next hour\n"


def test_zero_never_rotates(tmp_path: Path) -> None:
    """MAX_<SUBSYS>_LOG = 0 keeps one growing log."""
    handler = _handler(tmp_path, FakeClock(), max_bytes=0)
    for _ in range(100):
        handler.emit(_record("z" * 100))
    handler.close()
    assert [p.name for p in tmp_path.iterdir()] == ["SchedLog"]


def test_truncate_on_open_starts_empty_and_append_keeps(tmp_path: Path) -> None:
    """TRUNC_<SUBSYS>_LOG_ON_OPEN empties the log when it is opened; otherwise lines are
    appended to what was there, and a log left 0644 becomes 0600."""
    log = tmp_path / "SchedLog"
    log.write_text("before\n")
    log.chmod(0o644)
    handler = _handler(tmp_path, FakeClock())
    handler.emit(_record("after"))
    handler.close()
    assert log.read_text() == "before\nafter\n"
    assert log.stat().st_mode & 0o777 == 0o600
    handler = _handler(tmp_path, FakeClock(), truncate_on_open=True)
    handler.emit(_record("fresh"))
    handler.close()
    assert log.read_text() == "fresh\n"


def test_a_log_moved_away_is_opened_again(tmp_path: Path) -> None:
    """A log renamed behind the handler's back (another process rotated it) is created
    again at the next line."""
    handler = _handler(tmp_path, FakeClock())
    handler.emit(_record("one"))
    os.rename(tmp_path / "SchedLog", tmp_path / "elsewhere")
    handler.emit(_record("two"))
    handler.close()
    assert (tmp_path / "SchedLog").read_text() == "two\n"
    assert (tmp_path / "elsewhere").read_text() == "one\n"


def test_a_log_that_is_a_symbolic_link_is_refused(tmp_path: Path) -> None:
    """A log path that is a symbolic link is not opened (OSError), its target untouched."""
    target = tmp_path / "target"
    target.write_text("keep\n")
    (tmp_path / "SchedLog").symlink_to(target)
    with pytest.raises(OSError):
        _handler(tmp_path, FakeClock())
    assert target.read_text() == "keep\n"


def test_a_repeated_message_is_written_a_few_times_then_counted() -> None:
    """The same message 1000 times in a minute passes 10 times; once the minute is over the
    next line carries how many were left out; other messages pass meanwhile."""
    clock = FakeClock(0.0)
    limiter = RepeatLimiter(burst=10, window=60.0, clock=clock)
    passed = [limiter.filter(_record("Too many open files")) for _ in range(1000)]
    assert passed.count(True) == 10
    assert limiter.filter(_record("another message"))
    clock.now = 61.0
    summary = _record("later")
    assert limiter.filter(summary)
    text = summary.getMessage()
    assert "'Too many open files' was repeated 990 more times" in text
    assert text.endswith("later")
    assert limiter.filter(_record("Too many open files"))


def test_the_limiter_forgets_old_messages_within_its_bound() -> None:
    """The limiter remembers at most its bound of distinct messages."""
    limiter = RepeatLimiter(clock=FakeClock(0.0), remembered=50)
    for n in range(500):
        assert limiter.filter(_record(f"message {n}"))
    assert len(limiter.seen) <= 50


def test_the_limiter_is_safe_from_several_threads() -> None:
    """Threads filtering distinct messages at once (logging runs filters outside the handler's
    lock; a startd's Python cron threads log beside its loop) never make the filter raise,
    and its bound holds but for one message per other thread."""
    limiter = RepeatLimiter(remembered=8)
    errors: list[BaseException] = []

    def flood(thread: int) -> None:
        deadline = time.monotonic() + 0.5
        n = 0
        while time.monotonic() < deadline and not errors:
            try:
                limiter.filter(_record(f"thread {thread} message {n}"))
            except Exception as error:  # the failure the test looks for
                errors.append(error)
            n += 1

    interval = sys.getswitchinterval()
    sys.setswitchinterval(1e-6)  # switch threads as often as possible
    try:
        threads = [threading.Thread(target=flood, args=(n,)) for n in range(4)]
        for thread in threads:
            thread.start()
        for thread in threads:
            thread.join()
    finally:
        sys.setswitchinterval(interval)
    assert errors == []
    # Each of the other threads may have added its message between a check and an insert.
    assert len(limiter.seen) <= 8 + 3


def test_a_daemon_logger_writes_private_rotating_limited_lines(tmp_path: Path) -> None:
    """file_logger's log is 0600 and a flood of one error leaves a few lines."""
    path = tmp_path / "StartLog"
    log = file_logger("epcore.test_logs", LogSettings(str(path), max_bytes=10**6))
    for _ in range(5000):
        log.error("accept failed: Too many open files")
    for handler in log.handlers:
        handler.close()
    lines = path.read_text().splitlines()
    assert 1 <= len(lines) <= 10
    assert path.stat().st_mode & 0o777 == 0o600
