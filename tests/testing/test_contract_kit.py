"""The contract classes of epcore.testing.contracts: applied to the built-in detectors, the sample
third-party plugin and small backends, and shown to fail on plugins that break them."""

from __future__ import annotations

import importlib.util
import random
import sys
from collections.abc import Callable, Sequence
from pathlib import Path
from types import ModuleType

import pytest

import epcore.builtin.detection
import epcore.builtin.nvidia
from epcore import hookimpl
from epcore.classad import ClassAd
from epcore.config import Config
from epcore.testing.contracts import (
    CronJobContract,
    DetectorContract,
    FetchWorkSourceContract,
    MachineAttributesContract,
)
from epcore.testing.fixtures import plugins_from
from epcore.testing.host import FakeMachineHost
from epcore.types import (
    DetectedResource,
    MachineAttribute,
    MachineHost,
    MachineInventory,
    PythonCronJob,
    ResourceDevice,
)

ROOT = Path(__file__).resolve().parents[2]
SAMPLE_PLUGIN = (
    ROOT
    / "tests"
    / "plugin_fixtures"
    / "epcore_sample_plugin"
    / "epcore_sample_plugin"
    / "plugin.py"
)
FAKE_NVML = ROOT / "tests" / "builtin" / "fake_nvml.py"


def _module_from(path: Path, name: str) -> ModuleType:
    """Import the file ``path`` as module ``name`` without putting its folder on sys.path."""
    if name in sys.modules:
        return sys.modules[name]
    spec = importlib.util.spec_from_file_location(name, path)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules[name] = module
    spec.loader.exec_module(module)
    return module


# -- the contracts applied to real plugins ----------------------------------------------------


class TestBuiltinDetection(DetectorContract):
    """epcore's own detector keeps the detector contract."""

    expected_resources = ("Cpus", "Memory", "Disk", "Swap")
    hardware_resources = ("GPUs",)

    @pytest.fixture
    def plugin(self) -> ModuleType:
        """The built-in detection module."""
        return epcore.builtin.detection


class TestBuiltinNvidia(DetectorContract):
    """The NVML detector keeps the contract on a machine with GPUs and on one without NVML."""

    expected_resources = ("GPUs",)
    hardware_resources = ("GPUs",)

    @pytest.fixture
    def plugin(self) -> ModuleType:
        """The built-in NVIDIA module."""
        return epcore.builtin.nvidia

    @pytest.fixture
    def host(self, monkeypatch: pytest.MonkeyPatch) -> MachineHost:
        """A machine whose NVML (a fake pynvml) sees two GPUs."""
        fake = _module_from(FAKE_NVML, "epcore_kit_fake_nvml")
        gpus = [fake.FakeGpu("GPU-6a96bd13-1111-2222-3333-444455556666"), fake.FakeGpu("GPU-2b0c")]
        monkeypatch.setitem(sys.modules, "pynvml", fake.FakeNvml(gpus))
        return FakeMachineHost()

    @pytest.fixture
    def bare_host(self, monkeypatch: pytest.MonkeyPatch) -> MachineHost:
        """A machine without nvidia-ml-py (so without NVML)."""
        monkeypatch.setitem(sys.modules, "pynvml", None)
        return FakeMachineHost()


def _sample() -> ModuleType:
    return _module_from(SAMPLE_PLUGIN, "epcore_kit_sample_plugin")


class TestSamplePluginDetector(DetectorContract):
    """The sample third-party plugin's Cogs keep the detector contract."""

    expected_resources = ("Cogs",)

    @pytest.fixture
    def plugin(self) -> ModuleType:
        """The sample plugin, imported from its source tree."""
        return _sample()


class TestSamplePluginAttributes(MachineAttributesContract):
    """The sample third-party plugin's SampleSite keeps the attributes contract."""

    expected_attributes = ("SampleSite",)

    @pytest.fixture
    def plugin(self) -> ModuleType:
        """The sample plugin, imported from its source tree."""
        return _sample()


class JobQueue:
    """A fetch-work source handing out one job, then none."""

    name = "queue"

    def __init__(self) -> None:
        self.jobs = [ClassAd()]
        self.replies: list[bool] = []

    def fetch(self, slot_ad: ClassAd) -> ClassAd | None:
        return self.jobs.pop() if self.jobs else None

    def reply(self, accepted: bool, job_ad: ClassAd, slot_ad: ClassAd) -> None:
        self.replies.append(accepted)

    def evict_claim(self, job_ad: ClassAd, slot_ad: ClassAd) -> None:
        pass


