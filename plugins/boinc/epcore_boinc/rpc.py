"""The BOINC client's GUI RPC over its Unix socket (``--gui_rpc_unix_domain``).

A request is ``<boinc_gui_rpc_request>...</boinc_gui_rpc_request>`` followed by byte 3; the
reply ends with byte 3 too. Reading requests need no password on the Unix socket; the
others (quit, reading the preferences again) need the client's password from
``gui_rpc_auth.cfg`` in its data directory: ``auth1`` gives a nonce and ``auth2`` answers it
with the MD5 of nonce and password. No call waits longer than ``timeout`` seconds, since the
startd calls these from its loop.
"""

from __future__ import annotations

import contextlib
import hashlib
import os
import socket
import xml.etree.ElementTree as ET

import attrs

from epcore.errors import EpError

#: The socket the client makes in its data directory.
SOCKET_NAME = "boinc_socket"
PASSWORD_FILE = "gui_rpc_auth.cfg"
END = b"\x03"


class BoincRpcError(EpError):
    """The client could not be asked (no socket, no answer, an error reply)."""


@attrs.frozen
class Task:
    """One of the client's tasks: its name, whether it computes now (an active task that is
    not suspended), its CPU seconds and fraction done."""

    name: str
    running: bool
    cpu_seconds: float
    fraction_done: float


def _number(element: ET.Element, tag: str) -> float:
    text = element.findtext(tag)
    try:
        return float(text) if text is not None else 0.0
    except ValueError:
        return 0.0


class GuiRpc:
    """A connection per call to the client whose data directory is ``data_dir``."""

    def __init__(self, data_dir: str, timeout: float = 2.0) -> None:
        self.data_dir = data_dir
        self.timeout = timeout

    def _exchange(self, sock: socket.socket, body: str) -> ET.Element:
        request = f"<boinc_gui_rpc_request>\n{body}\n</boinc_gui_rpc_request>\n"
        sock.sendall(request.encode() + END)
        received = bytearray()
        while not received.endswith(END):
            chunk = sock.recv(65536)
            if not chunk:
                raise BoincRpcError("the client closed the GUI RPC connection")
            received += chunk
        text = received[:-1].decode("latin-1")
        # The client puts an XML declaration in front of some replies.
        start = text.find("<boinc_gui_rpc_reply")
        try:
            reply = ET.fromstring(text[start:] if start >= 0 else text)
        except ET.ParseError as error:
            raise BoincRpcError(f"unreadable GUI RPC reply: {error}") from None
        problem = reply.findtext("error")
        if problem is not None or reply.find("unauthorized") is not None:
            raise BoincRpcError(f"the client refused {body.strip()}: {problem or 'unauthorized'}")
        return reply

    def _authorize(self, sock: socket.socket) -> None:
        try:
            with open(os.path.join(self.data_dir, PASSWORD_FILE)) as file:
                password = file.read().strip()
        except OSError as error:
            raise BoincRpcError(f"no GUI RPC password: {error}") from None
        nonce = self._exchange(sock, "<auth1/>").findtext("nonce") or ""
        digest = hashlib.md5((nonce + password).encode(), usedforsecurity=False).hexdigest()
        reply = self._exchange(sock, f"<auth2>\n<nonce_hash>{digest}</nonce_hash>\n</auth2>")
        if reply.find("authorized") is None:
            raise BoincRpcError("the client did not accept its own GUI RPC password")

    def call(self, body: str, *, authorized: bool = False) -> ET.Element:
        """Send ``body`` (a request's XML); the reply. ``authorized``: log in first."""
        path = os.path.join(self.data_dir, SOCKET_NAME)
        sock = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        sock.settimeout(self.timeout)
        try:
            sock.connect(path)
            if authorized:
                self._authorize(sock)
            return self._exchange(sock, body)
        except OSError as error:
            raise BoincRpcError(f"GUI RPC at {path}: {error}") from None
        finally:
            with contextlib.suppress(OSError):
                sock.close()

    def tasks(self) -> list[Task]:
        """The client's tasks (get_results)."""
        reply = self.call("<get_results/>")
        found = []
        for result in reply.iter("result"):
            active = result.find("active_task")
            running = False
            cpu = _number(result, "final_cpu_time")
            done = 0.0
            if active is not None:
                # active_task_state 1: executing; a suspended task keeps its state but says so.
                running = (
                    active.findtext("active_task_state", "").strip() == "1"
                    and active.find("too_large") is None
                    and active.find("needs_shmem") is None
                    and active.find("scheduler_state") is not None
                    and active.findtext("scheduler_state", "").strip() == "2"
                )
                cpu = _number(active, "current_cpu_time")
                done = _number(active, "fraction_done")
            found.append(Task(result.findtext("name", ""), running, cpu, done))
        return found

    def project_names(self) -> list[str]:
        """The names (or URLs) of the projects the client is attached to."""
        reply = self.call("<get_project_status/>")
        return [
            project.findtext("project_name") or project.findtext("master_url") or "?"
            for project in reply.iter("project")
        ]

    def read_preferences(self) -> None:
        """Have the client read its preferences override file again."""
        self.call("<read_global_prefs_override/>", authorized=True)

    def quit(self) -> None:
        """Ask the client to end (it stops its tasks and exits)."""
        self.call("<quit/>", authorized=True)
