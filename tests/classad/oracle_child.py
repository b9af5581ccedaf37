"""classad2 in a child process: a crash in its C++ code then costs one example, not the run."""

from __future__ import annotations

import faulthandler
import multiprocessing
from multiprocessing.connection import Connection
from multiprocessing.process import BaseProcess

import classad2
from oracle import Canon, OracleUnstable, Scene, World, fixed_timezone, stable_canon_oracle

#: Seconds the child may take over one request before it counts as hung.
ORACLE_TIMEOUT = 60.0


def canon_in_ad(ad_text: str, parser: str, text: str) -> Canon:
    """stable_canon_oracle of ``text`` with MY = the ad that classad2 reads from ``ad_text``."""
    kind = {
        "new": classad2.ParserType.New,
        "old": classad2.ParserType.Old,
        "json": classad2.ParserType.JSON,
    }[parser]
    ad = classad2.parseOne(ad_text, kind)
    return stable_canon_oracle(text, Scene(parser, None, None, ad, classad2.ClassAd(), ()))


def _serve(conn: Connection) -> None:
    # classad2's crashes here are expected (OracleProcess): the fork of a pytest worker
    # inherits its faulthandler, which would print each one as "Fatal Python error".
    faulthandler.disable()
    with fixed_timezone():
        world = World.build()
        while True:
            try:
                kind, args = conn.recv()
            except EOFError:
                return
            try:
                if kind == "scene":
                    answer: tuple[str, object] = (
                        "ok",
                        stable_canon_oracle(args[0], world.scenes[args[1]]),
                    )
                else:
                    answer = ("ok", canon_in_ad(*args))
            except OracleUnstable as exc:
                answer = ("unstable", str(exc))
            except Exception as exc:
                answer = ("raised", f"{type(exc).__name__}: {exc}")
            conn.send(answer)


class OracleProcess:
    """classad2 in a child process, so that a crash in its C++ code costs one example, not the run.

    classad2 reads freed memory on, for example, ``split("a b").x`` and dies with SIGSEGV; the
    child is then started again and the example is rejected as having no reference answer.
    """

    def __init__(self) -> None:
        self._conn: Connection | None = None
        self._child: BaseProcess | None = None

    def call(self, kind: str, *args: object) -> Canon:
        """Run ``("scene", text, index)`` or ``("ad", ad_text, parser, text)`` in the child."""
        if self._conn is None:
            # fork, not spawn: spawn re-runs the parent's __main__, which is not always a file.
            context = multiprocessing.get_context("fork")
            self._conn, child_end = context.Pipe()
            self._child = context.Process(target=_serve, args=(child_end,), daemon=True)
            self._child.start()
            child_end.close()
        try:
            self._conn.send((kind, args))
            if not self._conn.poll(ORACLE_TIMEOUT):
                raise TimeoutError
            status, payload = self._conn.recv()
        except (EOFError, OSError, TimeoutError) as exc:
            self.close()
            raise OracleUnstable(f"classad2 died or hung on {args!r}") from exc
        if status == "unstable":
            raise OracleUnstable(str(payload))
        assert status == "ok", f"the oracle helper raised {payload} on {args!r}"
        assert isinstance(payload, tuple)
        return payload

    def close(self) -> None:
        """Stop the child (it is started again on the next call)."""
        if self._conn is not None:
            self._conn.close()
        if self._child is not None:
            self._child.kill()
            self._child.join()
        self._conn, self._child = None, None
