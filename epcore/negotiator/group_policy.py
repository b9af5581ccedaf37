"""The group knobs of hierarchical group quotas (seed 004, "Accounting Groups with Hierarchical
Group Quotas"), read once per cycle, and which group a submitter belongs to.

The root group is ``<none>``: it holds every submitter without a defined group. GROUP_NAMES
is case-insensitive and a name's dots make the hierarchy; a group whose parent is not defined
is ignored, as HTCondor ignores it.
"""

from __future__ import annotations

import attrs

from epcore.classad import Expr, parse_expr
from epcore.config import Config
from epcore.errors import ClassAdSyntaxError, PoolError

ROOT = "<none>"
DEFAULT_SORT_EXPR = (
    'ifThenElse(AccountingGroup=?="<none>",3.4e+38,'
    "ifThenElse(GroupQuota>0,GroupResourcesInUse/GroupQuota,3.3e+38))"
)


@attrs.frozen
class GroupSpec:
    """One configured group: its quota (static slot weight, or a dynamic fraction of what its
    parent has left after its static siblings) and its surplus and autoregroup flags."""

    name: str
    config_quota: float
    static: bool
    accept_surplus: bool
    autoregroup: bool
    #: GROUP_PRIO_FACTOR_<g>: the priority factor its new submitters start with.
    prio_factor: float | None = None

    @property
    def parent(self) -> str:
        """The parent group's name (ROOT for a top-level group)."""
        head, dot, _ = self.name.rpartition(".")
        return head if dot else ROOT


