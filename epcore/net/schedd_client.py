"""epcore's client of an HTCondor-compatible schedd over CEDAR (``ep q / submit / rm / hold /
release -pool HOST[:PORT]``): the same calls the pool's local client offers, spoken as
HTCondor's tools speak them.

- :meth:`RemoteSchedd.locate`: the schedd's address from the collector at ``-pool``
  (QUERY_SCHEDD_ADS, by Name when ``-name`` is given).
- :meth:`~RemoteSchedd.query_jobs`: QUERY_JOB_ADS (one ad per message, ended by the ad with
  ``Owner = 0``), or QUERY_SCHEDD_HISTORY for the history.
- :meth:`~RemoteSchedd.new_cluster` and :meth:`~RemoteSchedd.submit`: one QMGMT_WRITE_CMD
  connection, kept from the new cluster to the commit: NewCluster, then for each job
  NewProc and its attributes by SetAttribute2 without acknowledgement (the cluster's with
  proc -1 first), then CommitTransaction, whose answer says whether anything was queued,
  and CloseSocket; then RESCHEDULE, as condor_submit does.
- :meth:`~RemoteSchedd.act`: ACT_ON_JOBS asking for each job's outcome (AR_LONG),
  confirmed when something can be done.

Every connection offers the ECDH key exchange, so a schedd that wants encryption gets
AES-GCM. Failures (refusals, broken connections, the schedd's errors) raise
:class:`EpError` with the schedd's words.
"""

from __future__ import annotations

import contextlib
import socket
from collections.abc import Generator, Sequence

from epcore.classad import ClassAd, parse_expr
from epcore.classad.formats import old_attribute_lines
from epcore.config import Config
from epcore.errors import EpError
from epcore.net import commands
from epcore.net import qmgmt_protocol as qp
from epcore.net.client import CLIENT_TIMEOUT, connect, query_collector, start_command
from epcore.net.codec import Reader
from epcore.net.conversation import Conversation, Result, Step, Stream, receive, run_blocking, send
from epcore.net.keyexchange import EcdhClientKeyExchange
from epcore.net.sinful import parse_sinful

#: The port of ``-pool HOST`` without one (HTCondor's collector port).
COLLECTOR_PORT = 9618
#: Each local request's JobAction number.
ACTIONS = {
    "Hold": qp.HOLD_JOBS,
    "Release": qp.RELEASE_JOBS,
    "Remove": qp.REMOVE_JOBS,
    "VacateJobs": qp.VACATE_JOBS,
}
_REASONS = {"Hold": "HoldReason", "Release": "ReleaseReason", "Remove": "RemoveReason"}


def split_pool(pool: str) -> tuple[str, int]:
    """``HOST[:PORT]`` (or a sinful string) as host and port."""
    text = pool.strip()
    if text.startswith("<"):
        sinful = parse_sinful(text)
        return sinful.host, sinful.port
    host, colon, port = text.rpartition(":")
    if colon and port.isdigit() and host:
        return host.strip("[]"), int(port)
    return text, COLLECTOR_PORT


