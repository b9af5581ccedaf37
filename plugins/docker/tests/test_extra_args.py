"""DOCKER_EXTRA_ARGUMENTS read into docker SDK keywords (epcore_docker.extra_args)."""

from __future__ import annotations

import shlex
from typing import Any

import attrs
import docker.models.containers
import pytest
from epcore_docker.extra_args import (
    DockerArgumentError,
    ExtraArguments,
    Ulimit,
    parse_extra_arguments,
    parse_size,
    supported_options,
)
from hypothesis import given
from hypothesis import strategies as st

from epcore.errors import ConfigError


def _translate_like_the_sdk(kwargs: dict[str, object]) -> None:
    # containers.create() hands its keywords to this translation, which raises TypeError for an
    # unknown keyword and docker.errors.InvalidArgument for a badly shaped value; API 1.41 is
    # what the CI's dockerd 20.10 speaks.
    request = {**kwargs, "image": "local/busybox:1", "version": "1.41"}
    # The stubs leave this private helper out; it is the SDK's own code path, not a copy.
    docker.models.containers._create_container_args(request)  # type: ignore[attr-defined]


MAPPINGS: list[tuple[str, str, object]] = [
    ("--add-host db:10.0.0.2", "extra_hosts", ("db:10.0.0.2",)),
    ("--add-host=db=10.0.0.2", "extra_hosts", ("db:10.0.0.2",)),
    ("--add-host v6:::1", "extra_hosts", ("v6:::1",)),
    ("--add-host gw:host-gateway", "extra_hosts", ("gw:host-gateway",)),
    ("--cap-add SYS_PTRACE", "cap_add", ("SYS_PTRACE",)),
    ("--cap-drop=NET_RAW", "cap_drop", ("NET_RAW",)),
    ("--device /dev/fuse", "devices", ("/dev/fuse",)),
    ("--device /dev/sda:/dev/xvda:rw", "devices", ("/dev/sda:/dev/xvda:rw",)),
    ("--dns 8.8.8.8", "dns", ("8.8.8.8",)),
    ("--dns-search example.org", "dns_search", ("example.org",)),
    ("--dns-option ndots:2", "dns_opt", ("ndots:2",)),
    ("--dns-opt=timeout:1", "dns_opt", ("timeout:1",)),
    ("-e TZ=UTC", "environment", (("TZ", "UTC"),)),
    ("--env=EMPTY=", "environment", (("EMPTY", ""),)),
    ("-eA=b=c", "environment", (("A", "b=c"),)),
    ("--group-add video", "group_add", ("video",)),
    ("--group-add 44", "group_add", ("44",)),
    ("-h worker", "hostname", "worker"),
    ("--hostname=worker.example", "hostname", "worker.example"),
    ("--init", "init", True),
    ("--ipc private", "ipc_mode", "private"),
    ("--ipc container:abc", "ipc_mode", "container:abc"),
    ("-l team=physics", "labels", (("team", "physics"),)),
    ("--label flag", "labels", (("flag", ""),)),
    ("--log-driver json-file", "log_driver", "json-file"),
    ("--log-opt max-size=10m", "log_options", (("max-size", "10m"),)),
    ("--memory-reservation 512m", "mem_reservation", 512 << 20),
    ("--memory-swappiness 0", "mem_swappiness", 0),
    ("--oom-kill-disable", "oom_kill_disable", True),
    ("--oom-score-adj -500", "oom_score_adj", -500),
    ("--pids-limit 100", "pids_limit", 100),
    ("--pids-limit=-1", "pids_limit", -1),
    ("--privileged", "privileged", True),
    ("--read-only", "read_only", True),
    ("--security-opt seccomp=unconfined", "security_opt", ("seccomp=unconfined",)),
    ("--sysctl net.ipv4.ip_forward=1", "sysctls", (("net.ipv4.ip_forward", "1"),)),
    ("--tmpfs /run", "tmpfs", (("/run", ""),)),
    ("--tmpfs /scratch:rw,size=64m", "tmpfs", (("/scratch", "rw,size=64m"),)),
    ("--ulimit nofile=1024:2048", "ulimits", (Ulimit("nofile", 1024, 2048),)),
    ("--ulimit core=0", "ulimits", (Ulimit("core", 0, 0),)),
    ("--ulimit memlock=-1:-1", "ulimits", (Ulimit("memlock", -1, -1),)),
    ("-v /data:/data", "volumes", ("/data:/data",)),
    ("--volume=/data:/in:ro", "volumes", ("/data:/in:ro",)),
    ("-v cache:/cache:rw,z", "volumes", ("cache:/cache:rw,z",)),
    ("--runtime runc", "runtime", "runc"),
    ("--userns host", "userns_mode", "host"),
    ("--uts host", "uts_mode", "host"),
    ("--cgroup-parent /batch", "cgroup_parent", "/batch"),
    ("--cpuset-cpus 0-3,7", "cpuset_cpus", "0-3,7"),
    ("--cpuset-mems 0", "cpuset_mems", "0"),
    ("--cpu-period 100000", "cpu_period", 100000),
    ("--cpu-quota 50000", "cpu_quota", 50000),
    ("--blkio-weight 300", "blkio_weight", 300),
    ("--stop-timeout 30", "stop_timeout", 30),
    ("--stop-signal SIGUSR1", "stop_signal", "SIGUSR1"),
    ("--stop-signal 15", "stop_signal", "15"),
    ("--shm-size 1g", "shm_size", 1 << 30),
    ("--shm-size=2048", "shm_size", 2048),
    ("--shm-size 100b", "shm_size", 100),
    ("--shm-size 64K", "shm_size", 64 << 10),
]


