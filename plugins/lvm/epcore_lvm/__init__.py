"""Per-job scratch filesystems on LVM for epcore (seed 000's "Per Job Ephemeral Scratch
Filesystems"): each job's sandbox is a logical volume of its slot's Disk.

:mod:`epcore_lvm.plugin` holds the hooks; :mod:`epcore_lvm.settings` reads the LVM knobs;
:mod:`epcore_lvm.commands` runs the lvm, losetup, mke2fs and mount commands;
:mod:`epcore_lvm.backend` is the scratch filesystem the startd and its starters drive.
"""

from __future__ import annotations

__version__ = "0.1.0"
