"""A small BOINC project for the tests: master page, scheduler RPC and downloads over HTTP.

Run as ``python3 project_server.py PORT STATE_DIR [UNITS] [SECONDS]`` on 127.0.0.1 (the tests
start it inside the client's loopback-only network namespace). It hands out work for one
application, ``burn`` (:mod:`burn_app`), which the client has as an "anonymous platform"
application (``app_info.xml`` in its project directory, see :func:`prepare_data_dir`: BOINC
runs only signed applications it downloads), ``UNITS`` work units of ``SECONDS`` CPU seconds
each, up to two per request for work, each with an input file the client downloads, and
acknowledges the results the client reports. ``STATE_DIR/project.log`` records each request
for the tests to read. Only what the client needs is implemented; it is no BOINC server.
"""

from __future__ import annotations

import hashlib
import http.server
import os
import re
import sys
import threading
import time

APP = "burn"
VERSION = 100
APP_FILE = "burn_app_1.py"
FLOPS = 1e9


class Project:
    """The project's state: the units handed out and the results reported."""

    def __init__(self, port: int, state_dir: str, units: int, seconds: float) -> None:
        self.url = f"http://127.0.0.1:{port}/"
        self.state_dir = state_dir
        self.units = units
        self.seconds = seconds
        self.handed = 0
        self.lock = threading.Lock()

    def log(self, line: str) -> None:
        with open(os.path.join(self.state_dir, "project.log"), "a") as file:
            file.write(f"{time.time():.1f} {line}\n")

    def input(self, number: int) -> bytes:
        """The input file of unit ``number`` (the application does not read it: it is there
        so that the client downloads something)."""
        return f"unit {number}: burn {self.seconds} CPU seconds\n".encode()

    def master(self) -> bytes:
        return (
            "<html><head><title>epcore test project</title>\n"
            f'<link rel="boinc_scheduler" href="{self.url}cgi">\n'
            f"</head><body>\n<scheduler>{self.url}cgi</scheduler>\n</body></html>\n"
        ).encode()

    def _unit(self, number: int, platform: str) -> str:
        name = f"burn_{number}"
        fpops = FLOPS * self.seconds
        data = self.input(number)
        digest = hashlib.md5(data, usedforsecurity=False).hexdigest()
        return (
            f"<file_info>\n<name>{name}.in</name>\n<url>{self.url}download/{name}.in</url>\n"
            f"<nbytes>{len(data)}</nbytes>\n<md5_cksum>{digest}</md5_cksum>\n</file_info>\n"
            f"<workunit>\n<name>{name}</name>\n<app_name>{APP}</app_name>\n"
            f"<file_ref>\n<file_name>{name}.in</file_name>\n<open_name>in</open_name>\n"
            "</file_ref>\n"
            f"<version_num>{VERSION}</version_num>\n"
            f"<command_line>--seconds {self.seconds}</command_line>\n"
            f"<rsc_fpops_est>{fpops}</rsc_fpops_est>\n<rsc_fpops_bound>{fpops * 100}"
            "</rsc_fpops_bound>\n<rsc_memory_bound>100000000</rsc_memory_bound>\n"
            "<rsc_disk_bound>100000000</rsc_disk_bound>\n</workunit>\n"
            f"<result>\n<name>{name}_0</name>\n<wu_name>{name}</wu_name>\n"
            f"<platform>{platform}</platform>\n<version_num>{VERSION}</version_num>\n"
            f"<report_deadline>{int(time.time()) + 86400}</report_deadline>\n"
            "<report_immediately/>\n</result>\n"
        )

    def schedule(self, request: str) -> bytes:
        # An anonymous-platform client names "anonymous"; its application's own platform is
        # in the app versions it lists.
        platform = _tag(request, "platform") or _tag(request, "platform_name") or "anonymous"
        reported = re.findall(r"<result>\s*<name>([^<]+)</name>", request)
        wanted = float(_tag(request, "work_req_seconds") or 0) > 0 or any(
            float(v) > 0 for v in re.findall(r"<req_secs>([^<]+)</req_secs>", request)
        )
        wanted = wanted or float(_tag(request, "cpu_req_secs") or 0) > 0
        units = []
        with self.lock:
            # Up to two units per request: enough to keep two CPUs busy.
            while wanted and self.handed < self.units and len(units) < 2:
                self.handed += 1
                units.append(self._unit(self.handed, platform))
        self.log(f"rpc wanted={wanted} sent={len(units)} reported={','.join(reported)}")
        acks = "".join(f"<result_ack>\n<name>{n}</name>\n</result_ack>\n" for n in reported)
        body = (
            "<scheduler_reply>\n<scheduler_version>719</scheduler_version>\n"
            f"<master_url>{self.url}</master_url>\n<project_name>epcore test project"
            "</project_name>\n<hostid>1</hostid>\n<request_delay>2</request_delay>\n"
            f"{''.join(units)}{acks}</scheduler_reply>\n"
        )
        return body.encode()


