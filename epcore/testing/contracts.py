"""Contract tests for plugins: subclass one in your plugin's test suite and pytest runs it.

Each contract checks what epcore relies on for one kind of plugin, through the same
:class:`~epcore.plugins.Plugins` the daemon uses (strictly loaded, so a hook that does not fit
its hookspec fails too). A subclass provides a ``plugin`` fixture returning the plugin (its
module, or an object with ``@epcore.hookimpl`` methods) and may override the others::

    import pytest
    from epcore.testing.contracts import DetectorContract, MachineAttributesContract

    import epcore_gizmo.plugin

    class TestGizmoDetector(DetectorContract):
        expected_resources = ("Gizmos",)        # what it must find on ``host``

        @pytest.fixture
        def plugin(self):
            return epcore_gizmo.plugin

        @pytest.fixture
        def host(self, fake_sysfs):             # a machine that has the hardware
            fake_sysfs.write("/sys/class/gizmo/gizmo0/id", "G-1")
            return GizmoHost(fake_sysfs.root)

Overridable fixtures: ``host`` (the machine, default a 4-core FakeMachineHost), ``bare_host``
(a machine without the plugin's hardware), ``config`` (read from the class attribute
``config_text`` on ``host``, with the knobs the plugin adds), ``inventory``, ``slot_ad``.
The classes are named ``...Contract`` so pytest collects only the ``Test...`` subclasses.
The backend contracts (:class:`IsolationBackendContract`, :class:`ContainerRuntimeContract`)
live in :mod:`epcore.testing.backend_contracts`, the power backends' (:class:`PowerBackendContract`)
in :mod:`epcore.testing.power_contracts`, the backfill one (:class:`BackfillBackendContract`) in
:mod:`epcore.testing.backfill_contracts`; all are importable from here too.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from typing import ClassVar

import pytest

from epcore.classad import ClassAd
from epcore.config import Config
from epcore.plugins import Plugins
from epcore.testing.backend_contracts import ContainerRuntimeContract, IsolationBackendContract
from epcore.testing.backfill_contracts import BackfillBackendContract
from epcore.testing.contract_base import (
    IDENTIFIER,
    RESERVED_ATTRIBUTES,
    PluginContract,
    check_attribute,
    is_plain,
)
from epcore.testing.host import FakeMachineHost
from epcore.testing.power_contracts import PowerBackendContract
from epcore.types import (
    STANDARD_RESOURCES,
    DetectedResource,
    MachineHost,
    MachineInventory,
    PythonCronJob,
    ResourceDevice,
)

__all__ = [
    "IDENTIFIER",
    "RESERVED_ATTRIBUTES",
    "BackfillBackendContract",
    "ContainerRuntimeContract",
    "CronJobContract",
    "DetectorContract",
    "FetchWorkSourceContract",
    "IsolationBackendContract",
    "MachineAttributesContract",
    "PluginContract",
    "PowerBackendContract",
    "check_attribute",
    "check_device",
    "check_resource",
]

#: STARTD_CRON_<NAME>_MODE values.
CRON_MODES = ("periodic", "waitforexit", "oneshot", "ondemand")


def check_resource(resource: DetectedResource) -> None:
    """Assert that ``resource`` is one epcore can divide among slots."""
    where = f"resource {resource!r}"
    assert IDENTIFIER.match(resource.name), f"{where}: the name is not an identifier"
    standard = {name.lower(): name for name in STANDARD_RESOURCES}
    canonical = standard.get(resource.name.lower(), resource.name)
    assert resource.name == canonical, f"{where}: a standard resource is spelled {canonical}"
    assert isinstance(resource.quantity, int | float) and not isinstance(resource.quantity, bool)
    assert math.isfinite(resource.quantity) and resource.quantity >= 0, f"{where}: quantity"
    if resource.name in STANDARD_RESOURCES:
        assert resource.quantity == int(resource.quantity), f"{where}: a whole number is expected"
    if resource.devices:
        assert resource.quantity == len(resource.devices), f"{where}: quantity != devices"
        ids = [device.id for device in resource.devices]
        assert len(set(ids)) == len(ids), f"{where}: two devices have one id"
    for device in resource.devices:
        check_device(device)


def check_device(device: ResourceDevice) -> None:
    """Assert that a device has an id and a property ad that slot constraints can read."""
    assert isinstance(device, ResourceDevice), f"{device!r} is not a ResourceDevice"
    assert isinstance(device.id, str) and device.id.strip(), f"{device!r}: empty id"
    assert not any(ch.isspace() or ch == "," for ch in device.id), f"{device!r}: id separators"
    for key, value in device.properties.items():
        assert IDENTIFIER.match(key), f"{device!r}: property {key!r} is not an identifier"
        assert is_plain(value), f"{device!r}: property {key} = {value!r} is not a ClassAd value"


class DetectorContract(PluginContract):
    """A resource detector (``ep_detect_resources``).

    It reports well-formed records, the same ones on every call for one machine, and the
    ``expected_resources`` on ``host``; on ``bare_host`` (a machine without its hardware) it
    raises nothing and reports none of its ``hardware_resources`` (or a quantity of 0).
    """

    hooks = ("ep_detect_resources",)
    #: Resource names the detector must report on ``host``.
    expected_resources: ClassVar[tuple[str, ...]] = ()
    #: Resources that exist only with their hardware: absent (or 0) on ``bare_host``.
    hardware_resources: ClassVar[tuple[str, ...]] = ()

    @pytest.fixture
    def bare_host(self) -> MachineHost:
        """A machine without the hardware the detector looks for."""
        return FakeMachineHost()

    def test_reports_well_formed_resources(
        self, plugins: Plugins, config: Config, host: MachineHost
    ) -> None:
        """Every record names an identifier and has a sane quantity and devices."""
        for resource in plugins.detect_resources(config, host):
            check_resource(resource)

    def test_reports_the_expected_resources(
        self, plugins: Plugins, config: Config, host: MachineHost
    ) -> None:
        """Each name in ``expected_resources`` is reported on ``host``."""
        if not self.expected_resources:
            pytest.skip("the subclass declares no expected_resources")
        found = {resource.name for resource in plugins.detect_resources(config, host)}
        missing = [name for name in self.expected_resources if name not in found]
        assert not missing, f"not detected: {missing}; detected: {sorted(found)}"

    def test_detection_is_repeatable(
        self, plugins: Plugins, config: Config, host: MachineHost
    ) -> None:
        """Two detections on one unchanged machine agree."""
        first = plugins.detect_resources(config, host)
        assert plugins.detect_resources(config, host) == first

    def test_host_without_the_hardware_is_no_error(
        self, plugins: Plugins, bare_host: MachineHost
    ) -> None:
        """On a machine without the hardware the detector raises nothing and finds none of it."""
        config = Config.from_text(
            self.config_text, host=bare_host, defaults=plugins.config_defaults()
        )
        found = plugins.detect_resources(config, bare_host)
        for resource in found:
            check_resource(resource)
        wanted = {name.lower() for name in self.hardware_resources}
        phantom = [r for r in found if r.name.lower() in wanted and r.quantity > 0]
        assert not phantom, f"found on a machine without the hardware: {phantom}"


class MachineAttributesContract(PluginContract):
    """A plugin adding slot-ad attributes (``ep_machine_attributes``).

    Names are identifiers the startd does not compute itself, values are ClassAd values (or
    expression text that parses), the same ones on every call, and ``expected_attributes``
    are among them.
    """

    hooks = ("ep_machine_attributes",)
    #: Attribute names the plugin must add for ``inventory`` on ``host``.
    expected_attributes: ClassVar[tuple[str, ...]] = ()

    @pytest.fixture
    def inventory(self) -> MachineInventory:
        """A 4-core, 8192 MB machine's inventory."""
        return MachineInventory(
            cpus=4,
            physical_cpus=4,
            memory_mb=8192,
            disk_kb=100 * 1024 * 1024,
            swap_kb=2 * 1024 * 1024,
            detected_cpus=4,
            detected_memory_mb=8192,
        )

    def test_attributes_are_well_formed(
        self, plugins: Plugins, config: Config, inventory: MachineInventory
    ) -> None:
        """Every attribute can be stored in a slot ad and does not replace one of the startd's."""
        for attribute in plugins.machine_attributes(config, inventory):
            check_attribute(attribute)

    def test_adds_the_expected_attributes(
        self, plugins: Plugins, config: Config, inventory: MachineInventory
    ) -> None:
        """Each name in ``expected_attributes`` is added."""
        if not self.expected_attributes:
            pytest.skip("the subclass declares no expected_attributes")
        found = {a.name for a in plugins.machine_attributes(config, inventory)}
        missing = [name for name in self.expected_attributes if name not in found]
        assert not missing, f"not added: {missing}; added: {sorted(found)}"

    def test_attributes_are_repeatable(
        self, plugins: Plugins, config: Config, inventory: MachineInventory
    ) -> None:
        """Two calls for one machine agree (changing values belong in cron jobs)."""
        first = plugins.machine_attributes(config, inventory)
        assert plugins.machine_attributes(config, inventory) == first


