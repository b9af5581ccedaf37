"""A job the negotiation cycle cannot handle is skipped alone: the others are still matched."""

from __future__ import annotations

import pytest
from negotiator_helpers import DOMAIN, ChooserName, config, cycle, job, matched, slot

from epcore.classad import ClassAd, Expr, Value
from epcore.interfaces import SubmitterJobs


class _UnreadableRequirements(ClassAd):
    """A job ad whose Requirements cannot be read (a fault while indexing the job)."""

    def lookup(self, name: str) -> Expr | None:
        if name.lower() == "requirements":
            raise RuntimeError("this ad's Requirements cannot be read")
        return super().lookup(name)


class _FailingEvaluation(ClassAd):
    """A job ad whose evaluation fails for anything but its id (a fault while matching)."""

    def evaluate(self, name: str, *args: object, **kwargs: object) -> Value:
        if name not in ("ClusterId", "ProcId"):
            raise RuntimeError(f"evaluating {name} failed")
        return super().evaluate(name, *args, **kwargs)  # type: ignore[arg-type]


def _faulty(kind: type[ClassAd], cluster: int, owner: str) -> ClassAd:
    ad = kind()
    source = job(cluster, owner=owner)
    for name in source:
        ad[name] = source.lookup(name)
    return ad


@pytest.mark.parametrize("chooser", ["indexed", "plain"])
@pytest.mark.parametrize("kind", [_UnreadableRequirements, _FailingEvaluation])
def test_a_faulty_job_is_skipped_and_the_others_match(
    kind: type[ClassAd], chooser: ChooserName
) -> None:
    """The cycle names the faulty job in its failures and matches every other job."""
    slots = [slot(1), slot(2)]
    submitters = [
        SubmitterJobs(f"mallory@{DOMAIN}", (_faulty(kind, 1, "mallory"),)),
        SubmitterJobs(f"bob@{DOMAIN}", (job(2, owner="bob"),)),
    ]
    result = cycle(config(), slots, submitters, chooser=chooser)
    assert set(matched(result)) == {"2.0"}
    assert set(result.failures) == {"1.0"}
    assert "RuntimeError" in result.failures["1.0"]
