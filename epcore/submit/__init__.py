"""HTCondor's submit description language: submit files to job ClassAds, as condor_submit.

>>> description = parse_submit("executable = /bin/true\\narguments = a b\\nqueue 2\\n")
>>> len(description.queue_statements)
1
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from epcore.submit.build import build_jobs
from epcore.submit.local_host import LocalSubmitHost
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

if TYPE_CHECKING:
    from epcore.submit.match_refs import expand_match_references


def __getattr__(name: str) -> object:
    # The schedd expands $$() references when a job matches; ep submit, which imports this
    # package for every submission, never does.
    if name == "expand_match_references":
        from epcore.submit.match_refs import expand_match_references

        return expand_match_references
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


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
