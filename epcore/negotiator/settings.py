"""The negotiator's knobs, read and parsed once per cycle."""

from __future__ import annotations

from collections.abc import Sequence

import attrs

from epcore.classad import ClassAd, EvalContext, Expr, parse_expr
from epcore.classad.references import SLOT_STATE_ATTRIBUTES, consumption_names
from epcore.config import Config
from epcore.errors import ClassAdSyntaxError, PoolError
from epcore.interfaces import Significance


def _expression(config: Config, knob: str) -> Expr | None:
    text = config.get(knob)
    if text is None or not text.strip():
        return None
    try:
        return parse_expr(text)
    except ClassAdSyntaxError as error:
        raise PoolError(f"{knob} = {text} is not a ClassAd expression: {error}") from error


@attrs.frozen
class NegotiatorSettings:
    """What a cycle needs from the configuration; expressions are None when unset."""

    pre_job_rank: Expr | None
    post_job_rank: Expr | None
    preemption_requirements: Expr | None
    preemption_rank: Expr | None
    consider_preemption: bool
    consider_early_preemption: bool
    allow_pslot_preemption: bool
    negotiate_all_jobs_in_cluster: bool
    significant_attributes: tuple[str, ...] | None
    use_slot_weights: bool
    uid_domain: str
    context: EvalContext
    slot_constraint: Expr | None = None
    job_constraint: Expr | None = None
    cross_slot_prios: bool = False
    poolsize_constraint: Expr | None = None

    @classmethod
    def from_config(cls, config: Config, now: float) -> NegotiatorSettings:
        """The settings ``config`` gives, evaluating at ``now``."""
        significant = config.get_list("SIGNIFICANT_ATTRIBUTES")
        return cls(
            pre_job_rank=_expression(config, "NEGOTIATOR_PRE_JOB_RANK"),
            post_job_rank=_expression(config, "NEGOTIATOR_POST_JOB_RANK"),
            preemption_requirements=_expression(config, "PREEMPTION_REQUIREMENTS"),
            preemption_rank=_expression(config, "PREEMPTION_RANK"),
            consider_preemption=config.get_bool("NEGOTIATOR_CONSIDER_PREEMPTION", True),
            consider_early_preemption=config.get_bool(
                "NEGOTIATOR_CONSIDER_EARLY_PREEMPTION", False
            ),
            allow_pslot_preemption=config.get_bool("ALLOW_PSLOT_PREEMPTION", False),
            negotiate_all_jobs_in_cluster=config.get_bool("NEGOTIATE_ALL_JOBS_IN_CLUSTER", False),
            significant_attributes=tuple(significant) if significant else None,
            use_slot_weights=config.get_bool("NEGOTIATOR_USE_SLOT_WEIGHTS", True),
            uid_domain=config.get("UID_DOMAIN") or "",
            context=attrs.evolve(config.eval_context, now=now),
            slot_constraint=_expression(config, "NEGOTIATOR_SLOT_CONSTRAINT"),
            job_constraint=_expression(config, "NEGOTIATOR_JOB_CONSTRAINT"),
            cross_slot_prios=config.get_bool("NEGOTIATOR_CROSS_SLOT_PRIOS", False),
            poolsize_constraint=_expression(config, "NEGOTIATOR_SLOT_POOLSIZE_CONSTRAINT"),
        )

    def admits(self, constraint: Expr | None, ad: ClassAd) -> bool:
        """Whether ``ad`` satisfies a NEGOTIATOR_*_CONSTRAINT (unset: every ad does)."""
        return constraint is None or constraint.evaluate(ad, context=self.context) is True

    def expressions(self) -> tuple[Expr, ...]:
        """The configured expressions the cycle evaluates."""
        found = (
            self.pre_job_rank,
            self.post_job_rank,
            self.preemption_requirements,
            self.preemption_rank,
        )
        return tuple(expr for expr in found if expr is not None)


def significance(config: Config, slots: Sequence[ClassAd], now: float) -> Significance:
    """What a cycle on ``slots`` reads besides the ads' expressions, for the schedd to tell
    its jobs apart by (HTCondor's significant attributes)."""
    settings = NegotiatorSettings.from_config(config, now)
    return Significance(
        tuple(settings.expressions()), (*SLOT_STATE_ATTRIBUTES, *consumption_names(slots))
    )
