"""The sample plugin: every machine has SAMPLE_COGS cogs (a custom resource, 4 unless the
configuration says otherwise) and advertises ``SampleSite = "lab"``; the ClassAd function
``sampleLucky(n)`` is TRUE when the integer ``n`` is a multiple of 7 (``START =
sampleLucky(TARGET.LuckyNumber)`` runs only lucky jobs). When the environment names a file in
EPCORE_SAMPLE_EVENTS, the notification hooks append a line per slot change, job start and job
end to it (the pool tests read it); otherwise they do nothing.

Written the way a plugin author writes one: hook implementations marked with
``epcore.hookimpl``, records from ``epcore.types``, its own knob through ep_config_defaults.
"""

from __future__ import annotations

import os
from collections.abc import Sequence
from typing import TYPE_CHECKING

from epcore import hookimpl
from epcore.classad import ERROR, UNDEFINED
from epcore.config import KnobDefault
from epcore.types import (
    ClassAdFunction,
    DetectedResource,
    JobFinished,
    JobStarted,
    MachineAttribute,
    SlotStateChange,
)

if TYPE_CHECKING:
    from epcore.classad import FunctionCall, Value
    from epcore.config import Config
    from epcore.types import MachineHost, MachineInventory

#: The knob this plugin adds.
COGS_KNOB = "SAMPLE_COGS"
#: The environment variable naming the file the notification hooks append to.
EVENTS_VARIABLE = "EPCORE_SAMPLE_EVENTS"


@hookimpl
def ep_config_defaults() -> Sequence[KnobDefault]:
    """SAMPLE_COGS, so that ``ep config SAMPLE_COGS`` and ``$(SAMPLE_COGS)`` know it."""
    return [KnobDefault(COGS_KNOB, "4", "int", "How many cogs the sample plugin reports.")]


@hookimpl
def ep_detect_resources(config: Config, host: MachineHost) -> Sequence[DetectedResource]:
    """The Cogs resource: SAMPLE_COGS of them."""
    cogs = max(config.get_int(COGS_KNOB, 4), 0)
    return [DetectedResource("Cogs", cogs, source="epcore-sample-plugin")]


@hookimpl
def ep_machine_attributes(
    config: Config, inventory: MachineInventory
) -> Sequence[MachineAttribute]:
    """Where this machine stands."""
    return [MachineAttribute("SampleSite", "lab")]


def lucky(call: FunctionCall) -> Value:
    """sampleLucky(n): TRUE when ``n`` is an integer multiple of 7, FALSE for another
    integer; UNDEFINED stays UNDEFINED (a job without the attribute), anything else is ERROR."""
    if len(call.args) != 1:
        return ERROR
    (value,) = call.values()
    if value is UNDEFINED:
        return UNDEFINED
    if isinstance(value, bool) or not isinstance(value, int):
        return ERROR
    return value % 7 == 0


@hookimpl
def ep_classad_functions() -> Sequence[ClassAdFunction]:
    """sampleLucky, for START and RANK expressions."""
    return [ClassAdFunction("sampleLucky", lucky)]


def _record(line: str) -> None:
    """Append ``line`` to the file EPCORE_SAMPLE_EVENTS names, if it names one."""
    path = os.environ.get(EVENTS_VARIABLE)
    if path:
        with open(path, "a", encoding="utf-8") as events:
            events.write(line + "\n")


@hookimpl
def ep_slot_state_changed(change: SlotStateChange) -> None:
    """A slot's new State/Activity."""
    _record(f"slot {change.slot} {change.new_state}/{change.new_activity}")


@hookimpl
def ep_job_started(event: JobStarted) -> None:
    """A job started."""
    _record(f"started {event.job_id} on {event.slot}")


@hookimpl
def ep_job_finished(event: JobFinished) -> None:
    """A job left its slot."""
    _record(f"finished {event.job_id} on {event.slot} exit {event.exit_code}")
