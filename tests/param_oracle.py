"""HTCondor's own configuration reader (htcondor2.param) as the reference for epcore.config.

``htcondor2.reload_config()`` calls ``exit()`` on a configuration error and keeps process-wide
state, so every load runs in a process of its own: a server process imports htcondor2 once and
forks one short-lived child per request. The child points ``CONDOR_CONFIG`` at the file, sets the
subsystem, reloads, and answers with two views of every requested name:

- ``typed``: what ``htcondor2.param.get(name)`` returns. For a knob HTCondor declares as an int,
  a double or a bool this is the daemon's interpretation (``NUM_CPUS = 3*4`` gives ``12``, a bad
  value gives the built-in default), rendered with ``repr``; ``None`` when HTCondor has no value.
- ``text``: the expanded text, read through a probe knob set to ``$(name)``; this is what
  ``condor_config_val`` prints, for typed knobs too; ``None`` when the knob has no value or an
  empty one. Unlike ``typed`` it also sees a value that only a prefixed definition gives the
  subsystem (``NEGOTIATOR.X`` read as the negotiator).

A load that fails answers with HTCondor's message (what it printed before exiting).
"""

from __future__ import annotations

import json
import multiprocessing
import os
import tempfile
from collections.abc import Mapping, Sequence
from multiprocessing.connection import Connection
from multiprocessing.process import BaseProcess
from pathlib import Path
from typing import Any

import attrs

#: Seconds one load may take before the oracle counts as hung.
ORACLE_TIMEOUT = 60.0

_PROBE = "EPCORE_ORACLE_PROBE"


@attrs.frozen
class OracleValue:
    """One knob as HTCondor sees it: ``typed`` is repr(param.get()), ``text`` the expansion."""

    typed: str | None
    text: str | None
    kind: str  # "none", "str", "int", "float" or "bool": the Python type param.get returned


@attrs.frozen
class OracleAnswer:
    """The result of one load: the values, or the error HTCondor printed when it gave up."""

    values: Mapping[str, OracleValue]
    error: str | None


def _load_in_child(request: dict[str, Any], out_fd: int) -> None:
    """Body of the per-request child: load the configuration, write the answer as JSON."""
    log_fd = os.open(request["log"], os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
    os.dup2(log_fd, 1)
    os.dup2(log_fd, 2)
    for key in [k for k in os.environ if k.upper().startswith("_CONDOR_")]:
        del os.environ[key]
    os.environ.update(request["env"])
    os.environ["CONDOR_CONFIG"] = request["config"]
    import htcondor2

    htcondor2.set_subsystem(request["subsystem"])
    htcondor2.reload_config()
    values: dict[str, dict[str, str | None]] = {}
    for name in request["names"]:
        typed = htcondor2.param.get(name)
        # The probe also sees values that only a prefixed definition gives this subsystem
        # (NEGOTIATOR.X read as NEGOTIATOR), for which param.get answers None.
        htcondor2.param[_PROBE] = f"$({name})"
        text: str | None = htcondor2.param.get(_PROBE) or None
        kind = "none" if typed is None else type(typed).__name__
        values[name] = {"typed": None if typed is None else repr(typed), "text": text, "kind": kind}
    with os.fdopen(out_fd, "w") as out:
        json.dump(values, out)


def _run_request(request: dict[str, Any]) -> tuple[str, Any]:
    read_fd, write_fd = os.pipe()
    pid = os.fork()
    if pid == 0:  # pragma: no cover - runs in the forked child
        os.close(read_fd)
        status = 0
        try:
            _load_in_child(request, write_fd)
        except BaseException:
            status = 3
        os._exit(status)
    os.close(write_fd)
    with os.fdopen(read_fd) as answer:
        payload = answer.read()
    _, status = os.waitpid(pid, 0)
    log = Path(request["log"]).read_text(errors="replace")
    if os.waitstatus_to_exitcode(status) != 0 or not payload:
        return "error", log.strip() or f"exit status {status}"
    return "ok", json.loads(payload)


def _serve(conn: Connection) -> None:
    import htcondor2  # noqa: F401  (imported once here, inherited by every fork)

    while True:
        try:
            request = conn.recv()
        except EOFError:
            return
        try:
            conn.send(_run_request(request))
        except Exception as exc:  # reported to the test, which fails with it
            conn.send(("raised", f"{type(exc).__name__}: {exc}"))


class ParamOracle:
    """A long-lived server process that loads configurations with htcondor2 on request."""

    def __init__(self) -> None:
        self._conn: Connection | None = None
        self._child: BaseProcess | None = None
        self._workdir = tempfile.TemporaryDirectory(prefix="epcore-param-oracle-")

    def load(
        self,
        config: str | Path,
        names: Sequence[str],
        *,
        subsystem: str = "STARTD",
        env: Mapping[str, str] | None = None,
    ) -> OracleAnswer:
        """Load ``config`` (a path, or text written to a file first) and read ``names``."""
        if isinstance(config, str):
            path = Path(self._workdir.name) / "condor_config"
            path.write_text(config)
        else:
            path = config
        request = {
            "config": str(path),
            "subsystem": subsystem,
            "names": list(names),
            "env": dict(env or {}),
            "log": str(Path(self._workdir.name) / "oracle.log"),
        }
        status, payload = self._call(request)
        if status == "error":
            return OracleAnswer(values={}, error=str(payload))
        assert status == "ok", f"the param oracle raised {payload}"
        values = {name: OracleValue(**fields) for name, fields in payload.items()}
        return OracleAnswer(values=values, error=None)

    def _call(self, request: dict[str, Any]) -> tuple[str, Any]:
        if self._conn is None:
            context = multiprocessing.get_context("fork")
            self._conn, child_end = context.Pipe()
            self._child = context.Process(target=_serve, args=(child_end,), daemon=True)
            self._child.start()
            child_end.close()
        self._conn.send(request)
        if not self._conn.poll(ORACLE_TIMEOUT):
            self.close()
            raise TimeoutError(f"htcondor2 hung loading {request['config']}")
        answer: tuple[str, Any] = self._conn.recv()
        return answer

    def close(self) -> None:
        """Stop the server process and remove its scratch files."""
        if self._conn is not None:
            self._conn.close()
        if self._child is not None:
            self._child.kill()
            self._child.join()
        self._conn, self._child = None, None
        self._workdir.cleanup()