@pytest.mark.parametrize(("text", "field", "expected"), MAPPINGS)
def test_each_option_sets_its_sdk_field(text: str, field: str, expected: object) -> None:
    """Every supported option fills the record field named after its SDK keyword."""
    extra = parse_extra_arguments(text)
    assert getattr(extra, field) == expected
    others = {f.name for f in attrs.fields(ExtraArguments)} - {field}
    assert all(getattr(extra, name) == getattr(ExtraArguments.empty(), name) for name in others)


@pytest.mark.parametrize(("text", "field", "expected"), MAPPINGS)
def test_create_kwargs_are_accepted_by_the_sdk(text: str, field: str, expected: object) -> None:
    """create_kwargs() only holds keywords docker's containers.create() turns into a request."""
    kwargs = parse_extra_arguments(text).create_kwargs()
    _translate_like_the_sdk(kwargs)


@pytest.mark.parametrize(
    ("forms", "field", "expected"),
    [
        (["-e A=1", "-eA=1", "-e=A=1", "--env A=1", "--env=A=1"], "environment", (("A", "1"),)),
        (["-h box", "-hbox", "-h=box", "--hostname box", "--hostname=box"], "hostname", "box"),
        (["-l a=b", "-la=b", "--label a=b", "--label=a=b"], "labels", (("a", "b"),)),
        (["-v /a:/b", "-v/a:/b", "--volume /a:/b", "--volume=/a:/b"], "volumes", ("/a:/b",)),
    ],
)
def test_spellings_of_an_option_agree(forms: list[str], field: str, expected: object) -> None:
    """--opt value, --opt=value, -x value, -xvalue and -x=value give the same record."""
    records = {parse_extra_arguments(form) for form in forms}
    assert len(records) == 1
    assert getattr(records.pop(), field) == expected


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("--privileged", True),
        ("--privileged=true", True),
        ("--privileged=1", True),
        ("--privileged=T", True),
        ("--privileged=false", False),
        ("--privileged=0", False),
        ("--privileged=FALSE", False),
    ],
)
def test_boolean_flags_take_an_optional_truth_value(text: str, expected: bool) -> None:
    """A boolean flag alone is true; =true/=false (and docker's other spellings) set it."""
    extra = parse_extra_arguments(text)
    assert extra.privileged is expected
    assert extra.create_kwargs() == {"privileged": expected}


