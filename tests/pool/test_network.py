"""Where ``ep run`` listens for CEDAR and what every daemon answers there (unit level)."""

from __future__ import annotations

import logging
import resource
import selectors
import socket
import stat
from collections.abc import Generator
from pathlib import Path

import pytest

from epcore.config import Config
from epcore.net import commands
from epcore.net.client import start_command
from epcore.net.codec import Reader
from epcore.net.conversation import Step, Stream, receive, send
from epcore.net.dispatch import CommandContext
from epcore.net.handshake import SecurityServer
from epcore.net.methods import default_registry
from epcore.pool.network import (
    CONFIG_VAL,
    PORT_FILE,
    PoolListener,
    build_listener,
    daemon_core_handlers,
    listen_address,
)
from epcore.pool.personal import personal_config_text
from epcore.pool.roles import COLLECTOR, SCHEDD, STARTD
from tests.net.converse import converse, streams


@pytest.mark.parametrize(
    ("text", "daemons", "expected"),
    [
        ("", {COLLECTOR}, ("127.0.0.1", 9618)),
        ("COLLECTOR_HOST = cm.example.org:9620", {COLLECTOR}, ("127.0.0.1", 9620)),
        ("COLLECTOR_HOST = cm.example.org:0", {COLLECTOR}, ("127.0.0.1", 0)),
        ("COLLECTOR_HOST = cm.example.org", {COLLECTOR}, ("127.0.0.1", 9618)),
        ("COLLECTOR_HOST = cm.example.org:9620", {SCHEDD}, ("127.0.0.1", 0)),
        ("NETWORK_INTERFACE = 10.1.2.3\nCOLLECTOR_HOST = x:0", {COLLECTOR}, ("10.1.2.3", 0)),
        ("BIND_ALL_INTERFACES = True\nCOLLECTOR_HOST = x:0", {COLLECTOR}, ("0.0.0.0", 0)),
    ],
)
def test_listen_address(text: str, daemons: set[str], expected: tuple[str, int]) -> None:
    """127.0.0.1 unless opened; COLLECTOR_HOST's port (9618 for a host alone) when the
    collector runs here, else any free port."""
    config = Config.from_text("CONDOR_HOST = cm.example.org\n" + text, subsystem="COLLECTOR")
    assert listen_address(config, daemons) == expected


def _ask(command: int, name: str, config: Config) -> Reader:
    levels = {command: commands.READ}
    security = SecurityServer(
        lambda: config,
        lambda: levels,
        methods=default_registry(),
        log=logging.getLogger("test.network"),
    )
    handlers = daemon_core_handlers(lambda: config)
    handler = next(h for c, h in handlers.items() if c.number == command)

    def client(stream: Stream) -> Generator[Step, bytes | None, bytes]:
        yield from start_command(stream, command, Config.from_text(""))
        yield from send(stream.writer().put_string(name))
        reader = yield from receive(stream, "the answer")
        return reader.data

    def server(stream: Stream) -> Generator[Step, bytes | None, None]:
        peer, first = yield from security.start(stream)
        yield from handler(CommandContext(stream, peer, first))

    pair = streams()
    client_side, _ = converse(client(pair[0]), server(pair[1]), pair)
    assert client_side.error is None, client_side.error
    return Reader(client_side.result)


CONFIG = "ALLOW_READ = *\nEPCORE_TEST_KNOB = forty two\n"


def test_config_val_answers_values_and_names() -> None:
    """DC_CONFIG_VAL: a knob's value then its raw line; ?names lists the names defined;
    CONFIG_VAL answers 'Not defined' for an unknown knob."""
    config = Config.from_text(CONFIG, subsystem="COLLECTOR")
    answer = _ask(commands.DC_CONFIG_VAL.number, "EPCORE_TEST_KNOB", config)
    assert answer.get_string() == "forty two"
    assert answer.get_string() == "EPCORE_TEST_KNOB = forty two"
    names = _ask(commands.DC_CONFIG_VAL.number, "?names:^EPCORE", config)
    assert names.get_string() == "EPCORE_TEST_KNOB" and names.at_end
    assert _ask(CONFIG_VAL.number, "NO_SUCH_KNOB", config).get_string() == "Not defined"
    assert _ask(commands.DC_CONFIG_VAL.number, "NO_SUCH", config).get_optional_string() is None


