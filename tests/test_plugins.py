"""The plugin manager: loading (built-ins, entry points, extras), every hook's typed call, the
rules that make a plugin an error, and a third-party plugin installed into a real venv."""

from __future__ import annotations

import importlib.util
import itertools
import json
import logging
import os
import re
import shutil
import sys
import time
from collections.abc import Callable, Collection, Iterator, Sequence
from pathlib import Path

import pytest

import epcore
import epcore.plugins as plugins_module
from epcore import hookimpl
from epcore.classad import ERROR, ClassAd, parse_expr
from epcore.classad.functions import builtin_functions
from epcore.config import Config, KnobDefault
from epcore.errors import PluginError
from epcore.plugins import BUILTIN_PLUGINS, Plugins, load_plugins
from epcore.testing.host import FakeMachineHost
from epcore.testing.offers import BackendOffer
from epcore.testing.system import missing
from epcore.testing.venv import (
    can_build_wheels,
    install_this_epcore,
    make_venv,
    output_of,
    pip_install,
    real_venv,
    run_command,
)
from epcore.types import (
    ClassAdFunction,
    ContainerRuntimeSpec,
    DetectedResource,
    HostReadings,
    IsolationBackend,
    IsolationBackendSpec,
    JobFinished,
    JobStarted,
    JobTracking,
    MachineAttribute,
    MachineInventory,
    PythonCronJob,
    SlotStateChange,
    TrackingRequest,
)

ROOT = Path(__file__).resolve().parent.parent
PLUGIN_SOURCES = ROOT / "tests" / "plugin_fixtures"

INVENTORY = MachineInventory(
    cpus=4,
    physical_cpus=4,
    memory_mb=8192,
    disk_kb=1_000_000,
    swap_kb=0,
    detected_cpus=4,
    detected_memory_mb=8192,
)


def only(*plugins: tuple[str, object], strict: bool = True) -> Plugins:
    """Exactly ``plugins`` (name, plugin): no built-in, no installed plugin."""
    return load_plugins(builtins=False, entry_points_group=None, extra=plugins, strict=strict)


@pytest.fixture
def host() -> FakeMachineHost:
    """A fake 4-core machine."""
    return FakeMachineHost()


@pytest.fixture
def config(host: FakeMachineHost) -> Config:
    """An empty configuration on the fake machine."""
    return Config.from_text("", host=host)


# -- small plugins ----------------------------------------------------------------------------


class Detector:
    """Reports the given resources."""

    def __init__(self, *resources: DetectedResource) -> None:
        self.resources = resources

    @hookimpl
    def ep_detect_resources(self, config: Config, host: object) -> Sequence[DetectedResource]:
        return list(self.resources)


class Attributes:
    """Adds the given attributes."""

    def __init__(self, *attributes: MachineAttribute) -> None:
        self.attributes = attributes

    @hookimpl
    def ep_machine_attributes(self, config: Config, inventory: object) -> Sequence[object]:
        return list(self.attributes)


class Knobs:
    """Adds the given knobs."""

    def __init__(self, *knobs: KnobDefault) -> None:
        self.knobs = knobs

    @hookimpl
    def ep_config_defaults(self) -> Sequence[KnobDefault]:
        return list(self.knobs)


class Functions:
    """Adds ClassAd functions of the given names (each answers its own name)."""

    def __init__(self, *names: str) -> None:
        self.names = names

    @hookimpl
    def ep_classad_functions(self) -> Sequence[ClassAdFunction]:
        return [ClassAdFunction(name, lambda call, name=name: name) for name in self.names]


class Readings:
    """Answers the given readings."""

    def __init__(self, readings: HostReadings | None) -> None:
        self.readings = readings

    @hookimpl
    def ep_host_readings(self, config: Config, host: object, now: float) -> object:
        return self.readings


#: Offers the given backend specs through every backend hook.
Backends = BackendOffer


class Listener:
    """Records every notification; raises on them when ``fail`` is set."""

    def __init__(self, fail: bool = False) -> None:
        self.heard: list[object] = []
        self.fail = fail

    def _hear(self, event: object) -> None:
        self.heard.append(event)
        if self.fail:
            raise RuntimeError("listener is broken")

    @hookimpl
    def ep_slot_state_changed(self, change: SlotStateChange) -> None:
        self._hear(change)

    @hookimpl
    def ep_job_started(self, event: JobStarted) -> None:
        self._hear(event)

    @hookimpl
    def ep_job_finished(self, event: JobFinished) -> None:
        self._hear(event)


