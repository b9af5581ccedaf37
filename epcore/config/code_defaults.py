"""Defaults that HTCondor's daemons apply in their code, not in the configuration table.

``Config.get`` answers as ``condor_config_val`` does, so for these knobs it returns None when
no file sets them; the daemon that reads the knob then falls back to the value below. Keeping
them in one table means the startd, the collector and the negotiator apply the same fallbacks
and ``ep config`` can explain them. Values are configuration text, expanded like any value.
"""

from __future__ import annotations

import attrs


@attrs.frozen
class CodeDefault:
    """A fallback a daemon uses when ``name`` has no value."""

    name: str
    value: str
    daemon: str
    doc: str


CODE_DEFAULTS: tuple[CodeDefault, ...] = (
    CodeDefault(
        "MEMORY",
        "$(DETECTED_MEMORY) - $(RESERVED_MEMORY:0)",
        "STARTD",
        "Memory (MB) the startd divides among slots: what was detected, less RESERVED_MEMORY.",
    ),
    CodeDefault("RESERVED_DISK", "0", "STARTD", "Disk kept back from the slots' share."),
    CodeDefault(
        "NUM_SLOTS",
        "",
        "STARTD",
        "No value: without NUM_SLOTS and SLOT_TYPE_<N> the startd makes one partitionable "
        "slot holding the whole machine (HTCondor 23 and later).",
    ),
    CodeDefault("RANK", "0", "STARTD", "A slot with no RANK prefers no job over another."),
    CodeDefault(
        "MAXJOBRETIREMENTTIME", "0", "STARTD", "Seconds of retirement a preempted job gets."
    ),
    CodeDefault("START_BACKFILL", "false", "STARTD", "Without it backfill never starts."),
    CodeDefault("EVICT_BACKFILL", "false", "STARTD", "Without it backfill is never evicted."),
    CodeDefault("HIBERNATE_CHECK_INTERVAL", "0", "STARTD", "0 turns power management off."),
    CodeDefault("FetchWorkDelay", "300", "STARTD", "Seconds between fetch-work hook runs."),
    CodeDefault(
        "STARTER_UPDATE_INTERVAL", "300", "STARTER", "Seconds between job-update hook runs."
    ),
    CodeDefault(
        "STARTER_ALLOW_RUNAS_OWNER", "true", "STARTER", "Jobs may run as their owner's account."
    ),
    CodeDefault(
        "STARTD_CRON_LOG_NON_ZERO_EXIT",
        "false",
        "STARTD",
        "Whether a cron job's non-zero exit is logged.",
    ),
    CodeDefault("STARTD_CRON_MAX_JOB_LOAD", "0.1", "STARTD", "Total load the cron jobs may add."),
    CodeDefault(
        "SINGULARITY_RUN_TEST_BEFORE_JOB",
        "true",
        "STARTER",
        "Test the container runtime before each job.",
    ),
    CodeDefault(
        "SINGULARITY_IGNORE_MISSING_BIND_TARGET",
        "false",
        "STARTER",
        "Skip binds whose target is missing from the image.",
    ),
    CodeDefault("CLASSAD_LIFETIME", "900", "COLLECTOR", "Seconds an ad lives without an update."),
    CodeDefault(
        "ABSENT_EXPIRE_ADS_AFTER", "2592000", "COLLECTOR", "Seconds absent ads are kept (30 days)."
    ),
    CodeDefault(
        "EXPIRE_INVALIDATED_ADS",
        "false",
        "COLLECTOR",
        "Invalidated ads expire instead of vanishing.",
    ),
    CodeDefault(
        "NEGOTIATE_ALL_JOBS_IN_CLUSTER",
        "false",
        "SCHEDD",
        "Keep skipping the rest of a cluster after a job of it fails to match.",
    ),
    CodeDefault(
        "PREEMPTION_REQUIREMENTS_STABLE",
        "true",
        "NEGOTIATOR",
        "PREEMPTION_REQUIREMENTS gives the same answer within one cycle.",
    ),
    CodeDefault(
        "PREEMPTION_RANK_STABLE",
        "true",
        "NEGOTIATOR",
        "PREEMPTION_RANK gives the same answer within one cycle.",
    ),
    CodeDefault(
        "ALLOW_PSLOT_PREEMPTION",
        "false",
        "NEGOTIATOR",
        "Whether a partitionable slot and its dynamic slots can be preempted as a group.",
    ),
)

_BY_NAME = {entry.name.lower(): entry for entry in CODE_DEFAULTS}


def code_default(name: str) -> CodeDefault | None:
    """The in-code fallback for ``name``, if a daemon has one."""
    return _BY_NAME.get(name.lower())
