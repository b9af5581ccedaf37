"""Where fetched work comes from: the keywords' hooks and Python sources, and their processes.

:class:`WorkSources` reads what the configuration says (each slot's keyword, each keyword's
``<Keyword>_HOOK_FETCH_WORK``, ``_REPLY_FETCH`` and ``_EVICT_CLAIM``, ``FetchWorkDelay``,
epcore's ``STARTD_JOB_HOOK_TIMEOUT``), checks a hook's executable before running it, starts the
hooks as :class:`~epcore.startd.hook_process.LoopHook` processes in the loop's selector, asks
the Python :class:`~epcore.types.FetchWorkSource` named like a keyword, and turns what either
answered into a :class:`~epcore.state.fetch_work.Fetched`. A configuration problem is logged
once, not at every turn. :mod:`epcore.startd.fetch_work` decides what to do with the work.
"""

from __future__ import annotations

import logging
import os
import selectors
import stat
from collections.abc import Sequence
from typing import IO, Final

from epcore.classad import ClassAd, Expr
from epcore.config import Config
from epcore.startd.hook_process import LoopHook
from epcore.starter.hook_runner import HookError, HookResult
from epcore.state.fetch_work import (
    DEFAULT_FETCH_WORK_DELAY,
    Fetched,
    FetchWorkError,
    HookKnobs,
    advisory_input,
    fetch_work_delay_expr,
    fetched_from_output,
    hook_knobs,
    slot_hook_keyword,
)
from epcore.types import FetchWorkSource

#: The time limit of a startd hook (epcore's STARTD_JOB_HOOK_TIMEOUT), in seconds.
DEFAULT_HOOK_TIMEOUT: Final = 300.0


def executable_problem(path: str) -> str | None:
    """Why the hook at ``path`` must not be run (not absolute, missing, not a regular or
    executable file, or world-writable: anyone could replace it), or None."""
    if not os.path.isabs(path):
        return "not an absolute path"
    try:
        info = os.stat(path)
    except OSError as error:
        return f"cannot use it: {error.strerror}"
    if not stat.S_ISREG(info.st_mode):
        return "not a regular file"
    if info.st_mode & stat.S_IWOTH:
        return "world-writable; refusing to run it"
    if not info.st_mode & (stat.S_IXUSR | stat.S_IXGRP | stat.S_IXOTH):
        return "not executable"
    return None


