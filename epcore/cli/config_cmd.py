"""``ep config``: show configuration values as a daemon would read them, like condor_config_val.

The configuration is read once (from ``--config`` files, else from where HTCondor looks for
it) as the daemon named by ``--subsystem`` and ``--local-name``, and then questioned: the value
of each NAME, or with ``--dump`` every knob the files, the environment and detection define.
Only the local files are read; unlike condor_config_val, no daemon is ever contacted.
"""

from __future__ import annotations

import json
import re
from collections.abc import Iterable, Iterator, Sequence
from typing import IO, Any

import click

from epcore.config import Config, Definition, Origin
from epcore.config.table import DEFAULT_ORIGIN
from epcore.errors import ConfigError, EpError


class ConfigFailure(click.ClickException):
    """A configuration that cannot be read or expanded: ``ep config: <message>``, status 1."""

    exit_code = 1

    def show(self, file: IO[Any] | None = None) -> None:
        click.echo(f"ep config: {self.format_message()}", file=file, err=file is None)


def _load(files: Sequence[str], subsystem: str, local_name: str | None) -> Config:
    """Read the configuration: ``files`` in order, or the root file HTCondor would find.

    Knobs that installed plugins add (ep_config_defaults) are part of the default table, so
    they show and expand like HTCondor's own.
    """
    from epcore.plugins import load_plugins

    try:
        plugins = load_plugins()
        return Config.load(
            list(files) or None,
            subsystem=subsystem,
            local_name=local_name,
            defaults=plugins.knob_defaults(),
            eval_context=plugins.eval_context(),
        )
    except EpError as error:
        raise ConfigFailure(str(error)) from error


def _expand(config: Config, definition: Definition) -> str | None:
    """The expanded value of ``definition`` itself (None when it expands to nothing).

    A dumped definition may not be the one the daemon sees under its name (``X`` is hidden by
    ``STARTD.X`` for the startd), so its own raw text is expanded rather than looked up again.
    """
    try:
        return config.expand(definition.raw) or None
    except ConfigError as error:
        origin = definition.origin
        raise ConfigFailure(
            str(ConfigError(f"{definition.name}: {error.reason}", origin.source, origin.line))
        ) from error


def _get(config: Config, name: str) -> str | None:
    try:
        return config.get(name)
    except EpError as error:
        raise ConfigFailure(str(error)) from error


def _origin_json(origin: Origin) -> dict[str, str | int | None]:
    return {"source": origin.source, "line": origin.line, "template": origin.template}


def _record(definition: Definition, value: str | None) -> dict[str, Any]:
    return {"value": value, "raw": definition.raw, "origin": _origin_json(definition.origin)}


def _default_note(config: Config, name: str, definition: Definition) -> str | None:
    """The default-table value of ``name``, when the value shown came from somewhere else."""
    if definition.origin == DEFAULT_ORIGIN:
        return None
    knob = config.table.default(name)
    return None if knob is None else knob.default


def _describe_names(
    config: Config, names: Sequence[str], verbose: bool, as_json: bool
) -> tuple[list[str], list[str]]:
    """The output lines for a lookup of ``names``, and the names that have no value."""
    lines: list[str] = []
    missing: list[str] = []
    records: dict[str, dict[str, Any] | None] = {}
    for name in names:
        definition = config.definition(name)
        value = _get(config, name)
        if value is None:
            missing.append(name)
        if as_json:
            records[name] = None if definition is None else _record(definition, value)
        elif verbose and definition is not None:
            lines.append(f"{definition.name} = {value or ''}")
            lines.append(f"  # at: {definition.origin.describe()}")
            lines.append(f"  # raw: {definition.raw}")
            default = _default_note(config, name, definition)
            if default is not None:
                lines.append(f"  # default: {default}")
            lines.append("")
        elif value is not None:
            lines.append(value)
    if as_json:
        lines.append(json.dumps(records, indent=2))
    return lines, missing


def _matching(definitions: Sequence[Definition], pattern: str) -> list[Definition]:
    try:
        search = re.compile(pattern, re.IGNORECASE).search
    except re.error as error:
        raise click.BadParameter(
            f"{pattern!r} is not a regular expression: {error}", param_hint="PATTERN"
        ) from error
    return [d for d in definitions if search(d.name)]


def _dump_entries(
    config: Config, definitions: Iterable[Definition], verbose: bool, expand: bool
) -> Iterator[str]:
    for definition in definitions:
        value = (_expand(config, definition) or "") if verbose or expand else ""
        shown = value if expand else definition.raw
        yield f"{definition.name} = {shown}"
        if verbose:
            yield f"  # at: {definition.origin.describe()}"
            if expand and definition.raw != value:
                yield f"  # raw: {definition.raw}"
            elif not expand and definition.raw != value:
                yield f"  # expanded: {value}"


def _describe_dump(
    config: Config, patterns: Sequence[str], verbose: bool, expand: bool, as_json: bool
) -> list[str]:
    """The output lines for ``--dump``: every knob defined (not defaulted), or those matching."""
    everything = sorted(config.table, key=lambda d: d.name.lower())
    if as_json:
        chosen = everything
        if patterns:
            wanted = {d.name for pattern in patterns for d in _matching(everything, pattern)}
            chosen = [d for d in everything if d.name in wanted]
        records = {d.name: _record(d, _expand(config, d)) for d in chosen}
        return [json.dumps(records, indent=2)]
    host = _get(config, "FULL_HOSTNAME") or "<unknown>"
    lines = [f"# Configuration from machine: {host}"]
    if not patterns:
        lines.extend(_dump_entries(config, everything, verbose, expand))
    for pattern in patterns:
        lines.append(f"\n# Parameters with names that match {pattern}:")
        lines.extend(_dump_entries(config, _matching(everything, pattern), verbose, expand))
    if not verbose:
        lines.append("# Contributing configuration file(s):")
        lines.extend(f"#\t{source}" for source in config.sources)
    return lines


