"""Reading configuration text into a macro table: statements, includes, templates, ``if``.

Each logical line is one statement:

- ``NAME = value`` (``NAME : value`` too, HTCondor's old spelling); the name is expanded, the
  value is stored raw except for references to the knob itself, which take its previous value;
- ``NAME @=tag`` ... ``@tag``: the lines between become the value, joined by newlines;
- ``include [ifexist] [command] : target``; ``use CATEGORY : T1, T2(args)``;
- ``if`` / ``elif`` / ``else`` / ``endif``; ``error : message``; ``warning : message``;
- a line that starts with ``[`` and has no operator (an .ini section header) is ignored.

The loader reads files through a :class:`~epcore.config.host.ConfigHost`, so it does no I/O of
its own. Every error names the file and line.
"""

from __future__ import annotations

import re
import shlex
from functools import lru_cache

import attrs

from epcore.config.conditions import ConditionError, ConditionScope, IfStack, evaluate_condition
from epcore.config.expansion import Expander, located
from epcore.config.host import ConfigHost
from epcore.config.macros import expand_template_args, has_template_args
from epcore.config.reader import logical_lines
from epcore.config.table import Origin
from epcore.config.templates import TEMPLATES, Template
from epcore.errors import ConfigError

#: HTCondor's limit on nested includes and ``use`` lines; deeper nesting is an error.
MAX_NESTING = 20

_WS = " \t\n\r\f\v"
_VALID_NAME = re.compile(r"[A-Za-z0-9_./]+")
# The first word of a statement, and the operator that ends it when it follows at once.
_HEAD = re.compile(r"([^\s=:]*)([=:]?)")
_CONTROL = re.compile(r"(if|elif|else|endif)(?=[ \t\n\r\f\v]|$)", re.IGNORECASE)

_TEMPLATES_BY_KEY = {(t.category.lower(), t.name.lower()): t for t in TEMPLATES}
_CATEGORIES = {t.category.lower() for t in TEMPLATES}


def find_template(category: str, name: str) -> Template | None:
    """The template ``use category : name`` reads (case-insensitive), or None."""
    return _TEMPLATES_BY_KEY.get((category.strip().lower(), name.strip().lower()))


def has_template(category: str, name: str | None) -> bool:
    """True when the category exists and, if ``name`` is given, holds that template."""
    if category.strip().lower() not in _CATEGORIES:
        return False
    return name is None or find_template(category, name) is not None


def is_valid_name(name: str) -> bool:
    """True for a name HTCondor accepts: letters, digits, ``_``, ``.`` and ``/`` only."""
    return _VALID_NAME.fullmatch(name) is not None


def split_use_items(text: str) -> list[tuple[str, str | None]]:
    """Split the right side of ``use`` into (template, argument text or None) pairs."""
    items: list[tuple[str, str | None]] = []
    i, n = 0, len(text)
    while i < n:
        while i < n and (text[i] in _WS or text[i] == ","):
            i += 1
        start = i
        while i < n and text[i] not in _WS and text[i] not in ",(":
            i += 1
        if i == start:
            break
        name = text[start:i]
        while i < n and text[i] in _WS:
            i += 1
        args: str | None = None
        if i < n and text[i] == "(":
            close = _matching_paren(text, i)
            if close is not None:
                args = text[i + 1 : close]
                i = close
            i += 1
            while i < n and text[i] in _WS:
                i += 1
        items.append((name, args))
    return items


def _matching_paren(text: str, start: int) -> int | None:
    closers = {"(": ")", "[": "]"}
    stack = [closers[text[start]]]
    for i in range(start + 1, len(text)):
        ch = text[i]
        if ch == stack[-1]:
            stack.pop()
            if not stack:
                return i
        elif ch in closers:
            if len(stack) > 25:
                return None
            stack.append(closers[ch])
    return None