class WorkPlugin:
    """Offers the given sources and cron jobs."""

    def __init__(self, sources: Sequence[object] = (), jobs: Sequence[PythonCronJob] = ()) -> None:
        self.sources = list(sources)
        self.jobs = list(jobs)

    @hookimpl
    def ep_fetch_work_sources(self, config: Config) -> list[object]:
        return self.sources

    @hookimpl
    def ep_cron_jobs(self, config: Config) -> list[PythonCronJob]:
        return self.jobs


def _temperature_ad() -> list[ClassAd]:
    ad = ClassAd()
    ad["Temperature"] = 41.5
    return [ad]


class TestFetchWorkSources(FetchWorkSourceContract):
    """A fetch-work plugin keeps the fetch-work contract."""

    @pytest.fixture
    def plugin(self) -> WorkPlugin:
        """One job queue."""
        return WorkPlugin(sources=[JobQueue()])


class TestCronJobs(CronJobContract):
    """A cron plugin keeps the cron contract."""

    @pytest.fixture
    def plugin(self) -> WorkPlugin:
        """A periodic and a one-shot job."""
        return WorkPlugin(
            jobs=[
                PythonCronJob("temperature", _temperature_ad, period=60.0),
                PythonCronJob("inventory", list, mode="OneShot", period=0.0),
            ]
        )


# -- the contracts catch plugins that break them ----------------------------------------------

HOST = FakeMachineHost()
INVENTORY = MachineInventory(4, 4, 8192, 1_000_000, 0, 4, 8192)


def _config(plugin: object) -> Config:
    return Config.from_text("", host=HOST, defaults=plugins_from(plugin).config_defaults())


class Detector:
    """Reports ``resources`` (a callable makes them change between calls)."""

    def __init__(self, resources: Callable[[], list[DetectedResource]]) -> None:
        self.resources = resources

    @hookimpl
    def ep_detect_resources(self, config: Config, host: object) -> list[DetectedResource]:
        return self.resources()


def _device(name: str, **properties: object) -> ResourceDevice:
    return ResourceDevice(name, properties)


BAD_RESOURCES = {
    "name-not-identifier": [DetectedResource("GPU s", 1)],
    "standard-misspelled": [DetectedResource("cpus", 4)],
    "fractional-memory": [DetectedResource("Memory", 10.5)],
    "quantity-not-devices": [DetectedResource("GPUs", 3, (_device("a"), _device("b")))],
    "duplicate-device-ids": [DetectedResource("GPUs", 2, (_device("a"), _device("a")))],
    "device-id-with-comma": [DetectedResource("GPUs", 1, (_device("a,b"),))],
    "bad-property-name": [DetectedResource("GPUs", 1, (_device("a", **{"Global Mb": 1}),))],
    "bad-property-value": [DetectedResource("GPUs", 1, (_device("a", Info={"x": 1}),))],
}


@pytest.mark.parametrize("resources", BAD_RESOURCES.values(), ids=BAD_RESOURCES.keys())
def test_detector_contract_rejects_malformed_resources(resources: list[DetectedResource]) -> None:
    """A detector reporting a malformed resource fails test_reports_well_formed_resources."""
    plugin = Detector(lambda: resources)
    with pytest.raises(AssertionError):
        DetectorContract().test_reports_well_formed_resources(
            plugins_from(plugin), _config(plugin), HOST
        )


def test_detector_contract_rejects_changing_answers() -> None:
    """A detector whose answer changes between two calls fails the repeatability test."""
    rng = random.Random(4)
    plugin = Detector(lambda: [DetectedResource("Cogs", rng.randrange(1000))])
    with pytest.raises(AssertionError):
        DetectorContract().test_detection_is_repeatable(plugins_from(plugin), _config(plugin), HOST)


def test_detector_contract_rejects_phantom_hardware() -> None:
    """A detector that finds its hardware on a bare machine fails the bare-host test."""

    class Phantom(DetectorContract):
        hardware_resources = ("Gizmos",)

    plugin = Detector(lambda: [DetectedResource("Gizmos", 2)])
    with pytest.raises(AssertionError, match="without the hardware"):
        Phantom().test_host_without_the_hardware_is_no_error(plugins_from(plugin), HOST)


def test_detector_contract_rejects_a_detector_that_raises() -> None:
    """A detector raising on a bare machine fails the bare-host test with its error."""

    def fail() -> list[DetectedResource]:
        raise FileNotFoundError("/dev/gizmo0")

    with pytest.raises(FileNotFoundError):
        DetectorContract().test_host_without_the_hardware_is_no_error(
            plugins_from(Detector(fail)), HOST
        )


def test_detector_contract_rejects_missing_expected_resources() -> None:
    """A detector that does not report an expected resource fails that test."""

    class ExpectsGizmos(DetectorContract):
        expected_resources = ("Gizmos",)

    plugin = Detector(lambda: [DetectedResource("Cogs", 1)])
    with pytest.raises(AssertionError, match="Gizmos"):
        ExpectsGizmos().test_reports_the_expected_resources(
            plugins_from(plugin), _config(plugin), HOST
        )


