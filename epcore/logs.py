"""The daemons' own logs (StartLog, SchedLog, NegotiatorLog, StarterLog.slotN): rotation and
a bound on repeated lines.

Rotation follows HTCondor's knobs for subsystem ``SUBSYS``:

- ``MAX_<SUBSYS>_LOG`` (default ``$(MAX_DEFAULT_LOG)``, ``10 Mb``): the size at which the log
  is rotated: a whole number with an optional unit, B, K(b), M(b), G(b), T(b) in powers of
  1024; a time unit (s, m or min, h, d, w) rotates by age instead; 0 never rotates.
  ``MAX_DEFAULT_LOG`` itself must be a size, as in HTCondor.
- ``MAX_NUM_<SUBSYS>_LOG`` (default 1): how many rotated files are kept. With 1 (or 0) the log
  becomes ``<log>.old``; with more, ``<log>.YYYYMMDDTHHMMSS`` (local time), and the oldest
  beyond that number are deleted.
- ``TRUNC_<SUBSYS>_LOG_ON_OPEN`` (default false): start the log empty when it is opened.

Every log file is mode 0600 (it names other users' jobs) and opened without following a
symbolic link. :class:`RepeatLimiter` is installed on every daemon's log: one message repeated
over and over (an error path hit in a loop) is written a few times per minute, then counted,
and the count is written once the minute is over.
"""

from __future__ import annotations

import contextlib
import logging
import os
import re
import time
from collections import OrderedDict
from collections.abc import Callable
from typing import TextIO

import attrs

from epcore.config import Config
from epcore.errors import ConfigError

#: Format of every daemon's log lines: HTCondor's ``MM/DD/YY HH:MM:SS message``.
LOG_FORMAT = "%(asctime)s %(message)s"
LOG_DATE_FORMAT = "%m/%d/%y %H:%M:%S"
#: The mode of every log file.
LOG_FILE_MODE = 0o600

_SIZE_UNITS = {"B": 1, "K": 1024, "M": 1024**2, "G": 1024**3, "T": 1024**4}
_TIME_UNITS = {"S": 1, "H": 3600, "D": 86400, "W": 7 * 86400}
_LOG_SIZE = re.compile(r"\s*(\d+)\s*([A-Za-z]*)\s*")
_TIMESTAMP_SUFFIX = re.compile(r"\d{8}T\d{6}")


def parse_log_size(
    text: str, knob: str, source: str | None = None, line: int | None = None
) -> tuple[int, bool]:
    """``MAX_<SUBSYS>_LOG``'s value: (bytes or seconds, whether it is a time). ConfigError
    naming ``knob`` (and ``source`` and ``line``, where it was set) for anything but a whole
    number with an optional known unit."""
    found = _LOG_SIZE.fullmatch(text)
    if found is None:
        raise ConfigError(
            f"{knob} = {text}: must be a whole number >= 0, optionally followed by a unit "
            "(B, Kb, Mb, Gb, Tb; or s, min, h, d, w to rotate by age)",
            source,
            line,
        )
    value, unit = int(found.group(1)), found.group(2)
    if not unit:
        return value, False
    upper = unit.upper()
    # The first letter names the unit, as HTCondor reads it (bytes, kilobytes, hours, days...);
    # M is megabytes (M, Mb, MiB) unless it reads as minutes (a lone "m", "min", "minutes").
    if upper[0] == "M":
        minutes = unit == "m" or (upper[1:2] == "I" and upper[2:3] != "B")
        if minutes:
            return value * 60, True
        if upper[1:2] in ("", "B", "I"):
            return value * _SIZE_UNITS["M"], False
    elif upper[0] in _SIZE_UNITS:
        return value * _SIZE_UNITS[upper[0]], False
    elif upper[0] in _TIME_UNITS:
        return value * _TIME_UNITS[upper[0]], True
    raise ConfigError(f"{knob} = {text}: unknown unit {unit!r}", source, line)