@attrs.define
class Loader:
    """Reads configuration sources into ``expander.table``."""

    expander: Expander
    host: ConfigHost
    warnings: list[str] = attrs.field(factory=list)
    sources: list[str] = attrs.field(factory=list)
    _open: list[str] = attrs.field(factory=list)
    _conditions: ConditionScope | None = attrs.field(default=None, init=False)

    def read_file(self, path: str, depth: int = 0, *, required: bool = True) -> None:
        """Read the file (or ``command |``) at ``path``."""
        if path.rstrip().endswith("|"):
            self._read_command(path.rstrip()[:-1].rstrip(), path, depth)
            return
        if path in self._open:
            chain = " -> ".join([*self._open, path])
            raise ConfigError(f"include loop: {chain}")
        try:
            text = self.host.read_text(path)
        except OSError as exc:
            if not required:
                return
            reason = exc.strerror or str(exc)
            raise ConfigError(f"cannot read configuration file {path}: {reason}") from exc
        self.sources.append(path)
        self._open.append(path)
        try:
            self.read_text(text, path, depth)
        finally:
            self._open.pop()

    def _read_command(self, command: str, source: str, depth: int) -> None:
        try:
            shlex.split(command)
            result = self.host.run_command(command)
        except (OSError, ValueError) as exc:
            raise ConfigError(f"cannot run configuration command '{command}': {exc}") from exc
        if result.exit_status != 0:
            raise ConfigError(
                f"configuration command '{command}' exited with status {result.exit_status}"
            )
        self.sources.append(source)
        self.read_text(result.stdout, source, depth)

    def read_text(self, text: str, source: str, depth: int = 0) -> None:
        """Read configuration text; ``source`` names it in errors and origins."""
        statements: list[tuple[str, int]] = list(logical_lines(text))
        self._run(statements, Origin(source), depth, end_line=text.count("\n") + 1)

    def read_template(self, template: Template, args: str | None, at: Origin, depth: int) -> None:
        """Read a template's body as if it were written where the ``use`` line is."""
        label = f"{template.category}:{template.name}"
        body = template.body
        if args is not None or has_template_args(body):
            body = _with_args(body, args or "", label)
        statements = [(text, at.line or 0) for text in _body_lines(body)]
        origin = Origin(at.source, at.line, label if at.template is None else at.template)
        self._run(statements, origin, depth)

    def condition_scope(self) -> ConditionScope:
        """What ``if`` conditions may consult while this loader reads."""
        if self._conditions is None:
            self._conditions = ConditionScope(
                expand=self.expander.expand,
                lookup=self.expander.lookup,
                has_template=has_template,
            )
        return self._conditions

    def _run(
        self, statements: list[tuple[str, int]], origin: Origin, depth: int, end_line: int = 0
    ) -> None:
        ifs = IfStack()
        here: tuple[str, str, int] | None = None  # name, tag, line
        here_lines: list[str] = []
        in_template = origin.template is not None
        for text, line in statements:
            line = origin.line or 0 if in_template else line
            if here is not None:
                if text.startswith("@") and text[1:] == here[1]:
                    self._assign(here[0], "\n".join(here_lines), origin, here[2])
                    here, here_lines = None, []
                else:
                    here_lines.append(text)
                continue
            try:
                started = self._statement(text, origin, line, ifs, depth)
            except ConditionError as exc:
                raise ConfigError(str(exc), origin.source, line) from exc
            except ConfigError as exc:
                raise located(exc, origin.source, line) from exc
            if started is not None:
                here = (started[0], started[1], line)
        if here is not None:
            raise ConfigError(
                f"end of file while looking for '@{here[1]}' (the end of {here[0]} @={here[1]})",
                origin.source,
                here[2],
            )
        if ifs.inside_if():
            raise ConfigError(
                "endif(s) not found before end-of-file",
                origin.source,
                origin.line if in_template else end_line,
            )

    def _statement(
        self, text: str, origin: Origin, line: int, ifs: IfStack, depth: int
    ) -> tuple[str, str] | None:
        """Carry out one statement; return (name, tag) when it opens an ``@=`` block."""
        if text[0] == ":" and (ifs.inside_if() or _keyword(text[1:], "if")):
            text = text[1:]
        control = _CONTROL.match(text)
        if control is not None:
            self._control(control.group(1).lower(), text[control.end() :], ifs)
            return None
        if ifs.frames and not ifs.enabled():
            return None
        head = _HEAD.match(text)
        assert head is not None  # the pattern matches every string
        name, op = head.group(1), head.group(2)
        j = head.end()
        words = ""
        if not op:
            if j == len(text):
                if text.startswith("["):
                    return None
                raise ConfigError(f"'{text}' is not a statement: expected NAME = value")
            k = j
            n = len(text)
            while k < n and text[k] not in "=:@":
                k += 1
            words = text[j:k].strip(_WS)
            op = text[k] if k < n else ""
            j = k + 1
            if op == "@":
                if j < n and text[j] == "=":
                    j += 1
                else:
                    op = ""
            if op not in ("=", ":", "@"):
                raise ConfigError(f"syntax error, missing : or = in '{text}'")
        rhs = text[j:].lstrip(_WS)
        if op == ":":
            keyword = (name[1:] if name.startswith("@") else name).lower()
            at = Origin(origin.source, line, origin.template)
            if keyword == "use":
                self._use(words, rhs, at, depth)
                return None
            if keyword in ("error", "warning"):
                message = self.expander.expand(rhs)
                if keyword == "error":
                    raise ConfigError(f"Error : {message}")
                self.warnings.append(f"{at.describe()}: {message}")
                return None
            if keyword == "include":
                self._include(words, rhs, at, depth)
                return None
        if "$" in name:
            name = self.expander.expand(name, name)
        if not is_valid_name(name):
            raise ConfigError(f"Illegal Identifier: <{name}>")
        if op == "@":
            return name, rhs
        self._assign(name, rhs, origin, line)
        return None

    def _control(self, keyword: str, condition: str, ifs: IfStack) -> None:
        condition = condition.lstrip(_WS)
        if keyword == "if":
            ifs.begin_if(ifs.enabled() and _test(condition, self.condition_scope(), "if"))
        elif keyword == "elif":
            needed = ifs.elif_needs_value()
            ifs.begin_elif(needed and _test(condition, self.condition_scope(), "elif"))
        elif keyword == "else":
            ifs.begin_else()
        else:
            ifs.end_if()

    def _assign(self, name: str, raw: str, origin: Origin, line: int) -> None:
        value = self.expander.expand_self(raw, name)
        table = self.expander.table
        if table.exact(name) is None:
            # A new knob whose value repeats its default: HTCondor keeps the default's own
            # text ("True" for "true"), and does not record an unprefixed one at all.
            bare = name.rpartition(".")[2]
            knob = table.default(name) or table.default(bare)
            if knob is not None and knob.default is not None and _same_value(knob.default, value):
                if "." not in name:
                    return
                value = knob.default
        where = origin if origin.line == line else Origin(origin.source, line, origin.template)
        table.set(name, value, where)

    def _use(self, category: str, rhs: str, at: Origin, depth: int) -> None:
        category = self.expander.expand(category)
        if not category:
            raise ConfigError(f"use needs a keyword before : {rhs}")
        if category.lower() not in _CATEGORIES:
            raise ConfigError(f"use {category}: unknown category '{category}'")
        if depth + 1 >= MAX_NESTING:
            raise ConfigError(f"use {category}:{rhs} is nested too deep")
        for name, args in split_use_items(rhs):
            template = find_template(category, name)
            if template is None:
                raise ConfigError(f"use {category}: does not recognise {name}")
            self.read_template(template, args, at, depth + 1)

    def _include(self, options: str, target: str, at: Origin, depth: int) -> None:
        words = options.split()
        must_exist = True
        is_command = False
        cache: str | None = None
        if words and words[0] in ("ifexist", "ifexists"):
            must_exist = False
            words = words[1:]
        if words and words[0] in ("output", "command"):
            is_command = True
            words = words[1:]
            if words and words[0] == "into":
                if len(words) < 2:
                    raise ConfigError("expected filename after keyword 'into'")
                cache = words[1]
                words = words[2:]
        if words:
            raise ConfigError(f"unexpected keyword(s) '{options}' after include")
        path = self.expander.expand(target)
        if not path:
            raise ConfigError("include needs a file name after ':'")
        if depth + 1 >= MAX_NESTING:
            raise ConfigError("includes nested too deep")
        if cache is not None:
            self._include_into(cache, path, depth + 1, must_exist)
            return
        if is_command:
            self._read_command(path.rstrip("| "), path, depth + 1)
            return
        if not must_exist and not path.rstrip().endswith("|") and not self.host.is_file(path):
            return
        self.read_file(path, depth + 1, required=must_exist)

    def _include_into(self, cache: str, command: str, depth: int, must_exist: bool) -> None:
        """``include command into FILE : cmd``: read FILE if it exists, else run ``cmd``,
        keep its output in FILE and read that."""
        if cache.rstrip().endswith("|"):
            raise ConfigError("destination for 'include into' may not be a script")
        cache_path = self.expander.expand(cache)
        if not cache_path:
            raise ConfigError("destination for 'include into' expanded to ''")
        if self.host.is_file(cache_path):
            self.read_file(cache_path, depth)
            return
        command = command.rstrip("| ")
        try:
            result = self.host.run_command(command)
        except (OSError, ValueError) as exc:
            if not must_exist:
                return
            raise ConfigError(f"cannot run configuration command '{command}': {exc}") from exc
        if result.exit_status != 0:
            if not must_exist:
                return
            raise ConfigError(
                f"configuration command '{command}' exited with status {result.exit_status}"
            )
        try:
            self.host.write_text(cache_path, result.stdout)
        except OSError as exc:
            raise ConfigError(f"can't open '{cache_path}' for write: {exc}") from exc
        self.sources.append(command + " |")
        self.read_text(result.stdout, command + " |", depth)


def _same_value(default: str, value: str) -> bool:
    if default == value:
        return True
    lowered = value.lower()
    return lowered == default.lower() and lowered in ("true", "false")


@lru_cache(maxsize=1024)
def _with_args(body: str, args: str, label: str) -> str:
    # A template used twice with the same arguments expands the same way; this is pure.
    return expand_template_args(body, args, f"use {label}")


@lru_cache(maxsize=1024)
def _body_lines(body: str) -> tuple[str, ...]:
    # Template bodies recur with the same arguments; their line splitting is pure.
    return tuple(line.text for line in logical_lines(body + "\n"))


def _keyword(text: str, word: str) -> bool:
    size = len(word)
    return text[:size].lower() == word and (len(text) == size or text[size] in _WS)


def _test(condition: str, scope: ConditionScope, keyword: str) -> bool:
    try:
        return evaluate_condition(condition, scope)
    except ConditionError as exc:
        raise ConditionError(
            f"{condition} is not a valid {keyword} condition because {exc}"
        ) from exc
