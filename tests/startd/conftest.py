"""Fixtures of the daemon tests: a real startd in a subprocess."""

from startd_harness import startd_factory

__all__ = ["startd_factory"]