class FetchWorkSourceContract(PluginContract):
    """A plugin offering fetch-work sources (``ep_fetch_work_sources``).

    Each source has a distinct name and the Protocol's methods; ``fetch`` for ``slot_ad``
    answers a job ad or None, and the advisory ``reply`` and ``evict_claim`` accept that job.
    """

    hooks = ("ep_fetch_work_sources",)

    @pytest.fixture
    def slot_ad(self) -> ClassAd:
        """An idle one-core slot of a fake machine."""
        ad = ClassAd()
        for name, value in (
            ("MyType", "Machine"),
            ("Name", "slot1@fake-ep"),
            ("Machine", "fake-ep"),
            ("State", "Unclaimed"),
            ("Activity", "Idle"),
            ("Cpus", 1),
            ("Memory", 1024),
            ("Disk", 1024 * 1024),
        ):
            ad[name] = value
        return ad

    def test_offers_named_sources(self, plugins: Plugins, config: Config) -> None:
        """At least one source, with distinct non-blank names and the Protocol's methods."""
        sources = plugins.fetch_work_sources(config)
        assert sources, "the plugin offers no fetch-work source"
        names = [source.name for source in sources]
        assert all(isinstance(name, str) and name.strip() for name in names), names
        assert len({name.lower() for name in names}) == len(names), names
        for source in sources:
            for method in ("fetch", "reply", "evict_claim"):
                assert callable(getattr(source, method, None)), f"{source.name} has no {method}()"

    def test_fetch_answers_a_job_ad_or_none(
        self, plugins: Plugins, config: Config, slot_ad: ClassAd
    ) -> None:
        """``fetch`` returns a ClassAd or None; a fetched job can be replied to and evicted."""
        for source in plugins.fetch_work_sources(config):
            job = source.fetch(slot_ad)
            assert job is None or isinstance(job, ClassAd), f"{source.name} fetched {job!r}"
            if job is not None:
                source.reply(True, job, slot_ad)
                source.evict_claim(job, slot_ad)