class RemoteSchedd:
    """A schedd at ``host:port`` (module docstring); ``config`` gives the client's security
    policy (SEC_CLIENT_*)."""

    def __init__(
        self, host: str, port: int, config: Config, *, timeout: float = CLIENT_TIMEOUT
    ) -> None:
        self.host = host
        self.port = port
        self.config = config
        self.timeout = timeout
        self._queue: tuple[socket.socket, Stream] | None = None

    @classmethod
    def locate(cls, pool: str, name: str | None, config: Config) -> RemoteSchedd:
        """The schedd the collector at ``pool`` knows by ``name`` (any one without)."""
        host, port = split_pool(pool)
        constraint = None if name is None else f"Name == {_quoted(name)}"
        try:
            ads = query_collector(
                host,
                port,
                commands.QUERY_SCHEDD_ADS.number,
                config,
                constraint=constraint,
                projection=["Name", "MyAddress"],
            )
        except OSError as error:
            raise EpError(f"cannot reach the collector at {host}:{port}: {error}") from error
        for ad in ads:
            address = ad.evaluate("MyAddress")
            if isinstance(address, str):
                sinful = parse_sinful(address)
                return cls(sinful.host, sinful.port, config)
        which = f"named {name}" if name else "at all"
        raise EpError(f"the collector at {host}:{port} knows no schedd {which}")

    def _run(self, command: int, body: Conversation[Result]) -> Result:
        """Start ``command`` on a new connection and run ``body`` after it."""

        def conversation() -> Generator[Step, bytes | None, Result]:
            yield from start_command(
                stream, command, self.config, key_exchange=EcdhClientKeyExchange()
            )
            return (yield from body)

        sock, stream = self._connect()
        self._stream = stream
        with sock:
            return self._blocking(sock, stream, conversation())

    def _connect(self) -> tuple[socket.socket, Stream]:
        try:
            sock, stream = connect(self.host, self.port, self.timeout)
        except OSError as error:
            raise EpError(f"cannot reach the schedd at {self.host}:{self.port}: {error}") from error
        # A submission is a stream of small unanswered messages: with Nagle's algorithm each
        # would wait for the peer's delayed ACK (some 40 ms a job).
        sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
        return sock, stream

    @staticmethod
    def _blocking(sock: socket.socket, stream: Stream, body: Conversation[Result]) -> Result:
        try:
            return run_blocking(sock, stream, body)
        except OSError as error:
            raise EpError(f"the schedd's connection failed: {error}") from error

    # -- queries --------------------------------------------------------------------------

    def query_jobs(
        self,
        constraint: str | None = None,
        projection: Sequence[str] | None = None,
        *,
        history: bool = False,
        limit: int | None = None,
    ) -> list[ClassAd]:
        """The jobs (or, ``history``, the jobs that left the queue) ``constraint`` selects."""
        request = ClassAd({"Requirements": parse_expr(constraint) if constraint else True})
        if history:
            request["NumJobMatches"] = limit if limit is not None else -1
            if projection:
                request["Projection"] = list(projection)
            return self._run(commands.QUERY_SCHEDD_HISTORY.number, self._ads(request))
        if projection:
            request["Projection"] = "\n".join(projection)
        if limit is not None:
            request["LimitResults"] = limit
        return self._run(commands.QUERY_JOB_ADS.number, self._ads(request))

    def _ads(self, request: ClassAd) -> Generator[Step, bytes | None, list[ClassAd]]:
        stream = self._stream
        yield from send(stream.writer().put_classad(request))
        found: list[ClassAd] = []
        while True:
            reader = yield from receive(stream, "the next job ad")
            while not reader.at_end:
                ad = reader.get_classad(f"job ad {len(found) + 1}")
                if ad.evaluate("Owner") == 0:
                    code = ad.evaluate("ErrorCode")
                    if isinstance(code, int) and code != 0:
                        raise EpError(f"the schedd: {ad.evaluate('ErrorString')}")
                    return found
                found.append(ad)

    # -- submission -----------------------------------------------------------------------

    def new_cluster(self) -> int:
        """A new cluster's id; the connection stays open for :meth:`submit`."""
        self.close()
        sock, stream = self._connect()
        self._stream = stream

        def conversation() -> Generator[Step, bytes | None, int]:
            yield from start_command(
                stream,
                commands.QMGMT_WRITE_CMD.number,
                self.config,
                key_exchange=EcdhClientKeyExchange(),
            )
            yield from send(stream.writer().put_int(qp.NEW_CLUSTER))
            reader = yield from receive(stream, "the new cluster's id")
            return _answer(reader, "NewCluster")

        try:
            cluster_id = self._blocking(sock, stream, conversation())
        except BaseException:
            sock.close()
            raise
        self._queue = (sock, stream)
        return cluster_id

    def submit(
        self,
        cluster_id: int,
        cluster_ad: ClassAd,
        procs: Sequence[ClassAd],
        *,
        submission_size: int | None = None,
    ) -> list[str]:
        """Queue ``procs`` (each job's own attributes) in the cluster :meth:`new_cluster`
        made, with ``cluster_ad`` shared by them, in one transaction; the jobs' ids."""
        del submission_size  # one transaction: the schedd sees the whole submission at once
        if self._queue is None:
            raise EpError("submit needs new_cluster first")
        sock, stream = self._queue

        def conversation() -> Generator[Step, bytes | None, list[str]]:
            shared = cluster_ad.copy()
            shared["ClusterId"] = cluster_id
            yield from self._set_all(stream, cluster_id, -1, shared)
            ids: list[str] = []
            for index, proc_ad in enumerate(procs):
                yield from send(stream.writer().put_int(qp.NEW_PROC).put_int(cluster_id))
                reader = yield from receive(stream, "the new job's proc id")
                proc = _answer(reader, "NewProc")
                if proc != index:
                    raise EpError(f"the schedd made job {cluster_id}.{proc}, not .{index}")
                # Only what differs from the cluster's ad travels in the job's own.
                own = ClassAd()
                for name, expr in proc_ad.items():
                    if shared.lookup(name) != expr:
                        own[name] = expr
                own["ProcId"] = proc
                status = proc_ad.evaluate("JobStatus")
                own["JobStatus"] = status if isinstance(status, int) else 1
                yield from self._set_all(stream, cluster_id, proc, own)
                ids.append(f"{cluster_id}.{proc}")
            yield from send(stream.writer().put_int(qp.COMMIT).put_int(0))
            reader = yield from receive(stream, "the commit's answer")
            _answer(reader, "CommitTransaction")
            yield from send(stream.writer().put_int(qp.CLOSE_SOCKET))
            return ids

        try:
            ids = self._blocking(sock, stream, conversation())
        finally:
            self.close()
        # The jobs are queued whatever RESCHEDULE meets; the next cycle finds them anyway.
        with contextlib.suppress(EpError):
            self._run(commands.RESCHEDULE.number, _nothing())
        return ids

    @staticmethod
    def _set_all(
        stream: Stream, cluster_id: int, proc: int, ad: ClassAd
    ) -> Generator[Step, bytes | None, None]:
        for name, line in old_attribute_lines(ad):
            writer = stream.writer().put_int(qp.SET_ATTRIBUTE2).put_int(cluster_id).put_int(proc)
            value = line.partition(" = ")[2]
            writer.put_string(value).put_string(name).put_byte(qp.NO_ACK)
            yield from send(writer)

    def close(self) -> None:
        """Drop an unfinished submission's connection (the schedd aborts its transaction)."""
        if self._queue is not None:
            self._queue[0].close()
            self._queue = None

    def analyze(self, job_id: str) -> str:
        """Not offered by a schedd over CEDAR (HTCondor's tools analyze on the client)."""
        raise EpError(f"{job_id}: -better-analyze needs the pool's own socket, not -pool HOST")

    # -- actions --------------------------------------------------------------------------

    def act(
        self,
        request: str,
        *,
        job_ids: Sequence[str] = (),
        constraint: str | None = None,
        reason: str | None = None,
    ) -> tuple[list[str], list[str]]:
        """Hold, Release, Remove or VacateJobs the jobs named; the ids acted on and why
        the others were not."""
        action = ACTIONS.get(request)
        if action is None:
            raise EpError(f"no such action: {request}")
        ad = ClassAd({"JobAction": action, "ActionResultType": qp.AR_LONG})
        if job_ids:
            ad["ActionIds"] = ",".join(job_ids)
        else:
            ad["ActionConstraint"] = parse_expr(constraint or "true")
        if reason and request in _REASONS:
            ad[_REASONS[request]] = reason

        def body() -> Generator[Step, bytes | None, ClassAd]:
            stream = self._stream
            yield from send(stream.writer().put_classad(ad))
            reader = yield from receive(stream, "the action's result")
            result = reader.get_classad("the action's result")
            if result.evaluate("ActionResult") != qp.OK:
                return result
            yield from send(stream.writer().put_int(qp.OK))
            reader = yield from receive(stream, "the schedd's confirmation")
            if reader.get_int("the schedd's confirmation") != qp.OK:
                raise EpError("the schedd could not commit the action")
            return result

        result = self._run(commands.ACT_ON_JOBS.number, body())
        done: list[str] = []
        refused: list[str] = []
        for name in result:
            outcome = result.evaluate(name)
            parts = name.split("_")
            if len(parts) == 3 and parts[0].lower() == "job" and isinstance(outcome, int):
                job_id = f"{parts[1]}.{parts[2]}"
                if outcome == qp.AR_SUCCESS:
                    done.append(job_id)
                else:
                    refused.append(f"{job_id}: {qp.OUTCOMES.get(outcome, 'refused')}")
        return sorted(done, key=_order), sorted(refused, key=_order)


def _answer(reader: Reader, call: str) -> int:
    """A call's ``rval`` (EpError with the errno and the schedd's reason when negative)."""
    rval = reader.get_int(f"{call}'s answer")
    if rval >= 0:
        return rval
    code = reader.get_int(f"{call}'s errno")
    reason = ""
    if not reader.at_end:
        reason = str(reader.get_classad(f"{call}'s reason").evaluate("ErrorReason") or "")
    raise EpError(f"{call} failed (errno {code}){': ' + reason if reason else ''}")


def _nothing() -> Generator[Step, bytes | None, None]:
    return None
    yield


def _order(text: str) -> tuple[int, int]:
    cluster, _, rest = text.partition(".")
    proc = rest.split(":")[0]
    return (int(cluster) if cluster.isdigit() else 0, int(proc) if proc.isdigit() else 0)


def _quoted(text: str) -> str:
    return '"' + text.replace("\\", "\\\\").replace('"', '\\"') + '"'
