"""HTCondor's own Python API against a pool, from a subprocess: its configuration is
process-wide, read from CONDOR_CONFIG when it is imported, so each test's client gets a
process of its own.

:func:`run_htcondor2` runs a snippet with ``htcondor2`` and ``classad2`` imported and
CONDOR_CONFIG naming the pool's configuration, optionally as another user (the modules are
imported as root, which can read them, and then the process becomes the user, so that FS
authentication proves that user), and returns what the snippet assigned to ``result``
(JSON), or raises :class:`Htcondor2Error` with the exception's text.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from typing import Any

from epcore.errors import EpError

_WRAPPER = """
import json, os, sys, traceback
import htcondor2, classad2
uid, gid = int(sys.argv[1]), int(sys.argv[2])
if uid:
    os.setgroups([])
    os.setgid(gid)
    os.setuid(uid)
namespace = {"htcondor2": htcondor2, "classad2": classad2, "result": None}
try:
    exec(sys.stdin.read(), namespace)
except Exception as error:
    print(json.dumps({"error": f"{type(error).__name__}: {error}"}))
else:
    print(json.dumps({"result": namespace["result"]}, default=str))
"""


class Htcondor2Error(EpError):
    """The snippet raised (the message is its exception's type and text)."""


def run_htcondor2(
    config: str,
    code: str,
    *,
    uid: int = 0,
    gid: int = 0,
    timeout: float = 60.0,
    environ: dict[str, str] | None = None,
) -> Any:
    """Run ``code`` with htcondor2 against the pool configured by ``config`` (module
    docstring); ``environ`` adds variables (``_CONDOR_TOOL_DEBUG``...)."""
    env = {**os.environ, "CONDOR_CONFIG": config, **(environ or {})}
    done = subprocess.run(
        [sys.executable, "-c", _WRAPPER, str(uid), str(gid)],
        input=code,
        capture_output=True,
        text=True,
        env=env,
        timeout=timeout,
        cwd="/",
    )
    lines = [line for line in done.stdout.splitlines() if line.startswith("{")]
    if not lines:
        raise Htcondor2Error(f"htcondor2 snippet died (status {done.returncode}): {done.stderr}")
    answer = json.loads(lines[-1])
    if "error" in answer:
        raise Htcondor2Error(answer["error"])
    return answer["result"]
