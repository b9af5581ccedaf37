"""Fixtures of the pool tests: a real personal pool in a subprocess."""

from epcore.testing.pool import pool_factory, shared_dir

__all__ = ["pool_factory", "shared_dir"]
