"""The schedd's SUBMIT_REQUIREMENT_NAMES: expressions every submitted job must meet.

As HTCondor's schedd: each name in SUBMIT_REQUIREMENT_NAMES names an expression
SUBMIT_REQUIREMENT_<Name>, evaluated with the schedd's ad as MY (also ``SCHEDD.``) and the job
as TARGET (also ``JOB.``). False refuses the submission with SUBMIT_REQUIREMENT_<Name>_REASON
(an expression giving a string) or "Submit requirement <Name> not met."; a value that is not
a boolean refuses it too. With SUBMIT_REQUIREMENT_<Name>_IS_WARNING true a false result only
warns (the warning is logged) and the job is queued. This is the administrator's tool to
check what HTCondor lets a submitter choose, such as ``accounting_group_user``.
"""

from __future__ import annotations

import attrs

from epcore.classad import ClassAd, Expr, parse_expr
from epcore.config import Config
from epcore.errors import ClassAdSyntaxError, ConfigError


@attrs.frozen
class SubmitRequirement:
    """One SUBMIT_REQUIREMENT_<Name>, its reason and whether it only warns."""

    name: str
    requirement: Expr
    reason: Expr | None
    is_warning: bool


@attrs.frozen
class Verdict:
    """What the requirements say of one job: why it is refused (None: accepted), and the
    warnings of the requirements that only warn."""

    refusal: str | None
    warnings: tuple[str, ...] = ()


def _expression(config: Config, knob: str) -> Expr | None:
    text = config.get(knob)
    if text is None:
        return None
    try:
        return parse_expr(text, source=knob)
    except ClassAdSyntaxError as error:
        origin = config.origin(knob)
        raise ConfigError(
            f"{knob} is not a ClassAd expression: {error}",
            origin.source if origin else None,
            origin.line if origin else None,
        ) from error


def submit_requirements(config: Config) -> tuple[SubmitRequirement, ...]:
    """The requirements SUBMIT_REQUIREMENT_NAMES lists, in its order; a name without its
    expression is skipped, as HTCondor's schedd does. ConfigError (naming the knob, its file
    and line) when an expression does not parse."""
    found = []
    for name in config.get_list("SUBMIT_REQUIREMENT_NAMES"):
        requirement = _expression(config, f"SUBMIT_REQUIREMENT_{name}")
        if requirement is None:
            continue
        reason = _expression(config, f"SUBMIT_REQUIREMENT_{name}_REASON")
        warning = config.get_bool(f"SUBMIT_REQUIREMENT_{name}_IS_WARNING", False)
        found.append(SubmitRequirement(name, requirement, reason, warning))
    return tuple(found)


def check_submit_requirements(
    requirements: tuple[SubmitRequirement, ...], schedd_ad: ClassAd, job: ClassAd
) -> Verdict:
    """Evaluate ``requirements`` for ``job`` (the whole job: its cluster's attributes and its
    own) against ``schedd_ad``; the first unmet one that does not only warn refuses it."""
    warnings: list[str] = []
    context = schedd_ad.copy()
    context["SCHEDD"] = schedd_ad
    context["JOB"] = job
    for requirement in requirements:
        context["SubmitRequirement"] = requirement.requirement
        result = context.evaluate("SubmitRequirement", target=job)
        if isinstance(result, int | float):  # bool is an int: True and False too
            met = bool(result)
        else:
            return Verdict(f"Submit requirement {requirement.name} evaluated to non-boolean.")
        if met:
            continue
        message = f"Submit requirement {requirement.name} not met."
        if requirement.reason is not None:
            context["SubmitRequirementReason"] = requirement.reason
            reason = context.evaluate("SubmitRequirementReason", target=job)
            if isinstance(reason, str):
                message = reason
        if requirement.is_warning:
            warnings.append(message)
            continue
        return Verdict(message, tuple(warnings))
    return Verdict(None, tuple(warnings))
