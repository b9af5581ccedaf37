"""VM_STATUS_MAX_ERROR and VM_STATUS_INTERVAL: failed status checks in a row end the job,
counted once per interval; a check that works starts the count again."""

from __future__ import annotations

from epcore_vm.status import NO_DOMAIN, StatusErrors, guest_gone, status_errors

from epcore.config import Config


class LibvirtFailure(Exception):
    """An error shaped like libvirt.libvirtError."""

    def __init__(self, code: int) -> None:
        super().__init__(f"libvirt error {code}")
        self.code = code

    def get_error_code(self) -> int:
        return self.code


def test_failures_count_once_per_interval_until_the_limit() -> None:
    """Failures within one interval count once; the limit-th counted one ends the job, and
    a success in between starts again from zero."""
    errors = StatusErrors(limit=3, interval=60.0)
    assert not errors.failed(0.0)
    assert not errors.failed(30.0)  # same interval: still one
    assert not errors.failed(60.0)
    errors.succeeded()
    assert not errors.failed(61.0) and not errors.failed(121.0)
    assert errors.failed(181.0)


def test_the_knobs_give_the_limit_and_the_interval() -> None:
    """VM_STATUS_MAX_ERROR and VM_STATUS_INTERVAL, with HTCondor's defaults 5 and 60."""
    assert status_errors(Config.from_text("")) == StatusErrors(5, 60.0)
    knobs = "VM_STATUS_MAX_ERROR = 2\nVM_STATUS_INTERVAL = 0\n"
    assert status_errors(Config.from_text(knobs)) == StatusErrors(2, 0.0)


def test_only_a_missing_domain_means_the_guest_is_gone() -> None:
    """libvirt's no-domain error (and any non-libvirt error) means gone; its other errors
    are failures of libvirt."""
    assert guest_gone(LibvirtFailure(NO_DOMAIN))
    assert guest_gone(RuntimeError("not libvirt's"))
    assert not guest_gone(LibvirtFailure(1))