@attrs.frozen
class LogSettings:
    """Where one daemon's log goes and when it rotates (see the module docstring)."""

    path: str
    max_bytes: int = 10 * 1024**2
    max_seconds: int = 0
    max_num: int = 1
    truncate_on_open: bool = False

    @classmethod
    def from_config(cls, config: Config, subsystem: str, path: str) -> LogSettings:
        """The settings of ``subsystem``'s (STARTD, SCHEDD, STARTER...) log at ``path``;
        ConfigError naming the knob when a size is not one."""

        def size(knob: str) -> tuple[int, bool] | None:
            text = config.get(knob)
            if text is None:
                return None
            origin = config.origin(knob)
            where = (origin.source, origin.line) if origin is not None else (None, None)
            value, is_time = parse_log_size(text, knob, *where)
            if is_time and knob == "MAX_DEFAULT_LOG":
                raise ConfigError(f"{knob} = {text}: must be a size, not a time", *where)
            return value, is_time

        max_bytes, max_seconds = 10 * 1024**2, 0
        default = size("MAX_DEFAULT_LOG")
        if default is not None:
            max_bytes = default[0]
        own = size(f"MAX_{subsystem}_LOG")
        if own is not None:
            max_bytes, max_seconds = (0, own[0]) if own[1] else (own[0], 0)
        return cls(
            path=path,
            max_bytes=max_bytes,
            max_seconds=max_seconds,
            max_num=config.get_int(f"MAX_NUM_{subsystem}_LOG", 1, minimum=0),
            truncate_on_open=config.get_bool(f"TRUNC_{subsystem}_LOG_ON_OPEN", False),
        )


def _open_log(path: str, truncate: bool) -> TextIO:
    flags = os.O_WRONLY | os.O_APPEND | os.O_CREAT | os.O_NOFOLLOW | os.O_CLOEXEC
    if truncate:
        flags |= os.O_TRUNC
    descriptor = os.open(path, flags, LOG_FILE_MODE)
    try:
        if os.fstat(descriptor).st_mode & 0o777 != LOG_FILE_MODE:
            os.fchmod(descriptor, LOG_FILE_MODE)
        return open(descriptor, "a", encoding="utf-8", errors="backslashreplace")
    except BaseException:
        os.close(descriptor)
        raise


def rotated_name(path: str, max_num: int, now: float) -> str:
    """The name the log at ``path`` is rotated to: ``.old`` when one is kept, else the local
    time of the rotation."""
    if max_num <= 1:
        return f"{path}.old"
    return f"{path}.{time.strftime('%Y%m%dT%H%M%S', time.localtime(now))}"


def rotated_files(path: str) -> list[str]:
    """The timestamped rotations of the log at ``path``, oldest first."""
    directory, base = os.path.split(path)
    try:
        names = os.listdir(directory or ".")
    except OSError:
        return []
    prefix = f"{base}."
    found = [
        name
        for name in names
        if name.startswith(prefix) and _TIMESTAMP_SUFFIX.fullmatch(name[len(prefix) :])
    ]
    return [os.path.join(directory, name) for name in sorted(found)]


class DaemonLogHandler(logging.Handler):
    """Writes a daemon's log and rotates it as :class:`LogSettings` say.

    A log renamed or removed behind its back (another process rotated it, an admin moved it)
    is opened again at the next record.
    """

    def __init__(self, settings: LogSettings, clock: Callable[[], float] = time.time) -> None:
        super().__init__()
        self.settings = settings
        self.clock = clock
        self.stream: TextIO | None = _open_log(settings.path, settings.truncate_on_open)
        self.opened_at = self._file_start()

    def _file_start(self) -> float:
        """When the current file began (its age decides a rotation by time)."""
        assert self.stream is not None
        if os.fstat(self.stream.fileno()).st_size == 0:
            return self.clock()
        return min(self.clock(), os.fstat(self.stream.fileno()).st_mtime)

    def emit(self, record: logging.LogRecord) -> None:
        try:
            text = self.format(record)
            self.acquire()
            try:
                self._reopen_if_moved()
                if self._rotation_due(self.clock()):
                    self.rotate()
                assert self.stream is not None
                self.stream.write(f"{text}\n")
                self.stream.flush()
                if self.settings.max_bytes and self.stream.tell() >= self.settings.max_bytes:
                    self.rotate()
            finally:
                self.release()
        except Exception:
            self.handleError(record)

    def _reopen_if_moved(self) -> None:
        assert self.stream is not None
        try:
            current = os.stat(self.settings.path, follow_symlinks=False)
        except FileNotFoundError:
            current = None
        mine = os.fstat(self.stream.fileno())
        if current is None or (current.st_ino, current.st_dev) != (mine.st_ino, mine.st_dev):
            self.stream.close()
            self.stream = _open_log(self.settings.path, False)
            self.opened_at = self._file_start()

    def _rotation_due(self, now: float) -> bool:
        period = self.settings.max_seconds
        return bool(period) and int(now) // period != int(self.opened_at) // period

    def rotate(self) -> None:
        """Move the current log aside (``.old`` or timestamped), start a new one, and delete
        the rotated files beyond MAX_NUM."""
        assert self.stream is not None
        now = self.clock()
        settings = self.settings
        target = rotated_name(settings.path, settings.max_num, now)
        self.stream.close()
        # Moved away meanwhile (another process rotated it): a new one starts all the same.
        with contextlib.suppress(FileNotFoundError):
            os.replace(settings.path, target)
        self.stream = _open_log(settings.path, False)
        self.opened_at = now
        keep = settings.max_num if settings.max_num > 1 else 0
        rotated = rotated_files(settings.path)
        for old in rotated[: max(len(rotated) - keep, 0)]:
            try:
                os.unlink(old)
            except FileNotFoundError:
                continue

    def close(self) -> None:
        self.acquire()
        try:
            if self.stream is not None:
                self.stream.close()
                self.stream = None
        finally:
            self.release()
        super().close()