class Tracker:
    """The smallest isolation backend: it never tracks anything."""

    def __init__(self, name: str) -> None:
        self.name = name

    def available(self) -> bool:
        return True

    def wanted(self) -> bool:
        return True

    def track(self, request: TrackingRequest) -> JobTracking:
        raise AssertionError("not tracked here")

    def sweep(self, keep: Collection[str], prefixes: Collection[str]) -> tuple[str, ...]:
        return ()

    def reclaim(self, job_key: str) -> bool:
        return False


def isolation(name: str, built: str | None = None) -> IsolationBackendSpec:
    """An isolation spec whose factory builds a :class:`Tracker` named ``built`` (``name``)."""
    return IsolationBackendSpec(name, lambda config: Tracker(built or name))


def knob(name: str) -> KnobDefault:
    return KnobDefault(name, "7", "int", f"{name}, added by a test plugin.")


# -- loading ----------------------------------------------------------------------------------


def test_nothing_loaded_means_no_plugin_and_empty_answers(config: Config, host: object) -> None:
    """Without built-ins, entry points or extras, no plugin is loaded and hooks answer nothing."""
    plugins = only()
    assert plugins.describe() == []
    assert plugins.detect_resources(config, host) == []  # type: ignore[arg-type]
    assert plugins.machine_attributes(config, INVENTORY) == []
    assert plugins.config_defaults() == ()
    assert plugins.host_readings(config, host, 0.0) == HostReadings(0.0, 0.0, 0, 0)  # type: ignore[arg-type]


def test_builtins_are_described_with_the_epcore_distribution() -> None:
    """Built-in plugins are registered first, with distribution "epcore" and its version."""
    plugins = load_plugins(entry_points_group=None, strict=True)
    infos = plugins.describe()
    names = [module.rsplit(".", 1)[-1] for module in BUILTIN_PLUGINS]
    assert [info.name for info in infos] == names
    assert {(info.distribution, info.version) for info in infos} == {("epcore", epcore.__version__)}
    assert all(info.hooks for info in infos)


def test_extra_plugins_are_described_after_builtins() -> None:
    """An extra plugin comes after the built-ins, named as given, with the hooks it implements."""
    plugins = load_plugins(
        entry_points_group=None, extra=[("mine", Detector()), ("yours", Listener())], strict=True
    )
    infos = plugins.describe()
    assert [info.name for info in infos][-2:] == ["mine", "yours"]
    assert infos[-2].hooks == ("ep_detect_resources",)
    assert infos[-2].distribution == "Detector"
    assert infos[-1].hooks == ("ep_job_finished", "ep_job_started", "ep_slot_state_changed")


def test_a_failing_builtin_is_skipped_like_any_plugin(
    monkeypatch: pytest.MonkeyPatch, caplog: pytest.LogCaptureFixture
) -> None:
    """A built-in module that cannot be imported is logged and skipped, or raised when strict."""
    monkeypatch.setattr(plugins_module, "BUILTIN_PLUGINS", ("epcore.builtin.no_such_plugin",))
    with caplog.at_level(logging.ERROR, logger="epcore.plugins"):
        plugins = load_plugins(entry_points_group=None)
    (failure,) = plugins.failures
    assert (failure.name, failure.origin) == ("no_such_plugin", "epcore.builtin.no_such_plugin")
    assert "ModuleNotFoundError" in failure.error
    assert any("no_such_plugin" in r.getMessage() for r in caplog.records)
    with pytest.raises(PluginError, match="no_such_plugin"):
        load_plugins(entry_points_group=None, strict=True)


# -- entry points, through a real distribution on sys.path ------------------------------------

_counter = itertools.count()


