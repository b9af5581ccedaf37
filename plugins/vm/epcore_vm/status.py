"""VM_STATUS_MAX_ERROR: how many status checks in a row may fail before the job ends.

HTCondor's starter asks the gahp for the guest's status every VM_STATUS_INTERVAL seconds and
ends the job (requeued, "Internal error occurred while managing the VM") after
VM_STATUS_MAX_ERROR failures in a row. epcore's watcher asks libvirt every 0.25 s, to report
a power-off sooner; a failure counts at most once per VM_STATUS_INTERVAL, so that the limit
keeps HTCondor's meaning (about VM_STATUS_MAX_ERROR intervals of a libvirt that does not
answer) and a libvirtd restart of a few seconds ends no job. A guest that is gone (a
transient domain that stopped is gone from libvirt) is no failure: the job ended.
"""

from __future__ import annotations

import attrs

from epcore.config import Config

#: The message HTCondor's starter ends the job with (vm_proc.cpp).
STATUS_FAILED = "Internal error occurred while managing the VM"
#: libvirt's VIR_ERR_NO_DOMAIN: the domain is gone (a transient one that stopped).
NO_DOMAIN = 42


@attrs.define
class StatusErrors:
    """The failed status checks in a row, counted at most once per ``interval`` seconds."""

    limit: int
    interval: float
    count: int = 0
    last: float | None = None

    def failed(self, now: float) -> bool:
        """One more failure at ``now``; True once ``limit`` are counted."""
        if self.last is None or now - self.last >= self.interval:
            self.count += 1
            self.last = now
        return self.count >= self.limit

    def succeeded(self) -> None:
        """A check that worked ends the run of failures."""
        self.count = 0
        self.last = None


def status_errors(config: Config) -> StatusErrors:
    """VM_STATUS_MAX_ERROR (5; at least 1) and VM_STATUS_INTERVAL (60 s) of ``config``."""
    limit = config.get_int("VM_STATUS_MAX_ERROR", 5)
    interval = config.get_int("VM_STATUS_INTERVAL", 60)
    return StatusErrors(max(limit, 1), float(max(interval, 0)))


def guest_gone(error: BaseException) -> bool:
    """True when ``error`` (raised asking libvirt about the domain) says the domain no longer
    exists; False for a failure of libvirt itself. An error that is not libvirt's counts as
    gone, as the watcher always took it."""
    code = getattr(error, "get_error_code", None)
    if code is None:
        return True
    try:
        return bool(code() == NO_DOMAIN)
    except Exception:
        return True
