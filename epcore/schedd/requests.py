"""The schedd's answers to the pool's requests (:mod:`epcore.pool.requests` lists them all):
submitting, querying and acting on jobs, better-analyze and reschedule.

Every handler checks who asks before it acts: a user submits jobs as themselves and acts on
their own jobs; QUEUE_SUPER_USERS act on every job and administer the pool. Bad arguments
are refused with a message naming the attribute; nothing is half done (a submission is one
queue transaction).
"""

from __future__ import annotations

import os
import re
from collections.abc import Callable
from typing import TYPE_CHECKING

import attrs

from epcore.analysis.analysis import analyze_job, render_analysis
from epcore.classad import ClassAd, parse_expr
from epcore.classad.parser import MESSAGE_NESTING, check_nesting
from epcore.errors import ClassAdSyntaxError, ConfigError, EpError
from epcore.interfaces import Requester
from epcore.interfaces.requests import SUBMIT_CHUNK
from epcore.runtime.control import (
    ControlError,
    answer,
    argument,
    expression_argument,
    flag,
    optional_text,
    projection_argument,
    text_argument,
)
from epcore.schedd.jobqueue import JobId, JobStatus
from epcore.schedd.schedd_jobs import job_id_of
from epcore.schedd.submit_requirements import check_submit_requirements, submit_requirements
from epcore.submit import SubmittedCluster

if TYPE_CHECKING:
    from epcore.config import Config
    from epcore.schedd.service import ScheddService

#: Attributes of a job ad that only the pool sees (the claim and the key to the job's files
#: are capabilities).
PRIVATE_ATTRIBUTES = ("ClaimId", "TransferKey")

#: Attributes that say whose a job is: the schedd sets them from who asks (the socket), in
#: the cluster's ad, and takes them out of each job's own ad, whatever the client sent.
#: (AccountingGroup and AcctGroupUser are the submitter's to choose, as in HTCondor; see
#: SUBMIT_REQUIREMENT_NAMES in README.)
IDENTITY_ATTRIBUTES = ("Owner", "User", "OsUser")

#: Owners HTCondor's schedd never queues a job for (Linux's and Windows' all-powerful users).
FORBIDDEN_OWNERS = ("root", "LOCAL_SYSTEM")


def _new_cluster(service: ScheddService, requester: Requester, request: ClassAd) -> ClassAd:
    if (
        requester.uid < 0
        and not requester.super_user
        and runs_jobs_as_owner(service.config, os.geteuid())
    ):
        # Such jobs could never run as their owner: say so to the client now, rather than
        # queue them (an authenticated name from a token or CLAIMTOBE, not an account).
        # QUEUE_SUPER_USERS are trusted with theirs: root's tools authenticate as the
        # pool's own user (FS_ROOT_TO_CONDOR), which need not be an account here.
        raise ControlError(
            f"{requester.name} has no account on this host, and jobs here run as their "
            "owner's account (STARTER_ALLOW_RUNAS_OWNER, no SLOT<N>_USER): nothing submitted"
        )
    return answer(True, ClusterId=service.schedd.new_cluster(requester.uid))


_SLOT_USER = re.compile(r"SLOT\d+_USER", re.IGNORECASE)


def runs_jobs_as_owner(config: Config, euid: int) -> bool:
    """Whether this pool runs each job as its Owner's account: it runs as root (otherwise
    every job runs as the pool's own user), STARTER_ALLOW_RUNAS_OWNER is true and no slot
    names an account of its own (SLOT<N>_USER), which a job without an owner account takes."""
    if euid != 0 or not config.get_bool("STARTER_ALLOW_RUNAS_OWNER", True):
        return False
    return not any(_SLOT_USER.fullmatch(name) and config.get(name) for name in config.names())


