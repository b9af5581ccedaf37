"""The records plugins and the core exchange, and the Protocols backends implement.

Hooks (see :mod:`epcore.hookspecs`) take and return these frozen values; nothing crosses the
plugin boundary as a bare dict. Backend Protocols describe what a plugin's object must offer; a
plugin returns a *spec* record naming the backend and a factory that builds it for a
configuration, so that nothing is started before the daemon asks for it.

The records live in one module per hook family (:mod:`~epcore.types.machine`,
:mod:`~epcore.types.isolation`, :mod:`~epcore.types.containers`, :mod:`~epcore.types.power`,
:mod:`~epcore.types.extensions`, :mod:`~epcore.types.notifications`,
:mod:`~epcore.types.backfill`, :mod:`~epcore.types.scratch`); ``epcore.types`` is where
plugins import them from (the published API), so every name is re-exported here.
"""

from __future__ import annotations

from epcore.types.backfill import BackfillBackend, BackfillBackendSpec, BackfillStatus
from epcore.types.containers import (
    AdmitsActivation,
    ContainerJob,
    ContainerRuntime,
    ContainerRuntimeSpec,
    KnowsRemoval,
    RunningContainer,
    activation_refusal,
    announce_removal,
    container_job_attributes,
    tracked_by_starter,
)
from epcore.types.extensions import ClassAdFunction, FetchWorkSource, PythonCronJob
from epcore.types.isolation import (
    ChildSetup,
    IsolationBackend,
    IsolationBackendSpec,
    JobTracking,
    TrackedUsage,
    TrackingRequest,
)
from epcore.types.machine import (
    STANDARD_RESOURCES,
    DetectedResource,
    HostReadings,
    MachineAttribute,
    MachineHost,
    MachineInventory,
    ResourceDevice,
)
from epcore.types.notifications import JobFinished, JobStarted, SlotStateChange
from epcore.types.power import WAKE_MAGIC, PowerBackend, PowerBackendSpec, WakeOnLanFacts
from epcore.types.scratch import (
    ScratchFilesystem,
    ScratchFilesystemSpec,
    ScratchRequest,
    ScratchVerdict,
    ScratchVolume,
    SlotBreak,
)

__all__ = [
    "STANDARD_RESOURCES",
    "WAKE_MAGIC",
    "AdmitsActivation",
    "BackfillBackend",
    "BackfillBackendSpec",
    "BackfillStatus",
    "ChildSetup",
    "ClassAdFunction",
    "ContainerJob",
    "ContainerRuntime",
    "ContainerRuntimeSpec",
    "DetectedResource",
    "FetchWorkSource",
    "HostReadings",
    "IsolationBackend",
    "IsolationBackendSpec",
    "JobFinished",
    "JobStarted",
    "JobTracking",
    "KnowsRemoval",
    "MachineAttribute",
    "MachineHost",
    "MachineInventory",
    "PowerBackend",
    "PowerBackendSpec",
    "PythonCronJob",
    "ResourceDevice",
    "RunningContainer",
    "ScratchFilesystem",
    "ScratchFilesystemSpec",
    "ScratchRequest",
    "ScratchVerdict",
    "ScratchVolume",
    "SlotBreak",
    "SlotStateChange",
    "TrackedUsage",
    "TrackingRequest",
    "WakeOnLanFacts",
    "activation_refusal",
    "announce_removal",
    "container_job_attributes",
    "tracked_by_starter",
]
