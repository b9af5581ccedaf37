"""HTCondor's queue-management protocol (QMGMT_WRITE_CMD / QMGMT_READ_CMD), the schedd's side.

After the command's start, the client makes remote calls on the same connection, one message
each: the call's number, its arguments; the answer is ``rval`` (and ``errno`` when it is
negative, and the call's results). What ``htcondor2.Schedd().submit`` and ``edit`` send
(qmgmt_send_stubs.cpp's order):

- GetCapabilities -> an ad (no LateMaterialize: submissions come job by job); a client
  that sends a submit digest anyway (SetJobFactory, SendMaterializeData: max_materialize or
  max_idle) has its commit refused with the reason;
- NewCluster -> the cluster id; NewProc(cluster) -> the next proc id;
- SetAttribute2(cluster, proc, value, name, flags): into the cluster's ad (proc -1) or a
  new job's, or, for a job already queued, an edit (condor_qedit). With the NoAck flag
  nothing is answered; a failure is kept and fails the commit;
- SetAttributeByConstraint2(constraint, value, name, flags): an edit of the matching jobs,
  answered even with NoAck (the number of jobs, or ``-1`` and errno);
- CommitTransaction(flags) -> ``0`` and an ad (WarningReason), or ``-1``, errno and an ad
  with ErrorCode and ErrorReason; AbortTransaction, DestroyCluster drop what is pending;
- SetEffectiveOwner: only QUEUE_SUPER_USERS may name another user, and then act as them;
- CloseSocket: the end. A connection that ends without a commit aborts the transaction.

Nothing is queued before the commit: the transaction is kept here (bounded: MAX_PROCS jobs
of MAX_ATTRIBUTES attributes, MAX_EDITS edits) and carried out through
the pool's requests (``NewCluster``, ``Submit`` in chunks, ``Edit``), the same handlers the
local clients reach, for the authenticated user, so the schedd's rules about who may act on
which job hold unchanged. Reads (GetAttribute*, GetJobAd, GetNextJobByConstraint,
GetAllJobsByConstraint) go through ``QueryJobs``; private attributes are never answered.
"""

from __future__ import annotations

import errno
import logging
import pwd
from collections.abc import Callable, Generator
from typing import Final

from epcore.classad import ClassAd, parse_expr
from epcore.classad.formats import old_attribute_lines
from epcore.errors import ClassAdError, EpError
from epcore.interfaces import Requester
from epcore.interfaces.requests import SUBMIT_CHUNK
from epcore.net.codec import Reader, Writer, is_private
from epcore.net.conversation import Refused, Step, Stream, receive, send
from epcore.net.qmgmt_protocol import (
    ABORT_TRANSACTION,
    BEGIN_TRANSACTION,
    CLOSE_SOCKET,
    COMMIT,
    COMMIT_NO_FLAGS,
    DELETE_ATTRIBUTE,
    DESTROY_CLUSTER,
    GET_ALL_JOBS_BY_CONSTRAINT,
    GET_ATTRIBUTE_EXPR,
    GET_ATTRIBUTE_FLOAT,
    GET_ATTRIBUTE_INT,
    GET_ATTRIBUTE_STRING,
    GET_CAPABILITIES,
    GET_JOB_AD,
    GET_NEXT_JOB_BY_CONSTRAINT,
    INITIALIZE_CONNECTION,
    INITIALIZE_READ_ONLY,
    NEW_CLUSTER,
    NEW_PROC,
    NO_ACK,
    QUERY_ONLY,
    SEND_MATERIALIZE_DATA,
    SET_ALLOW_PROTECTED,
    SET_ATTRIBUTE,
    SET_ATTRIBUTE2,
    SET_ATTRIBUTE_BY_CONSTRAINT,
    SET_ATTRIBUTE_BY_CONSTRAINT2,
    SET_EFFECTIVE_OWNER,
    SET_JOB_FACTORY,
    double_parts,
)