def test_address_files_are_written_and_removed(tmp_path: Path) -> None:
    """Once listening, the collector's address file (and its .super twin) holds the sinful,
    the version and the platform; closing removes them."""
    text = f"COLLECTOR_HOST = x:0\nCOLLECTOR_ADDRESS_FILE = {tmp_path}/.collector_address\n"
    config = Config.from_text(text, subsystem="COLLECTOR")
    listener = build_listener(
        lambda: config,
        {COLLECTOR},
        collector_handlers=None,
        collector=None,
        local_address="<unix:/x>",
        log=logging.getLogger("test.network"),
    )

    class _Loop:
        import selectors

        selector = selectors.DefaultSelector()

        def close_in_child(self) -> None:
            pass

    listener.open(_Loop())
    lines = (tmp_path / ".collector_address").read_text().splitlines()
    assert lines[0] == f"<127.0.0.1:{listener.port}>"
    assert lines[1].startswith("$CondorVersion:") and lines[2].startswith("$CondorPlatform:")
    assert (tmp_path / ".collector_address.super").read_text().splitlines()[0] == lines[0]
    listener.close()
    assert not list(tmp_path.iterdir())


class _Loop:
    """The loop as a listener's open sees it: a selector."""

    def __init__(self) -> None:
        self.selector = selectors.DefaultSelector()

    def close_in_child(self) -> None:
        pass


def _spooled_listener(spool: Path) -> PoolListener:
    config = Config.from_text(f"SPOOL = {spool}\n", subsystem="STARTD")
    return build_listener(
        lambda: config,
        {STARTD},
        collector_handlers=None,
        collector=None,
        local_address="<unix:/x>",
        log=logging.getLogger("test.network"),
    )


def test_a_restarted_process_listens_on_the_port_it_had(tmp_path: Path) -> None:
    """A process without a fixed port takes a free one and keeps it in SPOOL (mode 0600);
    the next one listens on that same port."""
    first = _spooled_listener(tmp_path)
    first.open(_Loop())
    port = first.port
    assert port != 0
    first.close()
    assert (tmp_path / PORT_FILE).read_text() == f"{port}\n"
    assert stat.S_IMODE((tmp_path / PORT_FILE).stat().st_mode) == 0o600
    second = _spooled_listener(tmp_path)
    second.open(_Loop())
    try:
        assert second.port == port
    finally:
        second.close()


def test_a_kept_port_another_program_took_gives_way_to_a_free_one(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    """When the kept port is in use, the process listens on another free port (no error
    logged) and keeps that one."""
    with socket.socket() as other:
        other.bind(("127.0.0.1", 0))
        other.listen()
        taken = other.getsockname()[1]
        (tmp_path / PORT_FILE).write_text(f"{taken}\n")
        listener = _spooled_listener(tmp_path)
        caplog.set_level(logging.INFO, "test.network")
        listener.open(_Loop())
        try:
            assert listener.sock is not None
            assert not [r for r in caplog.records if r.levelno >= logging.ERROR]
            assert listener.port not in (0, taken)
        finally:
            listener.close()
    assert (tmp_path / PORT_FILE).read_text() == f"{listener.port}\n"


def test_personal_config_names_its_owners() -> None:
    """The personal pool's configuration finds the collector by its address file and gives
    DAEMON and ADMINISTRATOR rights to condor, root and the pool's owner."""
    text = personal_config_text("/srv/pool", owner="alice")
    assert "COLLECTOR_HOST = $(CONDOR_HOST):0" in text
    assert "COLLECTOR_ADDRESS_FILE = $(LOG)/.collector_address" in text
    for level in ("DAEMON", "ADMINISTRATOR", "NEGOTIATOR"):
        assert (
            f"ALLOW_{level} = condor@$(UID_DOMAIN), root@$(UID_DOMAIN), alice@$(UID_DOMAIN)" in text
        )


def _cap(text: str, daemons: set[str]) -> int:
    config = Config.from_text(text, subsystem="COLLECTOR")
    listener = build_listener(
        lambda: config,
        daemons,
        collector_handlers=None,
        collector=None,
        local_address="<unix:/x>",
        log=logging.getLogger("test.network"),
    )
    return listener.limits.max_connections


def test_a_collector_takes_a_connection_per_host_up_to_its_descriptors() -> None:
    """With the collector here, the connection cap follows COLLECTOR_MAX_FILE_DESCRIPTORS
    (HTCondor's 10240, four fifths of it), the process's soft descriptor limit raised to it
    (within the hard limit); CEDAR_MAX_CONNECTIONS set by the admin wins; a process without
    the collector keeps the listener's 512."""
    soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    try:
        resource.setrlimit(resource.RLIMIT_NOFILE, (min(1024, hard), hard))
        cap = _cap("COLLECTOR_HOST = x:0\n", {COLLECTOR})
        now_soft = resource.getrlimit(resource.RLIMIT_NOFILE)[0]
        assert now_soft == min(10240, hard)
        assert cap == int(now_soft * 0.8)
        assert _cap("COLLECTOR_MAX_FILE_DESCRIPTORS = 1000\n", {COLLECTOR}) == 800
        assert _cap("CEDAR_MAX_CONNECTIONS = 100\n", {COLLECTOR}) == 100
        assert _cap("", {SCHEDD}) == 512
    finally:
        resource.setrlimit(resource.RLIMIT_NOFILE, (soft, hard))
