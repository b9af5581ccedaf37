"""Periodic checkpoints of a vm_checkpoint guest (PERIODIC_CHECKPOINT), an epcore addition.

HTCondor's startd evaluates PERIODIC_CHECKPOINT (the slot as MY, the job as TARGET, with the
claim's ``LastPeriodicCheckpoint``) while a VM job runs and tells the starter to checkpoint;
the starter's ``PeriodicCkpt`` saves the guest, uploads the working directory's changed files
and resumes the guest (``CkptDone`` continues it). For KVM and Xen, though, ``VMProc::Ckpt``
declines every checkpoint but the one of a graceful vacate ("Xen doesn't support periodic
checkpoint"): in HTCondor a KVM guest is never checkpointed periodically.

epcore does it when ``VM_PERIODIC_CHECKPOINT`` (an epcore knob, off by default, so that the
default behaves as HTCondor's) is true: the runtime evaluates PERIODIC_CHECKPOINT as the
startd would, against its copy of the slot ad, every :data:`CHECK_SECONDS`. A checkpoint
saves the guest (``virDomainSave``: it stops for the save), sends the saved memory, the
writable disks and the console to the job's Iwd as the job's user (where a vacate's
checkpoint goes: the next run resumes from them, also after the starter or the machine died
without a vacate), and restores the guest from the file: it goes on where it was.
"""

from __future__ import annotations

import os
import subprocess
from collections.abc import Sequence

from epcore.classad import ClassAd, EvalContext, Expr, parse_expr
from epcore.config import Config
from epcore.errors import ClassAdError
from epcore.types import ContainerJob
from epcore_vm.domain import CONSOLE_FILE

#: How often the runtime evaluates PERIODIC_CHECKPOINT (the startd's POLLING_INTERVAL).
CHECK_SECONDS = 5.0
#: The slot attribute PERIODIC_CHECKPOINT reads: when the last checkpoint was (the start
#: of the run before the first one), as HTCondor's claim publishes it.
LAST_CHECKPOINT = "LastPeriodicCheckpoint"


def periodic_expression(config: Config) -> Expr | None:
    """PERIODIC_CHECKPOINT when ``VM_PERIODIC_CHECKPOINT`` is on; None when it is off, or
    when the expression is unset or does not parse."""
    if not config.get_bool("VM_PERIODIC_CHECKPOINT", False):
        return None
    text = config.get("PERIODIC_CHECKPOINT")
    if not text:
        return None
    try:
        return parse_expr(text)
    except ClassAdError:
        return None


def due(expression: Expr, machine: ClassAd, job: ClassAd, last: float, now: float) -> bool:
    """True when ``expression`` (PERIODIC_CHECKPOINT) says a checkpoint is due: the slot ad
    with ``LastPeriodicCheckpoint = last`` as MY, the job as TARGET, the clock at ``now``."""
    slot = machine.copy()
    slot[LAST_CHECKPOINT] = int(last)
    return expression.evaluate(slot, job, context=EvalContext(now=now)) is True


def checkpoint_files(job: ClassAd, checkpoint: str) -> list[str]:
    """The sandbox names a checkpoint sends back: the writable disks, the console, then the
    saved guest (last: a guest's memory is never newer in the Iwd than its disks)."""
    names: list[str] = []
    disks = job.evaluate("VMPARAM_vm_Disk")
    for entry in disks.split(",") if isinstance(disks, str) else []:
        fields = [field.strip() for field in entry.split(":")]
        if len(fields) >= 3 and "w" in fields[2].lower() and fields[0]:
            names.append(os.path.basename(fields[0]))
    return [*names, CONSOLE_FILE, os.path.basename(checkpoint)]


def send_to_iwd(request: ContainerJob, names: Sequence[str]) -> str | None:
    """Copy ``names`` from the sandbox to the job's Iwd as the job's user, each to a
    temporary name first and all renamed at the end, so that an Iwd never holds half a
    file; None when done, else why not. A child process does it: the starter's other
    threads keep running as root meanwhile (a seteuid would change the whole process)."""
    iwd = request.job.evaluate("Iwd")
    if not isinstance(iwd, str) or not iwd:
        return "the job has no Iwd"
    present = [n for n in names if os.path.isfile(os.path.join(request.sandbox, n))]
    for name in present:
        # libvirtd and virtlogd (root) made the memory file and the console.
        path = os.path.join(request.sandbox, name)
        try:
            os.chown(path, request.uid, request.gid, follow_symlinks=False)
        except OSError as error:
            return f"cannot give {name} to the job's user: {error.strerror}"
    # Every copy first, then every rename; a failed copy removes the copies made. The names
    # are the script's arguments: the shell never parses them.
    script = """sandbox=$1; iwd=$2; shift 2
for n in "$@"; do
    if ! cp --sparse=always -- "$sandbox/$n" "$iwd/.$n.epcore-ckpt"; then
        for m in "$@"; do rm -f -- "$iwd/.$m.epcore-ckpt"; done
        exit 1
    fi
done
for n in "$@"; do mv -f -- "$iwd/.$n.epcore-ckpt" "$iwd/$n" || exit 1; done
"""
    # Not root (a test): the copy runs as this process, which is then the job's user.
    root = os.geteuid() == 0
    try:
        done = subprocess.run(
            ["/bin/sh", "-c", script, "sh", request.sandbox, iwd, *present],
            user=request.uid if root else None,
            group=request.gid if root else None,
            extra_groups=request.extra_gids if root else None,
            capture_output=True,
            text=True,
            timeout=600,
            check=False,
        )
    except (OSError, subprocess.TimeoutExpired) as error:
        return f"sending the checkpoint to {iwd}: {error}"
    if done.returncode != 0:
        return f"sending the checkpoint to {iwd}: {done.stderr.strip()[-300:]}"
    return None
