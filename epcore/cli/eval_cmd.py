"""``ep eval``: evaluate ClassAd expressions against a context ad, as HTCondor's classad_eval does.

The arguments are a little program read left to right: ads and assignments change
the context ad, expressions are evaluated against it, and the options (which may
stand anywhere) take effect from where they stand. That ordering is why the
arguments are walked here by hand instead of being left to click's option parser.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from pathlib import Path
from typing import TYPE_CHECKING

import click

from epcore.classad import (
    ClassAd,
    ClassAdSyntaxError,
    EvalContext,
    parse_ad,
    parse_ads,
    parse_expr,
)
from epcore.errors import PluginError
from epcore.plugins import load_plugins

if TYPE_CHECKING:
    from epcore.classad import Expr, Value

_MY_FILE_OPTIONS = frozenset({"-file", "-my-file", "-ad-file"})
_TARGET_FILE_OPTIONS = frozenset({"-target-file"})
_QUIET_OPTIONS = frozenset({"-quiet"})
_FILE_OPTIONS = _MY_FILE_OPTIONS | _TARGET_FILE_OPTIONS


class EvalFailure(click.ClickException):
    """An argument or an ad file that ``ep eval`` cannot use; exits with status 1."""

    exit_code = 1


def _option(arg: str) -> tuple[str, str | None]:
    """Split an argument into an option name in its one-dash spelling and an inline value.

    Returns ``("", None)`` for anything that is not one of our options, so that
    expressions starting with a minus sign stay expressions.
    """
    name, equals, value = arg.partition("=")
    if name.startswith("--"):
        name = name[1:]
    if name in _QUIET_OPTIONS and not equals:
        return name, None
    if name in _FILE_OPTIONS:
        return name, value if equals else None
    return "", None


def _describe(error: ClassAdSyntaxError, column_shift: int = 0) -> tuple[int, int, str]:
    column = error.column - column_shift if error.line == 1 else error.column
    return error.line, max(column, 1), error.reason


def _interpret(position: int, text: str) -> ClassAd | Expr:
    """Read one argument as an ad or assignment if it is one, else as an expression.

    classad_eval tries the text as an ad, then wrapped in brackets (which turns
    ``a = 1; b = 2`` into an ad), then as an expression. When all fail, the
    reading that got furthest into the text is the one the user most likely meant,
    so its error is the one reported.
    """
    faults: list[tuple[int, int, str]] = []
    try:
        return parse_ad(text)
    except ClassAdSyntaxError as error:
        faults.append(_describe(error))
    if not text.lstrip().startswith("["):
        try:
            return parse_ad(f"[{text}]")
        except ClassAdSyntaxError as error:
            faults.append(_describe(error, column_shift=1))
    try:
        return parse_expr(text)
    except ClassAdSyntaxError as error:
        faults.append(_describe(error))
    line, column, reason = max(faults, key=lambda fault: (fault[0], fault[1]))
    raise EvalFailure(
        f"argument {position} ({text!r}) is neither an ad, an assignment nor an expression: "
        f"line {line}, column {column}: {reason}"
    )


def read_ad_file(path: str) -> ClassAd:
    """The first ad in the file at ``path`` (new or old syntax), as classad_eval reads it.

    Files saved from ``condor_q -long`` or ``condor_status -long`` hold several ads
    (``:new`` output also wraps them in ``{`` ... ``}``); only the first one is used.
    """
    try:
        text = Path(path).read_text(encoding="utf-8")
    except OSError as error:
        raise EvalFailure(f"cannot read ad file {path!r}: {error.strerror or error}") from error
    except UnicodeDecodeError as error:
        raise EvalFailure(f"cannot read ad file {path!r}: not UTF-8 text ({error})") from error
    lines = text.split("\n")
    opening = next((n for n, line in enumerate(lines) if line.strip()), None)
    if opening is not None and lines[opening].strip() == "{":
        # Blank the brace rather than drop it, so error positions still match the file.
        lines[opening] = ""
        text = "\n".join(lines)
    try:
        for ad in parse_ads(text):
            return ad
    except ClassAdSyntaxError as error:
        line, column, reason = _describe(error)
        message = f"ad file {path!r} does not parse: line {line}, column {column}: {reason}"
        raise EvalFailure(message) from error
    return ClassAd()


def unparse_value(value: Value) -> str:
    """The ClassAd text of a value, as classad_eval prints a result."""
    holder = ClassAd()
    holder["value"] = value
    literal = holder.lookup("value")
    return str(literal)


class EvalSession:
    """The state classad_eval keeps while it walks its arguments."""

    def __init__(self, echo: Callable[[str], None], context: EvalContext | None = None) -> None:
        self.my = ClassAd()
        self.context = context
        self.target: ClassAd | None = None
        self.quiet = False
        # classad_eval shows the context ad before the first result and again
        # after every change to it, so that each result can be read against it.
        self.shown = False
        self._echo = echo

    def run(self, args: Sequence[str]) -> None:
        """Carry out every argument in order, printing as it goes."""
        index = 0
        while index < len(args):
            arg = args[index]
            name, inline = _option(arg)
            if name in _QUIET_OPTIONS:
                self.quiet = True
            elif name in _FILE_OPTIONS:
                if inline is None:
                    index += 1
                    if index >= len(args):
                        raise click.UsageError(f"option {arg} needs a file name")
                    inline = args[index]
                ad = read_ad_file(inline)
                if name in _TARGET_FILE_OPTIONS:
                    self.target = ad
                else:
                    self.my = ad
                    self.shown = False
            else:
                self._take(index + 1, arg)
            index += 1

    def _take(self, position: int, text: str) -> None:
        item = _interpret(position, text)
        if isinstance(item, ClassAd):
            self.my.update(item)
            self.shown = False
            return
        if not self.quiet and not self.shown:
            self._echo(str(self.my))
        self.shown = True
        self._echo(unparse_value(item.evaluate(self.my, self.target, context=self.context)))


_HELP = """Evaluate ClassAd expressions against a context ad, like HTCondor's classad_eval.