@pytest.fixture
def dist_site(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[Callable[..., str]]:
    """A factory installing a distribution (metadata, entry points, modules) into a directory
    on sys.path, as an unpacked wheel; returns a fresh entry-point group for the test."""
    site = tmp_path / "site"
    site.mkdir()
    monkeypatch.syspath_prepend(str(site))
    group = f"epcore_test_{os.getpid()}_{next(_counter)}"
    modules: list[str] = []

    def install(dist: str, version: str, entries: dict[str, str], files: dict[str, str]) -> str:
        info = site / f"{dist.replace('-', '_')}-{version}.dist-info"
        info.mkdir()
        info.joinpath("METADATA").write_text(
            f"Metadata-Version: 2.1\nName: {dist}\nVersion: {version}\n", encoding="utf-8"
        )
        lines = [f"[{group}]", *(f"{name} = {target}" for name, target in entries.items())]
        info.joinpath("entry_points.txt").write_text("\n".join(lines) + "\n", encoding="utf-8")
        for module, text in files.items():
            site.joinpath(f"{module}.py").write_text(text, encoding="utf-8")
            modules.append(module)
        importlib.invalidate_caches()
        return group

    yield install
    for module in modules:
        sys.modules.pop(module, None)


GOOD_MODULE = """
from epcore import hookimpl
from epcore.types import DetectedResource

@hookimpl
def ep_detect_resources(config, host):
    return [DetectedResource("Widgets", 2)]
"""

BAD_SIGNATURE_MODULE = """
from epcore import hookimpl
from epcore.types import DetectedResource, MachineAttribute

@hookimpl
def ep_detect_resources(config, host):
    return [DetectedResource("Gears", 9)]

@hookimpl
def ep_machine_attributes(config, inventory, mood):
    return [MachineAttribute("Mood", mood)]
"""


def test_entry_point_plugins_load_with_their_distribution(
    dist_site: Callable[..., str], config: Config, host: object
) -> None:
    """An entry point's plugin is registered under its entry-point name with its dist's version."""
    suffix = next(_counter)
    group = dist_site(
        "epcore-widgets",
        "2.5.1",
        {"widgets": f"widgets_{suffix}"},
        {f"widgets_{suffix}": GOOD_MODULE},
    )
    plugins = load_plugins(builtins=False, entry_points_group=group, strict=True)
    (info,) = plugins.describe()
    assert (info.name, info.distribution, info.version) == ("widgets", "epcore-widgets", "2.5.1")
    assert info.hooks == ("ep_detect_resources",)
    assert [r.name for r in plugins.detect_resources(config, host)] == ["Widgets"]  # type: ignore[arg-type]


def test_entry_point_failing_at_import_is_logged_and_skipped_unless_strict(
    dist_site: Callable[..., str], caplog: pytest.LogCaptureFixture
) -> None:
    """A plugin raising at import is a logged failure (the others load), a PluginError if strict."""
    suffix = next(_counter)
    group = dist_site(
        "epcore-mixed",
        "1.0",
        {"good": f"good_{suffix}", "broken": f"broken_{suffix}"},
        {f"good_{suffix}": GOOD_MODULE, f"broken_{suffix}": "raise OSError('no gizmo driver')\n"},
    )
    with caplog.at_level(logging.ERROR, logger="epcore.plugins"):
        plugins = load_plugins(builtins=False, entry_points_group=group)
    assert [info.name for info in plugins.describe()] == ["good"]
    (failure,) = plugins.failures
    assert failure.name == "broken"
    assert failure.origin == f"broken_{suffix}"
    assert failure.error == "OSError: no gizmo driver"
    (record,) = [r for r in caplog.records if r.levelno == logging.ERROR]
    assert "broken" in record.getMessage() and "no gizmo driver" in record.getMessage()
    with pytest.raises(PluginError, match=r"plugin broken .*no gizmo driver"):
        load_plugins(builtins=False, entry_points_group=group, strict=True)


def test_entry_point_with_a_wrong_signature_is_skipped_whole(
    dist_site: Callable[..., str], config: Config, host: object
) -> None:
    """A plugin with one bad hookimpl is skipped entirely: its valid hooks are not called either."""
    suffix = next(_counter)
    group = dist_site(
        "epcore-moody",
        "1.0",
        {"moody": f"moody_{suffix}"},
        {f"moody_{suffix}": BAD_SIGNATURE_MODULE},
    )
    plugins = load_plugins(builtins=False, entry_points_group=group)
    (failure,) = plugins.failures
    assert failure.name == "moody" and "mood" in failure.error
    assert plugins.describe() == []
    assert plugins.detect_resources(config, host) == []  # type: ignore[arg-type]
    with pytest.raises(PluginError, match="moody"):
        load_plugins(builtins=False, entry_points_group=group, strict=True)


# -- what makes a plugin invalid --------------------------------------------------------------


class WrongSignature:
    @hookimpl
    def ep_detect_resources(self, config: Config, host: object, extra: int) -> list[object]:
        return []


class UnknownHook:
    @hookimpl
    def ep_detect_resource(self, config: Config, host: object) -> list[object]:
        return []


class Unmarked:
    def ep_detect_resources(self, config: Config, host: object) -> list[object]:
        return []


class NotificationWrapper:
    @hookimpl(wrapper=True)
    def ep_job_started(self, event: JobStarted) -> Iterator[None]:
        yield


@pytest.mark.parametrize(
    ("plugin", "problem"),
    [
        (WrongSignature(), "extra"),
        (UnknownHook(), "ep_detect_resource is not an epcore hook"),
        (Unmarked(), "ep_detect_resources is not marked with @epcore.hookimpl"),
        (NotificationWrapper(), "ep_job_started is a notification hook"),
    ],
    ids=["wrong-signature", "unknown-hook", "unmarked", "notification-wrapper"],
)
def test_invalid_plugin_is_a_plugin_error_naming_it(plugin: object, problem: str) -> None:
    """A hookimpl that does not fit the hookspecs is a PluginError naming the plugin and why."""
    with pytest.raises(PluginError, match="plugin faulty") as raised:
        only(("faulty", plugin))
    assert problem in str(raised.value)


def test_invalid_plugin_leaves_no_hook_behind(config: Config, host: object) -> None:
    """After a failed registration none of the plugin's hooks is called."""

    class HalfGood(WrongSignature):
        @hookimpl
        def ep_config_defaults(self) -> list[KnobDefault]:
            return [knob("HALF_GOOD")]

    plugins = only()
    with pytest.raises(PluginError):
        plugins.register(HalfGood(), "half", "test", "")
    assert plugins.describe() == []
    assert plugins.config_defaults() == ()


def test_two_plugins_of_one_name_is_an_error() -> None:
    """Registering a second plugin under a taken name is a PluginError naming it."""
    with pytest.raises(PluginError, match="plugin twin"):
        only(("twin", Detector()), ("twin", Detector()))


# -- each hook --------------------------------------------------------------------------------


def test_config_defaults_collects_every_plugins_knobs() -> None:
    """Knobs of all plugins come back, in registration order."""
    plugins = only(("a", Knobs(knob("A_ONE"), knob("A_TWO"))), ("b", Knobs(knob("B_ONE"))))
    assert [k.name for k in plugins.config_defaults()] == ["A_ONE", "A_TWO", "B_ONE"]


@pytest.mark.parametrize(
    ("plugins", "message"),
    [
        (
            [("a", Knobs(knob("SHARED"))), ("b", Knobs(knob("shared")))],
            "plugins a, b: .*shared",
        ),
        ([("a", Knobs(knob("TWICE"), knob("TWICE")))], "plugin a: .*TWICE"),
        ([("a", Knobs(knob("START")))], "plugin a: .*epcore's configuration knob START"),
    ],
    ids=["two-plugins", "one-plugin-twice", "epcore-knob"],
)
def test_config_defaults_duplicate_knob_is_an_error(
    plugins: list[tuple[str, object]], message: str
) -> None:
    """A knob defined twice, or one epcore defines, is a PluginError naming plugins and knob."""
    with pytest.raises(PluginError, match=message):
        only(*plugins).config_defaults()


@pytest.mark.parametrize("loader", ["from_text", "load"])
def test_plugin_knob_is_visible_through_config(loader: str, host: FakeMachineHost) -> None:
    """A plugin's ep_config_defaults knob has its default in Config, expands, and can be set."""
    plugins = only(("gizmo", Knobs(KnobDefault("GIZMO_COUNT", "3", "int", "Gizmos per slot."))))
    text = "TOTAL_GIZMOS = $(GIZMO_COUNT) * 2\n"

    def read(extra: str) -> Config:
        if loader == "from_text":
            return Config.from_text(text + extra, host=host, defaults=plugins.config_defaults())
        path = f"/etc/condor/condor_config{len(extra)}"
        host.files[path] = text + extra  # the fake machine serves the configuration files
        return Config.load(path, host=host, defaults=plugins.config_defaults())

    config = read("")
    assert config.get("GIZMO_COUNT") == "3"
    assert config.get_int("GIZMO_COUNT", 0) == 3
    assert config.get("TOTAL_GIZMOS") == "3 * 2"
    assert read("GIZMO_COUNT = 5\n").get("TOTAL_GIZMOS") == "5 * 2"
    assert Config.from_text(text, host=host).get("GIZMO_COUNT") is None


def test_detect_resources_in_registration_order(config: Config, host: object) -> None:
    """Resources of several detectors come in registration order (pluggy calls them reversed)."""
    plugins = only(
        ("first", Detector(DetectedResource("Cpus", 4), DetectedResource("Memory", 1024))),
        ("second", Detector(DetectedResource("GPUs", 2))),
        ("third", Detector(DetectedResource("Cogs", 8))),
    )
    found = plugins.detect_resources(config, host)  # type: ignore[arg-type]
    assert [r.name for r in found] == ["Cpus", "Memory", "GPUs", "Cogs"]


def test_detect_resources_later_plugin_wins(config: Config, host: object) -> None:
    """Two plugins reporting one resource (any case): the later one's record, at the first place."""
    plugins = only(
        ("builtin-like", Detector(DetectedResource("GPUs", 1), DetectedResource("Cpus", 4))),
        ("third-party", Detector(DetectedResource("gpus", 3, source="better"))),
    )
    found = plugins.detect_resources(config, host)  # type: ignore[arg-type]
    assert found == [DetectedResource("gpus", 3, source="better"), DetectedResource("Cpus", 4)]


def test_installed_plugin_overrides_builtin_detection(
    config: Config, host: FakeMachineHost
) -> None:
    """An extra plugin (registered after the built-ins) replaces the built-in Cpus."""
    plugins = load_plugins(
        entry_points_group=None, extra=[("override", Detector(DetectedResource("Cpus", 99)))]
    )
    found = {r.name: r.quantity for r in plugins.detect_resources(config, host)}
    assert found["Cpus"] == 99
    builtin_only = load_plugins(entry_points_group=None, strict=True)
    assert {r.name: r.quantity for r in builtin_only.detect_resources(config, host)}["Cpus"] == 4


@pytest.mark.parametrize(
    ("answer", "problem"),
    [
        (DetectedResource("Cogs", 1), "not a sequence"),
        (["Cogs"], "not a DetectedResource"),
        ([DetectedResource("Cogs", 1), DetectedResource("COGS", 2)], "two records of one name"),
        ([DetectedResource("", 1)], "without a name"),
        ([DetectedResource("Cogs", -1)], "not a finite number"),
        ([DetectedResource("Cogs", float("nan"))], "not a finite number"),
    ],
    ids=["single-record", "wrong-type", "duplicate", "no-name", "negative", "nan"],
)
def test_detector_breaking_the_contract_is_named(
    answer: object, problem: str, config: Config, host: object
) -> None:
    """A detector answering the wrong shape is a PluginError naming that plugin only."""

    class Wrong:
        @hookimpl
        def ep_detect_resources(self, config: Config, host: object) -> object:
            return answer

    plugins = only(("fine", Detector(DetectedResource("Cpus", 1))), ("wrong", Wrong()))
    with pytest.raises(PluginError, match=r"ep_detect_resources of plugin wrong\b") as raised:
        plugins.detect_resources(config, host)  # type: ignore[arg-type]
    assert problem in str(raised.value)


def test_host_readings_first_answer_from_the_latest_plugin(config: Config, host: object) -> None:
    """ep_host_readings is first-result: the plugin registered last answers, None abstains."""
    early = HostReadings(1.0, 0.5, 10, 20)
    late = HostReadings(2.0, 1.0, 30, 40)
    plugins = only(
        ("early", Readings(early)), ("late", Readings(late)), ("abstains", Readings(None))
    )
    assert plugins.host_readings(config, host, 100.0) == late  # type: ignore[arg-type]
    assert only(("early", Readings(early))).host_readings(config, host, 1.0) == early  # type: ignore[arg-type]


def test_host_readings_of_the_wrong_type_is_named(config: Config, host: object) -> None:
    """A reading that is not a HostReadings record is a PluginError naming the plugin."""
    plugins = only(("odd", Readings((1.0, 0.0, 0, 0))))  # type: ignore[arg-type]
    with pytest.raises(PluginError, match="plugin odd"):
        plugins.host_readings(config, host, 0.0)  # type: ignore[arg-type]


def test_machine_attributes_later_plugin_wins(config: Config) -> None:
    """Attributes of all plugins come back; one name twice keeps the later plugin's value."""
    plugins = only(
        ("site", Attributes(MachineAttribute("Site", "a"), MachineAttribute("HasFoo", True))),
        ("local", Attributes(MachineAttribute("site", "b"))),
    )
    found = plugins.machine_attributes(config, INVENTORY)
    assert [(a.name, a.value) for a in found] == [("site", "b"), ("HasFoo", True)]


def test_isolation_backends_one_per_name(config: Config) -> None:
    """Isolation specs of all plugins come back; a later plugin's name replaces an earlier one."""
    plugins = only(
        ("one", Backends(isolation("alpha"), isolation("beta"))),
        ("two", Backends(isolation("ALPHA"))),
    )
    found = plugins.isolation_backends()
    assert [s.name for s in found] == ["ALPHA", "beta"]
    assert plugins.build_isolation_backend(found[1], config).name == "beta"
    assert plugins.container_runtimes() == []


def test_backend_spec_of_the_wrong_kind_is_an_error() -> None:
    """An isolation spec offered as a container runtime is a PluginError naming the plugin."""

    class Misfiled:
        @hookimpl
        def ep_container_runtimes(self) -> list[object]:
            return [isolation("cgroup")]

    with pytest.raises(PluginError, match=r"ep_container_runtimes of plugin misfiled .* not a"):
        only(("misfiled", Misfiled())).container_runtimes()


def test_backend_factory_that_is_not_callable_is_an_error() -> None:
    """A spec whose factory cannot be called is refused when offered, naming the plugin."""
    broken = IsolationBackendSpec("gid", "not a factory")  # type: ignore[arg-type]
    with pytest.raises(PluginError, match="plugin odd: the factory of gid is not callable"):
        only(("odd", Backends(broken))).isolation_backends()


@pytest.mark.parametrize(
    ("built", "message"),
    [
        (
            lambda config: object(),
            "the factory of cgroup built <object .*>, not a IsolationBackend",
        ),
        (
            lambda config: Tracker("other"),
            "the factory of cgroup built .*, not an object named cgroup",
        ),
    ],
    ids=["not-a-backend", "misnamed"],
)
def test_backend_factory_building_the_wrong_thing_is_an_error(
    built: Callable[[Config], IsolationBackend], message: str, config: Config
) -> None:
    """What a factory builds must be its kind's Protocol, named as the spec: else a PluginError
    naming the plugin."""
    plugins = only(("maker", Backends(IsolationBackendSpec("cgroup", built))))
    (spec,) = plugins.isolation_backends()
    with pytest.raises(PluginError, match=f"plugin maker: {message}"):
        plugins.build_isolation_backend(spec, config)


def test_container_runtime_built_from_its_spec(config: Config) -> None:
    """A container runtime spec builds a ContainerRuntime; anything else is a PluginError."""

    class Runtime:
        name = "podman"

        def machine_attributes(self) -> list[MachineAttribute]:
            return []

        def runs(self, job: ClassAd, machine: ClassAd | None = None) -> bool:
            return False

        def start(self, request: object, log: object) -> object:
            raise AssertionError("not started here")

        def sweep(self, keep: Collection[str], prefixes: Collection[str]) -> tuple[str, ...]:
            return ()

        def reclaim(self, job_key: str) -> bool:
            return False

    runtime = Runtime()
    plugins = only(
        ("runtimes", Backends(ContainerRuntimeSpec("podman", lambda config: runtime))),
        ("odd", Backends(ContainerRuntimeSpec("lxc", lambda config: Tracker("lxc")))),
    )
    good, odd = plugins.container_runtimes()
    assert plugins.build_container_runtime(good, config) is runtime
    with pytest.raises(PluginError, match=r"plugin odd: .*not a ContainerRuntime"):
        plugins.build_container_runtime(odd, config)


def test_cron_jobs_and_fetch_work_sources(config: Config) -> None:
    """Cron jobs and fetch-work sources of plugins come back as offered."""

    class Source:
        name = "queue"

        def fetch(self, slot_ad: ClassAd) -> ClassAd | None:
            return None

        def reply(self, accepted: bool, job_ad: ClassAd, slot_ad: ClassAd) -> None:
            pass

        def evict_claim(self, job_ad: ClassAd, slot_ad: ClassAd) -> None:
            pass

    job = PythonCronJob("temperature", lambda: [], period=60.0)
    source = Source()

    class Work:
        @hookimpl
        def ep_cron_jobs(self, config: Config) -> list[PythonCronJob]:
            return [job]

        @hookimpl
        def ep_fetch_work_sources(self, config: Config) -> list[object]:
            return [source]

    plugins = only(("work", Work()))
    assert plugins.cron_jobs(config) == [job]
    assert plugins.fetch_work_sources(config) == [source]


def test_classad_functions_collected() -> None:
    """Functions of all plugins come back, with their implementations."""
    plugins = only(("a", Functions("gizmoCount")), ("b", Functions("siteName")))
    found = plugins.classad_functions()
    assert [f.name for f in found] == ["gizmoCount", "siteName"]
    assert found[1].impl(None) == "siteName"  # type: ignore[arg-type]


@pytest.mark.parametrize(
    ("plugins", "message"),
    [
        ([("a", Functions("gizmo")), ("b", Functions("GIZMO"))], "plugins a, b: .*function GIZMO"),
        ([("a", Functions("strcat"))], "plugin a: .*built-in ClassAd function strcat"),
    ],
    ids=["two-plugins", "built-in"],
)
def test_classad_function_defined_twice_is_an_error(
    plugins: list[tuple[str, object]], message: str
) -> None:
    """A function name two plugins define, or a built-in one, is a PluginError naming them."""
    with pytest.raises(PluginError, match=message):
        only(*plugins).classad_functions()


def test_eval_context_calls_every_plugins_functions(caplog: pytest.LogCaptureFixture) -> None:
    """The plugins' evaluation context calls each plugin's functions beside the built-ins; one
    that raises is ERROR in that evaluation and logged, naming the function."""

    class Broken:
        @hookimpl
        def ep_classad_functions(self) -> Sequence[ClassAdFunction]:
            return [ClassAdFunction("shaky", lambda call: 1 / 0)]

    context = only(("a", Functions("gizmoName")), ("b", Broken())).eval_context()
    assert parse_expr('strcat(gizmoName(), "!")').evaluate(context=context) == "gizmoName!"
    with caplog.at_level(logging.ERROR, logger="epcore.plugins"):
        assert parse_expr("shaky()").evaluate(context=context) is ERROR
    assert "ClassAd function shaky failed: ZeroDivisionError" in caplog.text
    assert set(only().eval_context().functions or {}) == set(builtin_functions())


NOTIFICATIONS: list[tuple[str, object]] = [
    ("slot_state_changed", SlotStateChange("slot1@ep", "Owner", "Idle", "Unclaimed", "Idle", 5.0)),
    ("job_started", JobStarted("slot1@ep", "12.0", 7.0)),
    ("job_finished", JobFinished("slot1@ep", "12.0", 9.0, exit_code=0)),
]


@pytest.mark.parametrize(("method", "event"), NOTIFICATIONS, ids=[n for n, _ in NOTIFICATIONS])
def test_notifications_reach_every_plugin(method: str, event: object) -> None:
    """Each notification is delivered once to every plugin that listens."""
    listeners = [Listener(), Listener(), Listener()]
    plugins = only(*[(f"listener{i}", listener) for i, listener in enumerate(listeners)])
    getattr(plugins, method)(event)
    assert [listener.heard for listener in listeners] == [[event]] * 3


@pytest.mark.parametrize(("method", "event"), NOTIFICATIONS, ids=[n for n, _ in NOTIFICATIONS])
def test_failing_listener_does_not_silence_the_others(
    method: str, event: object, caplog: pytest.LogCaptureFixture
) -> None:
    """Not strict: a listener that raises is logged and the others still hear the event."""
    before, broken, after = Listener(), Listener(fail=True), Listener()
    plugins = only(("before", before), ("broken", broken), ("after", after), strict=False)
    with caplog.at_level(logging.ERROR, logger="epcore.plugins"):
        getattr(plugins, method)(event)
    assert before.heard == broken.heard == after.heard == [event]
    assert any("plugin broken failed" in r.getMessage() for r in caplog.records)


def test_failing_listener_is_an_error_when_strict() -> None:
    """Strict: a listener that raises is a PluginError naming it and the hook."""
    plugins = only(("broken", Listener(fail=True)))
    with pytest.raises(PluginError, match="plugin broken failed in ep_job_started"):
        plugins.job_started(JobStarted("slot1@ep", "1.0", 0.0))


# -- must-show 3: a third-party plugin installed into a real virtual environment --------------

SAMPLE = "epcore_sample_plugin"
BROKEN = "epcore_broken_plugin"

#: Run inside the venv: load plugins as the daemon does, then strictly as tests do.
LOAD_SCRIPT = """
import json, logging
from epcore.config import Config
from epcore.errors import PluginError
from epcore.plugins import load_plugins
from epcore.testing.host import FakeMachineHost
from epcore.types import MachineInventory

records = []
class Keep(logging.Handler):
    def emit(self, record):
        records.append({"level": record.levelname, "message": record.getMessage()})
logging.getLogger("epcore.plugins").addHandler(Keep())

plugins = load_plugins()
host = FakeMachineHost()
config = Config.from_text("", host=host, defaults=plugins.config_defaults())
inventory = MachineInventory(4, 4, 8192, 1000, 0, 4, 8192)
try:
    load_plugins(strict=True)
    strict_error = None
except PluginError as error:
    strict_error = str(error)
print(json.dumps({
    "failures": [[f.name, f.origin, f.error] for f in plugins.failures],
    "log": records,
    "resources": {r.name: r.quantity for r in plugins.detect_resources(config, host)},
    "attributes": {a.name: a.value for a in plugins.machine_attributes(config, inventory)},
    "strict_error": strict_error,
}))
"""


@real_venv
def test_third_party_plugin_in_a_real_venv(tmp_path: Path) -> None:
    """Real venv, real pip, no mocks: an installed plugin adds Cogs and SampleSite, a plugin
    raising at import is logged and skipped, `ep plugins` lists both, strict loading fails."""
    if not can_build_wheels():
        missing("setuptools cannot build wheels offline here: pip install wheel")
    started = time.monotonic()
    sources = tmp_path / "src"
    for package in (SAMPLE, BROKEN):
        # Built from a copy: pip builds in place and would leave build/ and egg-info behind.
        shutil.copytree(
            PLUGIN_SOURCES / package,
            sources / package,
            ignore=shutil.ignore_patterns("__pycache__", "build", "*.egg-info"),
        )
    python = make_venv(tmp_path)
    install_this_epcore(python, tmp_path)
    pip_install(python, tmp_path, sources / SAMPLE, sources / BROKEN)

    ep = [python, "-c", "from epcore.cli.main import main; main()", "plugins"]
    listing = json.loads(output_of(run_command([*ep, "--json"], tmp_path)))
    plugins = {p["name"]: p for p in listing["plugins"]}
    assert plugins["sample"] == {
        "name": "sample",
        "distribution": "epcore-sample-plugin",
        "version": "1.2.0",
        "hooks": [
            "ep_classad_functions",
            "ep_config_defaults",
            "ep_detect_resources",
            "ep_job_finished",
            "ep_job_started",
            "ep_machine_attributes",
            "ep_slot_state_changed",
        ],
    }
    assert plugins["detection"]["distribution"] == "epcore"
    failures = {f["name"]: f for f in listing["failures"]}
    assert "broken" not in plugins
    assert failures["broken"]["origin"] == "epcore_broken_plugin.plugin"
    assert failures["broken"]["error"] == "ImportError: libgizmo.so.3 is not installed"

    strict = run_command([*ep, "--strict"], tmp_path)
    assert strict.returncode == 1, strict.stdout + strict.stderr
    assert "sample" in strict.stdout and "epcore-sample-plugin" in strict.stdout
    assert "broken (epcore_broken_plugin.plugin): ImportError" in strict.stdout

    loaded = json.loads(output_of(run_command([python, "-c", LOAD_SCRIPT], tmp_path)))
    assert loaded["failures"] == [
        ["broken", "epcore_broken_plugin.plugin", "ImportError: libgizmo.so.3 is not installed"]
    ]
    errors = [r["message"] for r in loaded["log"] if r["level"] == "ERROR"]
    assert len(errors) == 1 and "plugin broken" in errors[0] and "libgizmo" in errors[0]
    assert loaded["resources"]["Cogs"] == 4
    assert loaded["resources"]["Cpus"] == 4  # the built-in detector still runs beside it
    # The venv sees this interpreter's packages (--system-site-packages), so the plugins
    # installed here (the vm plugin advertises HasVM = false without VM_TYPE, as HTCondor's
    # startd does) add theirs: the sample plugin adds exactly SampleSite beside them.
    outside = json.loads(output_of(run_command([sys.executable, "-c", LOAD_SCRIPT], tmp_path)))
    assert loaded["attributes"] == {**outside["attributes"], "SampleSite": "lab"}
    assert "plugin broken" in loaded["strict_error"]

    # The plugin's own test suite, run as its author would: epcore's fixtures and contract
    # classes come through the pytest11 entry point, with no conftest.
    suite = run_command(
        [python, "-m", "pytest", "-q", "-p", "no:cacheprovider", sources / SAMPLE / "tests"],
        tmp_path,
    )
    assert suite.returncode == 0, suite.stdout + suite.stderr
    # 2 contract classes (5 + 4 tests), the plugin's own knob test and its ClassAd function
    # in START (3 cases).
    assert re.search(r"\b13 passed\b", suite.stdout), suite.stdout
    assert time.monotonic() - started < 60
