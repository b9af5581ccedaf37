"""The few questions the startd asks dockerd, without the docker SDK when it can.

The startd only pings dockerd, reads its version and lists labelled containers (to advertise
HasDocker and to sweep stale containers); the SDK it would import for that brings requests,
urllib3 and ssl, about 10 MB of resident memory held by the daemon for its whole life. Over a
unix socket (the default, or a ``unix://`` DOCKER_URL or DOCKER_HOST) these questions are asked
here in plain HTTP/1.0, which dockerd answers and then closes. Any other address (tcp, TLS
settings in the environment) goes through the SDK, imported then. Starters, which create and
run containers, always use the SDK.
"""

from __future__ import annotations

import json
import os
import socket
import urllib.parse
from collections.abc import Mapping

#: Where the SDK's ``docker.from_env`` connects when DOCKER_HOST is not set.
DEFAULT_SOCKET = "/var/run/docker.sock"
_UNIX = "unix://"
#: The most of an answer read: a listing of thousands of containers fits.
_MAX_ANSWER = 64 << 20


class DaemonError(Exception):
    """dockerd cannot be reached or gave an answer other than 200 with what was asked."""


#: What asking dockerd may raise (a socket's own errors are OSErrors).
DAEMON_ERRORS = (DaemonError, OSError)


def unix_socket(url: str | None, environ: Mapping[str, str] | None = None) -> str | None:
    """The path of dockerd's unix socket for ``url`` (DOCKER_URL; None: the environment as the
    SDK reads it); None when dockerd is reached another way, or the environment asks for TLS."""
    env = os.environ if environ is None else environ
    if url is None:
        if env.get("DOCKER_TLS_VERIFY") or env.get("DOCKER_CERT_PATH"):
            return None
        url = env.get("DOCKER_HOST") or f"{_UNIX}{DEFAULT_SOCKET}"
    if not url.startswith(_UNIX):
        return None
    path = url[len(_UNIX) :]
    # unix:///var/run/docker.sock names /var/run/docker.sock; unix://relative is rare and the
    # SDK treats it the same way (everything after the scheme is the path).
    return path or None


def get(path: str, request: str, timeout: float) -> bytes:
    """The body of dockerd's 200 answer to ``GET request`` over the unix socket ``path``."""
    with socket.socket(socket.AF_UNIX, socket.SOCK_STREAM) as sock:
        sock.settimeout(timeout)
        sock.connect(path)
        sock.sendall(f"GET {request} HTTP/1.0\r\nHost: docker\r\n\r\n".encode("ascii"))
        chunks: list[bytes] = []
        size = 0
        while chunk := sock.recv(1 << 16):
            chunks.append(chunk)
            size += len(chunk)
            if size > _MAX_ANSWER:
                raise DaemonError(f"dockerd's answer to {request} is larger than {_MAX_ANSWER}")
    head, found, body = b"".join(chunks).partition(b"\r\n\r\n")
    status = head.split(b"\r\n", 1)[0].decode("latin-1")
    parts = status.split(" ", 2)
    if not found or len(parts) < 2 or not parts[0].startswith("HTTP/"):
        raise DaemonError(f"no HTTP answer from dockerd at {path} to {request}")
    if parts[1] != "200":
        raise DaemonError(f"dockerd answered {request} with {status}: {_message(body)}")
    return body


def get_json(path: str, request: str, timeout: float) -> object:
    """dockerd's 200 answer to ``GET request`` as JSON."""
    body = get(path, request, timeout)
    try:
        return json.loads(body)
    except ValueError as error:
        raise DaemonError(f"dockerd's answer to {request} is not JSON: {error}") from error


def containers_request(label: str) -> str:
    """The request listing every container (running or not) carrying ``label`` (``name`` or
    ``name=value``), as the SDK's ``containers(all=True, filters={"label": ...})`` sends it."""
    filters = json.dumps({"label": [label]})
    return f"/containers/json?all=1&filters={urllib.parse.quote(filters)}"


def _message(body: bytes) -> str:
    """dockerd's error message (``{"message": ...}``), else the start of the body."""
    try:
        found = json.loads(body)
    except ValueError:
        return body[:200].decode("utf-8", "replace").strip()
    if isinstance(found, dict) and isinstance(found.get("message"), str):
        return str(found["message"])
    return body[:200].decode("utf-8", "replace").strip()
