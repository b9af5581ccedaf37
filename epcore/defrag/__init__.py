"""condor_defrag: drains fragmented partitionable machines so that whole-machine jobs can run.

The poll is pure (:mod:`epcore.defrag.poll`, :mod:`epcore.defrag.state`, the knobs in
:mod:`epcore.defrag.settings`); :mod:`epcore.defrag.service` runs it in the central
manager's loop when DAEMON_LIST names DEFRAG, sends the drains and cancels through the
startds' links and advertises the Defrag ad.
"""

from __future__ import annotations
