"""DOCKER_EXTRA_ARGUMENTS: docker-create options read into a record of docker SDK keywords.

The knob holds ``docker create`` command-line options. They are split into words the way a
POSIX shell would split them (nothing is run) and each option is mapped onto a keyword of the
docker SDK's ``containers.create()``. There is no shell string anywhere: an option that has no
SDK keyword, or that epcore sets itself from the job or the slot, is a configuration error.

>>> extra = parse_extra_arguments("--cap-add SYS_PTRACE -e TZ=UTC --shm-size=64m")
>>> extra.create_kwargs()
{'cap_add': ['SYS_PTRACE'], 'shm_size': 67108864}
>>> extra.environment
(('TZ', 'UTC'),)
"""

from __future__ import annotations

import ipaddress
import re
import shlex
from collections.abc import Callable, Iterator
from typing import Any

import attrs

from epcore.errors import ConfigError

KNOB = "DOCKER_EXTRA_ARGUMENTS"


class DockerArgumentError(ConfigError):
    """DOCKER_EXTRA_ARGUMENTS holds a word that cannot become a docker SDK keyword."""


@attrs.frozen
class Ulimit:
    """One ``--ulimit name=soft[:hard]``; the runtime turns it into ``docker.types.Ulimit``."""

    name: str
    soft: int
    hard: int


Pairs = tuple[tuple[str, str], ...]


@attrs.frozen
class ExtraArguments:
    """The options of DOCKER_EXTRA_ARGUMENTS, one attribute per docker SDK keyword.

    None (or an empty tuple) means "not given": docker's default applies. Keyed options
    (labels, sysctls, log options, tmpfs paths, ulimits, environment) keep one value per key,
    the last given, in the order the keys first appeared.
    """

    environment: Pairs = ()
    log_driver: str | None = None
    log_options: Pairs = ()
    ulimits: tuple[Ulimit, ...] = ()
    extra_hosts: tuple[str, ...] = ()
    cap_add: tuple[str, ...] = ()
    cap_drop: tuple[str, ...] = ()
    devices: tuple[str, ...] = ()
    dns: tuple[str, ...] = ()
    dns_search: tuple[str, ...] = ()
    dns_opt: tuple[str, ...] = ()
    group_add: tuple[str, ...] = ()
    labels: Pairs = ()
    security_opt: tuple[str, ...] = ()
    sysctls: Pairs = ()
    tmpfs: Pairs = ()
    volumes: tuple[str, ...] = ()
    hostname: str | None = None
    ipc_mode: str | None = None
    runtime: str | None = None
    userns_mode: str | None = None
    uts_mode: str | None = None
    cgroup_parent: str | None = None
    cpuset_cpus: str | None = None
    cpuset_mems: str | None = None
    stop_signal: str | None = None
    init: bool | None = None
    oom_kill_disable: bool | None = None
    privileged: bool | None = None
    read_only: bool | None = None
    mem_reservation: int | None = None
    mem_swappiness: int | None = None
    oom_score_adj: int | None = None
    pids_limit: int | None = None
    cpu_period: int | None = None
    cpu_quota: int | None = None
    blkio_weight: int | None = None
    shm_size: int | None = None
    # containers.create() has no stop_timeout keyword (only the low-level create_container
    # has), so it is kept apart from create_kwargs().
    stop_timeout: int | None = None

    @classmethod
    def empty(cls) -> ExtraArguments:
        """No extra arguments at all."""
        return cls()

    def create_kwargs(self) -> dict[str, object]:
        """The ``containers.create()`` keywords given, except environment, log_config, ulimits
        (and stop_timeout, which that call does not take)."""
        kwargs: dict[str, object] = {}
        for option in _OPTIONS:
            if option.field in _KEPT_APART:
                continue
            value = getattr(self, option.field)
            if value is None or value == ():
                continue
            if option.keyed:
                kwargs[option.field] = dict(value)
            elif option.repeated:
                kwargs[option.field] = list(value)
            else:
                kwargs[option.field] = value
        return kwargs

    def to_words(self) -> tuple[str, ...]:
        """Options that parse back to this record (for logs and ``shlex.join``)."""
        words: list[str] = []
        for option in _OPTIONS:
            value = getattr(self, option.field)
            if value is None or value == ():
                continue
            name = option.names[0]
            if option.flag:
                words.append(name if value else f"{name}=false")
            elif option.keyed and option.field == "ulimits":
                words += _repeat(name, (f"{u.name}={u.soft}:{u.hard}" for u in value))
            elif option.keyed:
                joiner = ":" if option.field == "tmpfs" else "="
                words += _repeat(name, (_join_pair(k, v, joiner) for k, v in value))
            elif option.repeated:
                words += _repeat(name, value)
            else:
                words += [name, str(value)]
        return tuple(words)