@attrs.frozen
class GroupPolicy:
    """The groups (parents before children) and the knobs of the allocation."""

    groups: tuple[GroupSpec, ...] = ()
    oversubscription: bool = True
    strict: bool = True
    round_robin_rate: float = 1.0e100
    max_rounds: int = 3
    sort_expr: Expr = attrs.field(factory=lambda: parse_expr(DEFAULT_SORT_EXPR))
    use_weighted_demand: bool = True
    #: Lower-cased name -> group, so that lookups do not walk the list.
    _index: dict[str, GroupSpec] = attrs.field(init=False, repr=False, eq=False)

    @_index.default
    def _build_index(self) -> dict[str, GroupSpec]:
        return {spec.name.lower(): spec for spec in self.groups}

    @property
    def enabled(self) -> bool:
        """Whether any group is defined (otherwise the negotiator shares by user alone)."""
        return bool(self.groups)

    @property
    def root_autoregroup(self) -> bool:
        """The root negotiates the autoregroup submitters again when any group has it."""
        return any(spec.autoregroup for spec in self.groups)

    def spec(self, name: str) -> GroupSpec | None:
        """The group named ``name`` in any case (None for ROOT or an unknown name)."""
        return self._index.get(name.lower())

    def children(self, name: str) -> list[GroupSpec]:
        """The groups directly under ``name``."""
        return [spec for spec in self.groups if spec.parent.lower() == name.lower()]

    def group_of(self, submitter: str) -> str:
        """The group a submitter name (``group.user@domain``) negotiates in.

        A name without ``@`` or without a dot before it is the root's; otherwise the text
        before the last dot is walked down the tree and the deepest defined prefix wins, as
        HTCondor's negotiator assigns it (a user called ``john.smith`` maps to group ``john``).
        """
        if "@" not in submitter:
            return ROOT
        account = submitter.rpartition("@")[0]
        path, dot, _ = account.rpartition(".")
        if not dot:
            return ROOT
        found = ROOT
        prefix = ""
        for part in path.split("."):
            prefix = f"{prefix}.{part}" if prefix else part
            spec = self._index.get(prefix.lower())
            if spec is None:
                break
            found = spec.name
        return found

    @classmethod
    def from_config(cls, config: Config) -> GroupPolicy:
        """The group knobs of ``config``; an unusable quota is a PoolError naming its knob."""
        names = _group_names(config)
        accept_all = config.get_bool("GROUP_ACCEPT_SURPLUS", False)
        autoregroup_all = config.get_bool("GROUP_AUTOREGROUP", False)
        specs = []
        for name in names:
            static = config.get(f"GROUP_QUOTA_{name}")
            dynamic = config.get(f"GROUP_QUOTA_DYNAMIC_{name}")
            if static is not None:
                quota, is_static = _quota(f"GROUP_QUOTA_{name}", static, None), True
            elif dynamic is not None:
                quota, is_static = _quota(f"GROUP_QUOTA_DYNAMIC_{name}", dynamic, 1.0), False
            else:
                # HTCondor warns "no quota specified for group ..., defaulting to zero".
                quota, is_static = 0.0, False
            specs.append(
                GroupSpec(
                    name=name,
                    config_quota=quota,
                    static=is_static,
                    accept_surplus=config.get_bool(f"GROUP_ACCEPT_SURPLUS_{name}", accept_all),
                    autoregroup=config.get_bool(f"GROUP_AUTOREGROUP_{name}", autoregroup_all),
                    prio_factor=_factor(config, name),
                )
            )
        rate_knob = "GROUP_QUOTA_ROUND_ROBIN_RATE"
        if config.get(rate_knob) is None and config.get("HFS_ROUND_ROBIN_RATE") is not None:
            rate_knob = "HFS_ROUND_ROBIN_RATE"
        rounds_knob = "GROUP_QUOTA_MAX_ALLOCATION_ROUNDS"
        if config.get(rounds_knob) is None and config.get("HFS_MAX_ALLOCATION_ROUNDS") is not None:
            rounds_knob = "HFS_MAX_ALLOCATION_ROUNDS"
        sort_text = config.get("GROUP_SORT_EXPR") or DEFAULT_SORT_EXPR
        try:
            sort_expr = parse_expr(sort_text)
        except ClassAdSyntaxError as error:
            raise PoolError(
                f"GROUP_SORT_EXPR = {sort_text} is not an expression: {error}"
            ) from error
        return cls(
            groups=tuple(specs),
            oversubscription=config.get_bool("NEGOTIATOR_ALLOW_QUOTA_OVERSUBSCRIPTION", True),
            strict=config.get_bool("NEGOTIATOR_STRICT_ENFORCE_QUOTA", True),
            round_robin_rate=config.get_float(rate_knob, 1.0e100, minimum=1.0),
            max_rounds=config.get_int(rounds_knob, 3, minimum=1),
            sort_expr=sort_expr,
            use_weighted_demand=config.get_bool("NEGOTIATOR_USE_WEIGHTED_DEMAND", True),
        )


def _group_names(config: Config) -> list[str]:
    """GROUP_NAMES without duplicates, ``<none>`` and orphans, sorted so parents come first."""
    seen: dict[str, str] = {}
    for name in config.get_list("GROUP_NAMES"):
        if name.lower() == ROOT or name.lower() in seen:
            continue
        seen[name.lower()] = name
    kept: dict[str, str] = {}
    for lower in sorted(seen):
        parent = lower.rpartition(".")[0]
        if parent and parent not in kept:
            continue  # HTCondor ignores a group whose parent is not defined
        kept[lower] = seen[lower]
    return list(kept.values())


def _factor(config: Config, name: str) -> float | None:
    knob = f"GROUP_PRIO_FACTOR_{name}"
    text = config.get(knob)
    if text is None:
        return None
    try:
        value = float(text)
    except ValueError as error:
        raise PoolError(f"{knob} = {text} is not a number") from error
    if not value > 0:
        raise PoolError(f"{knob} = {text} is not a positive priority factor")
    return value


def _quota(knob: str, text: str, highest: float | None) -> float:
    try:
        value = float(text)
    except ValueError as error:
        raise PoolError(f"{knob} = {text} is not a number") from error
    if value < 0:
        raise PoolError(f"{knob} = {text} is too low: a quota is at least 0")
    if highest is not None and value > highest:
        raise PoolError(f"{knob} = {text} is too high: a dynamic quota is at most {highest}")
    return value
