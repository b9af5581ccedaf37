"""The table of knob definitions a configuration builds, and how names are looked up in it.

Names are case-insensitive and keep the spelling of their latest definition. A lookup for a
daemon tries, in order: ``<local name>.NAME`` in the files, then in the default table;
``<SUBSYSTEM>.NAME`` in the files, then in the defaults; ``NAME`` in the files; ``NAME`` in the
defaults. A knob set to nothing in a file is found (as ""), so it hides its default.
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping, Sequence

import attrs

from epcore.config.defaults import KNOB_DEFAULTS, KnobDefault


@attrs.frozen
class Origin:
    """Where a definition came from: a file (or ``<Detected>``, ``<Environment>``...) and line.

    ``template`` names the ``use CATEGORY:NAME`` whose body made the definition, if any; the
    file and line are then those of the ``use`` line.
    """

    source: str
    line: int | None = None
    template: str | None = None

    def describe(self) -> str:
        """A human-readable location, e.g. ``/etc/condor/condor_config, line 12``."""
        where = self.source if self.line is None else f"{self.source}, line {self.line}"
        return f"{where} (use {self.template})" if self.template else where


@attrs.frozen
class Definition:
    """One knob as a file left it: its name as spelled, its raw value, and where it was set."""

    name: str
    raw: str
    origin: Origin


DEFAULT_ORIGIN = Origin("<Default>")


def _default_index(defaults: tuple[KnobDefault, ...]) -> dict[str, KnobDefault]:
    return {knob.name.lower(): knob for knob in defaults}


_DEFAULTS_BY_NAME = _default_index(KNOB_DEFAULTS)


@attrs.define
class MacroTable:
    """The definitions read so far, keyed by lower-cased name, plus the default table."""

    entries: dict[str, Definition] = attrs.field(factory=dict)
    defaults: Mapping[str, KnobDefault] = attrs.field(factory=lambda: _DEFAULTS_BY_NAME)
    #: Counts the changes made with :meth:`set`, so that readers can cache expansions.
    version: int = 0

    @classmethod
    def with_extra_defaults(cls, extra: Sequence[KnobDefault]) -> MacroTable:
        """An empty table whose defaults are HTCondor's plus ``extra`` (plugins' knobs)."""
        if not extra:
            return cls()
        return cls(defaults={**_DEFAULTS_BY_NAME, **_default_index(tuple(extra))})

    def set(self, name: str, raw: str, origin: Origin) -> None:
        """Define (or redefine) ``name``."""
        self.entries[name.lower()] = Definition(name, raw, origin)
        self.version += 1

    def exact(self, name: str) -> Definition | None:
        """The file definition of exactly ``name`` (no prefixes, no defaults)."""
        return self.entries.get(name.lower())

    def default(self, name: str) -> KnobDefault | None:
        """The default-table entry of exactly ``name``."""
        return self.defaults.get(name.lower())

    def lookup(self, name: str, subsystem: str | None, local_name: str | None) -> str | None:
        """The raw value a daemon of ``subsystem`` named ``local_name`` sees for ``name``."""
        found = self.find(name, subsystem, local_name)
        return None if found is None else found.raw

    def find(self, name: str, subsystem: str | None, local_name: str | None) -> Definition | None:
        """Like :meth:`lookup`, returning the definition (defaults carry DEFAULT_ORIGIN)."""
        for prefix in (local_name, subsystem):
            if not prefix:
                continue
            key = f"{prefix}.{name}".lower()
            entry = self.entries.get(key)
            if entry is not None:
                return entry
            knob = self.defaults.get(key)
            if knob is not None:
                return Definition(knob.name, knob.default or "", DEFAULT_ORIGIN)
        key = name.lower()
        entry = self.entries.get(key)
        if entry is not None:
            return entry
        knob = self.defaults.get(key)
        if knob is not None and knob.default is not None:
            return Definition(knob.name, knob.default, DEFAULT_ORIGIN)
        return None

    def __iter__(self) -> Iterator[Definition]:
        return iter(self.entries.values())

    def copy(self) -> MacroTable:
        """An independent copy (definitions are immutable, so a shallow copy suffices)."""
        return MacroTable(entries=dict(self.entries), defaults=self.defaults)
