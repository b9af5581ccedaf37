"""The LVM tests that need device-mapper, run in the qemu guest (epcore.testing.guest): one
boot for both modules, so that CI's guest time stays short."""

from __future__ import annotations

from epcore.testing.guest import Guest


def test_lvm_works_in_the_guest(guest: Guest) -> None:
    """test_lvm_real.py's tests (a startd in the test's process) and test_lvm_pool.py's
    (``ep run``) run against the guest kernel's device-mapper, and pass."""
    result = guest.run(
        "python -m pytest -q -p no:cacheprovider -o addopts='' -o testpaths='' "
        "--rootdir=/checkout /checkout/plugins/lvm/tests/test_lvm_real.py "
        "/checkout/plugins/lvm/tests/test_lvm_pool.py -rA --durations=5",
        timeout=600,
    )
    assert result.status == 0, result.output[-4000:] + result.console[-2000:]
    assert "6 passed" in result.output, result.output[-4000:]
