"""The submit language's macro table, expanded with the configuration language's machinery.

condor_submit expands ``$(name)``, ``$(name:default)``, ``$ENV(...)``, ``$INT(...)``,
``$RANDOM_INTEGER(...)`` and the other macro functions as the configuration reader does, with
two differences that live here: unknown names expand to nothing (there is no default table,
only a few predefined macros), and ``$$(...)`` is left for match time.
"""

from __future__ import annotations

import random
from collections.abc import Mapping

import attrs

from epcore.classad import EvalContext
from epcore.config.conditions import ConditionError, ConditionScope, evaluate_condition
from epcore.config.expansion import Expander
from epcore.config.table import MacroTable, Origin
from epcore.errors import ConfigError, SubmitError


@attrs.frozen
class Located:
    """An expanded command value and the file and line that defined the command."""

    text: str
    line: int | None
    source: str | None = None


@attrs.define
class SubmitMacros:
    """The definitions made so far by a submit file (and the command line)."""

    table: MacroTable
    source: str
    environ: Mapping[str, str]
    now: int

    @classmethod
    def empty(cls, source: str, environ: Mapping[str, str], now: int) -> SubmitMacros:
        """A table with no definitions and no default table behind it."""
        return cls(MacroTable(defaults={}), source, environ, now)

    def _expander(self) -> Expander:
        # Seeded from the submit time so that building the same submission twice gives the
        # same jobs ($RANDOM_INTEGER included): the core stays a pure function.
        return Expander(
            table=self.table,
            subsystem=None,
            local_name=None,
            environ=self.environ,
            rng=random.Random(self.now),
            eval_context=EvalContext(now=self.now),
        )

    def define(self, name: str, raw: str, line: int | None) -> None:
        """Define ``name``; references to its own previous value are expanded now."""
        try:
            value = self._expander().expand_self(raw, name)
        except ConfigError as error:
            raise SubmitError(f"{name}: {error.reason}", self.source, line) from error
        self.table.set(name, value, Origin(self.source, line))

    def set_live(self, values: Mapping[str, str]) -> None:
        """Set the per-job variables (Process, Item...) without self-expansion."""
        for name, value in values.items():
            self.table.set(name, value, Origin("<live>"))

    def expand(self, text: str, what: str, line: int | None) -> str:
        """``text`` with every macro expanded; SubmitError at ``line`` when it never ends."""
        try:
            return self._expander().expand(text, what)
        except ConfigError as error:
            raise SubmitError(f"{what}: {error.reason}", self.source, line) from error

    def get(self, *names: str) -> Located | None:
        """The expanded, trimmed value of the first of ``names`` that has a non-empty one."""
        for name in names:
            found = self.table.find(name, None, None)
            if found is None:
                continue
            text = self.expand(found.raw, name, found.origin.line).strip()
            if text:
                return Located(text, found.origin.line, found.origin.source)
        return None

    def is_defined(self, name: str) -> bool:
        """True when ``name`` has a definition (possibly empty)."""
        return self.table.find(name, None, None) is not None

    def condition(self, text: str, line: int) -> bool:
        """The truth of an ``if``/``elif`` condition at ``line``."""
        expander = self._expander()
        scope = ConditionScope(
            expand=expander.expand,
            lookup=expander.lookup,
            has_template=lambda category, name: False,
        )
        try:
            return evaluate_condition(text, scope)
        except (ConditionError, ConfigError) as error:
            raise SubmitError(f"condition {text!r}: {error}", self.source, line) from error

    def copy(self) -> SubmitMacros:
        """An independent copy, for one job's live variables."""
        return SubmitMacros(self.table.copy(), self.source, self.environ, self.now)
