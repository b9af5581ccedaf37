"""The sample plugin: every machine has SAMPLE_COGS cogs (a custom resource, 4 unless the
configuration says otherwise) and advertises ``SampleSite = "lab"``; the ClassAd function
``sampleLucky(n)`` is TRUE when the integer ``n`` is a multiple of 7 (``START =
sampleLucky(TARGET.LuckyNumber)`` runs only lucky jobs).

Written the way a plugin author writes one: hook implementations marked with
``epcore.hookimpl``, records from ``epcore.types``, its own knob through ep_config_defaults.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING

from epcore import hookimpl
from epcore.classad import ERROR, UNDEFINED
from epcore.config import KnobDefault
from epcore.types import ClassAdFunction, DetectedResource, MachineAttribute

if TYPE_CHECKING:
    from epcore.classad import FunctionCall, Value
    from epcore.config import Config
    from epcore.types import MachineHost, MachineInventory

#: The knob this plugin adds.
COGS_KNOB = "SAMPLE_COGS"


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
