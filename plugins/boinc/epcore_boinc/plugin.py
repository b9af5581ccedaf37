"""The boinc plugin's hooks: epcore finds this module through the ``epcore`` entry point.

It offers one backfill system, ``BOINC`` (:class:`epcore_boinc.backend.BoincBackend`), which
the startd builds when ENABLE_BACKFILL is true and BACKFILL_SYSTEM = BOINC, and the one knob
epcore adds for it, BOINC_NETWORK. HTCondor's own BOINC_* knobs are already in epcore's
default table.
"""

from __future__ import annotations

from collections.abc import Sequence

from epcore import hookimpl
from epcore.config import Config, KnobDefault
from epcore.types import BackfillBackendSpec
from epcore_boinc.backend import NAME, BoincBackend


def _build(config: Config) -> BoincBackend:
    return BoincBackend(config)


@hookimpl
def ep_config_defaults() -> Sequence[KnobDefault]:
    """BOINC_NETWORK: the network the BOINC client runs in."""
    return [
        KnobDefault(
            "BOINC_NETWORK",
            "host",
            "string",
            "epcore: the network the BOINC backfill client runs in: host (the machine's), or "
            "loopback (a network namespace of its own with only the loopback interface).",
        )
    ]


@hookimpl
def ep_backfill_backends() -> Sequence[BackfillBackendSpec]:
    """The BOINC client, built by the startd for its configuration."""
    return [BackfillBackendSpec(NAME, _build)]
