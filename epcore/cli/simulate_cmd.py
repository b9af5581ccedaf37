"""``ep simulate FILE.toml``: run a policy scenario and print every slot transition.

One line per transition (time since the start, slot, old -> new State/Activity, the edge's
number and letter, and the expression or event that caused it); ``--json`` prints the list of
those records. Refused events and broken policy expressions are reported on stderr. The exit
status is 1 when an ``expect`` or ``expect_attrs`` is not met, 2 when the scenario is malformed.
"""

from __future__ import annotations

import json
from typing import IO

import click

from epcore.errors import EpError
from epcore.plugins import load_plugins
from epcore.state.scenario import parse_scenario
from epcore.state.simulator import SimulationResult, simulate


class SimulateFailure(click.ClickException):
    """A scenario that cannot be run: printed as ``ep simulate: <message>``, exit status 2."""

    exit_code = 2

    def show(self, file: IO[str] | None = None) -> None:
        """Print the message the way the other ``ep`` commands print theirs."""
        click.echo(f"ep simulate: {self.format_message()}", err=True)


def render_text(result: SimulationResult) -> str:
    """The transitions, one per line."""
    lines = []
    for t in result.transitions:
        letter = f" {t.letter}" if t.letter else ""
        lines.append(
            f"{t.time - result.origin:>8g}  {t.slot:<9} {t.old!s:<22} -> "
            f"{t.new!s:<22} [{t.number}{letter}]  {t.cause}"
        )
    return "".join(line + "\n" for line in lines)


def render_json(result: SimulationResult) -> str:
    """The transitions as a JSON list."""
    records = [
        {
            "time": t.time - result.origin,
            "epoch": t.time,
            "slot": t.slot,
            "old": str(t.old),
            "new": str(t.new),
            "number": t.number,
            "letter": t.letter,
            "cause": t.cause,
        }
        for t in result.transitions
    ]
    return json.dumps(records, indent=2) + "\n"


@click.command(name="simulate", context_settings={"help_option_names": ["-h", "--help"]})
@click.argument("file", type=click.Path(dir_okay=False))
@click.option("--json", "as_json", is_flag=True, help="Print the transitions as JSON.")
@click.option("--seed", default=0, show_default=True, help="Seed of the ClaimId generator.")
def simulate_command(file: str, as_json: bool, seed: int) -> None:
    """Run the policy scenario FILE.toml and print every slot transition."""
    try:
        with open(file, encoding="utf-8") as handle:
            text = handle.read()
    except OSError as error:
        raise SimulateFailure(f"{file}: {error.strerror or error}") from error
    try:
        context = load_plugins().eval_context()
        result = simulate(parse_scenario(text, file), seed, context)
    except EpError as error:
        raise SimulateFailure(str(error)) from error
    for problem in result.problems:
        click.echo(f"ep simulate: warning: {problem}", err=True)
    for note in result.notes:
        click.echo(f"ep simulate: {note}", err=True)
    click.echo(render_json(result) if as_json else render_text(result), nl=False)
    for failure in result.failures:
        click.echo(f"ep simulate: expectation failed: {failure}", err=True)
    if result.failures:
        raise click.exceptions.Exit(1)
