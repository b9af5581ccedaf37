"""``ep explain``: why a slot is in its state, and whether a job would start there.

The slot ads are built the way ``ep status`` builds them (configuration, plugins, detected
resources, slot plan, readings); ``--set Attr=value`` overrides attributes of the chosen slot's
ad to ask "what if", and ``--job FILE`` reads a job ad (old or new syntax) to explain both
Requirements, START and both ranks. The explanation itself comes from the pure
:mod:`epcore.state.explain`; this module renders it as indented text for a person or, with
``--json``, as a JSON document for tools.
"""

from __future__ import annotations

import json
import re
import time
from collections.abc import Sequence
from typing import IO, TYPE_CHECKING

import attrs
import click

from epcore.classad import (
    ERROR,
    UNDEFINED,
    ClassAd,
    ClassAdSyntaxError,
    EvalContext,
    Value,
    parse_ad,
    parse_expr,
)
from epcore.cli.status_cmd import machine_ads
from epcore.config import Config
from epcore.errors import EpError
from epcore.state.explain import (
    Explanation,
    PolicyExplanation,
    SlotExplanation,
    explain_slot,
    value_text,
)

if TYPE_CHECKING:
    from epcore.plugins import Plugins
    from epcore.types import MachineHost

_ATTRIBUTE_NAME = re.compile(r"[A-Za-z_][A-Za-z0-9_]*\Z")


class ExplainFailure(click.ClickException):
    """Anything ``ep explain`` cannot do: printed as ``ep explain: <message>``, exit status 1."""

    exit_code = 1

    def show(self, file: IO[str] | None = None) -> None:
        """Print the message the way HTCondor's tools print theirs."""
        click.echo(f"ep explain: {self.format_message()}", err=True)


@attrs.frozen
class Machine:
    """The configuration, the slot ads built from it, and the problems met building them."""

    config: Config
    ads: tuple[ClassAd, ...]
    problems: tuple[str, ...] = ()


def load_machine(
    config_file: str | None,
    now: float,
    *,
    host: MachineHost | None = None,
    plugins: Plugins | None = None,
) -> Machine:
    """The configuration and the slot ads ``ep status`` would show at ``now``."""
    from epcore.plugins import load_plugins

    if host is None:
        from epcore.builtin.host import LocalHost

        host = LocalHost()
    if plugins is None:
        plugins = load_plugins()
    found = machine_ads(config_file, now, host=host, plugins=plugins)
    config = Config.load(
        config_file,
        host=host,
        defaults=plugins.knob_defaults(),
        eval_context=plugins.eval_context(),
    )
    return Machine(config, found.ads, found.problems)


def choose_slot(ads: Sequence[ClassAd], name: str | None) -> ClassAd:
    """The ad named ``name`` (``slot1@host`` or ``slot1``), or the first; ExplainFailure if
    there is none."""
    if not ads:
        raise ExplainFailure("this machine has no slots")
    if name is None:
        return ads[0]
    wanted = name.lower()
    for ad in ads:
        full = str(ad.evaluate("Name")).lower()
        if wanted in (full, full.split("@", 1)[0]):
            return ad
    known = ", ".join(str(ad.evaluate("Name")) for ad in ads)
    raise ExplainFailure(f"no slot named {name!r} (the slots are {known})")


def apply_overrides(
    ad: ClassAd, settings: Sequence[str], now: float, base: EvalContext | None = None
) -> ClassAd:
    """A copy of ``ad`` with each ``Attr=value`` of ``settings`` set (value is an expression).

    Requirements is derived from START by the ad builder, so it is derived again here from the
    overridden ad as the builder derives it: True (or the resource limits) when START is
    locally true, else START (and the limits); a slot that advertises False keeps False.
    """
    changed = ad.copy()
    for setting in settings:
        name, equals, text = setting.partition("=")
        name = name.strip()
        if not equals or not _ATTRIBUTE_NAME.match(name):
            raise ExplainFailure(f"--set {setting!r}: expected Attr=value")
        try:
            changed[name] = parse_expr(text)
        except ClassAdSyntaxError as error:
            raise ExplainFailure(f"--set {setting!r}: {error}") from error
    if settings and changed.evaluate("Requirements") is not False:
        limits = "WithinResourceLimits" in changed
        if changed.evaluate("Start", context=(base or EvalContext()).at(now)) is True:
            changed["Requirements"] = parse_expr("WithinResourceLimits") if limits else True
        else:
            requirements = "START && (WithinResourceLimits)" if limits else "START"
            changed["Requirements"] = parse_expr(requirements)
    return changed


def read_job(path: str) -> ClassAd:
    """The job ad in file ``path`` (old or new syntax); ExplainFailure if it cannot be read."""
    try:
        with open(path, encoding="utf-8") as handle:
            text = handle.read()
    except OSError as error:
        raise ExplainFailure(f"cannot read job file {path}: {error.strerror}") from error
    try:
        return parse_ad(text, source=path)
    except ClassAdSyntaxError as error:
        raise ExplainFailure(f"bad job file {error}") from error


# -- rendering ------------------------------------------------------------------------------


def _where(node: Explanation) -> str:
    if node.origin == "undefined":
        return "in neither ad"
    return node.ad or node.origin or "nested scope"


def _is_leaf_reference(node: Explanation) -> bool:
    return node.origin is not None and not node.children


