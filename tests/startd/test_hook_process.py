"""A hook process watched by a selector, as the startd's loop watches its fetch-work hooks:
stdin larger than a pipe, stderr to the log, the time limit, output that never ends, and
processes a hook leaves behind."""

from __future__ import annotations

import contextlib
import logging
import os
import selectors
import signal
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from epcore.startd.hook_process import MAX_OUTPUT, PIPE_GRACE, LoopHook
from epcore.starter.hook_runner import HookError, HookResult


class ListHandler(logging.Handler):
    def __init__(self) -> None:
        super().__init__()
        self.lines: list[str] = []

    def emit(self, record: logging.LogRecord) -> None:
        self.lines.append(record.getMessage())


@pytest.fixture
def log() -> Iterator[tuple[logging.Logger, ListHandler]]:
    logger = logging.getLogger("test.hook_process")
    handler = ListHandler()
    logger.addHandler(handler)
    logger.setLevel(logging.INFO)
    yield logger, handler
    logger.removeHandler(handler)


def run(
    command: str,
    stdin: str,
    log: logging.Logger,
    *,
    timeout: float = 30.0,
    capture: bool = True,
) -> tuple[HookResult, LoopHook, selectors.BaseSelector]:
    """Run ``sh -c command`` to its end the way the loop does: select, hand over, check."""
    selector = selectors.DefaultSelector()
    owner = object()
    hook = LoopHook.spawn(
        "/bin/sh",
        ("-c", command),
        stdin,
        name="test",
        selector=selector,
        owner=owner,
        log=log,
        timeout=timeout,
        capture_stdout=capture,
    )
    deadline = time.monotonic() + 60
    while (result := hook.check()) is None:
        assert time.monotonic() < deadline, "the hook never ended"
        for key, _ in selector.select(0.05):
            assert key.data is owner
            hook.on_ready(key.fileobj)  # type: ignore[arg-type]
    return result, hook, selector


def test_large_stdin_and_stdout_round_trip(log) -> None:
    """Input much larger than a pipe's buffer is written as the hook reads it, and all of
    its output is collected; the exit status is kept and no pipe stays registered."""
    logger, _ = log
    text = "".join(f"line {n}\n" for n in range(60_000))  # about 600 KB
    result, hook, selector = run("cat; exit 3", text, logger)
    assert result.stdout == text
    assert result.exit_code == 3 and result.signal is None and not result.timed_out
    assert hook.files == () and not selector.get_map()


def test_stderr_lines_go_to_the_log(log) -> None:
    """Every stderr line is logged with the hook's name; stdout is not."""
    logger, handler = log
    result, _, _ = run("echo one >&2; echo out; printf 'two\\nthree' >&2", "", logger)
    assert result.stdout == "out\n"
    stderr_lines = [line for line in handler.lines if "hook stderr" in line]
    assert stderr_lines == [
        "test hook stderr: one",
        "test hook stderr: two",
        "test hook stderr: three",
    ]


def test_time_limit_kills_the_hook(log) -> None:
    """A hook past its time limit is killed with its process group and says so."""
    logger, handler = log
    started = time.monotonic()
    result, _, _ = run("sleep 100 & sleep 100", "", logger, timeout=0.5)
    assert result.timed_out and result.signal == 9
    assert time.monotonic() - started < 5
    assert any("ran past its time limit and was killed" in line for line in handler.lines)


def test_endless_output_is_cut_off(log) -> None:
    """A hook printing more than MAX_OUTPUT bytes is killed; what it printed is cut there."""
    logger, handler = log
    result, hook, _ = run("yes", "", logger)
    assert hook.overflowed and result.signal == 9
    assert len(result.stdout) <= MAX_OUTPUT
    assert any("printed more than" in line for line in handler.lines)


def test_children_left_behind(log, tmp_path: Path) -> None:
    """What a hook leaves in its process group dies with it; a process that left the group
    but holds the pipe open delays the result by PIPE_GRACE seconds, no more."""
    logger, _ = log
    started = time.monotonic()
    result, _, _ = run("sleep 100 & echo done", "", logger)
    assert result.stdout == "done\n" and time.monotonic() - started < PIPE_GRACE
    pid_file = tmp_path / "escaped.pid"
    escape = (
        f"setsid sh -c 'echo $$ > {pid_file}; exec sleep 100' & "
        f"while [ ! -s {pid_file} ]; do sleep 0.01; done; echo done"
    )
    started = time.monotonic()
    try:
        result, _, selector = run(escape, "", logger)
        waited = time.monotonic() - started
    finally:
        with contextlib.suppress(ProcessLookupError, ValueError, OSError):
            os.kill(int(pid_file.read_text()), signal.SIGKILL)
    assert result.stdout == "done\n" and result.exit_code == 0
    assert PIPE_GRACE <= waited < PIPE_GRACE + 3
    assert not selector.get_map()


def test_advisory_hook_without_stdout(log) -> None:
    """An advisory hook's stdout is discarded; it still gets its stdin and exit status."""
    logger, _ = log
    result, _, _ = run('read word; test "$word" = accept', "accept\n", logger, capture=False)
    assert result.exit_code == 0 and result.stdout == ""


def test_missing_executable_is_a_hook_error(log) -> None:
    """A hook that cannot be started is a HookError naming it."""
    logger, _ = log
    with pytest.raises(HookError, match="/no/such/hook"):
        LoopHook.spawn(
            "/no/such/hook",
            (),
            "",
            name="missing",
            selector=selectors.DefaultSelector(),
            owner=None,
            log=logger,
            timeout=1.0,
        )
