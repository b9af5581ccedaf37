"""vm_checkpoint: a vacated guest saved with its disks, and resumed from there next time.

HTCondor's starter checkpoints a job with ``JobVMCheckpoint`` before it stops it for a
graceful vacate: the gahp saves the guest's memory to a file in the working directory and the
starter sends that directory's changed files (the memory file and the written disks) to the
job's spool; condor_submit sets ``when_to_transfer_output = ON_EXIT_OR_EVICT`` for such jobs.
The next starter gets them back with the input and the gahp restores the guest from the file.

epcore's schedd keeps no per-job spool: the output of an evicted ON_EXIT_OR_EVICT job goes to
its Iwd (the core's ``finish_container``), so the saved memory lands there beside the disks,
named after the job (``vm_checkpoint.<cluster>.<proc>.mem``) so that another job sharing the
Iwd never resumes from it. The next run's input brings the disks; :func:`bring_in` copies the
memory file in as the job's user, and :func:`restore` starts the guest from it. A job that
completes (its guest powered off) has the file removed from its Iwd (:func:`forget`), as
HTCondor removes a finished job's spool.
"""

from __future__ import annotations

import contextlib
import logging
import os
import re
import shutil
from typing import Any

from epcore.api import as_user, open_user_file
from epcore.classad import ClassAd
from epcore.types import ContainerJob

_UUID = re.compile(r"<uuid>\s*([0-9a-fA-F-]{32,36})\s*</uuid>")
_NAME = re.compile(r"<name>\s*([^<]+?)\s*</name>")


def wants_checkpoint(job: ClassAd) -> bool:
    """True for a job submitted with ``vm_checkpoint = true``."""
    return job.evaluate("JobVMCheckpoint") is True


def checkpoint_name(job: ClassAd) -> str:
    """The saved guest's file name, the same in the sandbox and in the Iwd."""
    return f"vm_checkpoint.{job.evaluate('ClusterId')}.{job.evaluate('ProcId')}.mem"


def _iwd_file(request: ContainerJob) -> str | None:
    iwd = request.job.evaluate("Iwd")
    if not isinstance(iwd, str) or not iwd:
        return None
    return os.path.join(iwd, checkpoint_name(request.job))


def bring_in(request: ContainerJob) -> str | None:
    """Copy the job's saved guest from its Iwd into its sandbox, as the job's user (the
    Iwd is theirs); the sandbox copy's path, or None when the job left no saved guest."""
    source = _iwd_file(request)
    if source is None:
        return None
    target = os.path.join(request.sandbox, checkpoint_name(request.job))
    with as_user(request.uid, request.gid, request.extra_gids):
        try:
            reading = open_user_file(source, os.O_RDONLY)
        except FileNotFoundError:
            return None
        # O_EXCL | O_NOFOLLOW: a name the job's input planted in the sandbox is not followed.
        flags = os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW | os.O_CLOEXEC
        try:
            with (
                os.fdopen(reading, "rb") as source_file,
                os.fdopen(os.open(target, flags, 0o600), "wb") as target_file,
            ):
                shutil.copyfileobj(source_file, target_file, 1 << 20)
        except BaseException:
            with contextlib.suppress(OSError):
                os.unlink(target)
            raise
    return target


def as_saved(xml: str, saved_xml: str) -> tuple[str, str | None]:
    """``xml`` with the name and UUID of the saved guest, and that name (None when the
    image names none): libvirt restores a saved image only into a domain of the same name
    and UUID. Everything else may change, and does: each run has its own sandbox, so its
    own disk and console paths; the description keeps this run's job key, by which the
    startd finds the domain of a starter that died."""
    name = _NAME.search(saved_xml)
    uuid = _UUID.search(saved_xml)
    if name is None:
        return xml, None
    saved_name = name.group(1)
    xml = _NAME.sub(lambda _: f"<name>{saved_name}</name>", xml, count=1)
    if uuid is not None and _UUID.search(xml) is None:
        head, sep, tail = xml.partition("</name>")
        xml = f"{head}{sep}<uuid>{uuid.group(1)}</uuid>{tail}"
    return xml, saved_name


def restore(connection: Any, saved: str, xml: str, log: logging.Logger) -> Any:
    """The domain described by ``xml`` resumed from the guest saved at ``saved``, or None
    (a fresh boot follows) when libvirt cannot restore it. The file goes either way: it is
    not the job's output."""
    domain = None
    try:
        changed, name = as_saved(xml, connection.saveImageGetXMLDesc(saved, 0))
        if name is None:
            raise ValueError("the saved image names no domain")
        connection.restoreFlags(saved, changed, 0)
        domain = connection.lookupByName(name)
    except Exception as error:  # libvirt.libvirtError: a damaged or foreign image
        log.warning("cannot resume the guest from its checkpoint (%s): it boots afresh", error)
    else:
        log.info("domain %s resumed from its checkpoint", name)
    with contextlib.suppress(OSError):
        os.unlink(saved)
    return domain


def forget(request: ContainerJob) -> None:
    """Remove the saved guest from the Iwd of a job whose guest powered off (completed)."""
    path = _iwd_file(request)
    if path is None:
        return
    with as_user(request.uid, request.gid, request.extra_gids), contextlib.suppress(OSError):
        os.unlink(path)
