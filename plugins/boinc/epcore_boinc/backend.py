"""The BOINC backfill backend: the client's job ad, its CPUs and what it does.

The startd runs the job :meth:`BoincBackend.start` returns through a starter: the client in
BOINC_InitialDir (its data directory) as BOINC_Owner, always with ``--gui_rpc_unix_domain``
so that the startd can reach it through ``boinc_socket`` there whatever network it is in.
The CPUs it may use go into ``global_prefs_override.xml`` (``max_ncpus_pct`` of the
machine's CPUs, for "in use" and "not in use" alike, with nothing that suspends computing
because the machine is busy: the startd's policy decides that), which the client reads when
it starts and again when told to over GUI RPC.
"""

from __future__ import annotations

import math
import os
import pwd
import shutil
import tempfile

from epcore.classad import ClassAd
from epcore.config import Config
from epcore.errors import ConfigError
from epcore.types import BackfillStatus
from epcore_boinc.rpc import GuiRpc
from epcore_boinc.settings import BoincSettings, read_settings

NAME = "BOINC"
PREFERENCES_FILE = "global_prefs_override.xml"
#: Arguments the startd needs on every client's command line.
REQUIRED_ARGUMENTS = ("--gui_rpc_unix_domain",)
#: What runs the client in a network namespace with only loopback (BOINC_NETWORK =
#: loopback): a user namespace owns the new network namespace, so that the unprivileged
#: account may bring its loopback up; the client is root only inside it.
LOOPBACK_SCRIPT = '{ip} link set lo up && exec "$0" "$@"'


def v2_arguments(arguments: list[str]) -> str:
    """``arguments`` in HTCondor's V2 syntax: an argument with blanks or quotes goes in single
    quotes, a single quote in it doubled."""
    quoted = []
    for argument in arguments:
        if argument and not any(c.isspace() or c in "'\"" for c in argument):
            quoted.append(argument)
        else:
            quoted.append("'" + argument.replace("'", "''") + "'")
    return " ".join(quoted)


def preferences(cpus: int, machine_cpus: int) -> str:
    """The preferences override that lets the client use ``cpus`` of ``machine_cpus``."""
    percent = min(100.0, math.ceil(10000.0 * cpus / max(machine_cpus, 1)) / 100.0)
    return (
        "<global_preferences>\n"
        f"  <max_ncpus_pct>{percent:.2f}</max_ncpus_pct>\n"
        f"  <niu_max_ncpus_pct>{percent:.2f}</niu_max_ncpus_pct>\n"
        "  <cpu_usage_limit>100</cpu_usage_limit>\n"
        "  <niu_cpu_usage_limit>100</niu_cpu_usage_limit>\n"
        "  <suspend_cpu_usage>0</suspend_cpu_usage>\n"
        "  <niu_suspend_cpu_usage>0</niu_suspend_cpu_usage>\n"
        "  <run_if_user_active>1</run_if_user_active>\n"
        "  <run_on_batteries>1</run_on_batteries>\n"
        "  <idle_time_to_run>0</idle_time_to_run>\n"
        "</global_preferences>\n"
    )


class BoincBackend:
    """The BOINC client as the startd's backfill (:class:`~epcore.types.BackfillBackend`)."""

    name = NAME

    def __init__(self, config: Config, machine_cpus: int | None = None) -> None:
        self.settings: BoincSettings = read_settings(config)
        self.machine_cpus = machine_cpus or os.cpu_count() or 1
        # A second at most: the startd asks from its loop.
        self.rpc = GuiRpc(self.settings.initial_dir, timeout=1.0)
        self.launcher: tuple[str, ...] = ()
        self.cpus = 0
        if self.settings.network == "loopback":
            unshare, ip = shutil.which("unshare"), shutil.which("ip")
            if unshare is None or ip is None:
                raise ConfigError("BOINC_NETWORK = loopback needs unshare and ip on the PATH")
            self.launcher = (
                unshare,
                "--user",
                "--map-root-user",
                "--net",
                "--",
                "/bin/sh",
                "-c",
                # The client's environment need not have a PATH.
                LOOPBACK_SCRIPT.format(ip=ip),
            )

    def _write_preferences(self, cpus: int) -> None:
        self.cpus = cpus
        directory = self.settings.initial_dir
        fd, temporary = tempfile.mkstemp(prefix=".prefs", dir=directory)
        try:
            with os.fdopen(fd, "w") as file:
                file.write(preferences(cpus, self.machine_cpus))
            os.chmod(temporary, 0o644)
            if self.settings.owner is not None and os.geteuid() == 0:
                entry = pwd.getpwnam(self.settings.owner)
                os.chown(temporary, entry.pw_uid, entry.pw_gid)
            os.replace(temporary, os.path.join(directory, PREFERENCES_FILE))
        except BaseException:
            if os.path.exists(temporary):
                os.unlink(temporary)
            raise

    def job(self) -> ClassAd:
        """The client's job ad (seed 000's local job from the BOINC_* knobs)."""
        s = self.settings
        client = [s.executable, *s.arguments]
        client += [a for a in REQUIRED_ARGUMENTS if a not in s.arguments]
        command = [*self.launcher, *client]
        job = ClassAd()
        job["Cmd"] = command[0]
        job["Arguments"] = v2_arguments(command[1:])
        job["Iwd"] = s.initial_dir
        job["JobUniverse"] = 5
        if s.owner is not None:
            job["Owner"] = s.owner
        if s.environment is not None:
            job["Environment"] = s.environment
        for attribute, value in (("In", s.input), ("Out", s.output), ("Err", s.error)):
            if value is not None:
                job[attribute] = value
        return job

    # -- BackfillBackend ----------------------------------------------------------------------

    def start(self, cpus: int) -> ClassAd:
        self._write_preferences(cpus)
        return self.job()

    def resize(self, cpus: int) -> None:
        self._write_preferences(cpus)
        self.rpc.read_preferences()

    def stop(self) -> None:
        self.rpc.quit()

    def status(self) -> BackfillStatus:
        tasks = self.rpc.tasks()
        projects = self.rpc.project_names()
        running = [t for t in tasks if t.running]
        shown = ", ".join(f"{t.name} {t.fraction_done:.0%}" for t in running)
        return BackfillStatus(
            running=True,
            cpus=self.cpus,
            tasks=len(running),
            cpu_seconds=sum(t.cpu_seconds for t in tasks),
            detail=f"projects: {', '.join(projects) or 'none'}; computing: {shown or 'nothing'}",
        )