@pytest.mark.parametrize(
    ("text", "field", "expected"),
    [
        ("--cap-add A --cap-add B", "cap_add", ("A", "B")),
        ("--dns 1.1.1.1 --dns 8.8.8.8", "dns", ("1.1.1.1", "8.8.8.8")),
        ("-v /a:/a -v /b:/b", "volumes", ("/a:/a", "/b:/b")),
        ("--pids-limit 5 --pids-limit 7", "pids_limit", 7),
        ("-h one -h two", "hostname", "two"),
        ("--init --init=false", "init", False),
        ("-e A=1 -e B=2 -e A=3", "environment", (("A", "3"), ("B", "2"))),
        ("-l a=1 -l a=2", "labels", (("a", "2"),)),
        ("--ulimit nofile=1 --ulimit nofile=2", "ulimits", (Ulimit("nofile", 2, 2),)),
        ("--tmpfs /t --tmpfs /t:size=1m", "tmpfs", (("/t", "size=1m"),)),
    ],
)
def test_repeated_options(text: str, field: str, expected: object) -> None:
    """List options accumulate; scalar ones and repeated keys keep the last value."""
    assert getattr(parse_extra_arguments(text), field) == expected


def test_create_kwargs_of_a_full_line() -> None:
    """create_kwargs() gives SDK shapes (lists, dicts) and leaves out what the runtime builds."""
    extra = parse_extra_arguments(
        "--cap-add SYS_PTRACE -l a=b --sysctl k=v --tmpfs /run -v /x:/y:ro --init "
        "--shm-size 1m -e A=1 --log-driver none --log-opt k=v --ulimit nproc=5 --stop-timeout 9"
    )
    assert extra.create_kwargs() == {
        "cap_add": ["SYS_PTRACE"],
        "labels": {"a": "b"},
        "sysctls": {"k": "v"},
        "tmpfs": {"/run": ""},
        "volumes": ["/x:/y:ro"],
        "init": True,
        "shm_size": 1 << 20,
    }
    assert extra.environment == (("A", "1"),)
    assert (extra.log_driver, extra.log_options) == ("none", (("k", "v"),))
    assert (extra.ulimits, extra.stop_timeout) == ((Ulimit("nproc", 5, 5),), 9)


@pytest.mark.parametrize("text", ["", "   ", "\n\t"])
def test_no_words_is_no_arguments(text: str) -> None:
    """An empty or blank knob gives the empty record and no SDK keywords."""
    assert parse_extra_arguments(text) == ExtraArguments.empty()
    assert ExtraArguments.empty().create_kwargs() == {}


def test_shell_quoting_is_honoured_but_nothing_is_run() -> None:
    """Quotes group words as a POSIX shell would; $() and ; stay literal text."""
    extra = parse_extra_arguments("""-e 'GREETING=hello world' -e "CMD=$(rm -rf /); x" """)
    assert extra.environment == (("GREETING", "hello world"), ("CMD", "$(rm -rf /); x"))


@pytest.mark.parametrize(
    ("word", "hint"),
    [
        ("--user=nobody", "slot user"),
        ("-u 1000", "slot user"),
        ("--workdir /tmp", "sandbox"),
        ("-w /tmp", "sandbox"),
        ("--network host", "docker_network_type"),
        ("--net=none", "DOCKER_NETWORKS"),
        ("--memory 1g", "slot's Memory"),
        ("-m 1g", "slot's Memory"),
        ("--memory-swap 1g", "slot's Memory"),
        ("--cpu-shares 100", "slot's Cpus"),
        ("-c 100", "slot's Cpus"),
        ("--name job", "names containers"),
        ("--entrypoint /bin/sh", "executable"),
        ("--rm", "removes containers"),
        ("-i", "stdin"),
        ("-t", "terminal"),
        ("-it", "terminal"),
        ("--interactive", "stdin"),
        ("--tty", "terminal"),
        ("-d", "waits for the container"),
        ("--detach", "waits for the container"),
    ],
)
def test_options_epcore_sets_are_refused_with_what_controls_them(word: str, hint: str) -> None:
    """An option epcore sets from the job or slot is an error naming what to use instead."""
    with pytest.raises(DockerArgumentError) as caught:
        parse_extra_arguments(f"--init {word}", source="/etc/condor/condor_config", line=12)
    message = str(caught.value)
    assert "DOCKER_EXTRA_ARGUMENTS" in message
    assert word.split()[0].partition("=")[0] in message
    assert hint in message
    assert message.startswith("/etc/condor/condor_config, line 12: ")


