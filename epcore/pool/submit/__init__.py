"""HTCondor's submit description language: submit files to job ClassAds, as condor_submit.

>>> description = parse_submit("executable = /bin/true\\narguments = a b\\nqueue 2\\n")
>>> len(description.queue_statements)
1
"""

from __future__ import annotations

from epcore.pool.submit.build import build_jobs
from epcore.pool.submit.local_host import LocalSubmitHost
from epcore.pool.submit.match_refs import expand_match_references
from epcore.pool.submit.model import (
    Assignment,
    Conditional,
    Include,
    ItemSlice,
    QueueStatement,
    SubmitContext,
    SubmitDescription,
    SubmitHost,
    SubmittedCluster,
)
from epcore.pool.submit.parser import parse_submit

__all__ = [
    "Assignment",
    "Conditional",
    "Include",
    "ItemSlice",
    "LocalSubmitHost",
    "QueueStatement",
    "SubmitContext",
    "SubmitDescription",
    "SubmitHost",
    "SubmittedCluster",
    "build_jobs",
    "expand_match_references",
    "parse_submit",
]
