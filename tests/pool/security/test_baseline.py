"""The security suite's yardstick on a pool nobody attacks: the bystander check passes."""

from __future__ import annotations

from pathlib import Path

import pytest
from security_support import assert_pool_serves

pytestmark = pytest.mark.system


def test_an_unattacked_pool_answers_and_runs_a_bystanders_job(
    pool_factory, slot_users, shared_dir: Path
) -> None:
    """Without any attack, another user is answered within 2 s and their job completes."""
    pool = pool_factory()
    assert_pool_serves(pool, slot_users[3], shared_dir)