@pytest.mark.parametrize(
    ("text", "word", "problem"),
    [
        ("--publish 80:80", "--publish", "cannot be mapped onto the docker SDK"),
        ("--env-file /etc/env", "--env-file", "cannot be mapped onto the docker SDK"),
        ("-p 80", "-p", "cannot be mapped onto the docker SDK"),
        ("busybox", "busybox", "not an option"),
        ("--init -- /bin/sh", "--", "not an option"),
        ("--init true", "true", "not an option"),
        ("--pids-limit", "--pids-limit", "needs a value"),
        ("--cap-add A -e", "-e", "needs a value"),
        ("--pids-limit abc", "--pids-limit abc", "not an integer"),
        ("--pids-limit 1.5", "--pids-limit 1.5", "not an integer"),
        ("--pids-limit -2", "--pids-limit -2", "outside"),
        ("--ulimit nofile", "--ulimit nofile", "not NAME=SOFT[:HARD]"),
        ("--ulimit bogus=1", "--ulimit bogus=1", "not a ulimit"),
        ("--ulimit nofile=10:5", "--ulimit nofile=10:5", "soft limit above"),
        ("--ulimit nofile=x", "--ulimit nofile=x", "not an integer"),
        ("-e NAME", "-e NAME", "not NAME=value"),
        ("-e =x", "-e =x", "not NAME=value"),
        ("--label =x", "--label =x", "no name"),
        ("--sysctl k", "--sysctl k", "not NAME=value"),
        ("--log-opt max-size", "--log-opt max-size", "not NAME=value"),
        ("--shm-size lots", "--shm-size lots", "not a size"),
        ("--shm-size 1x", "--shm-size 1x", "not a size"),
        ("--shm-size -1", "--shm-size -1", "not a size"),
        ("--shm-size 99999999999g", "--shm-size 99999999999g", "larger than"),
        ("--memory-swappiness 101", "--memory-swappiness 101", "outside"),
        ("--oom-score-adj 2000", "--oom-score-adj 2000", "outside"),
        ("--blkio-weight 5000", "--blkio-weight 5000", "outside"),
        ("--stop-timeout 99999999999999999999", "--stop-timeout", "outside"),
        ("--privileged=maybe", "--privileged=maybe", "not true or false"),
        ("-v /data", "-v /data", "not HOST:CONTAINER[:MODE]"),
        ("-v /a:b", "-v /a:b", "not an absolute path"),
        ("-v /a:/b:bogus", "-v /a:/b:bogus", "mode"),
        ("-v a/b:/b", "-v a/b:/b", "neither an absolute path nor a volume name"),
        ("--tmpfs run", "--tmpfs run", "not an absolute path"),
        ("--tmpfs /run:", "--tmpfs /run:", "empty option list"),
        ("--device fuse", "--device fuse", "not an absolute path"),
        ("--device /dev/a:/dev/b:rx", "--device /dev/a:/dev/b:rx", "permissions"),
        ("--device /a:/b:r:x", "--device /a:/b:r:x", "not HOST[:CONTAINER[:PERMISSIONS]]"),
        ("--dns nameserver", "--dns nameserver", "not an IP address"),
        ("--add-host db", "--add-host db", "not HOST:IP"),
        ("--add-host db:nowhere", "--add-host db:nowhere", "not an IP address"),
        ("--ipc weird", "--ipc weird", "not one of"),
        ("--ipc container:", "--ipc container:", "not one of"),
        ("--userns private", "--userns private", "not one of"),
        ("--cpuset-cpus 0-", "--cpuset-cpus 0-", "CPU list"),
        ("--cap-add 'SYS ADMIN'", "--cap-add SYS ADMIN", "not a capability"),
        ("--hostname ''", "--hostname ", "not a host name"),
        ("--stop-signal -9", "--stop-signal -9", "not a signal"),
        ("-e 'A=unterminated", "-e 'A=unterminated", "cannot be split into words"),
        ("--init \\", "--init \\", "cannot be split into words"),
    ],
)
def test_errors_name_the_knob_the_word_and_the_place(text: str, word: str, problem: str) -> None:
    """Each unusable word is a DockerArgumentError (a ConfigError) saying what is wrong, where."""
    with pytest.raises(DockerArgumentError) as caught:
        parse_extra_arguments(text, source="/etc/condor/config.d/docker", line=7)
    error = caught.value
    assert isinstance(error, ConfigError)
    assert (error.source, error.line) == ("/etc/condor/config.d/docker", 7)
    message = str(error)
    assert message.startswith("/etc/condor/config.d/docker, line 7: DOCKER_EXTRA_ARGUMENTS: ")
    assert f"'{word}" in message
    assert problem in message


