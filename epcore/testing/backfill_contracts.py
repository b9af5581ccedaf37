"""Contract tests for backfill plugins (``ep_backfill_backends``).

What the startd relies on from a backfill system, checked without running its client: the
plugin offers a spec named ``backfill_name`` whose factory builds a
:class:`~epcore.types.BackfillBackend` of that name without starting anything; a
configuration the system cannot run is a ConfigError naming the knob (the startd logs it and
leaves backfill off); ``start`` gives a job ad a starter can run (an absolute program that
exists, an existing initial directory, the vanilla universe); and asking a client that does
not run (resize, stop, status) raises nothing but an EpError, which the startd catches in its
loop. Running the real client through a startd is the plugin's own test (see
``plugins/boinc/tests``)::

    class TestBoincContract(BackfillBackendContract):
        backfill_name = "BOINC"
        broken_knob = "BOINC_Executable"

        @pytest.fixture
        def plugin(self):
            return epcore_boinc.plugin

        @pytest.fixture
        def backfill_config_text(self, tmp_path):
            return f"BOINC_Executable = /usr/bin/boinc\\nBOINC_InitialDir = {tmp_path}\\n..."

        @pytest.fixture
        def broken_config_text(self, backfill_config_text):
            return backfill_config_text + "BOINC_Executable = /nonexistent\\n"
"""

from __future__ import annotations

import contextlib
import os
from typing import ClassVar

import psutil
import pytest

from epcore.config import Config
from epcore.errors import ConfigError, EpError
from epcore.plugins import Plugins
from epcore.testing.contract_base import PluginContract
from epcore.types import BackfillBackend, BackfillBackendSpec, BackfillStatus, MachineHost


def _children() -> set[int]:
    return {child.pid for child in psutil.Process().children(recursive=True)}


class BackfillBackendContract(PluginContract):
    """The backfill backend contract (module docstring)."""

    hooks = ("ep_backfill_backends",)
    #: The name BACKFILL_SYSTEM gives the backend.
    backfill_name: ClassVar[str] = ""
    #: The knob the ConfigError of ``broken_config_text`` must name.
    broken_knob: ClassVar[str] = ""

    @pytest.fixture
    def backfill_config_text(self) -> str:
        """A configuration the backend can run with (default: ``config_text``)."""
        return self.config_text

    @pytest.fixture
    def broken_config_text(self) -> str | None:
        """A configuration the backend must refuse (None: not tested)."""
        return None

    @pytest.fixture
    def config(self, plugins: Plugins, host: MachineHost, backfill_config_text: str) -> Config:
        """``backfill_config_text`` read on ``host``, with the knobs the plugin adds."""
        return Config.from_text(backfill_config_text, host=host, defaults=plugins.config_defaults())

    @pytest.fixture
    def spec(self, plugins: Plugins) -> BackfillBackendSpec:
        """The spec named ``backfill_name``."""
        specs = {spec.name.lower(): spec for spec in plugins.backfill_backends()}
        assert self.backfill_name.lower() in specs, f"offered: {sorted(specs)}"
        return specs[self.backfill_name.lower()]

    @pytest.fixture
    def backend(
        self, plugins: Plugins, spec: BackfillBackendSpec, config: Config
    ) -> BackfillBackend:
        """The backend, built for ``config``."""
        return plugins.build_backfill_backend(spec, config)

    def test_the_spec_is_named_and_builds_a_backend_without_starting_anything(
        self, plugins: Plugins, spec: BackfillBackendSpec, config: Config
    ) -> None:
        """The factory builds a BackfillBackend of the spec's name and starts no process."""
        before = _children()
        built = plugins.build_backfill_backend(spec, config)
        assert isinstance(built, BackfillBackend)
        assert built.name == spec.name
        assert _children() - before == set()

    def test_a_configuration_it_cannot_run_is_a_config_error_naming_the_knob(
        self,
        plugins: Plugins,
        spec: BackfillBackendSpec,
        host: MachineHost,
        broken_config_text: str | None,
    ) -> None:
        """The factory refuses the broken configuration with a ConfigError naming the knob."""
        if broken_config_text is None:
            pytest.skip("the contract subclass gives no broken configuration")
        config = Config.from_text(broken_config_text, host=host, defaults=plugins.config_defaults())
        with pytest.raises(ConfigError) as raised:
            plugins.build_backfill_backend(spec, config)
        assert self.broken_knob.lower() in str(raised.value).lower()

    def test_start_gives_a_job_ad_a_starter_can_run(self, backend: BackfillBackend) -> None:
        """start(1) returns a vanilla job whose Cmd is an absolute program that exists and
        whose Iwd is an existing directory, and starts nothing itself."""
        before = _children()
        job = backend.start(1)
        assert _children() - before == set()
        cmd, iwd = job.evaluate("Cmd"), job.evaluate("Iwd")
        assert isinstance(cmd, str) and os.path.isabs(cmd) and os.access(cmd, os.X_OK), cmd
        assert isinstance(iwd, str) and os.path.isdir(iwd), iwd
        assert job.evaluate("JobUniverse") == 5

    def test_a_client_that_does_not_run_gives_only_ep_errors(
        self, backend: BackfillBackend
    ) -> None:
        """resize, stop and status on a client that was never started raise at most an
        EpError (the startd catches those in its loop); status says it is not running."""
        with contextlib.suppress(EpError):
            backend.resize(2)
        with contextlib.suppress(EpError):
            backend.stop()
        try:
            status = backend.status()
        except EpError:
            return
        assert isinstance(status, BackfillStatus)
        assert not status.running