def test_contract_requires_the_hook() -> None:
    """A plugin without the contract's hook fails test_implements_the_contract_hooks."""
    with pytest.raises(AssertionError, match="ep_detect_resources"):
        DetectorContract().test_implements_the_contract_hooks(plugins_from(WorkPlugin()))


class Attributes:
    """Adds the given attributes (a callable makes them change between calls)."""

    def __init__(self, attributes: Callable[[], list[MachineAttribute]]) -> None:
        self.attributes = attributes

    @hookimpl
    def ep_machine_attributes(self, config: Config, inventory: object) -> list[MachineAttribute]:
        return self.attributes()


BAD_ATTRIBUTES = {
    "reserved-name": MachineAttribute("Cpus", 64),
    "name-not-identifier": MachineAttribute("Has-Foo", True),
    "not-a-classad-value": MachineAttribute("HasFoo", object()),
    "bad-expression": MachineAttribute("HasFoo", "Cpus > ", expression=True),
    "expression-not-text": MachineAttribute("HasFoo", 3, expression=True),
    "infinite-real": MachineAttribute("Speed", float("inf")),
}


@pytest.mark.parametrize("attribute", BAD_ATTRIBUTES.values(), ids=BAD_ATTRIBUTES.keys())
def test_attributes_contract_rejects_malformed_attributes(attribute: MachineAttribute) -> None:
    """An attribute that cannot go into a slot ad as it is fails the well-formed test."""
    plugin = Attributes(lambda: [attribute])
    with pytest.raises(AssertionError):
        MachineAttributesContract().test_attributes_are_well_formed(
            plugins_from(plugin), _config(plugin), INVENTORY
        )


def test_attributes_contract_rejects_changing_values() -> None:
    """Attributes whose values change between calls fail the repeatability test."""
    counter = iter(range(100))
    plugin = Attributes(lambda: [MachineAttribute("Tick", next(counter))])
    with pytest.raises(AssertionError):
        MachineAttributesContract().test_attributes_are_repeatable(
            plugins_from(plugin), _config(plugin), INVENTORY
        )


class Garbage:
    """A source whose fetch answers a dict instead of a ClassAd."""

    name = "garbage"

    def fetch(self, slot_ad: ClassAd) -> object:
        return {"Cmd": "/bin/true"}

    def reply(self, accepted: bool, job_ad: ClassAd, slot_ad: ClassAd) -> None:
        pass

    def evict_claim(self, job_ad: ClassAd, slot_ad: ClassAd) -> None:
        pass


def test_fetch_work_contract_rejects_a_non_ad_job() -> None:
    """A source fetching something other than a ClassAd fails the fetch test."""
    plugin = WorkPlugin(sources=[Garbage()])
    with pytest.raises(AssertionError, match="garbage fetched"):
        FetchWorkSourceContract().test_fetch_answers_a_job_ad_or_none(
            plugins_from(plugin), _config(plugin), ClassAd()
        )


def test_fetch_work_contract_requires_a_source() -> None:
    """A plugin offering no source fails the offers test."""
    plugin = WorkPlugin()
    with pytest.raises(AssertionError, match="no fetch-work source"):
        FetchWorkSourceContract().test_offers_named_sources(plugins_from(plugin), _config(plugin))


BAD_JOBS = {
    "unknown-mode": PythonCronJob("temperature", list, mode="Sometimes"),
    "periodic-without-period": PythonCronJob("temperature", list, period=0.0),
    "name-not-identifier": PythonCronJob("cpu temperature", list),
    "negative-period": PythonCronJob("temperature", list, mode="WaitForExit", period=-5.0),
}


@pytest.mark.parametrize("job", BAD_JOBS.values(), ids=BAD_JOBS.keys())
def test_cron_contract_rejects_malformed_jobs(job: PythonCronJob) -> None:
    """A cron job with a bad name, mode or period fails the well-formed test."""
    plugin = WorkPlugin(jobs=[job])
    with pytest.raises(AssertionError):
        CronJobContract().test_jobs_are_well_formed(plugins_from(plugin), _config(plugin))


def test_cron_contract_rejects_a_job_returning_no_ads() -> None:
    """A job whose run returns something other than ClassAds fails the run test."""
    plugin = WorkPlugin(jobs=[PythonCronJob("temperature", lambda: ["Temperature = 40"])])
    with pytest.raises(AssertionError, match="temperature"):
        CronJobContract().test_run_returns_ads(plugins_from(plugin), _config(plugin))