#: The pool's requests as a function: who asks, the request; the answer (Ok, Error...).
Route = Callable[[Requester, ClassAd], ClassAd]

# What one connection's transaction may hold until its commit (the pool's memory is not the
# client's to fill): jobs, attributes in one ad, edits.
MAX_PROCS: Final = 100_000
MAX_ATTRIBUTES: Final = 2_000
MAX_EDITS: Final = 10_000
#: Why a submission with max_materialize or max_idle (HTCondor's late materialization: the
#: schedd makes the jobs from a submit digest as earlier ones finish) is refused.
NO_LATE_MATERIALIZATION: Final = (
    "late materialization (max_materialize, max_idle) is not supported by this schedd: "
    "submit without them and every job is queued at once"
)


class QueueSession:
    """One connection's calls and its transaction (module docstring). ``requester`` is the
    authenticated user mapped to a local one (None: nobody may write); ``write``: the
    connection came by QMGMT_WRITE_CMD; ``peer`` names who and from where, for the log
    lines of refusals."""

    def __init__(
        self,
        route: Route,
        requester: Requester | None,
        *,
        write: bool,
        log: logging.Logger,
        clock: Callable[[], float],
        peer: str = "a client",
    ) -> None:
        self.route = route
        self.requester = requester
        self.write = write
        self.log = log
        self.peer = peer
        self.clock = clock
        self.abort()
        self.scan: list[ClassAd] = []

    # -- the transaction ------------------------------------------------------------------

    def abort(self) -> None:
        """Drop what the transaction holds."""
        self.cluster_id: int | None = None
        self.cluster_ad = ClassAd()
        self.procs: dict[int, ClassAd] = {}
        self.edits: list[ClassAd] = []
        self.errors: list[str] = []

    def _ask(self, command: str, **arguments: object) -> ClassAd:
        """The pool's answer to ``command``; EpError with its Error when it is refused."""
        if self.requester is None:
            raise EpError("the connection is not authenticated as a local user")
        request = ClassAd({"Command": command})
        for name, value in arguments.items():
            request[name] = value
        reply = self.route(self.requester, request)
        if reply.evaluate("Ok") is not True:
            raise EpError(str(reply.evaluate("Error")))
        return reply

    def _writable(self) -> None:
        if not self.write or self.requester is None:
            raise PermissionError("the connection is read-only (QMGMT_READ_CMD) or anonymous")

    def commit(self) -> list[str]:
        """Carry out the transaction: the new cluster's jobs, then the edits (EpError, and
        nothing pending kept, when the pool refuses); the warnings."""
        try:
            if self.cluster_id is not None and self.procs:
                procs = [self.procs[proc] for proc in sorted(self.procs)]
                for start in range(0, len(procs), SUBMIT_CHUNK):
                    arguments: dict[str, object] = {
                        "ClusterId": self.cluster_id,
                        "ClusterAd": self.cluster_ad,
                        "Procs": procs[start : start + SUBMIT_CHUNK],
                    }
                    if start == 0:
                        arguments["SubmissionSize"] = len(procs)
                    self._ask("Submit", **arguments)
            for edit in self.edits:
                self._ask("Edit", **{name: edit.evaluate(name) for name in edit})
        finally:
            self.abort()
        return []

    # -- the calls ------------------------------------------------------------------------

    def call(self, number: int, reader: Reader, stream: Stream) -> tuple[Writer | None, bool]:
        """Answer one call: the reply (None: nothing is sent) and whether more calls follow.
        CodecError when the arguments are not the call's."""
        out = stream.writer()
        if number in (INITIALIZE_CONNECTION, INITIALIZE_READ_ONLY):
            return None, True
        if number == CLOSE_SOCKET:
            return None, False
        handler = self._CALLS.get(number)
        if handler is None:
            self.log.warning(
                "queue management call %d from %s is not supported; closing", number, self.peer
            )
            return None, False
        return handler(self, reader, out), True

    def _new_cluster(self, reader: Reader, out: Writer) -> Writer:
        reader.expect_end("NewCluster")
        try:
            self._writable()
            if self.cluster_id is not None:
                raise EpError("one new cluster per transaction")
            reply = self._ask("NewCluster")
        except (EpError, PermissionError) as error:
            code = errno.EACCES if isinstance(error, PermissionError) else errno.EINVAL
            reason = ClassAd({"ErrorCode": code, "ErrorReason": str(error)})
            return out.put_int(-1).put_int(code).put_classad(reason)
        cluster_id = reply.evaluate("ClusterId")
        assert isinstance(cluster_id, int)
        self.cluster_id = cluster_id
        self.cluster_ad = ClassAd()
        return out.put_int(cluster_id)

    def _new_proc(self, reader: Reader, out: Writer) -> Writer:
        cluster_id = reader.get_int32("NewProc's cluster")
        reader.expect_end("NewProc")
        if cluster_id != self.cluster_id or self.cluster_id is None:
            return out.put_int(-1).put_int(errno.EINVAL)
        if len(self.procs) >= MAX_PROCS:
            self.errors.append(f"a transaction holds at most {MAX_PROCS} jobs")
            return out.put_int(-1).put_int(errno.E2BIG)
        proc = len(self.procs)
        self.procs[proc] = ClassAd()
        return out.put_int(proc)

    def _set_attribute(self, reader: Reader, out: Writer, *, flagged: bool) -> Writer | None:
        cluster_id = reader.get_int32("SetAttribute's cluster")
        proc = reader.get_int32("SetAttribute's proc")
        text = reader.get_string("SetAttribute's value")
        name = reader.get_string("SetAttribute's name")
        flags = reader.get_byte("SetAttribute's flags") if flagged else 0
        reader.expect_end("SetAttribute")
        try:
            self._writable()
            expr = parse_expr(text)
            if cluster_id == self.cluster_id and cluster_id is not None:
                ad = self.cluster_ad if proc == -1 else self.procs.get(proc)
                if ad is None:
                    raise EpError(f"job {cluster_id}.{proc} was not made by NewProc")
                if len(ad) >= MAX_ATTRIBUTES and name not in ad:
                    raise EpError(f"a job's ad holds at most {MAX_ATTRIBUTES} attributes")
                ad[name] = expr
            else:
                ids = [f"{cluster_id}.{proc}" if proc >= 0 else str(cluster_id)]
                self._edit(name, text, flags, JobIds=ids)
        except (EpError, ClassAdError, PermissionError) as error:
            self.log.warning(
                "SetAttribute %s of %d.%d from %s refused: %s",
                name,
                cluster_id,
                proc,
                self.peer,
                error,
            )
            if flags & NO_ACK:
                self.errors.append(f"{name} of {cluster_id}.{proc}: {error}")
                return None
            code = errno.EACCES if isinstance(error, PermissionError) else errno.EINVAL
            return out.put_int(-1).put_int(code)
        return None if flags & NO_ACK else out.put_int(0)

    def _edit(self, name: str, text: str, flags: int, **target: object) -> int:
        """Check an edit now (QueryOnly) and keep it for the commit; the jobs it touches."""
        if len(self.edits) >= MAX_EDITS:
            raise EpError(f"a transaction holds at most {MAX_EDITS} edits")
        reply = self._ask("Edit", Attribute=name, Value=text, QueryOnly=True, **target)
        done = reply.evaluate("Done")
        if not flags & QUERY_ONLY:
            self.edits.append(ClassAd({"Attribute": name, "Value": text, **target}))
        return len(done) if isinstance(done, list) else 0

    def _set_by_constraint(self, reader: Reader, out: Writer, *, flagged: bool) -> Writer:
        constraint = reader.get_string("the constraint")
        text = reader.get_string("the value")
        name = reader.get_string("the name")
        flags = reader.get_byte("the flags") if flagged else 0
        reader.expect_end("SetAttributeByConstraint")
        try:
            self._writable()
            count = self._edit(name, text, flags, Constraint=constraint or "true")
        except (EpError, PermissionError) as error:
            # Answered whatever the flags say (qmgmt_send_stubs.cpp always reads it).
            self.log.warning(
                "SetAttributeByConstraint %s from %s refused: %s", name, self.peer, error
            )
            code = errno.EACCES if isinstance(error, PermissionError) else errno.EINVAL
            return out.put_int(-1).put_int(code)
        return out.put_int(count)

    def _commit(self, reader: Reader, out: Writer, *, flagged: bool) -> Writer:
        if flagged:
            reader.get_int("CommitTransaction's flags")
        reader.expect_end("CommitTransaction")
        if self.errors:
            reason = "; ".join(self.errors)
            self.abort()
            return (
                out.put_int(-1)
                .put_int(errno.EINVAL)
                .put_classad(ClassAd({"ErrorCode": 2, "ErrorReason": reason}))
            )
        try:
            self.commit()
        except EpError as error:
            self.log.warning("a transaction from %s was refused: %s", self.peer, error)
            return (
                out.put_int(-1)
                .put_int(errno.EINVAL)
                .put_classad(ClassAd({"ErrorCode": 2, "ErrorReason": str(error)}))
            )
        return out.put_int(0).put_classad(ClassAd())

    def _no_argument(self, reader: Reader, out: Writer, *, abort: bool) -> Writer:
        reader.expect_end("the call")
        if abort:
            self.abort()
        return out.put_int(0)

    def _destroy_cluster(self, reader: Reader, out: Writer) -> Writer:
        cluster_id = reader.get_int32("DestroyCluster's cluster")
        reader.expect_end("DestroyCluster")
        if cluster_id != self.cluster_id:
            return out.put_int(-1).put_int(errno.EINVAL)
        self.abort()
        return out.put_int(0)

    def _capabilities(self, reader: Reader, out: Writer) -> Writer:
        reader.get_int("the capabilities' mask")
        reader.expect_end("GetCapabilities")
        # No LateMaterialize: htcondor2 then sends every job (itemdata too) by NewProc.
        return out.put_classad(ClassAd({"LateMaterialize": False, "UseJobsets": False}))

    def _job_factory(self, reader: Reader, out: Writer) -> Writer:
        reader.get_int32("SetJobFactory's cluster")
        reader.get_int32("SetJobFactory's most jobs at once")
        reader.get_string("SetJobFactory's file name")
        reader.get_string("the submit digest")
        reader.expect_end("SetJobFactory")
        # Taken, so that htcondor2 goes on to its commit, whose refusal carries the reason
        # it shows (a refusal here would reach the user as "failed to send submit digest").
        self._refuse_late_materialization()
        return out.put_int(0)

    def _materialize_data(self, reader: Reader, out: Writer) -> Writer:
        reader.get_int32("SendMaterializeData's cluster")
        reader.get_int32("SendMaterializeData's flags")
        items = reader.get_bytes(len(reader.data) - reader.offset, "the item data")
        self._refuse_late_materialization()
        return out.put_string("").put_int(items.count(b"\n")).put_int(0)

    def _refuse_late_materialization(self) -> None:
        if NO_LATE_MATERIALIZATION not in self.errors:
            self.errors.append(NO_LATE_MATERIALIZATION)

    def _effective_owner(self, reader: Reader, out: Writer) -> Writer:
        owner = reader.get_string("the effective owner")
        reader.expect_end("SetEffectiveOwner")
        requester = self.requester
        if requester is not None and owner in ("", requester.name):
            return out.put_int(0)
        if requester is not None and requester.super_user:
            # QUEUE_SUPER_USERS may act as another user (HTCondor's SetEffectiveOwner); the
            # schedd's own rules (never root) still hold for what they then submit.
            try:
                uid = pwd.getpwnam(owner).pw_uid
            except KeyError:
                uid = -1
            self.requester = Requester(uid, owner, False)
            return out.put_int(0)
        self.log.warning("%s may not act as %s (SetEffectiveOwner)", self.peer, owner)
        return out.put_int(-1).put_int(errno.EACCES)

    def _allow_protected(self, reader: Reader, out: Writer) -> Writer:
        wanted = reader.get_int("the switch")
        reader.expect_end("SetAllowProtectedAttrChanges")
        requester = self.requester
        if wanted and not (requester is not None and requester.super_user):
            return out.put_int(-1).put_int(errno.EACCES)
        return out.put_int(0)

    def _delete_attribute(self, reader: Reader, out: Writer) -> Writer:
        cluster_id = reader.get_int32("the cluster")
        proc = reader.get_int32("the proc")
        name = reader.get_string("the name")
        reader.expect_end("DeleteAttribute")
        ad = self.cluster_ad if proc == -1 else self.procs.get(proc)
        if cluster_id != self.cluster_id or ad is None or name not in ad:
            return out.put_int(-1).put_int(errno.EINVAL)
        del ad[name]
        return out.put_int(0)

    # -- reads ----------------------------------------------------------------------------

    def _jobs(self, constraint: str) -> list[ClassAd]:
        requester = self.requester or Requester(-1, "unauthenticated", False)
        request = ClassAd({"Command": "QueryJobs", "Constraint": constraint or "true"})
        reply = self.route(requester, request)
        if reply.evaluate("Ok") is not True:
            raise EpError(str(reply.evaluate("Error")))
        ads = reply.evaluate("Ads")
        return [ad for ad in ads if isinstance(ad, ClassAd)] if isinstance(ads, list) else []

    def _job(self, cluster_id: int, proc: int) -> ClassAd | None:
        if cluster_id == self.cluster_id and self.cluster_id is not None:
            own = self.procs.get(proc) if proc >= 0 else ClassAd()
            if own is None:
                return None
            whole = self.cluster_ad.copy()
            whole.update(own)
            return whole
        which = f"ClusterId == {cluster_id}" + (f" && ProcId == {proc}" if proc >= 0 else "")
        found = self._jobs(which)
        return found[0] if found else None

    def _get_attribute(self, reader: Reader, out: Writer, kind: int) -> Writer:
        cluster_id = reader.get_int32("the cluster")
        proc = reader.get_int32("the proc")
        name = reader.get_string("the name")
        reader.expect_end("GetAttribute")
        if is_private(name):
            return out.put_int(-1).put_int(errno.EACCES)
        job = self._job(cluster_id, proc)
        if job is None or name not in job:
            return out.put_int(-1).put_int(errno.ENOENT if job is None else errno.EINVAL)
        if kind == GET_ATTRIBUTE_EXPR:
            line = dict(old_attribute_lines(ClassAd({name: job.lookup(name)})))[name]
            return out.put_int(0).put_string(line.partition(" = ")[2])
        value = job.evaluate(name)
        if kind == GET_ATTRIBUTE_INT and isinstance(value, int | bool):
            return out.put_int(0).put_int(int(value))
        if kind == GET_ATTRIBUTE_STRING and isinstance(value, str):
            return out.put_int(0).put_string(value)
        if kind == GET_ATTRIBUTE_FLOAT and isinstance(value, int | float):
            # CEDAR's double: frexp's mantissa scaled to an int, then the exponent.
            mantissa, exponent = double_parts(float(value))
            return out.put_int(0).put_int(mantissa).put_int(exponent)
        return out.put_int(-1).put_int(errno.EINVAL)

    def _get_job_ad(self, reader: Reader, out: Writer) -> Writer:
        cluster_id = reader.get_int32("the cluster")
        proc = reader.get_int32("the proc")
        reader.expect_end("GetJobAd")
        job = self._job(cluster_id, proc)
        if job is None:
            return out.put_int(-1).put_int(errno.ENOENT)
        return out.put_int(0).put_classad(job, private=False)

    def _next_job(self, reader: Reader, out: Writer) -> Writer:
        initial = reader.get_int("whether the scan starts")
        constraint = reader.get_string("the constraint")
        reader.expect_end("GetNextJobByConstraint")
        if initial:
            try:
                self.scan = self._jobs(constraint)
            except EpError:
                self.scan = []
        if not self.scan:
            return out.put_int(-1).put_int(errno.ENOENT)
        return out.put_int(0).put_classad(self.scan.pop(0), private=False)

    def _all_jobs(self, reader: Reader, out: Writer) -> Writer:
        constraint = reader.get_string("the constraint")
        projection = reader.get_string("the projection").replace(",", " ").split()
        reader.expect_end("GetAllJobsByConstraint")
        try:
            jobs = self._jobs(constraint)
        except EpError:
            jobs = []
        now = int(self.clock())
        for job in jobs:
            job["ServerTime"] = now
            out.put_int(0).put_classad(job, projection=projection or None, private=False)
        return out.put_int(-1).put_int(errno.ENOENT)

    _CALLS: Final[dict[int, Callable[[QueueSession, Reader, Writer], Writer | None]]] = {
        NEW_CLUSTER: _new_cluster,
        NEW_PROC: _new_proc,
        SET_ATTRIBUTE: lambda s, r, o: s._set_attribute(r, o, flagged=False),
        SET_ATTRIBUTE2: lambda s, r, o: s._set_attribute(r, o, flagged=True),
        SET_ATTRIBUTE_BY_CONSTRAINT: lambda s, r, o: s._set_by_constraint(r, o, flagged=False),
        SET_ATTRIBUTE_BY_CONSTRAINT2: lambda s, r, o: s._set_by_constraint(r, o, flagged=True),
        COMMIT: lambda s, r, o: s._commit(r, o, flagged=True),
        COMMIT_NO_FLAGS: lambda s, r, o: s._commit(r, o, flagged=False),
        BEGIN_TRANSACTION: lambda s, r, o: s._no_argument(r, o, abort=False),
        ABORT_TRANSACTION: lambda s, r, o: s._no_argument(r, o, abort=True),
        DESTROY_CLUSTER: _destroy_cluster,
        GET_CAPABILITIES: _capabilities,
        SET_JOB_FACTORY: _job_factory,
        SEND_MATERIALIZE_DATA: _materialize_data,
        SET_EFFECTIVE_OWNER: _effective_owner,
        SET_ALLOW_PROTECTED: _allow_protected,
        DELETE_ATTRIBUTE: _delete_attribute,
        GET_ATTRIBUTE_INT: lambda s, r, o: s._get_attribute(r, o, GET_ATTRIBUTE_INT),
        GET_ATTRIBUTE_STRING: lambda s, r, o: s._get_attribute(r, o, GET_ATTRIBUTE_STRING),
        GET_ATTRIBUTE_EXPR: lambda s, r, o: s._get_attribute(r, o, GET_ATTRIBUTE_EXPR),
        GET_ATTRIBUTE_FLOAT: lambda s, r, o: s._get_attribute(r, o, GET_ATTRIBUTE_FLOAT),
        GET_JOB_AD: _get_job_ad,
        GET_NEXT_JOB_BY_CONSTRAINT: _next_job,
        GET_ALL_JOBS_BY_CONSTRAINT: _all_jobs,
    }


def queue_conversation(
    stream: Stream, session: QueueSession
) -> Generator[Step, bytes | None, None]:
    """Answer the session's calls until CloseSocket or the end of the connection; what is
    left uncommitted is dropped."""
    try:
        while True:
            data = yield from _next_call(stream)
            if data is None:
                return
            number = data.get_int32("the call's number")
            reply, more = session.call(number, data, stream)
            if reply is not None:
                yield from send(reply)
            if not more:
                return
    finally:
        session.abort()


def _next_call(stream: Stream) -> Generator[Step, bytes | None, Reader | None]:
    try:
        return (yield from receive(stream, "the next queue-management call"))
    except Refused:
        return None
