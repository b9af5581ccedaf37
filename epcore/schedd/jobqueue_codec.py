"""Reading job ads back from the queue's rows, and the few attributes the queue itself owns."""

from __future__ import annotations

from collections.abc import Iterable
from typing import Final

from epcore.classad import ClassAd, parse_ad
from epcore.classad.unparse import attribute_name
from epcore.errors import ClassAdSyntaxError, QueueError
from epcore.schedd.jobqueue_model import JobId, JobStatus

#: Attributes only the queue changes: ids are fixed at submission, status moves are checked.
READ_ONLY_ATTRIBUTES: Final = frozenset({"jobstatus", "clusterid", "procid"})


def parse_stored_ad(text: object, what: str) -> ClassAd:
    """The ad stored as ``text``; QueueError naming ``what`` (the job) when it is damaged."""
    if not isinstance(text, str) or not text.lstrip().startswith("["):
        raise QueueError(f"{what}: the stored ad is damaged (not ClassAd text)")
    try:
        return parse_ad(text)
    except ClassAdSyntaxError as error:
        raise QueueError(f"{what}: the stored ad is damaged: {error}") from error


def job_status_of(ad: ClassAd, job_id: JobId) -> JobStatus:
    """The job's JobStatus; QueueError naming the job when it is missing or not a status."""
    value = ad.evaluate("JobStatus") if "JobStatus" in ad else None
    if type(value) is int and value in JobStatus._value2member_map_:
        return JobStatus(value)
    raise QueueError(f"job {job_id}: JobStatus {value!r} is not a job status")


def proc_id_of(proc_ad: ClassAd, cluster_id: int) -> int:
    """The ProcId a proc ad brings; QueueError naming the cluster when it has none usable."""
    value = proc_ad.evaluate("ProcId") if "ProcId" in proc_ad else None
    if type(value) is not int or value < 0:
        raise QueueError(
            f"cluster {cluster_id}: every proc ad needs a non-negative integer ProcId, "
            f"not {value!r}"
        )
    return value


class AdText:
    """The stored text of one job's ad, kept as one ``name = expr`` piece per attribute.

    Unparsing a whole job ad costs far more than the SQL write of a status change, which
    touches three or four attributes; only those pieces are written again. The text is the
    ad in new syntax (the order of attributes may differ, which no reader depends on).
    """

    __slots__ = ("_pieces",)

    def __init__(self, ad: ClassAd) -> None:
        self._pieces = {name.lower(): _piece(ad, name) for name in ad}

    @classmethod
    def overlaid(cls, base: AdText, ad: ClassAd, names: Iterable[str]) -> AdText:
        """The text of ``ad``, which is the ad of ``base`` with ``names`` set or removed: the
        pieces of the other attributes are shared with ``base`` (the jobs of one cluster keep
        one copy of what they share)."""
        text = cls.__new__(cls)
        text._pieces = dict(base._pieces)
        text.refresh(ad, names)
        return text

    def refresh(self, ad: ClassAd, names: Iterable[str]) -> None:
        """Take the current value (or absence) of these attributes from ``ad``."""
        pieces = self._pieces
        for name in names:
            if name in ad:
                pieces[name.lower()] = _piece(ad, name)
            else:
                pieces.pop(name.lower(), None)

    def __str__(self) -> str:
        return f"[ {'; '.join(self._pieces.values())} ]"


def _piece(ad: ClassAd, name: str) -> str:
    return f"{attribute_name(ad.name_of(name) or name)} = {ad[name]}"