def test_an_unknown_option_lists_the_supported_ones() -> None:
    """The message for an unmappable option lists every option that is accepted."""
    with pytest.raises(DockerArgumentError) as caught:
        parse_extra_arguments("--gpus all")
    assert caught.value.source is None
    for name in supported_options():
        assert f" {name}" in str(caught.value)


def test_supported_options_cover_every_field() -> None:
    """Every record field is reachable from at least one option name."""
    reachable = {
        field
        for name in supported_options()
        for field, value in attrs.asdict(_parse_option(name)).items()
        if value not in (None, ())
    }
    assert reachable == {f.name for f in attrs.fields(ExtraArguments)}


@pytest.mark.parametrize(
    ("text", "size"),
    [
        ("0", 0),
        ("512", 512),
        ("512b", 512),
        ("1k", 1024),
        ("1K", 1024),
        ("1kb", 1024),
        ("2m", 2 << 20),
        ("2MiB", 2 << 20),
        ("1.5g", 3 << 29),
        ("1g", 1 << 30),
        ("3t", 3 << 40),
        ("9007199254740993", 9007199254740993),
    ],
)
def test_sizes_use_dockers_binary_suffixes(text: str, size: int) -> None:
    """Sizes take docker's b/k/m/g suffixes (powers of 1024) and stay exact integers."""
    assert parse_size(text) == size


# A valid value for each option, used to build generated option lines.
_VALID: dict[str, str] = {
    "--add-host": "db:10.1.2.3",
    "--blkio-weight": "500",
    "--cap-add": "NET_ADMIN",
    "--cap-drop": "ALL",
    "--cgroup-parent": "/jobs",
    "--cpu-period": "100000",
    "--cpu-quota": "-1",
    "--cpuset-cpus": "0,2-3",
    "--cpuset-mems": "0",
    "--device": "/dev/null:/dev/nothing:rw",
    "--dns": "fe80::1",
    "--dns-opt": "ndots:1",
    "--dns-option": "rotate",
    "--dns-search": "example.com",
    "--env": "X=y z",
    "--group-add": "users",
    "--hostname": "node-1",
    "--init": "true",
    "--ipc": "shareable",
    "--label": "com.example.k=v=w",
    "--log-driver": "syslog",
    "--log-opt": "tag=job",
    "--memory-reservation": "1.25g",
    "--memory-swappiness": "60",
    "--oom-kill-disable": "false",
    "--oom-score-adj": "17",
    "--pids-limit": "4096",
    "--privileged": "0",
    "--read-only": "1",
    "--runtime": "crun",
    "--security-opt": "no-new-privileges",
    "--shm-size": "256m",
    "--stop-signal": "SIGINT",
    "--stop-timeout": "5",
    "--sysctl": "kernel.msgmax=65536",
    "--tmpfs": "/tmp:size=1g,mode=1777",
    "--ulimit": "stack=8192:16384",
    "--userns": "host",
    "--uts": "host",
    "--volume": "/srv/in:/in:ro",
    "-e": "QUOTE='\" $HOME",
    "-h": "short",
    "-l": "bare",
    "-v": "named:/named",
}

