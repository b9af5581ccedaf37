"""Autoclusters: jobs the schedd treats as alike, so that one failure to match skips the rest
(seed 004's "cluster"; SIGNIFICANT_ATTRIBUTES redefines it).

Without SIGNIFICANT_ATTRIBUTES, like HTCondor's schedd, the significant attributes are the
job attributes its own Requirements and Rank refer to and those the slots' expressions and
the negotiator's expressions refer to; with it, exactly the listed ones.
"""

from __future__ import annotations

from collections.abc import Sequence

from epcore.classad import ClassAd
from epcore.classad.references import ReferenceIndex, References
from epcore.negotiator.settings import NegotiatorSettings


def autocluster_ids(
    settings: NegotiatorSettings,
    index: ReferenceIndex,
    whole: References,
    jobs: Sequence[ClassAd],
    job_keys: Sequence[tuple[object, ...]],
) -> list[int]:
    """An autocluster number per job. ``index`` covers the cycle's slots and jobs; ``whole``
    are references that include every significant one, and ``job_keys`` the jobs' keys under
    them."""
    if settings.significant_attributes is not None:
        significant = References(tuple(name.lower() for name in settings.significant_attributes))
    else:
        significant = index.closure(settings.expressions(), ("requirements", "rank"))
    project = whole.projector(significant)
    ids: dict[tuple[object, ...], int] = {}
    return [
        ids.setdefault(project(job, key), len(ids)) for job, key in zip(jobs, job_keys, strict=True)
    ]