def render_explanation(node: Explanation, indent: int = 0) -> list[str]:
    """``node`` as indented lines: each expression, its value, and what decided it."""
    if node.origin is not None:
        line = f"{node.text} = {value_text(node.value)} ({_where(node)})"
    else:
        line = node.text + (f" -> {node.reduced}" if node.reduced else "")
        line += f" is {value_text(node.value)}"
    leaves = [child for child in node.children if _is_leaf_reference(child)]
    if leaves and node.origin is None:
        shown = ", ".join(f"{c.text} = {value_text(c.value)} [{_where(c)}]" for c in leaves)
        line += f" ({shown})"
    if node.note:
        line += f" ({node.note})"
    lines = ["  " * indent + line]
    for child in node.children:
        if node.origin is not None or child not in leaves:
            lines.extend(render_explanation(child, indent + 1))
    return lines


def render_policy(policy: PolicyExplanation, indent: int = 0) -> list[str]:
    """One policy expression: its value, where it was defined, and why (a constant needs no
    reason)."""
    pad = "  " * indent
    lines = [f"{pad}{policy.name} is {value_text(policy.value)} (against {policy.against})"]
    if policy.source is not None:
        lines.append(f"{pad}  defined at {policy.origin}: {policy.source}")
    node = policy.explanation
    constant = node.text.lower() == value_text(node.value).lower()
    if node.children or node.reduced or node.origin or node.note or not constant:
        lines.append(f"{pad}  because:")
        lines.extend(render_explanation(node, indent + 2))
    return lines


def render_slot(explained: SlotExplanation) -> str:
    """The whole explanation of a slot as text for a person, newline-terminated."""
    lines = [f"{explained.slot} is {explained.state}/{explained.activity}"]
    for policy in explained.policies:
        lines.append("")
        lines.extend(render_policy(policy))
    job = explained.job
    if job is not None:
        lines += ["", "The job on this slot:"]
        for policy in (job.slot_requirements, job.job_requirements, job.start):
            lines.extend(render_policy(policy, 1))
        for policy in (job.slot_rank, job.job_rank):
            lines.extend(render_policy(policy, 1))
        lines += ["", f"Verdict: {job.verdict}"]
    return "\n".join(lines) + "\n"


# -- JSON -------------------------------------------------------------------------------------

_JsonValue = None | bool | int | float | str | list["_JsonValue"] | dict[str, "_JsonValue"]


def _json_value(value: Value) -> _JsonValue:
    if value is UNDEFINED or value is ERROR:
        return None
    if type(value) in (bool, int, float, str):
        return value  # type: ignore[return-value]
    return value_text(value)


def _explanation_json(node: Explanation) -> dict[str, _JsonValue]:
    document: dict[str, _JsonValue] = {
        "expression": node.text,
        "value": _json_value(node.value),
        "value_text": value_text(node.value),
    }
    if node.reduced is not None:
        document["reduced"] = node.reduced
    if node.origin is not None:
        document["origin"] = node.origin
        document["ad"] = node.ad
    if node.note is not None:
        document["note"] = node.note
    document["decided_by"] = [_explanation_json(child) for child in node.children]
    return document


def _policy_json(policy: PolicyExplanation) -> dict[str, _JsonValue]:
    return {
        "name": policy.name,
        "against": policy.against,
        "source": policy.source,
        "origin": policy.origin,
        "value": _json_value(policy.value),
        "value_text": value_text(policy.value),
        "explanation": _explanation_json(policy.explanation),
    }


def slot_json(explained: SlotExplanation) -> str:
    """The whole explanation of a slot as a JSON document, newline-terminated."""
    document: dict[str, _JsonValue] = {
        "slot": explained.slot,
        "state": explained.state,
        "activity": explained.activity,
        "policies": [_policy_json(policy) for policy in explained.policies],
    }
    job = explained.job
    if job is not None:
        document["job"] = {
            "slot_requirements": _policy_json(job.slot_requirements),
            "job_requirements": _policy_json(job.job_requirements),
            "start": _policy_json(job.start),
            "slot_rank": _policy_json(job.slot_rank),
            "job_rank": _policy_json(job.job_rank),
            "matches": job.matches,
            "would_start": job.would_start,
            "verdict": job.verdict,
        }
    return json.dumps(document, indent=2) + "\n"


@click.command(name="explain", context_settings={"help_option_names": ["-h", "--help"]})
@click.argument("slot", required=False)
@click.option("--job", "job_file", metavar="FILE", help="Explain whether this job ad would start.")
@click.option("--config", "config_file", metavar="FILE", help="Read FILE as the configuration.")
@click.option("--json", "as_json", is_flag=True, help="Print the explanation as JSON.")
@click.option(
    "--set",
    "settings",
    metavar="ATTR=VALUE",
    multiple=True,
    help="Override a slot ad attribute (repeatable), e.g. --set KeyboardIdle=34.",
)
def explain_command(
    slot: str | None,
    job_file: str | None,
    config_file: str | None,
    as_json: bool,
    settings: tuple[str, ...],
) -> None:
    """Explain why SLOT (default: the first slot) is in its state, and with --job FILE
    whether that job would start there.

    \b
    ep explain                          the first slot's state and its policy expressions
    ep explain slot2 --set KeyboardIdle=34
    ep explain --job job.ad             both Requirements, START and RANK for the job
    ep explain --json                   the same, for tools
    """
    now = time.time()
    job = read_job(job_file) if job_file is not None else None
    try:
        machine = load_machine(config_file, now)
    except (EpError, OSError) as error:
        raise ExplainFailure(str(error)) from error
    for problem in machine.problems:
        click.echo(f"ep explain: warning: {problem}", err=True)
    ad = apply_overrides(choose_slot(machine.ads, slot), settings, now, machine.config.eval_context)
    explained = explain_slot(machine.config, ad, job, now=now)
    click.echo(slot_json(explained) if as_json else render_slot(explained), nl=False)
