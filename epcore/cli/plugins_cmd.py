"""``ep plugins``: the plugins epcore loads, as the daemon would load them, and those that fail.

Plugins are loaded exactly as the startd loads them (the built-in ones, then the ``epcore``
entry points of installed packages); each is shown with the distribution that provides it,
its version and the hooks it implements. A plugin that fails to load is listed with its error:
the daemon logs and skips it, so by default this is not a failure of the command, but with
``--strict`` (as a deployment check) it is.
"""

from __future__ import annotations

import contextlib
import json
import logging
from collections.abc import Iterator, Sequence

import click

from epcore.errors import EpError
from epcore.plugins import PluginFailure, PluginInfo, Plugins, load_plugins

_HELP = """List the plugins epcore loads: name, distribution, version and hooks.

Built-in plugins (distribution "epcore") come first, then the plugins that
installed packages declare in the "epcore" entry-point group, in name order,
as the daemon loads them. Plugins that fail to load (their module raises at
import, or their hooks do not fit epcore's hookspecs) are listed after them
with the error; the daemon skips such plugins.

\b
--json prints one object:
  {"plugins": [{"name", "distribution", "version", "hooks": [...]}, ...],
   "failures": [{"name", "origin", "error"}, ...]}

Exit status: 0, even when some plugin failed to load, unless --strict is
given: then 1 when any plugin failed to load.
"""


@contextlib.contextmanager
def _failures_not_logged() -> Iterator[None]:
    """Keep the loader's "failed to load" log lines off stderr: the command shows them itself.

    A handler on the loader's logger stops Python's last-resort stderr output; records still
    reach handlers configured further up (an embedding application's, a test's).
    """
    logger = logging.getLogger("epcore.plugins")
    handler = logging.NullHandler()
    logger.addHandler(handler)
    try:
        yield
    finally:
        logger.removeHandler(handler)


def _load() -> Plugins:
    with _failures_not_logged():
        try:
            return load_plugins(strict=False)
        except EpError as error:
            raise click.ClickException(str(error)) from error


def _table(rows: Sequence[Sequence[str]]) -> list[str]:
    """Rows as left-aligned columns separated by two spaces (the last column is not padded)."""
    widths = [max(len(row[i]) for row in rows) for i in range(len(rows[0]) - 1)]
    lines = []
    for row in rows:
        cells = [cell.ljust(width) for cell, width in zip(row, widths, strict=False)]
        lines.append("  ".join([*cells, row[-1]]).rstrip())
    return lines


def describe_text(infos: Sequence[PluginInfo], failures: Sequence[PluginFailure]) -> list[str]:
    """The plain-text listing: a table of plugins, then the failures."""
    lines: list[str] = []
    if infos:
        rows = [("NAME", "DISTRIBUTION", "VERSION", "HOOKS")]
        for info in infos:
            hooks = ", ".join(info.hooks) or "(none)"
            rows.append((info.name, info.distribution, info.version or "-", hooks))
        lines.extend(_table(rows))
    else:
        lines.append("No plugin is loaded.")
    if failures:
        lines.append("")
        lines.append(f"Failed to load ({len(failures)}; the daemon skips these):")
        for failure in failures:
            lines.append(f"  {failure.name} ({failure.origin}): {failure.error}")
    return lines


def describe_json(infos: Sequence[PluginInfo], failures: Sequence[PluginFailure]) -> str:
    """The ``--json`` listing."""
    document = {
        "plugins": [
            {
                "name": info.name,
                "distribution": info.distribution,
                "version": info.version,
                "hooks": list(info.hooks),
            }
            for info in infos
        ],
        "failures": [
            {"name": failure.name, "origin": failure.origin, "error": failure.error}
            for failure in failures
        ],
    }
    return json.dumps(document, indent=2)


@click.command(
    name="plugins",
    help=_HELP,
    short_help="List loaded plugins: name, distribution, version, hooks.",
)
@click.option("--json", "as_json", is_flag=True, help="Print a JSON object (see above).")
@click.option("--strict", is_flag=True, help="Exit with status 1 when any plugin fails to load.")
@click.pass_context
def plugins_command(ctx: click.Context, as_json: bool, strict: bool) -> None:
    plugins = _load()
    infos = plugins.describe()
    failures = list(plugins.failures)
    if as_json:
        click.echo(describe_json(infos, failures))
    else:
        for line in describe_text(infos, failures):
            click.echo(line)
    if strict and failures:
        names = ", ".join(failure.name for failure in failures)
        click.echo(f"ep plugins: failed to load: {names}", err=True)
        ctx.exit(1)
