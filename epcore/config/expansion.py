"""Expanding text against a macro table, as one daemon (subsystem and local name) sees it."""

from __future__ import annotations

import random
from collections.abc import Mapping

import attrs

from epcore.classad import EvalContext
from epcore.config.macro_functions import FunctionScope, evaluate_reference
from epcore.config.macros import (
    MacroRef,
    replace_dollars,
    self_selector,
    skip_dollar,
    substitute,
)
from epcore.config.table import MacroTable
from epcore.errors import ConfigError

#: How deeply macro functions may nest through their arguments.
MAX_FUNCTION_NESTING = 64


@attrs.define
class Expander:
    """Expands references in text for the daemon ``subsystem`` / ``local_name``."""

    table: MacroTable
    subsystem: str | None
    local_name: str | None
    environ: Mapping[str, str]
    rng: random.Random
    eval_context: EvalContext
    _scope: FunctionScope | None = attrs.field(default=None, init=False)
    _depth: int = attrs.field(default=0, init=False)
    #: How many $RANDOM_ functions this expander has evaluated (their values differ per read).
    random_draws: int = attrs.field(default=0, init=False)

    def lookup(self, name: str) -> str | None:
        """The raw value of ``name`` for this daemon (prefixes and defaults included)."""
        return self.table.lookup(name, self.subsystem, self.local_name)

    def scope(self) -> FunctionScope:
        """The view the macro functions get of this expander."""
        if self._scope is None:
            self._scope = FunctionScope(
                lookup=self.lookup,
                expand=self.expand_keeping_dollar,
                expand_all=self.expand,
                environ=self.environ,
                rng=self.rng,
                eval_context=self.eval_context,
            )
        return self._scope

    def _evaluate(self, ref: MacroRef, text: str) -> str:
        # Macro functions expand their arguments, which may call functions again; HTCondor
        # recurses without bound here (A = $INT(A) crashes it), we stop with an error.
        if self._depth >= MAX_FUNCTION_NESTING:
            raise ConfigError(
                f"{ref.prefix}({ref.body_text(text)}) refers to itself through its arguments"
            )
        self._depth += 1
        if ref.function.startswith("RANDOM_"):
            self.random_draws += 1
        try:
            return evaluate_reference(self.scope(), ref, text)
        finally:
            self._depth -= 1

    def expand_keeping_dollar(self, text: str, what: str = "a value") -> str:
        """Expand every reference except ``$(DOLLAR)``."""
        if "$" not in text:
            return text
        return substitute(text, skip_dollar, self._evaluate, what)

    def expand(self, text: str, what: str = "a value") -> str:
        """Expand every reference, then turn ``$(DOLLAR)`` into ``$``."""
        if "$" not in text:
            return text
        return replace_dollars(substitute(text, skip_dollar, self._evaluate, what))

    def expand_self(self, text: str, name: str) -> str:
        """Expand only references to ``name`` itself (its previous value), at definition time.

        A name written with this daemon's local-name or subsystem prefix (``STARTD.START``)
        also replaces references to the bare name (``$(START)``).
        """
        if "$" not in text:
            return text
        lowered = text.lower()
        alias = None
        for prefix in (self.local_name, self.subsystem):
            if (
                prefix
                and name.lower().startswith(prefix.lower() + ".")
                and len(name) > len(prefix) + 1
            ):
                alias = name[len(prefix) + 1 :]
                break
        if name.lower() not in lowered and (alias is None or alias.lower() not in lowered):
            return text
        return substitute(text, self_selector(name, alias), self._evaluate, name)


def located(error: ConfigError, source: str, line: int | None) -> ConfigError:
    """``error`` with a file and line attached (unless it already has them)."""
    if error.source is not None:
        return error
    located_error = ConfigError(error.reason, source, line)
    located_error.__cause__ = error
    return located_error
