"""The BOINC_* knobs, read and checked once: the client's job as seed 000 describes it.

HTCondor builds the backfill job ad from ``BOINC_<attribute>`` knobs, each tried under its
ClassAd name first and then an alternate name (BOINC_Executable or BOINC_Cmd...); Executable,
InitialDir and Universe are required. A value epcore cannot run is a ConfigError naming the
knob and where it was set, so that the startd logs it and leaves backfill off.

BOINC_NETWORK is epcore's own: ``loopback`` runs the client in a network namespace of its own
with only the loopback interface (a user namespace makes that possible for an unprivileged
BOINC_Owner), so that it reaches nothing outside the machine; ``host`` (the default) leaves it
on the machine's network.
"""

from __future__ import annotations

import os
import pwd
import shlex
import stat

import attrs

from epcore.config import Config
from epcore.errors import ConfigError

#: The knob names that may give each attribute, in the order HTCondor tries them.
ALTERNATES: dict[str, tuple[str, ...]] = {
    "Executable": ("BOINC_Executable", "BOINC_Cmd"),
    "InitialDir": ("BOINC_InitialDir", "BOINC_Iwd"),
    "Universe": ("BOINC_Universe", "BOINC_JobUniverse"),
    "Owner": ("BOINC_Owner",),
    "Arguments": ("BOINC_Arguments", "BOINC_Args"),
    "Environment": ("BOINC_Environment", "BOINC_Env"),
    "Input": ("BOINC_Input", "BOINC_In"),
    "Output": ("BOINC_Output", "BOINC_Out"),
    "Error": ("BOINC_Error", "BOINC_Err"),
}
#: Universes seed 000 names for the client (vanilla, local, java); epcore's starter runs
#: vanilla jobs only.
UNIVERSES = {"vanilla": 5, "5": 5}
NETWORKS = ("host", "loopback")


@attrs.frozen
class BoincSettings:
    """The client's job: its program, directory, account, arguments (a list), environment
    (V2 syntax), streams, and BOINC_NETWORK."""

    executable: str
    initial_dir: str
    owner: str | None = None
    arguments: tuple[str, ...] = ()
    environment: str | None = None
    input: str | None = None
    output: str | None = None
    error: str | None = None
    network: str = "host"


def _bad(config: Config, knob: str, value: str, why: str) -> ConfigError:
    """The error for ``knob = value``: where it was set, and ``why`` it cannot be."""
    origin = config.origin(knob)
    where = ""
    if origin is not None and origin.line is not None:
        where = f" ({origin.source}, line {origin.line})"
    return ConfigError(f"{knob} = {value}{where}: {why}")


def _value(config: Config, attribute: str) -> tuple[str, str | None]:
    """The knob that sets ``attribute`` and its value (unquoted); the first name when none."""
    names = ALTERNATES[attribute]
    for name in names:
        value = config.get(name)
        if value is not None and value.strip():
            text = value.strip()
            # Seed 000: values are strings unless they start with a quote.
            if len(text) >= 2 and text[0] == text[-1] == '"':
                text = text[1:-1]
            return name, text
    return names[0], None


def _required(config: Config, attribute: str) -> tuple[str, str]:
    knob, value = _value(config, attribute)
    if value is None:
        raise ConfigError(
            f"Trying to initialize a BOINC backfill manager, but {knob} not defined, failing"
        )
    return knob, value


def _executable(config: Config) -> str:
    knob, path = _required(config, "Executable")
    if not os.path.isabs(path):
        raise _bad(config, knob, path, "not an absolute path")
    if not os.path.isfile(path) or not os.access(path, os.X_OK):
        raise _bad(config, knob, path, "no such executable program")
    return path


def _owner(config: Config) -> str | None:
    knob, owner = _value(config, "Owner")
    if owner is None:
        return None
    try:
        entry = pwd.getpwnam(owner)
    except KeyError:
        raise _bad(config, knob, owner, "no such account") from None
    if entry.pw_uid == 0:
        raise _bad(config, knob, owner, "the client never runs as root")
    return owner


def _initial_dir(config: Config, owner: str | None) -> str:
    knob, path = _required(config, "InitialDir")
    if not os.path.isabs(path):
        raise _bad(config, knob, path, "not an absolute path")
    try:
        info = os.stat(path)
    except OSError as error:
        raise _bad(config, knob, path, str(error.strerror)) from None
    if not stat.S_ISDIR(info.st_mode):
        raise _bad(config, knob, path, "not a directory")
    if owner is not None and os.geteuid() == 0:
        uid = pwd.getpwnam(owner).pw_uid
        if info.st_uid != uid and not info.st_mode & stat.S_IWOTH:
            raise _bad(config, knob, path, f"not writable by BOINC_Owner {owner}")
    return path


def _universe(config: Config) -> None:
    knob, universe = _required(config, "Universe")
    if universe.lower() not in UNIVERSES:
        raise _bad(
            config,
            knob,
            universe,
            "JobUniverse not supported (epcore runs the BOINC client in the vanilla universe)",
        )


def _arguments(config: Config) -> tuple[str, ...]:
    knob, text = _value(config, "Arguments")
    if text is None:
        return ()
    try:
        return tuple(shlex.split(text))
    except ValueError as error:
        raise _bad(config, knob, text, str(error)) from None


def _network(config: Config) -> str:
    network = (config.get("BOINC_NETWORK") or "host").strip().lower()
    if network not in NETWORKS:
        raise _bad(config, "BOINC_NETWORK", network, f"must be one of {', '.join(NETWORKS)}")
    return network


def read_settings(config: Config) -> BoincSettings:
    """The BOINC_* knobs of ``config``; ConfigError naming the first knob that is wrong."""
    _universe(config)
    executable = _executable(config)
    owner = _owner(config)
    return BoincSettings(
        executable=executable,
        initial_dir=_initial_dir(config, owner),
        owner=owner,
        arguments=_arguments(config),
        environment=_value(config, "Environment")[1],
        input=_value(config, "Input")[1],
        output=_value(config, "Output")[1],
        error=_value(config, "Error")[1],
        network=_network(config),
    )
