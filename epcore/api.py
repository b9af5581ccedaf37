"""The published API for plugins: what a plugin may use of epcore besides the hooks.

A plugin imports only the public modules: :mod:`epcore` (``hookimpl``), this module,
:mod:`epcore.classad`, :mod:`epcore.config`, :mod:`epcore.errors`, :mod:`epcore.types`,
:mod:`epcore.hookspecs`, and, in its tests, :mod:`epcore.testing` and its submodules. Every
other module of epcore is internal and may change in any release; what a plugin needs of them
is re-exported here, under these names, and these names are what stays stable:

Hold and vacate codes
    :class:`HoldCode`, :class:`VacateCode`: HTCondor's ``HoldReasonCode`` and
    ``VacateReasonCode`` values (a :class:`~epcore.errors.JobSetupError` raised with a
    ``HoldCode`` holds the job with that code; ads carry the plain integers);
    :class:`OutOfResourcesSubcode`: the ``HoldReasonSubCode`` of a job held for going over
    its memory or disk (``HoldCode.JOB_OUT_OF_RESOURCES``).

Acting for the job's user
    :func:`as_user` runs a block with the job user's effective identity (when running as
    root), so that the kernel checks the files a job names as it would for the job;
    :func:`open_user_file` opens such a file without blocking on a FIFO or device, refusing
    anything but a regular file or a character device (:class:`NotARegularFile`).

Cgroups
    :func:`read_layout` finds this machine's cgroup hierarchies (:class:`CgroupLayout`: which
    version serves each controller, and where); :class:`V1Group` is a group in one v1
    hierarchy (its processes, CPU and memory use, OOM kills); :func:`read_int`,
    :func:`read_keyed` and :func:`read_pids` read one control file (None or empty when the
    group is gone).

Host readings
    :class:`LocalHost` is the machine this process runs on, a
    :class:`~epcore.types.MachineHost`: CPU counts, memory, swap, free disk, load, device
    access times, and the configuration facts HTCondor detects.

Configuration values
    :func:`split_list` splits a knob's value into its items (commas and/or white space), as
    every list knob is read.

Importing this module loads only what it re-exports; it reads nothing and starts nothing.
"""

from __future__ import annotations

from epcore.builtin.host import LocalHost
from epcore.config import split_list
from epcore.jobs.codes import HoldCode, OutOfResourcesSubcode, VacateCode
from epcore.starter.cgroups.files import read_int, read_keyed, read_pids
from epcore.starter.cgroups.mountinfo import CgroupLayout, read_layout
from epcore.starter.cgroups.v1 import V1Group
from epcore.starter.privileges import as_user
from epcore.transfer.userfs import NotARegularFile, open_user_file

__all__ = [
    "CgroupLayout",
    "HoldCode",
    "LocalHost",
    "NotARegularFile",
    "OutOfResourcesSubcode",
    "V1Group",
    "VacateCode",
    "as_user",
    "open_user_file",
    "read_int",
    "read_keyed",
    "read_layout",
    "read_pids",
    "split_list",
]
