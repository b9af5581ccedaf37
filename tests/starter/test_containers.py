"""The starter's choice of container runtime, a container job's vacate time and what goes
back to its Iwd when it ends."""

from __future__ import annotations

import logging
import os
from collections.abc import Collection, Sequence
from pathlib import Path
from types import SimpleNamespace
from typing import cast

import pytest

from epcore.classad import UNDEFINED, ClassAd, parse_ad
from epcore.config import Config
from epcore.errors import JobSetupError
from epcore.jobs.codes import HoldCode
from epcore.starter.containers import (
    ContainerLaunch,
    finish_container,
    runtime_for,
    vacate_seconds,
)
from epcore.starter.outcome import EVICTED, HELD, Ending
from epcore.starter.starter import Starter
from epcore.starter.transfer import stamps
from epcore.types import ContainerJob, MachineAttribute, RunningContainer, announce_removal


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


class StoppedContainer:
    """The part of a stopped container that finish_container asks for: its output."""

    def collect_output(self) -> str | None:
        return None


class CheckpointedContainer(StoppedContainer):
    """A stopped container that asks for an attribute in its job's ad (the VM plugin's)."""

    def job_attributes(self) -> ClassAd:
        ad = ClassAd()
        ad["VM_CkptMac"] = "52:54:00:aa:bb:cc"
        return ad


def _finish(
    tmp_path: Path, when: str, ending: Ending, *, iwd_exists: bool = True
) -> tuple[Ending, Path]:
    sandbox, iwd = tmp_path / "sandbox", tmp_path / "iwd"
    sandbox.mkdir()
    if iwd_exists:
        iwd.mkdir()
    (sandbox / "disk.img").write_bytes(b"before")
    before = stamps(str(sandbox))
    (sandbox / "saved.mem").write_bytes(b"guest memory")
    job = parse_ad(f'[ Iwd = "{iwd}"; WhenToTransferOutput = "{when}" ]')
    starter = SimpleNamespace(
        sandbox=SimpleNamespace(path=str(sandbox)),
        user=SimpleNamespace(uid=os.getuid(), gid=os.getgid(), groups=()),
        job=job,
        log=logging.getLogger("test"),
    )
    launched = ContainerLaunch(
        cast(RunningContainer, StoppedContainer()), 0.0, logging.getLogger("test")
    )
    return finish_container(cast(Starter, starter), launched, before, ending), iwd


@pytest.mark.parametrize(("when", "sent"), [("ON_EXIT_OR_EVICT", True), ("ON_EXIT", False)])
def test_an_evicted_container_job_s_output_goes_back_when_it_asks_for_on_exit_or_evict(
    tmp_path: Path, when: str, sent: bool
) -> None:
    """An evicted container job's new files reach its Iwd only with ON_EXIT_OR_EVICT."""
    evicted = Ending(EVICTED, "The job was evicted: vacate")
    ending, iwd = _finish(tmp_path, when, evicted)
    assert ending == evicted
    assert (iwd / "saved.mem").exists() is sent
    assert not (iwd / "disk.img").exists()


def test_an_evicted_job_whose_output_cannot_go_back_is_held(tmp_path: Path) -> None:
    """An evicted ON_EXIT_OR_EVICT container job whose Iwd is gone is held with code 12."""
    evicted = Ending(EVICTED, "The job was evicted: vacate")
    ending, _ = _finish(tmp_path, "ON_EXIT_OR_EVICT", evicted, iwd_exists=False)
    assert (ending.outcome, ending.hold_code) == (HELD, HoldCode.DOWNLOAD_FILE_ERROR)
    assert "saved.mem" in ending.reason


class ListeningContainer(StoppedContainer):
    """A container that hears its job's removal."""

    def __init__(self) -> None:
        self.told = 0

    def removing(self) -> None:
        self.told += 1


def test_a_removal_reaches_a_container_that_listens_and_passes_others_by() -> None:
    """ContainerLaunch.removing tells a container with ``removing`` (announce_removal says
    True); one without it is left alone (False) and nothing fails."""
    listening = ListeningContainer()
    log = logging.getLogger("test.containers")
    ContainerLaunch(cast(RunningContainer, listening), 5.0, log).removing()
    assert listening.told == 1
    assert announce_removal(cast(RunningContainer, StoppedContainer())) is False
    ContainerLaunch(cast(RunningContainer, StoppedContainer()), 5.0, log).removing()


def test_a_container_s_job_attributes_reach_the_starter_s_report(tmp_path: Path) -> None:
    """What a stopped container asks to be written into its job's ad (job_attributes) is
    kept by the starter for its FINISHED message; a container without the method gives none."""
    job = parse_ad(f'[ Iwd = "{tmp_path}"; WhenToTransferOutput = "ON_EXIT" ]')
    for container, expected in (
        (CheckpointedContainer(), "52:54:00:aa:bb:cc"),
        (StoppedContainer(), None),
    ):
        starter = SimpleNamespace(sandbox=None, user=None, job=job, job_updates=ClassAd())
        launched = ContainerLaunch(
            cast(RunningContainer, container), 0.0, logging.getLogger("test")
        )
        finish_container(cast(Starter, starter), launched, {}, Ending(EVICTED, "vacate"))
        assert starter.job_updates.evaluate("VM_CkptMac") == (expected or UNDEFINED)