_HELP = """Show configuration values as a daemon reads them, like HTCondor's condor_config_val.

The configuration is read from the --config files, in order, or else from the
file HTCondor would read: the one CONDOR_CONFIG names, else the first of
/etc/condor/condor_config, /usr/local/etc/condor_config and
~condor/condor_config; then the local files and directories it names and the
_CONDOR_<NAME> environment overrides. A name is looked up as one daemon
sees it: LOCALNAME.NAME, then SUBSYSTEM.NAME, then NAME, then the built-in
default, where SUBSYSTEM is the --subsystem option (default STARTD; note
that condor_config_val uses TOOL) and LOCALNAME the --local-name option.

\b
ep config NAME...
  Print the expanded value of each NAME on its own line. A NAME with no
  value (or an empty one) prints "Not defined: NAME" on standard error and
  makes the exit status 1; the other names are still printed.

\b
ep config -v NAME...
  For each NAME print, followed by an empty line:
    NAME_USED = <expanded value>
      # at: <file>, line <n>
      # raw: <value as written, before expansion>
      # default: <built-in default>        (only if the value is not it)
  NAME_USED is the definition found (STARTD.NAME when the subsystem prefix
  won). The "# at:" location is "<file>, line <n> (use CATEGORY:NAME)" for a
  value set by a template's use line, "<Default>" for the built-in default,
  "<Detected>" for values found on the machine and "<Environment>" for
  _CONDOR_<NAME> variables. A NAME set to nothing is still shown this way
  (and still reported as not defined).

\b
ep config --dump [PATTERN...]
  Print "NAME = <raw value>" for every knob the files, the environment and
  detection define (not the built-in defaults), sorted by name regardless of
  case, between a "# Configuration from machine" header and a list of the
  files read. PATTERNs (case-insensitive regular expressions searched
  anywhere in the name, so a plain word matches as a substring) keep only the
  matching knobs, under one "# Parameters with names that match" heading
  each. --expand prints expanded values instead of raw ones. With -v every
  knob is followed by "  # at: <location>" and, when it differs from the
  value shown, "  # expanded: <value>" (or "  # raw: <value>" with --expand).

\b
--json prints one JSON object instead: for NAMEs, NAME -> {"value", "raw",
"origin"} (null for a NAME without a definition); for --dump, each knob's
name -> the same record. "value" is the expanded text (null when empty),
"origin" is {"source", "line", "template"}.

\b
Examples:
  ep config START SUSPEND
  ep config -v --subsystem NEGOTIATOR NEGOTIATOR_INTERVAL
  ep config --config ./condor_config --dump --expand SLOT_TYPE

Exit status: 0 on success; 1 when a NAME is not defined or the configuration
cannot be read (the message names the file and line); 2 when an option is
misused.
"""


@click.command(
    name="config",
    help=_HELP,
    short_help="Show configuration values, like condor_config_val.",
)
@click.argument("names", nargs=-1, metavar="[NAME|PATTERN]...")
@click.option(
    "-v", "--verbose", is_flag=True, help="Also show where each value was set and its raw text."
)
@click.option("--dump", is_flag=True, help="Show every defined knob (or those matching PATTERNs).")
@click.option(
    "--expand", is_flag=True, help="With --dump: show expanded values instead of raw ones."
)
@click.option(
    "--subsystem",
    default="STARTD",
    show_default=True,
    metavar="NAME",
    help="Look names up as this daemon (SUBSYSTEM.NAME overrides NAME).",
)
@click.option(
    "--local-name",
    metavar="NAME",
    default=None,
    help="Look names up as the daemon of this local name (NAME.KNOB overrides all).",
)
@click.option(
    "--config",
    "config_files",
    multiple=True,
    metavar="FILE",
    help="Read FILE instead of searching for the configuration (repeatable: read in order).",
)
@click.option("--files", is_flag=True, help="Print the configuration files read, one per line.")
@click.option("--json", "as_json", is_flag=True, help="Print a JSON object (see above).")
@click.pass_context
def config_command(
    ctx: click.Context,
    names: tuple[str, ...],
    verbose: bool,
    dump: bool,
    expand: bool,
    subsystem: str,
    local_name: str | None,
    config_files: tuple[str, ...],
    files: bool,
    as_json: bool,
) -> None:
    if not (names or dump or files):
        raise click.UsageError("give at least one NAME, or --dump, or --files")
    if as_json and files:
        raise click.UsageError("--json cannot be combined with --files")
    config = _load(config_files, subsystem, local_name)
    # Everything is worked out before anything is printed, so that an error in one value
    # leaves only the error message rather than a partial answer.
    lines = list(config.sources) if files else []
    missing: list[str] = []
    if dump:
        lines.extend(_describe_dump(config, names, verbose, expand, as_json))
    elif names:
        found, missing = _describe_names(config, names, verbose, as_json)
        lines.extend(found)
    for warning in config.warnings:
        click.echo(f"ep config: warning: {warning}", err=True)
    for line in lines:
        click.echo(line)
    for name in missing:
        click.echo(f"Not defined: {name}", err=True)
    if missing:
        ctx.exit(1)
