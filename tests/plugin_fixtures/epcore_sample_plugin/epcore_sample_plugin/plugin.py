"""The sample plugin: every machine has SAMPLE_COGS cogs (a custom resource, 4 unless the
configuration says otherwise) and advertises ``SampleSite = "lab"``.

Written the way a plugin author writes one: hook implementations marked with
``epcore.hookimpl``, records from ``epcore.types``, its own knob through ep_config_defaults.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING

from epcore import hookimpl
from epcore.config import KnobDefault
from epcore.types import DetectedResource, MachineAttribute

if TYPE_CHECKING:
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
