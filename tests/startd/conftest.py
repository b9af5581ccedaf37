"""Fixtures of the daemon tests: a real startd in a subprocess."""

from epcore.testing.startd import startd_factory

__all__ = ["startd_factory"]
