"""libvirt itself: the connection (with a deadline), and finding and removing a job's domain.

libvirt-python is imported when first needed: the startd loads it only when the VM universe is
configured, and other starters never do.
"""

from __future__ import annotations

import logging
import threading
from typing import Any

from epcore_vm.detect import CONNECT_TIMEOUT
from epcore_vm.domain import NAME_PREFIX, VmInfrastructureError, domain_name


def libvirt_module() -> Any:
    # Imported when a VM job starts: the startd and other starters never load it.
    import libvirt

    return libvirt


def open_connection(uri: str, timeout: float = CONNECT_TIMEOUT) -> Any:
    """A libvirt connection to ``uri``, or VmInfrastructureError when libvirtd is missing,
    refuses or does not answer in ``timeout`` seconds."""
    answer: list[Any] = []
    failure: list[str] = []

    def run() -> None:
        try:
            answer.append(libvirt_module().open(uri))
        except Exception as error:  # libvirt.libvirtError, ImportError
            failure.append(str(error))

    worker = threading.Thread(target=run, name="epcore-vm-open", daemon=True)
    worker.start()
    worker.join(timeout)
    if answer:
        return answer[0]
    reason = failure[0] if failure else f"no answer in {timeout:.0f} s"
    raise VmInfrastructureError(f"libvirt at {uri}: {reason}")


def find_domain(connection: Any, job_key: str) -> Any:
    """The domain of ``job_key``: by its name, or by the key in its description (a guest
    resumed from a checkpoint keeps the name of the run that saved it); None when none."""
    try:
        return connection.lookupByName(domain_name(job_key))
    except Exception:
        pass
    try:
        return next((d for d in connection.listAllDomains(0) if domain_job_key(d) == job_key), None)
    except Exception:
        return None


def domain_job_key(domain: Any) -> str | None:
    try:
        if not domain.name().startswith(NAME_PREFIX):
            return None
        key = domain.metadata(libvirt_module().VIR_DOMAIN_METADATA_DESCRIPTION, None)
    except Exception:
        return None
    return key if isinstance(key, str) and key else None


def remove_domain(domain: Any, log: logging.Logger) -> None:
    """Destroy ``domain`` and forget it (a persistent one, with its managed save, too)."""
    try:
        if domain.isActive():
            domain.destroy()
    except Exception as error:
        log.info("destroying %s: %s", domain.name(), error)
    try:
        if domain.isPersistent():
            domain.undefineFlags(libvirt_module().VIR_DOMAIN_UNDEFINE_MANAGED_SAVE)
    except Exception as error:
        log.info("undefining %s: %s", domain.name(), error)