class WorkSources:
    """The startd's fetch-work hooks and sources (see the module docstring); ``owner`` is the
    loop companion that registered the hooks' pipes (the key data of the loop's selector)."""

    def __init__(
        self, sources: Sequence[FetchWorkSource], log: logging.Logger, owner: object
    ) -> None:
        self.sources = {source.name.lower(): source for source in sources}
        self.log = log
        self.owner = owner
        self.selector: selectors.BaseSelector | None = None
        self.delay: Expr | None = None
        self.timeout = DEFAULT_HOOK_TIMEOUT
        self.advisory: list[LoopHook] = []
        self._files: dict[object, LoopHook] = {}
        self._config: Config | None = None
        self._keywords: dict[int, str | None] = {}
        self._knobs: dict[str, HookKnobs] = {}
        self._reported: set[str] = set()

    # -- configuration ---------------------------------------------------------------------

    def report(self, problem: str) -> None:
        """Log a configuration problem once (it would otherwise repeat at every turn)."""
        if problem not in self._reported:
            self._reported.add(problem)
            self.log.error("fetch work: %s", problem)

    def configure(self, config: Config) -> bool:
        """Read ``config`` when it is not the one read last; whether it was read."""
        if config is self._config:
            return False
        self._config = config
        self._keywords.clear()
        self._knobs.clear()
        self._reported.clear()
        try:
            self.delay = fetch_work_delay_expr(config)
        except FetchWorkError as error:
            self.report(f"{error}; the delay is {DEFAULT_FETCH_WORK_DELAY} seconds")
            self.delay = None
        self.timeout = config.get_float(
            "STARTD_JOB_HOOK_TIMEOUT", DEFAULT_HOOK_TIMEOUT, minimum=0.1
        )
        return True

    def keyword(self, slot_id: int) -> str | None:
        """The keyword of slot number ``slot_id`` when it has something to fetch from."""
        if slot_id not in self._keywords:
            assert self._config is not None
            keyword: str | None = None
            try:
                keyword = slot_hook_keyword(self._config, slot_id)
            except FetchWorkError as error:
                self.report(f"{error}; slot {slot_id} fetches no work")
            if (
                keyword is not None
                and self.source(keyword) is None
                and self.knobs(keyword).fetch_work is None
            ):
                keyword = None  # nothing to fetch from
            self._keywords[slot_id] = keyword
        return self._keywords[slot_id]

    def knobs(self, keyword: str) -> HookKnobs:
        """The hook knobs of ``keyword`` (all None when FETCH_WORK is not set)."""
        if keyword not in self._knobs:
            assert self._config is not None
            try:
                self._knobs[keyword] = hook_knobs(self._config, keyword)
            except FetchWorkError as error:
                self.report(str(error))
                self._knobs[keyword] = HookKnobs(keyword, None, None, None)
        return self._knobs[keyword]

    def source(self, keyword: str) -> FetchWorkSource | None:
        """The Python source named ``keyword`` (any case), which replaces its hooks."""
        return self.sources.get(keyword.lower())

    def executable(self, keyword: str, hook: str) -> str | None:
        """The path of ``<keyword>_HOOK_<hook>`` when set and usable; a bad one is reported
        (once) and None."""
        knobs = self.knobs(keyword)
        path = {
            "FETCH_WORK": knobs.fetch_work,
            "REPLY_FETCH": knobs.reply_fetch,
            "EVICT_CLAIM": knobs.evict_claim,
        }[hook]
        if path is None:
            return None
        problem = executable_problem(path)
        if problem is not None:
            self.report(f"{knobs.knob(hook)} = {path}: {problem}")
            return None
        return path

    # -- fetching ----------------------------------------------------------------------------

    def start_fetch(self, keyword: str, slot: str, slot_ad_text: str) -> LoopHook | None:
        """Start ``<keyword>_HOOK_FETCH_WORK`` for ``slot``; None when it cannot run (logged)."""
        path = self.executable(keyword, "FETCH_WORK")
        if path is None:
            return None
        return self._spawn(path, (), slot_ad_text, f"{slot} {keyword}_HOOK_FETCH_WORK", True)

    def fetch_from(self, source: FetchWorkSource, slot_ad: ClassAd) -> Fetched:
        """Ask the Python ``source`` for a job for ``slot_ad``; a failure is a Fetched problem."""
        try:
            job = source.fetch(slot_ad.copy())
        except Exception as error:  # a plugin's failure must not stop the startd
            return Fetched(problem=f"source {source.name} raised {type(error).__name__}: {error}")
        if job is None:
            return Fetched()
        if not isinstance(job, ClassAd):
            return Fetched(problem=f"source {source.name} returned {job!r}, not a ClassAd")
        if len(job) == 0:
            return Fetched(problem=f"source {source.name} returned an empty ClassAd")
        return Fetched(job.copy())

    def fetched(self, hook: LoopHook, result: HookResult) -> Fetched:
        """What a finished FETCH_WORK hook brought; forgets its pipes."""
        self.forget(hook)
        if result.timed_out or result.signal is not None:
            if hook.overflowed:
                return Fetched(problem="the hook printed more than a job ad can be")
            return Fetched(problem=f"the hook {result.describe()}")
        # The exit status is ignored (seed 000): only the output counts.
        return fetched_from_output(result.stdout)

    # -- the advisory hooks -------------------------------------------------------------------

    def reply(self, keyword: str, accepted: bool, job: ClassAd, slot_ad: ClassAd) -> None:
        """Tell REPLY_FETCH (argument ``accept`` or ``reject``) or the source's ``reply``."""
        source = self.source(keyword)
        slot = str(slot_ad.evaluate("Name")) if "Name" in slot_ad else "?"
        if source is not None:
            try:
                source.reply(accepted, job.copy(), slot_ad.copy())
            except Exception as error:  # advisory: a plugin's failure is only logged
                self.log.warning("%s: source %s reply raised %r", slot, source.name, error)
            return
        path = self.executable(keyword, "REPLY_FETCH")
        if path is not None:
            argument = "accept" if accepted else "reject"
            name = f"{slot} {keyword}_HOOK_REPLY_FETCH"
            self._spawn(path, (argument,), advisory_input(job, slot_ad), name, False)

    def evict(self, keyword: str, job: ClassAd, slot_ad: ClassAd) -> None:
        """Tell EVICT_CLAIM (no argument) or the source's ``evict_claim``."""
        source = self.source(keyword)
        slot = str(slot_ad.evaluate("Name")) if "Name" in slot_ad else "?"
        if source is not None:
            try:
                source.evict_claim(job.copy(), slot_ad.copy())
            except Exception as error:  # advisory: a plugin's failure is only logged
                self.log.warning("%s: source %s evict_claim raised %r", slot, source.name, error)
            return
        path = self.executable(keyword, "EVICT_CLAIM")
        if path is not None:
            name = f"{slot} {keyword}_HOOK_EVICT_CLAIM"
            self._spawn(path, (), advisory_input(job, slot_ad), name, False)

    # -- the processes -----------------------------------------------------------------------

    def _spawn(
        self, path: str, args: tuple[str, ...], stdin: str, name: str, capture: bool
    ) -> LoopHook | None:
        if self.selector is None:
            return None
        try:
            hook = LoopHook.spawn(
                path,
                args,
                stdin,
                name=name,
                selector=self.selector,
                owner=self.owner,
                log=self.log,
                timeout=self.timeout,
                capture_stdout=capture,
            )
        except HookError as error:
            self.log.error("fetch work: %s", error)
            return None
        for stream in hook.files:
            self._files[stream] = hook
        if not capture:
            self.advisory.append(hook)
        return hook

    @property
    def busy(self) -> bool:
        """Whether any hook's pipe is still watched."""
        return bool(self._files) or bool(self.advisory)

    def ready(self, fileobj: object) -> None:
        """A hook's pipe can be read or written."""
        hook = self._files.get(fileobj)
        if hook is not None:
            stream: IO[bytes] = fileobj  # type: ignore[assignment]
            hook.on_ready(stream)

    def forget(self, hook: LoopHook) -> None:
        """Stop mapping the pipes of a finished ``hook``."""
        for key in [k for k, v in self._files.items() if v is hook]:
            del self._files[key]

    def reap_advisory(self) -> None:
        """Forget the advisory hooks that ended (or were killed for their time limit)."""
        for hook in list(self.advisory):
            if hook.check() is not None:
                self.forget(hook)
                self.advisory.remove(hook)

    def kill_all(self, running: Sequence[LoopHook]) -> None:
        """Kill ``running`` (the fetch hooks) and every advisory hook (the loop ends)."""
        for hook in [*running, *self.advisory]:
            hook.kill()
        self.advisory.clear()
        self._files.clear()
