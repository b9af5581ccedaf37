"""``Config``: a configuration read the way HTCondor reads it, and the questions one asks it.

Reading follows HTCondor's order: the detected values; the root file (``CONDOR_CONFIG``, else
``/etc/condor/condor_config``, ``/usr/local/etc/condor_config``, ``~condor/condor_config``);
``HOSTNAME`` and ``FULL_HOSTNAME``; the files of ``LOCAL_CONFIG_DIR`` (sorted, minus those matching
``LOCAL_CONFIG_DIR_EXCLUDE_REGEXP``); the ``LOCAL_CONFIG_FILE`` list (re-read when a file
changes it); ``LOCAL_CONFIG_DIR`` again if a local file changed it; ``_CONDOR_<NAME>``
environment overrides; the special values no file may change (``USERNAME``, ``PID``...); and
the ``AUTO_USE_<CATEGORY>_<TEMPLATE>`` knobs that are true.

``get`` answers as ``condor_config_val`` prints: the fully expanded text, or None when the knob
has no value (or an empty one). ``get_int``, ``get_bool`` and ``get_float`` read a value as a
daemon does: as a ClassAd expression, falling back to the given default when it is not one.
"""

from __future__ import annotations

import os
import random
import re
from collections.abc import Callable, Iterator, Sequence

import attrs

from epcore.classad import EvalContext, parse_expr
from epcore.config.conditions import ConditionError, evaluate_condition
from epcore.config.defaults import KnobDefault
from epcore.config.expansion import Expander
from epcore.config.host import ConfigHost
from epcore.config.loader import Loader, find_template
from epcore.config.macro_functions import to_integer, to_real
from epcore.config.table import Definition, MacroTable, Origin
from epcore.errors import ClassAdSyntaxError, ConfigError

_ROOT_SEARCH = ("/etc/condor/condor_config", "/usr/local/etc/condor_config")
_LIST_SPLIT = re.compile(r"[,\s]+")
_AUTO_USE = re.compile(r"AUTO_USE_([A-Za-z]+)_(.+)", re.IGNORECASE)
_SUBSYS_LOCAL = re.compile(r"[A-Za-z_]*\.[A-Za-z_0-9]*\.")
_DETECTED = "<Detected>"
_INT_LIMIT = 2**31
_LONG_LIMIT = 2**63
_ENVIRONMENT = "<Environment>"


def split_list(value: str | None) -> list[str]:
    """Split a knob value into items separated by commas and/or whitespace."""
    return [item for item in _LIST_SPLIT.split(value or "") if item]


def _default_host() -> ConfigHost:
    # The real machine lives outside the pure core; it is only reached when no host is given.
    from epcore.builtin.host import LocalHost

    return LocalHost()