def _repeat(name: str, values: Iterator[str] | tuple[str, ...]) -> list[str]:
    return [word for value in values for word in (name, value)]


def _join_pair(key: str, value: str, joiner: str) -> str:
    # A tmpfs path without options is written bare: a trailing ':' would not parse.
    return key if joiner == ":" and not value else f"{key}{joiner}{value}"


class _BadValue(Exception):
    """A value that does not fit its option; the message says what is wrong with it."""


@attrs.frozen
class _Option:
    """How one docker option maps onto the record: ``parse`` checks and converts the value
    (None for a boolean flag); ``repeated`` options accumulate, ``keyed`` ones keep the last
    value per key."""

    names: tuple[str, ...]
    field: str
    parse: Callable[[str], Any] | None
    repeated: bool = False
    keyed: bool = False

    @property
    def flag(self) -> bool:
        return self.parse is None


_INT64_MIN, _INT64_MAX = -(1 << 63), (1 << 63) - 1
_INTEGER = re.compile(r"[+-]?[0-9]+")
_SIZE = re.compile(r"([0-9]+(?:\.[0-9]+)?) ?(?:([kmgt])i?b?|b)?", re.IGNORECASE)
_SIZE_UNITS = {"": 1, "k": 1 << 10, "m": 1 << 20, "g": 1 << 30, "t": 1 << 40}
_NAME = re.compile(r"[A-Za-z0-9][A-Za-z0-9_.-]*")
_CAPABILITY = re.compile(r"[A-Za-z_]+")
_CPUSET = re.compile(r"[0-9]+(?:-[0-9]+)?(?:,[0-9]+(?:-[0-9]+)?)*")
_SIGNAL = re.compile(r"[A-Za-z][A-Za-z0-9+-]*|[0-9]+")
_NO_SPACE = re.compile(r"\S+")
_VOLUME_MODES = frozenset(
    {"ro", "rw", "z", "Z", "shared", "rshared", "slave", "rslave", "private", "rprivate"}
    | {"nocopy", "consistent", "cached", "delegated"}
)
_ULIMIT_NAMES = frozenset(
    {"core", "cpu", "data", "fsize", "locks", "memlock", "msgqueue", "nice", "nofile", "nproc"}
    | {"rss", "rtprio", "rttime", "sigpending", "stack"}
)
_TRUE_WORDS = frozenset(("1", "t", "T", "true", "TRUE", "True"))
_FALSE_WORDS = frozenset(("0", "f", "F", "false", "FALSE", "False"))


def _integer(low: int | None = None, high: int | None = None) -> Callable[[str], int]:
    def parse(text: str) -> int:
        if not _INTEGER.fullmatch(text):
            raise _BadValue(f"{text!r} is not an integer")
        value = int(text)
        lowest = _INT64_MIN if low is None else low
        highest = _INT64_MAX if high is None else high
        if not lowest <= value <= highest:
            raise _BadValue(f"{value} is outside {lowest}..{highest}")
        return value

    return parse


def parse_size(text: str) -> int:
    """Bytes from docker's size notation: ``512``, ``64k``, ``1.5g``, ``2GiB`` (1k = 1024)."""
    match = _SIZE.fullmatch(text)
    if match is None:
        raise _BadValue(f"{text!r} is not a size (a number with b, k, m or g)")
    unit = _SIZE_UNITS[(match[2] or "").lower()]
    whole, _, fraction = match[1].partition(".")
    # Whole numbers stay exact integers; a float would round sizes above 2**53.
    size = int(whole) * unit + (int(float(f"0.{fraction}") * unit) if fraction else 0)
    if size > _INT64_MAX:
        raise _BadValue(f"{text!r} is larger than docker accepts ({_INT64_MAX} bytes)")
    return size


