"""The startd's questions to dockerd over its unix socket without the SDK (epcore_docker.daemon):
against a stand-in socket for the answers dockerd may give, and against the real dockerd."""

from __future__ import annotations

import socket
import subprocess
import sys
import threading
from collections.abc import Iterator
from pathlib import Path

import docker
import pytest
from epcore_docker import daemon


@pytest.fixture
def answering(tmp_path: Path) -> Iterator[tuple[str, list[bytes], list[bytes]]]:
    """A unix socket that answers each connection with the next of the answers put in the
    second list, and records each request in the third."""
    path = str(tmp_path / "docker.sock")
    server = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    server.bind(path)
    server.listen(4)
    answers: list[bytes] = []
    requests: list[bytes] = []

    def serve() -> None:
        while True:
            try:
                connection, _ = server.accept()
            except OSError:
                return
            with connection:
                requests.append(connection.recv(4096))
                connection.sendall(answers.pop(0))

    thread = threading.Thread(target=serve, daemon=True)
    thread.start()
    yield path, answers, requests
    server.close()


def test_a_200_answer_gives_its_body_as_json(
    answering: tuple[str, list[bytes], list[bytes]],
) -> None:
    """A 200 answer's body is read to the end and parsed as JSON; the request is a plain GET."""
    path, answers, requests = answering
    answers.append(b'HTTP/1.0 200 OK\r\nContent-Type: application/json\r\n\r\n{"Version": "1"}')
    assert daemon.get_json(path, "/version", 5) == {"Version": "1"}
    assert requests[0].startswith(b"GET /version HTTP/1.0\r\n")


def test_an_error_answer_raises_with_dockerds_message(
    answering: tuple[str, list[bytes], list[bytes]],
) -> None:
    """An answer other than 200 raises DaemonError carrying the status and dockerd's message."""
    path, answers, _ = answering
    answers.append(b'HTTP/1.1 500 Internal Server Error\r\n\r\n{"message": "it broke"}')
    with pytest.raises(daemon.DaemonError, match="500 Internal Server Error: it broke"):
        daemon.get(path, "/_ping", 5)


@pytest.mark.parametrize(
    "answer",
    [b"", b"garbage", b"HTTP/1.0 200 OK\r\n\r\nnot json"],
    ids=["empty", "no-http", "text"],
)
def test_an_answer_that_is_not_json_over_http_raises(
    answering: tuple[str, list[bytes], list[bytes]], answer: bytes
) -> None:
    """No answer, one that is not HTTP, or a body that is not JSON raises DaemonError."""
    path, answers, _ = answering
    answers.append(answer)
    with pytest.raises(daemon.DaemonError):
        daemon.get_json(path, "/version", 5)


def test_a_missing_socket_is_an_oserror(tmp_path: Path) -> None:
    """No dockerd at the socket raises an OSError, one of DAEMON_ERRORS."""
    with pytest.raises(daemon.DAEMON_ERRORS):
        daemon.get(str(tmp_path / "none.sock"), "/_ping", 5)


@pytest.mark.parametrize(
    ("url", "environ", "expected"),
    [
        (None, {}, "/var/run/docker.sock"),
        (None, {"DOCKER_HOST": "unix:///run/d.sock"}, "/run/d.sock"),
        (None, {"DOCKER_HOST": "tcp://h:2375"}, None),
        (None, {"DOCKER_TLS_VERIFY": "1"}, None),
        ("unix:///x/docker.sock", {"DOCKER_HOST": "tcp://h:2375"}, "/x/docker.sock"),
        ("tcp://h:2376", {}, None),
    ],
)
def test_the_unix_socket_is_found_as_the_sdk_finds_dockerd(
    url: str | None, environ: dict[str, str], expected: str | None
) -> None:
    """DOCKER_URL wins, then DOCKER_HOST, then the default socket; tcp or TLS means the SDK."""
    assert daemon.unix_socket(url, environ) == expected


def test_the_label_listing_matches_the_sdks(docker_client: docker.DockerClient) -> None:
    """The containers listed by label, the version and the ping agree with the SDK's answers
    from the real dockerd."""
    path = daemon.unix_socket(None)
    assert path is not None
    label = "epcore.job_key"
    ours = daemon.get_json(path, daemon.containers_request(label), 10)
    sdks = docker_client.api.containers(all=True, filters={"label": label})
    assert isinstance(ours, list)
    assert sorted(c["Id"] for c in ours) == sorted(c["Id"] for c in sdks)
    version = daemon.get_json(path, "/version", 10)
    assert isinstance(version, dict)
    assert version["ApiVersion"] == docker_client.version()["ApiVersion"]
    assert daemon.get(path, "/_ping", 10) == b"OK"


def test_the_plugin_does_not_import_the_sdk_until_a_container_runs() -> None:
    """Loading the plugin and building its runtime leave the docker SDK (and requests) out of
    the process: the startd holds neither."""
    code = (
        "import sys; import epcore_docker.plugin, epcore_docker.runtime; "
        "print('docker' in sys.modules, 'requests' in sys.modules)"
    )
    found = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert found.stdout.split() == ["False", "False"]