@attrs.define
class Config:
    """A loaded configuration. Build it with :meth:`load` or :meth:`from_text`."""

    table: MacroTable
    subsystem: str
    local_name: str | None
    host: ConfigHost
    eval_context: EvalContext
    rng: random.Random
    sources: tuple[str, ...] = ()
    warnings: tuple[str, ...] = ()
    _expanders: dict[tuple[str, str | None], Expander] = attrs.field(factory=dict)
    # Expanded values by (name, subsystem, local name), valid for one table version. Daemons
    # read the same knobs for every slot at every pass; expansion is pure except for the
    # $RANDOM_ functions, which HTCondor draws again at every read, so those are not kept.
    _values: dict[tuple[str, str, str | None], str | None] = attrs.field(factory=dict)
    _values_version: int = -1

    # -- building -------------------------------------------------------------------------

    @classmethod
    def load(
        cls,
        paths: str | os.PathLike[str] | Sequence[str | os.PathLike[str]] | None = None,
        *,
        host: ConfigHost | None = None,
        subsystem: str = "STARTD",
        local_name: str | None = None,
        eval_context: EvalContext | None = None,
        rng: random.Random | None = None,
        defaults: Sequence[KnobDefault] = (),
    ) -> Config:
        """Read the configuration files HTCondor would read.

        ``paths`` replaces ``CONDOR_CONFIG`` (one file, or several read in order); without it
        the root file is found as HTCondor finds it. ``host`` defaults to the local machine.
        ``defaults`` adds knobs to the default table (plugins' ep_config_defaults).
        """
        config = cls._empty(host, subsystem, local_name, eval_context, rng, defaults)
        if paths is None:
            roots = config._find_root()
        elif isinstance(paths, str | os.PathLike):
            roots = [os.fspath(paths)]
        else:
            roots = [os.fspath(p) for p in paths]

        def read_roots(loader: Loader) -> None:
            for root in roots:
                loader.read_file(root)

        config._read(read_roots, roots[:1])
        return config

    @classmethod
    def from_text(
        cls,
        text: str,
        *,
        host: ConfigHost | None = None,
        subsystem: str = "STARTD",
        local_name: str | None = None,
        source: str = "<string>",
        eval_context: EvalContext | None = None,
        rng: random.Random | None = None,
        defaults: Sequence[KnobDefault] = (),
    ) -> Config:
        """Read ``text`` as the root configuration file (named ``source`` in messages)."""
        config = cls._empty(host, subsystem, local_name, eval_context, rng, defaults)
        config._read(lambda loader: loader.read_text(text, source), [])
        return config

    @classmethod
    def _empty(
        cls,
        host: ConfigHost | None,
        subsystem: str,
        local_name: str | None,
        eval_context: EvalContext | None,
        rng: random.Random | None,
        defaults: Sequence[KnobDefault],
    ) -> Config:
        return cls(
            table=MacroTable.with_extra_defaults(defaults),
            subsystem=subsystem.upper(),
            local_name=local_name,
            host=host if host is not None else _default_host(),
            eval_context=eval_context if eval_context is not None else EvalContext(),
            rng=rng if rng is not None else random.Random(),
        )

    def _find_root(self) -> list[str]:
        environ = self.host.environ()
        named = environ.get("CONDOR_CONFIG")
        if named is not None:
            if named.upper() == "ONLY_ENV":
                return []
            if not self.host.is_file(named) and not named.rstrip().endswith("|"):
                raise ConfigError(
                    f'File specified in CONDOR_CONFIG environment variable: "{named}" '
                    "does not exist or is not a readable file"
                )
            return [named]
        tilde = self.host.facts().detected.get("TILDE")
        candidates = [*_ROOT_SEARCH, *([f"{tilde}/condor_config"] if tilde else [])]
        for candidate in candidates:
            if self.host.is_file(candidate):
                return [candidate]
        raise ConfigError(
            "Neither the environment variable CONDOR_CONFIG, /etc/condor/, /usr/local/etc/, "
            "nor ~condor/ contain a condor_config source; set CONDOR_CONFIG or pass a file"
        )

    def _read(self, read_roots: Callable[[Loader], None], roots: list[str]) -> None:
        facts = self.host.facts()
        detected = Origin(_DETECTED)
        for name, value in facts.detected.items():
            self.table.set(name, value, detected)
        self._insert_specials()
        if roots and roots[0] != "/dev/null":
            self.table.set("CONFIG_ROOT", os.path.dirname(roots[0]) or ".", detected)
        loader = Loader(self._expander(self.subsystem, self.local_name), self.host)
        read_roots(loader)
        self._insert_specials()
        self._read_locals(loader)
        overrides = Origin(_ENVIRONMENT)
        for key, value in self.host.environ().items():
            if key[:8].lower() == "_condor_" and key[8:].strip():
                loader.expander.table.set(
                    key[8:].rstrip(),
                    loader.expander.expand_self(value.lstrip(), key[8:]),
                    overrides,
                )
        self._insert_specials()
        self._auto_use(loader)
        for definition in self.table:
            if _SUBSYS_LOCAL.match(definition.name):
                # HTCondor 25 reads LOCALNAME.NAME only, and warns about this older form.
                loader.warnings.append(
                    f"{definition.origin.describe()}: {definition.name} has the unsupported form "
                    "SUBSYS.LOCALNAME.NAME; use LOCALNAME.NAME"
                )
        self.sources = tuple(loader.sources)
        self.warnings = tuple(loader.warnings)

    def _insert_specials(self) -> None:
        facts = self.host.facts()
        detected = Origin(_DETECTED)
        full = facts.full_hostname
        domain = (
            self.get("DEFAULT_DOMAIN_NAME") if self.table.exact("DEFAULT_DOMAIN_NAME") else None
        )
        if domain and "." not in full:
            full = f"{full}.{domain}"
        values = {
            **facts.specials,
            "HOSTNAME": facts.hostname,
            "FULL_HOSTNAME": full,
            "SUBSYSTEM": self.subsystem,
            "LOCALNAME": self.local_name or self.subsystem,
        }
        for name, value in values.items():
            self.table.set(name, value, detected)

    def _read_locals(self, loader: Loader) -> None:
        required = self.get_bool("REQUIRE_LOCAL_CONFIG_FILE", True, crufty=True)
        first_dirs = self.get("LOCAL_CONFIG_DIR")
        if first_dirs:
            self._read_directories(loader, first_dirs, required)
        value = self.get("LOCAL_CONFIG_FILE")
        done: list[str] = []
        pending = self._local_sources(value)
        while pending:
            source = pending.pop(0)
            loader.read_file(source, 1, required=required)
            done.append(source)
            new_value = self.get("LOCAL_CONFIG_FILE")
            if new_value and new_value != value:
                value = new_value
                pending = [s for s in self._local_sources(value) if s not in done]
        later_dirs = self.get("LOCAL_CONFIG_DIR")
        if later_dirs and later_dirs != first_dirs:
            self._read_directories(loader, later_dirs, required)

    @staticmethod
    def _local_sources(value: str | None) -> list[str]:
        if not value:
            return []
        return [value] if "|" in value else split_list(value)

    def _read_directories(self, loader: Loader, value: str, required: bool) -> None:
        pattern = self.get("LOCAL_CONFIG_DIR_EXCLUDE_REGEXP")
        try:
            exclude = re.compile(pattern) if pattern else None
        except re.error as exc:
            raise ConfigError(
                f"LOCAL_CONFIG_DIR_EXCLUDE_REGEXP is not a valid regular expression: {exc}"
            ) from exc
        for directory in split_list(value):
            try:
                names = self.host.list_dir(directory)
            except OSError:
                continue
            kept = [n for n in names if exclude is None or not exclude.search(n)]
            for path in sorted(os.path.join(directory, n) for n in kept):
                loader.read_file(path, 1, required=required)

    def _auto_use(self, loader: Loader) -> None:
        # Triggers may be set in files or in the default table, for every daemon or for one.
        names = [d.name for d in self.table] + [k.name for k in self.table.defaults.values()]
        seen: set[str] = set()
        for full_name in names:
            name = full_name.rpartition(".")[2]
            match = _AUTO_USE.fullmatch(name)
            if match is None or name.lower() in seen:
                continue
            seen.add(name.lower())
            trigger = self.get(name)
            if not trigger:
                continue
            try:
                fire = evaluate_condition(trigger, loader.condition_scope())
            except ConditionError:
                continue
            template = find_template(match.group(1), match.group(2))
            if fire and template is not None:
                loader.read_template(template, None, Origin(name), 1)

    # -- questions ------------------------------------------------------------------------

    def _expander(self, subsystem: str | None, local_name: str | None) -> Expander:
        key = ((subsystem or self.subsystem).upper(), local_name)
        expander = self._expanders.get(key)
        if expander is None:
            expander = Expander(
                table=self.table,
                subsystem=key[0],
                local_name=local_name,
                environ=self.host.environ(),
                rng=self.rng,
                eval_context=self.eval_context,
            )
            self._expanders[key] = expander
        return expander

    def _who(self, subsystem: str | None, local_name: str | None) -> tuple[str, str | None]:
        if subsystem is None:
            return self.subsystem, self.local_name if local_name is None else local_name
        return subsystem.upper(), local_name

    def definition(
        self, name: str, subsystem: str | None = None, local_name: str | None = None
    ) -> Definition | None:
        """The definition a daemon sees for ``name`` (raw value and origin), or None."""
        who = self._who(subsystem, local_name)
        return self.table.find(name, who[0], who[1])

    def raw(
        self, name: str, subsystem: str | None = None, local_name: str | None = None
    ) -> str | None:
        """The unexpanded value, or None."""
        found = self.definition(name, subsystem, local_name)
        return None if found is None else found.raw

    def origin(
        self, name: str, subsystem: str | None = None, local_name: str | None = None
    ) -> Origin | None:
        """Where the value of ``name`` was set (``<Default>`` for the default table)."""
        found = self.definition(name, subsystem, local_name)
        return None if found is None else found.origin

    def expand(self, text: str, subsystem: str | None = None, local_name: str | None = None) -> str:
        """Expand arbitrary text against this configuration."""
        who = self._who(subsystem, local_name)
        return self._expander(*who).expand(text)

    def get(
        self, name: str, subsystem: str | None = None, local_name: str | None = None
    ) -> str | None:
        """The expanded value of ``name`` as ``condor_config_val`` prints it; None if unset."""
        who = self._who(subsystem, local_name)
        key = (name.lower(), who[0], who[1])
        if self._values_version != self.table.version:
            self._values.clear()
            self._values_version = self.table.version
        elif key in self._values:
            return self._values[key]
        found = self.table.find(name, who[0], who[1])
        if found is None:
            self._values[key] = None
            return None
        expander = self._expander(*who)
        draws = expander.random_draws
        try:
            value = expander.expand(found.raw, name) or None
        except ConfigError as exc:
            raise ConfigError(
                f"{name}: {exc.reason}", found.origin.source, found.origin.line
            ) from exc
        if expander.random_draws == draws:
            self._values[key] = value
        return value

    def __contains__(self, name: object) -> bool:
        return isinstance(name, str) and self.get(name) is not None

    def names(self) -> Iterator[str]:
        """The names defined by files, the environment and detection (not the default table)."""
        return (d.name for d in self.table)

    def get_int(
        self,
        name: str,
        default: int,
        *,
        minimum: int | None = None,
        maximum: int | None = None,
        **who: str | None,
    ) -> int:
        """``name`` read as an integer the way a daemon reads it, else ``default``.

        As in HTCondor, a value of an ``int`` knob that does not fit in 32 bits becomes the
        nearest 32-bit value, and a value outside the knob's declared range (or ``minimum`` /
        ``maximum`` when given) becomes the nearest bound.
        """
        text = self.get(name, **who)
        if text is None:
            return default
        value = to_integer(self._expander(self.subsystem, self.local_name).scope(), text)
        if value is None:
            return default
        knob = self.table.default(name)
        limit = _LONG_LIMIT if knob is not None and knob.kind == "long" else _INT_LIMIT
        if not -limit <= value < limit:
            # A number that does not fit saturates, and the range is not applied to it.
            return -limit if value < 0 else limit - 1
        low = minimum if minimum is not None else knob.minimum if knob else None
        high = maximum if maximum is not None else knob.maximum if knob else None
        if low is not None and value < low:
            value = int(low)
        if high is not None and value > high:
            value = int(high)
        return value

    def get_float(
        self,
        name: str,
        default: float,
        *,
        minimum: float | None = None,
        maximum: float | None = None,
        **who: str | None,
    ) -> float:
        """``name`` read as a real the way a daemon reads it, else ``default``; ``minimum`` and
        ``maximum`` bound the value when given."""
        text = self.get(name, **who)
        if text is None:
            return default
        value = to_real(self._expander(self.subsystem, self.local_name).scope(), text)
        if value is None:
            return default
        if minimum is not None and value < minimum:
            value = minimum
        if maximum is not None and value > maximum:
            value = maximum
        return value

    def get_bool(
        self, name: str, default: bool, *, crufty: bool = False, **who: str | None
    ) -> bool:
        """``name`` read as a boolean the way a daemon reads it, else ``default``.

        As in HTCondor, a value that starts with ``true``, ``false``, ``1`` or ``0`` is that
        boolean unless the whole value is a ClassAd expression with a different truth
        (``false || true``); otherwise the value is evaluated as an expression; a value that is
        neither gives ``default``. ``crufty`` also accepts ``yes``/``no``/``t``/``f`` (HTCondor
        does for a few old knobs).
        """
        text = self.get(name, **who)
        if text is None:
            return default
        stripped = text.strip()
        lowered = stripped.lower()
        if crufty and lowered in ("yes", "t", "no", "f"):
            return lowered in ("yes", "t")
        result = default
        for word, meaning in (("true", True), ("false", False), ("1", True), ("0", False)):
            if lowered.startswith(word):
                if not stripped[len(word) :].strip():
                    return meaning
                result = meaning
                break
        try:
            value = parse_expr(text).evaluate(context=self.eval_context)
        except ClassAdSyntaxError:
            return result
        if isinstance(value, bool):
            return value
        if isinstance(value, int | float):
            return value != 0
        return result

    def daemon_value(
        self, name: str, subsystem: str | None = None, local_name: str | None = None
    ) -> str | None:
        """What a daemon uses for ``name``: the configured value, else the fallback its code
        applies (see :mod:`epcore.config.code_defaults`), else None."""
        value = self.get(name, subsystem, local_name)
        if value is not None:
            return value
        # Only daemons read these fallbacks: a command (ep submit) does not build their table.
        from epcore.config.code_defaults import code_default

        fallback = code_default(name)
        if fallback is None or not fallback.value:
            return None
        return self.expand(fallback.value, subsystem, local_name) or None

    def get_list(self, name: str, **who: str | None) -> list[str]:
        """``name`` split on commas and whitespace (empty when unset)."""
        return split_list(self.get(name, **who))

    def slot_get(self, name: str, slot_id: int, slot_type: int | None = None) -> str | None:
        """What the startd reads for a per-slot knob: ``SLOT<N>_NAME``, then
        ``SLOT_TYPE_<T>_NAME`` (when the slot has a type), then ``NAME``."""
        candidates = [f"SLOT{slot_id}_{name}"]
        if slot_type is not None:
            candidates.append(f"SLOT_TYPE_{slot_type}_{name}")
        candidates.append(name)
        for candidate in candidates:
            value = self.get(candidate)
            if value is not None:
                return value
        return None
