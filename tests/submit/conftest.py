"""Fixtures of the submit-language tests (submit_support.py holds them and their helpers)."""

from submit_support import build, submit_config

__all__ = ["build", "submit_config"]