def _submit(service: ScheddService, requester: Requester, request: ClassAd) -> ClassAd:
    cluster_id = argument(request, "ClusterId", int)
    cluster_ad = argument(request, "ClusterAd", ClassAd)
    procs = argument(request, "Procs", list)
    assert isinstance(cluster_id, int) and isinstance(cluster_ad, ClassAd)
    assert isinstance(procs, list)
    if not procs or len(procs) > SUBMIT_CHUNK:
        raise ControlError(f"Procs must hold 1 to {SUBMIT_CHUNK} job ads, not {len(procs)}")
    now = service.clock()
    uid_domain = service.schedd.uid_domain
    shared = _owned(cluster_ad, requester, uid_domain, now)
    _fits_messages(shared, "ClusterAd")
    try:
        requirements = submit_requirements(service.config)
    except ConfigError as error:
        raise ControlError(f"the pool's SUBMIT_REQUIREMENT_NAMES: {error}") from error
    name = service.config.get("SCHEDD_NAME") or service.host_name
    schedd_ad = ClassAd({"MyType": "Scheduler", "Name": name, "UidDomain": uid_domain})
    jobs = []
    for index, proc in enumerate(procs):
        if not isinstance(proc, ClassAd):
            raise ControlError(f"Procs[{index}] is not a ClassAd")
        _fits_messages(proc, f"Procs[{index}]")
        own = _checked_job(proc, shared, cluster_id, requester, uid_domain, now, index)
        if requirements:
            whole = shared.copy()
            whole.update(own)
            verdict = check_submit_requirements(requirements, schedd_ad, whole)
            for warning in verdict.warnings:
                service.log.warning("cluster %d, %s: %s", cluster_id, requester.name, warning)
            if verdict.refusal is not None:
                raise ControlError(verdict.refusal)
        jobs.append(own)
    cluster = SubmittedCluster(cluster_id, shared, tuple(jobs))
    announced = argument(request, "SubmissionSize", int, required=False)
    ids = service.schedd.submit(
        cluster, requester.uid, now, announced=announced if isinstance(announced, int) else None
    )
    return answer(True, JobIds=[str(job_id) for job_id in ids])


def _fits_messages(ad: ClassAd, where: str) -> None:
    """ControlError naming the attribute of ``ad`` too deep to travel inside the pool's
    messages (a reply listing it among other jobs would be unreadable to whoever asked)."""
    for name in ad:
        expr = ad.lookup(name)
        if expr is None:
            continue
        try:
            check_nesting(expr.node)
        except ClassAdSyntaxError as error:
            raise ControlError(
                f"{where}: {name} is nested too deeply (a job's expressions may nest"
                f" {MESSAGE_NESTING} levels): {error}"
            ) from error


def _owned(ad: ClassAd, requester: Requester, uid_domain: str, now: float) -> ClassAd:
    """``ad`` (the cluster's shared attributes, or one job's own) with the attributes the
    schedd owns set by the schedd: the owner is the requester unless a super user names one;
    root is never an owner."""
    owned = ad.copy()
    owner = owned.evaluate("Owner")
    if not (requester.super_user and isinstance(owner, str) and owner):
        owner = requester.name
    if owner in FORBIDDEN_OWNERS:
        raise ControlError(
            f"Setting job owner to {owner} is not permitted: a job never runs as {owner}; "
            "submit it as the user it is for"
        )
    for name in IDENTITY_ATTRIBUTES:
        owned.pop(name, None)
    owned["Owner"] = owner
    owned["User"] = f"{owner}@{uid_domain}"
    owned["QDate"] = int(now)
    owned["EnteredCurrentStatus"] = int(now)
    for name in PRIVATE_ATTRIBUTES:
        owned.pop(name, None)
    return owned


