"""One run of a cron program: its output read from non-blocking pipes, ads taken as they end."""

from __future__ import annotations

import os
import selectors
import sys
import time

from epcore.slots.cron_config import STARTD_CRON, CronJobSpec
from epcore.slots.cron_output import parse_cron_output
from epcore.startd.cron_process import CronProcess

#: A WaitForExit-like program: 5,000 ads of about 100 bytes each (500 KB), then it exits.
_PRINTER = (
    "import sys\n"
    "for n in range(5000):\n"
    '    sys.stdout.write(f\'Value = {n}\\nPadding = "{"x" * 80}"\\n-\\n\')\n'
    "    sys.stdout.flush()\n"
)


def _run_to_the_end(run: CronProcess, selector: selectors.BaseSelector) -> list[str]:
    """Read the program's pipes until it ends, taking the finished ads as they come."""
    taken = []
    deadline = time.monotonic() + 30
    while run.pipes and time.monotonic() < deadline:
        for key, _ in selector.select(timeout=1.0):
            pipe = run.owns(key.fileobj)
            if pipe is not None:
                run.read(pipe, selector)
                if pipe is run.process.stdout:
                    taken.append(run.finished_ads_text())
    assert run.exited() or run.process.wait(10) is not None
    run.reap(selector)
    return taken


def test_ads_taken_as_they_end_leave_the_buffer() -> None:
    """A program that keeps printing ads (a WaitForExit job) is read to its last ad even when
    it prints far more than the buffer holds: taken ads leave the buffer."""
    spec = CronJobSpec(STARTD_CRON, "printer", sys.executable, args=("-c", _PRINTER))
    with selectors.DefaultSelector() as selector:
        # More than a pipe holds (64 KB), far less than the program prints.
        run = CronProcess.start(spec, dict(os.environ), 0.0, selector, None, max_output=100_000)
        texts = _run_to_the_end(run, selector)
    values = [
        ad.attributes[0][1].evaluate()
        for text in texts
        if text
        for ad in parse_cron_output(text).ads
    ]
    assert len(values) >= 1
    assert values[-1] == 4999
    assert run.rest_of_stdout() == ""


def test_output_beyond_the_limit_is_dropped_not_kept() -> None:
    """A program whose unfinished output outgrows the limit has only the limit kept."""
    spec = CronJobSpec(
        STARTD_CRON, "flood", sys.executable, args=("-c", "print('Value = 1' * 10000)")
    )
    with selectors.DefaultSelector() as selector:
        run = CronProcess.start(spec, dict(os.environ), 0.0, selector, None, max_output=1000)
        _run_to_the_end(run, selector)
    assert len(run.rest_of_stdout()) == 1000
