"""The startd's zygote: what it holds, what travels to it, what it imports for starters."""

from __future__ import annotations

import logging
import subprocess
import sys
from collections.abc import Collection, Sequence
from pathlib import Path

from epcore import hookimpl
from epcore.classad import ClassAd
from epcore.config import Config
from epcore.plugins import load_plugins
from epcore.startd.zygote import PortableConfig, ZygoteWork
from epcore.starter.cgroups.home import home_files
from epcore.types import ContainerJob, ContainerRuntimeSpec, MachineAttribute, RunningContainer

#: A module of the standard library no test imports (the zygote imports it for a runtime).
STARTER_MODULE = "xml.dom.pulldom"


class _Runtime:
    """A container runtime that runs the jobs whose ``WantBox`` is true."""

    name = "box"

    def machine_attributes(self) -> Sequence[MachineAttribute]:
        return ()

    def runs(self, job: ClassAd, machine: ClassAd | None = None) -> bool:
        return job.evaluate("WantBox") is True

    def start(self, request: ContainerJob, log: logging.Logger) -> RunningContainer:
        raise NotImplementedError("never started here")

    def sweep(self, keep: Collection[str], prefixes: Collection[str]) -> tuple[str, ...]:
        return ()

    def reclaim(self, job_key: str) -> bool:
        return False


class _BoxPlugin:
    @hookimpl
    def ep_container_runtimes(self) -> Sequence[ContainerRuntimeSpec]:
        return [ContainerRuntimeSpec("box", lambda config: _Runtime(), (STARTER_MODULE,))]


def _work(config: Config) -> ZygoteWork:
    plugins = load_plugins(builtins=False, entry_points_group=None, extra=[("box", _BoxPlugin())])
    return ZygoteWork(config, plugins, (), (_Runtime(),))


def test_a_runtime_s_starter_modules_are_imported_with_its_first_job() -> None:
    """The modules a container runtime's starters need are imported by the zygote when it
    forks the first starter of a job the startd says that runtime runs, not before (nor
    for a job of no runtime, or of another), and only once."""
    sys.modules.pop(STARTER_MODULE, None)
    work = _work(Config.from_text("A = 1\n"))
    work._import_for(None)
    work._import_for("other")
    assert STARTER_MODULE not in sys.modules
    work._import_for("box")
    assert STARTER_MODULE in sys.modules
    sys.modules.pop(STARTER_MODULE)
    work._import_for("box")
    assert STARTER_MODULE not in sys.modules


def test_a_new_configuration_travels_as_its_table() -> None:
    """A configuration rebuilt in the zygote from its portable form answers as the startd's
    does, with the zygote's own host and evaluation context."""
    base = Config.from_text("A = 1\n")
    new = Config.from_text("A = 2\nB = $(A) and more\nuse POLICY : Desktop\n")
    rebuilt = PortableConfig.of(new).rebuild(base)
    assert rebuilt.get("B") == "2 and more"
    assert rebuilt.get("START") == new.get("START")
    assert rebuilt.host is base.host and rebuilt.eval_context is base.eval_context


def test_the_zygote_warms_its_configuration_and_survives_a_bad_knob() -> None:
    """Expanding every knob once in the zygote skips a knob whose expansion fails (the
    starter that reads it reports the error) and keeps the others expanded."""
    config = Config.from_text("A = 1\nX = x\nBAD = $INT(X)\nGOOD = $(A)\n")
    work = _work(config)
    work.warm()
    assert config._values[("good", config.subsystem, None)] == "1"
    assert ("bad", config.subsystem, None) not in config._values


def test_home_files_name_the_zygote_s_own_group_in_each_job_group_s_hierarchy() -> None:
    """Each job group's cgroup.procs maps to the zygote's own group in the hierarchy that
    holds it (once each, the root group included); a hierarchy whose own group is unknown is
    passed over for the next mount that holds the file, and a file under no mount is left
    out."""
    groups = (
        (Path("/cg/memory"), "/"),
        (Path("/cg/cpu,cpuacct"), "/user.slice/x/"),
        (Path("/cg/pids"), None),
        (Path("/cg"), "/unified"),
    )
    joins = (
        "/cg/memory/base/job/cgroup.procs",
        "/cg/cpu,cpuacct/base/job/cgroup.procs",
        "/cg/cpu,cpuacct/base/other/cgroup.procs",
        "/cg/pids/base/job/cgroup.procs",
        "/cg/memoryx/base/job/cgroup.procs",
        "/elsewhere/job/cgroup.procs",
    )
    assert home_files(joins, groups) == (
        "/cg/memory/cgroup.procs",
        "/cg/cpu,cpuacct/user.slice/x/cgroup.procs",
        "/cg/unified/cgroup.procs",
    )


def test_the_transfer_client_is_imported_with_the_first_job_whose_files_travel() -> None:
    """A startd and its zygote hold no file-transfer client (CEDAR and its cryptography)
    until the zygote forks the starter of a job whose files travel here, then hold it once."""
    script = (
        "import sys\n"
        "from epcore.startd.main import build_startd\n"
        "from tests.startd.test_zygote import _work\n"
        "from epcore.config import Config\n"
        "work = _work(Config.from_text('A = 1\\n'))\n"
        "before = 'epcore.starter.fetch' in sys.modules\n"
        "work._import_transfer_client()\n"
        "print(before, 'epcore.starter.fetch' in sys.modules)\n"
    )
    root = Path(__file__).resolve().parents[2]
    done = subprocess.run(
        [sys.executable, "-c", script], cwd=root, capture_output=True, text=True, check=False
    )
    assert done.returncode == 0, done.stderr
    assert done.stdout.split() == ["False", "True"]