class CronJobContract(PluginContract):
    """A plugin offering Python cron jobs (``ep_cron_jobs``).

    Names are identifiers (they name STARTD_CRON knobs and prefix attributes), modes are
    STARTD_CRON's, periods are sane, and ``run`` returns ClassAds.
    """

    hooks = ("ep_cron_jobs",)

    def test_jobs_are_well_formed(self, plugins: Plugins, config: Config) -> None:
        """At least one job; each with an identifier name, a known mode and a sane period."""
        jobs = plugins.cron_jobs(config)
        assert jobs, "the plugin offers no cron job"
        for job in jobs:
            assert isinstance(job, PythonCronJob)
            assert IDENTIFIER.match(job.name), f"{job.name!r} is not an identifier"
            assert job.mode.lower() in CRON_MODES, f"{job.name}: mode {job.mode!r}"
            assert math.isfinite(job.period) and job.period >= 0, f"{job.name}: {job.period}"
            if job.mode.lower() == "periodic":
                assert job.period > 0, f"{job.name}: a periodic job needs a period"

    def test_run_returns_ads(self, plugins: Plugins, config: Config) -> None:
        """Each job's ``run`` returns a sequence of ClassAds."""
        for job in plugins.cron_jobs(config):
            ads = job.run()
            assert isinstance(ads, Sequence) and not isinstance(ads, str), f"{job.name}: {ads!r}"
            assert all(isinstance(ad, ClassAd) for ad in ads), f"{job.name}: {ads!r}"