def _checked_job(
    proc: ClassAd,
    shared: ClassAd,
    cluster_id: int,
    requester: Requester,
    uid_domain: str,
    now: float,
    index: int,
) -> ClassAd:
    """One job's own attributes (what it adds to ``shared``, the cluster's), checked as the
    whole job they make and with the attributes the schedd owns set by the schedd."""
    own = proc.copy()
    for name in PRIVATE_ATTRIBUTES:
        own.pop(name, None)
    if requester.super_user and "Owner" in own:
        own = _owned(own, requester, uid_domain, now)
    else:
        # A job's identity is its cluster's: the User or Owner a client puts in one job's
        # own ad would otherwise negotiate and charge that job as someone else.
        for name in IDENTITY_ATTRIBUTES:
            own.pop(name, None)
    job = shared.copy()
    job.update(own)
    if job.evaluate("ClusterId") != cluster_id:
        raise ControlError(f"Procs[{index}]: ClusterId must be {cluster_id}")
    proc_id = job.evaluate("ProcId")
    if not isinstance(proc_id, int) or "ProcId" not in own:
        raise ControlError(f"Procs[{index}]: ProcId must be an integer")
    if not isinstance(job.evaluate("Cmd"), str):
        raise ControlError(f"Procs[{index}]: the job has no Cmd (executable)")
    if job.evaluate("JobStatus") not in (int(JobStatus.IDLE), int(JobStatus.HELD)):
        own["JobStatus"] = int(JobStatus.IDLE)
    own["GlobalJobId"] = f"{uid_domain}#{cluster_id}.{proc_id}#{int(now)}"
    return own


def _query_jobs(service: ScheddService, requester: Requester, request: ClassAd) -> ClassAd:
    constraint = expression_argument(request, "Constraint")
    projection = projection_argument(request)
    queue = service.schedd.queue
    if flag(request, "History"):
        limit = argument(request, "Limit", int, required=False)
        ads = queue.history(
            constraint,
            projection,
            limit if isinstance(limit, int) else None,
            since=expression_argument(request, "Since"),
        )
    else:
        ads = queue.jobs(constraint, projection)
    for ad in ads:
        for name in PRIVATE_ATTRIBUTES:
            ad.pop(name, None)
    return answer(True, Ads=ads)


def _targets(service: ScheddService, request: ClassAd) -> list[ClassAd]:
    ids = argument(request, "JobIds", list, required=False)
    constraint = expression_argument(request, "Constraint")
    if ids is None and constraint is None:
        raise ControlError("give JobIds or a Constraint")
    queue = service.schedd.queue
    found: list[ClassAd] = []
    if ids is not None:
        assert isinstance(ids, list)
        wanted: set[tuple[int, int]] = set()
        clusters: set[int] = set()
        for text in ids:
            if not isinstance(text, str):
                raise ControlError("JobIds must be strings like 12 or 12.3")
            if "." in text:
                job_id = JobId.parse(text)
                wanted.add((job_id.cluster, job_id.proc))
            elif text.isdigit():
                clusters.add(int(text))
            else:
                raise ControlError(f"{text!r} is not a job id (12 or 12.3)")
        for job in queue.jobs():
            key = (job.evaluate("ClusterId"), job.evaluate("ProcId"))
            if key in wanted or key[0] in clusters:
                found.append(job)
    if constraint is not None:
        matching = queue.jobs(constraint)
        if ids is None:
            return matching
        keys = {(j.evaluate("ClusterId"), j.evaluate("ProcId")) for j in matching}
        found = [j for j in found if (j.evaluate("ClusterId"), j.evaluate("ProcId")) in keys]
    return found


def _act(
    command: str,
) -> Callable[[ScheddService, Requester, ClassAd], ClassAd]:
    def handler(service: ScheddService, requester: Requester, request: ClassAd) -> ClassAd:
        reason = (
            optional_text(request, "Reason")
            or f"via ep {command.lower()} (by user {requester.name})"
        )
        now = service.clock()
        # DryRun: who may act on what, without acting (HTCondor's ACT_ON_JOBS reports the
        # outcome before its client confirms and the schedd commits).
        dry_run = flag(request, "DryRun")
        done: list[str] = []
        refused: list[str] = []
        schedd = service.schedd
        for job in _targets(service, request):
            job_id = job_id_of(job)
            if not requester.super_user and job.evaluate("Owner") != requester.name:
                refused.append(f"{job_id}: not owned by {requester.name}")
                continue
            status = job.evaluate("JobStatus")
            if command == "Release" and status != int(JobStatus.HELD):
                refused.append(f"{job_id}: not held")
                continue
            if command == "Hold" and status == int(JobStatus.HELD):
                refused.append(f"{job_id}: already held")
                continue
            if command == "VacateJobs" and schedd.running_slot(job_id) is None:
                refused.append(f"{job_id}: not running")
                continue
            if dry_run:
                done.append(str(job_id))
                continue
            try:
                with schedd.queue.batch():
                    if command == "Remove":
                        schedd.remove(job_id, reason, now)
                    elif command == "Hold":
                        schedd.hold(job_id, reason, now)
                    elif command == "VacateJobs":
                        slot = schedd.running_slot(job_id)
                        if slot is not None:
                            schedd.vacate_slot(slot)
                    else:
                        schedd.release(job_id, reason, now)
            except EpError as error:
                refused.append(f"{job_id}: {error}")
                continue
            done.append(str(job_id))
        return answer(True, Done=done, Refused=refused)

    return handler