Arguments are taken left to right. An ad ('[a = 1; b = "x"]') or an assignment
('a = 1', 'a = 1; b = 2') adds or replaces attributes of the context ad, which
starts empty. Any other argument is an expression: it is evaluated against the
context ad (as MY) and its value is printed in ClassAd syntax, preceded by the
context ad whenever that changed since it was last printed.

\b
Options may stand anywhere and take effect from where they stand:
  -file FILE, -my-file FILE  replace the context ad by the first ad in FILE
                             (new [a = 1; b = 2] or old one-per-line syntax)
  -target-file FILE          evaluate against the first ad in FILE as TARGET
  -quiet                     print results only, not the context ad
  -help, --help              show this message and exit
Every option may also be written with two dashes (--file FILE, --file=FILE).

\b
Examples:
  ep eval 'a = 2' 'a * 2'
  ep eval '[x = 6; z = "foo"]' -quiet 'strcat(z, "bar")' 'x > 5'
  ep eval -quiet -my-file job.ad -target-file slot.ad 'Requirements'

Exit status: 0 on success; 1 when an argument or ad file does not parse or a
file cannot be read; 2 when an option is misused.
"""


@click.command(
    name="eval",
    help=_HELP,
    short_help="Evaluate ClassAd expressions, like classad_eval.",
    context_settings={"ignore_unknown_options": True, "help_option_names": ["-help", "--help"]},
)
@click.argument(
    "items", nargs=-1, type=click.UNPROCESSED, metavar="[AD|ASSIGNMENT|EXPRESSION|OPTION]..."
)
def eval_command(items: tuple[str, ...]) -> None:
    try:
        # The installed plugins' ClassAd functions, as the daemons would call them.
        context = load_plugins().eval_context()
    except PluginError as error:
        raise click.ClickException(str(error)) from error
    EvalSession(click.echo, context).run(items)