def _matching(pattern: re.Pattern[str], what: str) -> Callable[[str], str]:
    def parse(text: str) -> str:
        if not pattern.fullmatch(text):
            raise _BadValue(f"{text!r} is not {what}")
        return text

    return parse


def _one_of(*choices: str) -> Callable[[str], str]:
    def parse(text: str) -> str:
        if text not in choices:
            raise _BadValue(f"{text!r} is not one of {', '.join(choices)}")
        return text

    return parse


def _ipc_mode(text: str) -> str:
    if text.startswith("container:") and len(text) > len("container:"):
        return text
    try:
        return _one_of("none", "private", "shareable", "host")(text)
    except _BadValue as error:
        raise _BadValue(f"{error} or container:NAME") from error


def _absolute(text: str, what: str) -> str:
    if not text.startswith("/"):
        raise _BadValue(f"{what} {text!r} is not an absolute path")
    return text


def _address(text: str) -> str:
    try:
        ipaddress.ip_address(text)
    except ValueError as error:
        raise _BadValue(f"{text!r} is not an IP address") from error
    return text


def _key_value(*, value_required: bool) -> Callable[[str], tuple[str, str]]:
    def parse(text: str) -> tuple[str, str]:
        key, equals, value = text.partition("=")
        if not key:
            raise _BadValue(f"{text!r} has no name before '='")
        if value_required and not equals:
            raise _BadValue(f"{text!r} is not NAME=value")
        return key, value

    return parse


def _environment(text: str) -> tuple[str, str]:
    key, equals, value = text.partition("=")
    if not key or not equals:
        # docker would copy NAME from its own environment; the startd's is not the job's.
        raise _BadValue(f"{text!r} is not NAME=value (a bare NAME is not taken from anywhere)")
    return key, value


def _extra_host(text: str) -> str:
    separator = min((i for i in (text.find(":"), text.find("=")) if i >= 0), default=-1)
    host, address = text[:separator], text[separator + 1 :]
    if separator <= 0 or not _NAME.fullmatch(host):
        raise _BadValue(f"{text!r} is not HOST:IP")
    if address != "host-gateway":
        _address(address)
    return f"{host}:{address}"


def _device(text: str) -> str:
    parts = text.split(":")
    if len(parts) > 3:
        raise _BadValue(f"{text!r} is not HOST[:CONTAINER[:PERMISSIONS]]")
    _absolute(parts[0], "device")
    if len(parts) > 1:
        _absolute(parts[1], "container path")
    if len(parts) > 2 and (not parts[2] or set(parts[2]) - set("rwm")):
        raise _BadValue(f"permissions {parts[2]!r} are not a combination of r, w and m")
    return text


def _tmpfs(text: str) -> tuple[str, str]:
    path, colon, options = text.partition(":")
    _absolute(path, "tmpfs")
    if colon and not options:
        raise _BadValue(f"{text!r} has an empty option list after ':'")
    return path, options


def _ulimit(text: str) -> Ulimit:
    name, equals, limits = text.partition("=")
    if not equals:
        raise _BadValue(f"{text!r} is not NAME=SOFT[:HARD]")
    if name not in _ULIMIT_NAMES:
        raise _BadValue(f"{name!r} is not a ulimit ({', '.join(sorted(_ULIMIT_NAMES))})")
    soft_text, _, hard_text = limits.partition(":")
    soft = _integer(-1)(soft_text)
    hard = _integer(-1)(hard_text) if hard_text else soft
    if hard != -1 and (soft == -1 or soft > hard):
        raise _BadValue(f"{text!r} has a soft limit above the hard limit")
    return Ulimit(name, soft, hard)