#: Attributes a job's owner may not edit (HTCondor's IMMUTABLE_JOB_ATTRS and
#: PROTECTED_JOB_ATTRS, and what the schedd stamps itself); QUEUE_SUPER_USERS may edit the
#: protected ones. The queue itself refuses JobStatus, ClusterId and ProcId to everyone.
IMMUTABLE_ATTRIBUTES = frozenset(
    {"owner", "user", "osuser", "clusterid", "procid", "mytype", "targettype", "globaljobid"}
)
PROTECTED_ATTRIBUTES = frozenset({"qdate", "completiondate", "jobstatus", "claimid"})


def _edit(service: ScheddService, requester: Requester, request: ClassAd) -> ClassAd:
    """condor_qedit: set Attribute to the expression Value in the jobs named (JobIds or
    Constraint); every job must be the requester's (or the requester a super user) or
    nothing is set. QueryOnly: whether it would be allowed, without setting anything."""
    attribute = text_argument(request, "Attribute")
    text = text_argument(request, "Value")
    try:
        value = parse_expr(text)
    except ClassAdSyntaxError as error:
        raise ControlError(f"Value is not a ClassAd expression: {error}") from error
    lowered = attribute.lower()
    if lowered in IMMUTABLE_ATTRIBUTES or (
        lowered in PROTECTED_ATTRIBUTES and not requester.super_user
    ):
        raise ControlError(f"{attribute} is protected: a job's {attribute} cannot be edited")
    jobs = _targets(service, request)
    for job in jobs:
        if not requester.super_user and job.evaluate("Owner") != requester.name:
            raise ControlError(f"{job_id_of(job)}: not owned by {requester.name}")
    done = [str(job_id_of(job)) for job in jobs]
    if flag(request, "QueryOnly"):
        return answer(True, Done=done)
    queue = service.schedd.queue
    now = service.clock()
    try:
        with queue.batch():
            for job in jobs:
                queue.set_attributes(job_id_of(job), {attribute: value}, now)
    except EpError as error:
        raise ControlError(str(error)) from error
    service.log.info("%s set %s = %s in %d job(s)", requester.name, attribute, text, len(done))
    return answer(True, Done=done)


def _analyze(service: ScheddService, requester: Requester, request: ClassAd) -> ClassAd:
    job_id = JobId.parse(text_argument(request, "JobId"))
    job = service.schedd.queue.get(job_id)
    now = service.clock()
    slots = service.slots.query("Machine", now=now)
    submitter = service.schedd.submitter(job)
    analysis = analyze_job(
        job,
        slots,
        now=now,
        submitter_prio=service.priority(submitter),
        base=service.config.eval_context,
    )
    reason = service.waiting_reason(submitter, str(job_id))
    if reason is not None:
        analysis = attrs.evolve(analysis, negotiator=reason)
    return answer(True, Text=render_analysis(analysis))


def _reschedule(service: ScheddService, requester: Requester, request: ClassAd) -> ClassAd:
    service.schedd.wants_negotiation = True
    return answer(True)


#: The schedd's answers to the pool's requests, by Command.
HANDLERS: dict[str, Callable[[ScheddService, Requester, ClassAd], ClassAd]] = {
    "NewCluster": _new_cluster,
    "Submit": _submit,
    "QueryJobs": _query_jobs,
    "Remove": _act("Remove"),
    "Hold": _act("Hold"),
    "Release": _act("Release"),
    "VacateJobs": _act("VacateJobs"),
    "Edit": _edit,
    "Analyze": _analyze,
    "Reschedule": _reschedule,
}