_ENV_NAMES = st.text(st.characters(codec="utf-8", exclude_characters="=\x00"), min_size=1)
_ENV_VALUES = st.text(st.characters(codec="utf-8", exclude_characters="\x00"))


def _parse_option(name: str) -> ExtraArguments:
    return parse_extra_arguments(shlex.join([f"{name}={_VALID[name]}"]))


_FLAGS = frozenset(("--init", "--oom-kill-disable", "--privileged", "--read-only"))


def _option_words(name: str, value: str, joined: bool) -> list[str]:
    # A flag's truth value must be attached: a separate word would be a positional argument.
    if joined or name in _FLAGS:
        return [f"{name}={value}"]
    return [name, value]


@st.composite
def option_lines(draw: st.DrawFn) -> list[str]:
    """Lists of valid option words, in every spelling, with free-form environment values."""
    words: list[str] = []
    for _ in range(draw(st.integers(0, 8))):
        name = draw(st.sampled_from(sorted(_VALID)))
        value = _VALID[name]
        if name in ("-e", "--env"):
            value = f"{draw(_ENV_NAMES)}={draw(_ENV_VALUES)}"
        elif name in ("--pids-limit", "--oom-score-adj"):
            value = str(draw(st.integers(-1, 1000)))
        elif name == "--shm-size":
            value = f"{draw(st.integers(0, 1 << 40))}{draw(st.sampled_from(['', 'b', 'k', 'm']))}"
        words += _option_words(name, value, draw(st.booleans()))
    return words


@given(option_lines())
def test_round_trip_through_shell_words(words: list[str]) -> None:
    """Valid options joined with shlex.join parse to one record, which to_words() reproduces."""
    record = parse_extra_arguments(shlex.join(words))
    assert parse_extra_arguments(shlex.join(record.to_words())) == record
    assert record.to_words() == parse_extra_arguments(shlex.join(record.to_words())).to_words()


@given(option_lines(), st.sampled_from(sorted(_VALID)))
def test_appending_an_option_only_changes_its_own_field(words: list[str], name: str) -> None:
    """Adding one option to a valid line leaves every field it does not own unchanged."""
    before = parse_extra_arguments(shlex.join(words))
    after = parse_extra_arguments(shlex.join([*words, f"{name}={_VALID[name]}"]))
    single = attrs.asdict(_parse_option(name))
    changed = {
        field.name
        for field in attrs.fields(ExtraArguments)
        if getattr(before, field.name) != getattr(after, field.name)
    }
    assert changed <= {field for field, value in single.items() if value not in (None, ())}


_WORDS = st.one_of(
    st.sampled_from([*supported_options(), "--user", "-it", "--", "=", "-", "--x=", "'", '"']),
    st.text(max_size=12),
)


@given(st.one_of(st.text(), st.lists(_WORDS, max_size=8).map(" ".join)))
def test_any_text_parses_or_is_a_docker_argument_error(text: str) -> None:
    """Arbitrary knob text gives a record or a DockerArgumentError, never another exception."""
    try:
        result: Any = parse_extra_arguments(text)
    except DockerArgumentError as error:
        assert "DOCKER_EXTRA_ARGUMENTS" in str(error)
    else:
        assert isinstance(result, ExtraArguments)
        _translate_like_the_sdk(result.create_kwargs())