class RepeatLimiter(logging.Filter):
    """Lets the same message (same level, same text) through ``burst`` times per ``window``
    seconds; the rest are counted, and the count is added to the next line written once that
    window is over ("the previous message repeated N times")."""

    def __init__(
        self,
        burst: int = 10,
        window: float = 60.0,
        clock: Callable[[], float] = time.monotonic,
        remembered: int = 1024,
    ) -> None:
        super().__init__()
        self.burst = burst
        self.window = window
        self.clock = clock
        self.remembered = remembered
        #: For each recent message: when its window began, lines let through, lines dropped.
        self.seen: OrderedDict[tuple[int, str], list[float]] = OrderedDict()
        self.next_sweep = 0.0

    def filter(self, record: logging.LogRecord) -> bool:
        now = self.clock()
        key = (record.levelno, record.getMessage())
        summaries = self._expired(now, key)
        entry = self.seen.get(key)
        if entry is None:
            # logging runs filters outside the handler's lock, and a startd's Python cron
            # threads log too: each step here is one dict operation, atomic under the GIL,
            # and tolerates another thread's step in between (no lock a forked starter could
            # inherit held).
            if len(self.seen) >= self.remembered:
                with contextlib.suppress(KeyError):
                    self.seen.popitem(last=False)  # the oldest
            self.seen[key] = [now, 1.0, 0.0]
        elif entry[1] >= self.burst:
            entry[2] += 1
            return False
        else:
            entry[1] += 1
        if summaries:
            record.msg = "\n".join([*summaries, key[1]])
            record.args = None
        return True

    def _expired(self, now: float, current: tuple[int, str]) -> list[str]:
        """Summaries of the messages whose window is over (forgotten then); ``current``'s
        window starts again."""
        summaries: list[str] = []
        if current in self.seen and now - self.seen[current][0] >= self.window:
            # Its count is written now, and a new window begins with this line.
            self.next_sweep = now
        if now < self.next_sweep:
            return summaries
        # At most once a second: a flood must not pay for a look at every message.
        self.next_sweep = now + 1.0
        for key, (began, _passed, dropped) in list(self.seen.items()):
            if now - began < self.window:
                continue
            if self.seen.pop(key, None) is not None and dropped:
                summaries.append(
                    f"the message {key[1][:200]!r} was repeated {int(dropped)} more times "
                    f"in {now - began:.0f} s"
                )
        return summaries


def file_logger(name: str, settings: LogSettings, line_format: str = LOG_FORMAT) -> logging.Logger:
    """The logger ``name`` writing only to the log of ``settings`` (its handlers from before
    closed), lines in ``line_format``, repeated messages limited."""
    log = logging.getLogger(name)
    log.setLevel(logging.INFO)
    log.propagate = False
    for handler in list(log.handlers):
        log.removeHandler(handler)
        handler.close()
    handler = DaemonLogHandler(settings)
    handler.setFormatter(logging.Formatter(line_format, LOG_DATE_FORMAT))
    # On the handler: records of child loggers (epcore.startd.cron...) pass through it too.
    handler.addFilter(RepeatLimiter())
    log.addHandler(handler)
    return log