def _volume(text: str) -> str:
    parts = text.split(":")
    if len(parts) not in (2, 3):
        raise _BadValue(f"{text!r} is not HOST:CONTAINER[:MODE]")
    if not parts[0].startswith("/") and not _NAME.fullmatch(parts[0]):
        raise _BadValue(f"{parts[0]!r} is neither an absolute path nor a volume name")
    _absolute(parts[1], "container path")
    if len(parts) == 3 and not set(parts[2].split(",")) <= _VOLUME_MODES:
        raise _BadValue(f"mode {parts[2]!r} is not made of {', '.join(sorted(_VOLUME_MODES))}")
    return text


def _text(what: str) -> Callable[[str], str]:
    return _matching(_NO_SPACE, what)


_OPTIONS: tuple[_Option, ...] = (
    _Option(("--env", "-e"), "environment", _environment, repeated=True, keyed=True),
    _Option(("--log-driver",), "log_driver", _matching(_NAME, "a log driver name")),
    _Option(("--log-opt",), "log_options", _key_value(value_required=True), True, True),
    _Option(("--ulimit",), "ulimits", _ulimit, repeated=True, keyed=True),
    _Option(("--add-host",), "extra_hosts", _extra_host, repeated=True),
    _Option(("--cap-add",), "cap_add", _matching(_CAPABILITY, "a capability"), True),
    _Option(("--cap-drop",), "cap_drop", _matching(_CAPABILITY, "a capability"), True),
    _Option(("--device",), "devices", _device, repeated=True),
    _Option(("--dns",), "dns", _address, repeated=True),
    _Option(("--dns-search",), "dns_search", _text("a domain"), repeated=True),
    _Option(("--dns-option", "--dns-opt"), "dns_opt", _text("a resolver option"), True),
    _Option(("--group-add",), "group_add", _matching(_NAME, "a group name or id"), True),
    _Option(("--label", "-l"), "labels", _key_value(value_required=False), True, True),
    _Option(("--security-opt",), "security_opt", _text("a security option"), True),
    _Option(("--sysctl",), "sysctls", _key_value(value_required=True), True, True),
    _Option(("--tmpfs",), "tmpfs", _tmpfs, repeated=True, keyed=True),
    _Option(("--volume", "-v"), "volumes", _volume, repeated=True),
    _Option(("--hostname", "-h"), "hostname", _matching(_NAME, "a host name")),
    _Option(("--ipc",), "ipc_mode", _ipc_mode),
    _Option(("--runtime",), "runtime", _matching(_NAME, "a runtime name")),
    _Option(("--userns",), "userns_mode", _one_of("host")),
    _Option(("--uts",), "uts_mode", _one_of("host")),
    _Option(("--cgroup-parent",), "cgroup_parent", _text("a cgroup path")),
    _Option(("--cpuset-cpus",), "cpuset_cpus", _matching(_CPUSET, "a CPU list like 0-3,5")),
    _Option(("--cpuset-mems",), "cpuset_mems", _matching(_CPUSET, "a node list like 0-1")),
    _Option(("--stop-signal",), "stop_signal", _matching(_SIGNAL, "a signal name or number")),
    _Option(("--init",), "init", None),
    _Option(("--oom-kill-disable",), "oom_kill_disable", None),
    _Option(("--privileged",), "privileged", None),
    _Option(("--read-only",), "read_only", None),
    _Option(("--memory-reservation",), "mem_reservation", parse_size),
    _Option(("--memory-swappiness",), "mem_swappiness", _integer(0, 100)),
    _Option(("--oom-score-adj",), "oom_score_adj", _integer(-1000, 1000)),
    _Option(("--pids-limit",), "pids_limit", _integer(-1)),
    _Option(("--cpu-period",), "cpu_period", _integer(0, 1_000_000)),
    _Option(("--cpu-quota",), "cpu_quota", _integer(-1)),
    _Option(("--blkio-weight",), "blkio_weight", _integer(0, 1000)),
    _Option(("--shm-size",), "shm_size", parse_size),
    _Option(("--stop-timeout",), "stop_timeout", _integer(-1)),
)
_KEPT_APART = frozenset(("environment", "log_driver", "log_options", "ulimits", "stop_timeout"))
_BY_NAME = {name: option for option in _OPTIONS for name in option.names}

