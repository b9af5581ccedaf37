"""A container runtime's say at activation (epcore.startd.admission): the startd asks the
runtime of the job, telling it the jobs it runs on the other slots, and refuses with its
reason; jobs of other runtimes and runtimes without the check are not asked."""

from __future__ import annotations

from collections.abc import Sequence

import pytest

from epcore.classad import ClassAd, parse_ad
from epcore.runtime.control import ControlError
from epcore.startd import admission
from epcore.startd.startd import Startd
from epcore.types import activation_refusal


class _Counting:
    """A runtime of the jobs with ``Gizmo = true`` that admits one at a time."""

    name = "gizmo"

    def __init__(self) -> None:
        self.asked: list[tuple[ClassAd, list[ClassAd]]] = []

    def runs(self, job: ClassAd, machine: ClassAd | None = None) -> bool:
        return job.evaluate("Gizmo") is True

    def refuse_activation(self, job: ClassAd, running: Sequence[ClassAd]) -> str | None:
        self.asked.append((job, list(running)))
        return f"{len(running)} gizmo runs already" if running else None


class _Silent:
    """A runtime without the check."""

    name = "silent"

    def runs(self, job: ClassAd, machine: ClassAd | None = None) -> bool:
        return job.evaluate("Silent") is True


def _busy(startd: Startd, slot: str, job: ClassAd) -> None:
    claim_id = startd.claim(slot, job)
    startd.state = startd.engine.activate(startd.state, claim_id, startd.clock()).state


def test_the_job_s_runtime_refuses_with_the_other_slots_jobs(startd: Startd) -> None:
    """With a gizmo job busy on slot1, slot2's gizmo activation is refused with the runtime's
    reason (the running job handed to it), and slot2 stays Claimed/Idle."""
    counting = _Counting()
    startd.containers = (counting,)  # type: ignore[assignment]
    first = parse_ad("[ ClusterId = 1; ProcId = 0; Gizmo = true ]")
    _busy(startd, "slot1", first)
    claim_id = startd.claim("slot2", parse_ad("[ ClusterId = 2; ProcId = 0; Gizmo = true ]"))
    with pytest.raises(ControlError, match="1 gizmo runs already"):
        startd.activate(claim_id)
    assert str(startd.state.slot("slot2").place) == "Claimed/Idle"  # type: ignore[union-attr]
    (job, running), *_ = counting.asked
    assert job.evaluate("ClusterId") == 2
    assert [r.evaluate("ClusterId") for r in running] == [1]


def test_other_jobs_and_runtimes_without_the_check_are_admitted(startd: Startd) -> None:
    """A plain job and a job of a runtime without the check are not refused, and the
    checking runtime is not asked about them."""
    counting = _Counting()
    startd.containers = (_Silent(), counting)  # type: ignore[assignment]
    _busy(startd, "slot1", parse_ad("[ ClusterId = 1; ProcId = 0; Gizmo = true ]"))
    now = startd.clock()
    plain = startd.claim("slot2", parse_ad("[ ClusterId = 2; ProcId = 0 ]"))
    assert admission.refusal(startd, plain, None, now) is None
    silent = parse_ad("[ ClusterId = 3; ProcId = 0; Silent = true ]")
    assert admission.refusal(startd, plain, silent, now) is None
    assert counting.asked == []
    assert activation_refusal(_Silent(), silent, ()) is None  # type: ignore[arg-type]
