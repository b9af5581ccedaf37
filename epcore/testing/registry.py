"""A private image registry for plugin tests: Debian's ``docker-registry`` on loopback.

Container plugins (docker, apptainer) pull ``docker://`` references in their tests; this
serves them from a temporary directory on ``127.0.0.1:<free port>`` so that no test reaches
the network. A registry that is not installed or does not start is reported through
:func:`epcore.testing.system.missing` (a skip outside CI, a failure under ``CI=true``).
"""

from __future__ import annotations

import shutil
import socket
import subprocess
import time
import urllib.error
import urllib.request
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

from epcore.testing.system import missing

#: How long the registry may take to answer its first request.
REGISTRY_START_TIMEOUT = 15.0


def free_port() -> int:
    """A TCP port on 127.0.0.1 that nothing listens on now."""
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as probe:
        probe.bind(("127.0.0.1", 0))
        port: int = probe.getsockname()[1]
        return port


def _answers(url: str) -> bool:
    try:
        with urllib.request.urlopen(url, timeout=1) as response:
            return bool(response.status == 200)
    except (urllib.error.URLError, OSError):
        return False


@contextmanager
def running_registry(directory: Path) -> Iterator[str]:
    """docker-registry serving from ``directory`` (deletes enabled) until the block ends; its
    address ``127.0.0.1:<port>``. Its log is ``directory/registry.log``."""
    program = shutil.which("docker-registry")
    if program is None:
        missing("docker-registry is not installed: apt-get install docker-registry")
        raise AssertionError("unreachable")
    address = f"127.0.0.1:{free_port()}"
    config = directory / "config.yml"
    config.write_text(
        "version: 0.1\n"
        f"storage: {{filesystem: {{rootdirectory: {directory / 'storage'}}}, "
        "delete: {enabled: true}}\n"
        f"http: {{addr: {address}}}\n"
        "log: {level: warn}\n"
    )
    log = directory / "registry.log"
    with log.open("wb") as output:
        process = subprocess.Popen(
            [program, "serve", str(config)], stdout=output, stderr=subprocess.STDOUT
        )
    try:
        deadline = time.monotonic() + REGISTRY_START_TIMEOUT
        while not _answers(f"http://{address}/v2/"):
            if process.poll() is not None or time.monotonic() > deadline:
                missing(f"docker-registry did not serve {address}: {log.read_text()[-2000:]}")
            time.sleep(0.05)
        yield address
    finally:
        process.terminate()
        try:
            process.wait(timeout=10)
        except subprocess.TimeoutExpired:
            process.kill()
            process.wait()