def prepare_data_dir(data_dir: str, port: int, uid: int, gid: int) -> str:
    """Attach the client whose data directory is ``data_dir`` to the project on ``port`` (an
    account file, seed 000's third way) with ``burn`` as its anonymous-platform application,
    everything owned by ``uid``/``gid``; the project's URL."""
    url = f"http://127.0.0.1:{port}/"
    project_dir = os.path.join(data_dir, "projects", f"127.0.0.1_{port}")
    os.makedirs(project_dir, exist_ok=True)
    here = os.path.dirname(os.path.abspath(__file__))
    with open(os.path.join(here, "burn_app.py"), "rb") as source:
        app = source.read()
    files = {
        os.path.join(data_dir, f"account_127.0.0.1_{port}.xml"): (
            f"<account>\n<master_url>{url}</master_url>\n"
            "<authenticator>epcore_test_key</authenticator>\n</account>\n"
        ).encode(),
        os.path.join(project_dir, "app_info.xml"): (
            f"<app_info>\n<app>\n<name>{APP}</name>\n</app>\n"
            f"<file_info>\n<name>{APP_FILE}</name>\n<executable/>\n</file_info>\n"
            f"<app_version>\n<app_name>{APP}</app_name>\n<version_num>{VERSION}</version_num>\n"
            # An API version of 6 or later: the client shares memory through a file (the
            # application's status and control channels).
            "<avg_ncpus>1</avg_ncpus>\n<api_version>7.20.0</api_version>\n"
            f"<file_ref>\n<file_name>{APP_FILE}</file_name>\n<main_program/>\n</file_ref>\n"
            "</app_version>\n</app_info>\n"
        ).encode(),
        os.path.join(project_dir, APP_FILE): app,
    }
    for path, content in files.items():
        with open(path, "wb") as file:
            file.write(content)
        os.chmod(path, 0o755 if path.endswith(".py") else 0o644)
    for root, dirs, names in os.walk(data_dir):
        for name in [*dirs, *names]:
            os.chown(os.path.join(root, name), uid, gid)
    os.chown(data_dir, uid, gid)
    return url


def _tag(text: str, tag: str) -> str | None:
    found = re.search(rf"<{tag}>([^<]*)</{tag}>", text)
    return found.group(1).strip() if found else None


def serve(port: int, state_dir: str, units: int, seconds: float) -> None:
    project = Project(port, state_dir, units, seconds)

    class Handler(http.server.BaseHTTPRequestHandler):
        def _reply(self, body: bytes, kind: str = "text/xml") -> None:
            self.send_response(200)
            self.send_header("Content-Type", kind)
            self.send_header("Content-Length", str(len(body)))
            self.end_headers()
            self.wfile.write(body)

        def do_GET(self) -> None:
            found = re.fullmatch(r"/download/burn_(\d+)\.in", self.path)
            if found is not None:
                project.log(f"download {self.path}")
                self._reply(project.input(int(found.group(1))), "application/octet-stream")
            elif self.path in ("/", "/index.php"):
                project.log("master")
                self._reply(project.master(), "text/html")
            else:
                self.send_error(404)

        def do_POST(self) -> None:
            length = int(self.headers.get("Content-Length") or 0)
            request = self.rfile.read(length).decode(errors="replace")
            if self.path.startswith("/cgi"):
                self._reply(project.schedule(request))
            else:
                self.send_error(404)

        def log_message(self, format: str, *args: object) -> None:
            pass

    server = http.server.ThreadingHTTPServer(("127.0.0.1", port), Handler)
    project.log("listening")
    server.serve_forever()


if __name__ == "__main__":
    serve(
        int(sys.argv[1]),
        sys.argv[2],
        int(sys.argv[3]) if len(sys.argv) > 3 else 4,
        float(sys.argv[4]) if len(sys.argv) > 4 else 600.0,
    )