# Options epcore sets itself, with what controls them instead.
_REFUSED = {
    ("--user", "-u"): "the container runs as the slot user's uid:gid (SLOT<N>_USER)",
    ("--workdir", "-w"): "the working directory is the job's sandbox, which epcore mounts",
    ("--network", "--net"): "use the docker_network_type submit command and DOCKER_NETWORKS",
    ("--memory", "-m", "--memory-swap"): "the memory limit is the slot's Memory",
    ("--cpu-shares", "-c"): "the CPU weight follows the slot's Cpus",
    ("--name",): "epcore names containers itself so that it can find and remove them",
    ("--entrypoint",): "use the executable and arguments submit commands",
    ("--rm",): "epcore removes containers itself on exit, hold and eviction",
    ("--interactive", "-i", "--tty", "-t"): "jobs run without stdin or a terminal",
    ("--detach", "-d"): "epcore creates, starts and waits for the container itself",
}
_REFUSED_BY_NAME = {name: why for names, why in _REFUSED.items() for name in names}


def supported_options() -> tuple[str, ...]:
    """Every option name DOCKER_EXTRA_ARGUMENTS accepts, long forms first."""
    return tuple(sorted(_BY_NAME, key=lambda name: (not name.startswith("--"), name)))


def parse_extra_arguments(
    text: str, *, source: str | None = None, line: int | None = None
) -> ExtraArguments:
    """Read DOCKER_EXTRA_ARGUMENTS; ``source`` and ``line`` locate the knob in messages."""

    def fail(word: str, problem: str) -> DockerArgumentError:
        return DockerArgumentError(f"{KNOB}: '{word}': {problem}", source, line)

    try:
        words = shlex.split(text, posix=True)
    except ValueError as error:
        raise fail(text, f"cannot be split into words ({error})") from error
    single: dict[str, object] = {}
    accumulated: dict[str, list[object]] = {}
    keyed: dict[str, dict[str, object]] = {}
    position = 0
    while position < len(words):
        word = words[position]
        position += 1
        name, attached = _split_option(word)
        if name in _REFUSED_BY_NAME:
            message = f"epcore sets this option itself: {_REFUSED_BY_NAME[name]}"
            raise fail(word, message)
        option = _BY_NAME.get(name)
        if option is None:
            if not word.startswith("-") or word == "--":
                problem = "not an option (the image and command come from the job)"
            else:
                problem = "cannot be mapped onto the docker SDK"
            raise fail(word, f"{problem}; supported options: {' '.join(supported_options())}")
        if option.parse is None:
            value: Any = _flag_value(attached, word, fail)
        else:
            if attached is None:
                if position == len(words):
                    raise fail(word, "needs a value")
                attached = words[position]
                word = f"{word} {attached}"
                position += 1
            try:
                value = option.parse(attached)
            except _BadValue as error:
                raise fail(word, str(error)) from error
        if option.keyed:
            key = value.name if isinstance(value, Ulimit) else value[0]
            keyed.setdefault(option.field, {})[key] = value
        elif option.repeated:
            accumulated.setdefault(option.field, []).append(value)
        else:
            single[option.field] = value
    fields: dict[str, Any] = dict(single)
    fields.update({field: tuple(values) for field, values in accumulated.items()})
    fields.update({field: tuple(values.values()) for field, values in keyed.items()})
    return ExtraArguments(**fields)


def _split_option(word: str) -> tuple[str, str | None]:
    """(option name, value written in the same word or None): ``--opt=v``, ``-xv``, ``-x=v``."""
    if word.startswith("--"):
        name, equals, value = word.partition("=")
        return name, value if equals else None
    if word.startswith("-") and len(word) > 2:
        rest = word[2:]
        return word[:2], rest[1:] if rest.startswith("=") else rest
    return word, None


def _flag_value(
    attached: str | None, word: str, fail: Callable[[str, str], DockerArgumentError]
) -> bool:
    if attached is None or attached in _TRUE_WORDS:
        return True
    if attached in _FALSE_WORDS:
        return False
    raise fail(word, f"{attached!r} is not true or false")
