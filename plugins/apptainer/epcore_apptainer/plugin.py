"""The apptainer plugin's hooks: epcore finds this module through the ``epcore`` entry point.

It offers one container runtime, ``apptainer`` (:class:`epcore_apptainer.runtime.ApptainerRuntime`).
HTCondor's SINGULARITY_* knobs are already in epcore's default table; the runtime reads them.
"""

from __future__ import annotations

from collections.abc import Sequence

from epcore import hookimpl
from epcore.config import Config
from epcore.types import ContainerRuntimeSpec
from epcore_apptainer.runtime import NAME, ApptainerRuntime

#: What a starter of an apptainer job imports that the startd does not.
STARTER_MODULES = ("epcore_apptainer.process",)


def _build(config: Config) -> ApptainerRuntime:
    return ApptainerRuntime(config)


@hookimpl
def ep_container_runtimes() -> Sequence[ContainerRuntimeSpec]:
    """The apptainer runtime, built by the startd for its configuration."""
    return [ContainerRuntimeSpec(NAME, _build, starter_modules=STARTER_MODULES)]
