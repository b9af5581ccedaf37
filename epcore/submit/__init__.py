"""HTCondor's submit description language: submit files to job ClassAds, as condor_submit.

>>> description = parse_submit("executable = /bin/true\\narguments = a b\\nqueue 2\\n")
>>> len(description.queue_statements)
1
"""

from __future__ import annotations

from epcore.submit.build import build_jobs
from epcore.submit.local_host import LocalSubmitHost
from epcore.submit.match_refs import expand_match_references
from epcore.submit.model import (
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
from epcore.submit.parser import parse_submit

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
