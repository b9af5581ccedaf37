"""BOINC backfill for epcore: the startd runs the BOINC client on the slots no job wants.

:mod:`epcore_boinc.plugin` holds the hooks; :mod:`epcore_boinc.settings` reads the BOINC_*
knobs; :mod:`epcore_boinc.rpc` talks to the running client over its GUI RPC Unix socket;
:mod:`epcore_boinc.backend` is the backfill backend the startd drives.
"""

from __future__ import annotations

__version__ = "0.1.0"
