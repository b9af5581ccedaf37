"""The starter's choice of container runtime and a container job's vacate time."""

from __future__ import annotations

import logging
from collections.abc import Collection, Sequence

import pytest

from epcore.classad import ClassAd, parse_ad
from epcore.config import Config
from epcore.errors import JobSetupError
from epcore.starter.containers import runtime_for, vacate_seconds
from epcore.types import ContainerJob, MachineAttribute, RunningContainer


class WantsAttribute:
    """A runtime that runs the jobs whose ``attribute`` is true (no containers are made)."""

    def __init__(self, name: str, attribute: str) -> None:
        self.name = name
        self.attribute = attribute

    def machine_attributes(self) -> Sequence[MachineAttribute]:
        return []

    def runs(self, job: ClassAd, machine: ClassAd | None = None) -> bool:
        return job.evaluate(self.attribute) is True

    def start(self, request: ContainerJob, log: logging.Logger) -> RunningContainer:
        raise AssertionError("not started in these tests")

    def sweep(self, keep: Collection[str], prefixes: Collection[str]) -> tuple[str, ...]:
        return ()

    def reclaim(self, job_key: str) -> bool:
        return False


DOCKER = WantsAttribute("docker", "WantDocker")
OTHER = WantsAttribute("other", "WantOther")


@pytest.mark.parametrize(
    ("job", "runtimes", "chosen"),
    [
        ('[ Cmd = "/bin/true" ]', (DOCKER,), None),
        ("[ WantDocker = false ]", (DOCKER,), None),
        ("[ WantDocker = true ]", (OTHER, DOCKER), "docker"),
        ("[ WantOther = true; WantDocker = true ]", (OTHER, DOCKER), "other"),
        ('[ Cmd = "/bin/true" ]', (), None),
    ],
)
def test_the_first_runtime_that_runs_the_job_is_chosen(
    job: str, runtimes: tuple[WantsAttribute, ...], chosen: str | None
) -> None:
    """A job goes to the first runtime that says it runs it, and plain jobs to none."""
    found = runtime_for(runtimes, parse_ad(job))
    assert (found.name if found is not None else None) == chosen


class SlotAttribute(WantsAttribute):
    """A runtime that runs the jobs of slots carrying ``attribute``."""

    def runs(self, job: ClassAd, machine: ClassAd | None = None) -> bool:
        return machine is not None and machine.evaluate(self.attribute) is True


def test_the_runtime_is_asked_with_the_slot_ad() -> None:
    """runtime_for hands the slot's ad to the runtimes, so a slot can decide (SINGULARITY_JOB)."""
    runtime = SlotAttribute("slotwise", "ContainerSlot")
    job = parse_ad('[ Cmd = "/bin/true" ]')
    assert runtime_for((runtime,), job, parse_ad("[ ContainerSlot = true ]")) is runtime
    assert runtime_for((runtime,), job, parse_ad("[ ContainerSlot = false ]")) is None
    assert runtime_for((runtime,), job) is None


@pytest.mark.parametrize("wish", ["WantDocker", "WantContainer"])
def test_a_container_job_without_a_runtime_is_held(wish: str) -> None:
    """A job that wants a container no runtime here runs is held (code 6), never run bare."""
    with pytest.raises(JobSetupError) as caught:
        runtime_for((OTHER,), parse_ad(f"[ {wish} = true ]"))
    assert caught.value.hold_code == 6
    assert wish in str(caught.value) and "other" in str(caught.value)


@pytest.mark.parametrize(
    ("config", "job", "expected"),
    [
        ("", "[ ]", 600.0),
        ("MachineMaxVacateTime = 30", "[ ]", 30.0),
        ("MachineMaxVacateTime = 30", "[ JobMaxVacateTime = 5 ]", 5.0),
        ("MachineMaxVacateTime = 30", "[ JobMaxVacateTime = 90 ]", 30.0),
        ("MachineMaxVacateTime = Cpus * 10", "[ ]", 40.0),
        ("MachineMaxVacateTime = TARGET.Grace", "[ Grace = 7 ]", 7.0),
        ('MachineMaxVacateTime = "soon"', "[ ]", 600.0),
        ("MachineMaxVacateTime = -4", "[ ]", 0.0),
    ],
)
def test_vacate_time_is_the_machine_s_or_the_job_s_smaller_one(
    config: str, job: str, expected: float
) -> None:
    """MachineMaxVacateTime (slot as MY, job as TARGET), or JobMaxVacateTime when smaller;
    a value that is not a number leaves the default of 600 seconds."""
    machine = parse_ad("[ Cpus = 4 ]")
    seconds = vacate_seconds(Config.from_text(config), machine, parse_ad(job), now=0.0)
    assert seconds == expected
