"""The ``ep`` command line: one module per sub-command, gathered by :mod:`epcore.cli.main`."""

from __future__ import annotations
