"""Jobs queued by a submission, in a cluster its user opened (:meth:`Schedd.new_cluster`),
within the MAX_JOBS_* limits (:mod:`epcore.schedd.limits`); the idle ones are indexed for
claim reuse and a negotiation is wanted."""

from __future__ import annotations

from typing import TYPE_CHECKING

from epcore.errors import QueueError
from epcore.schedd.jobqueue import JobId, JobStatus
from epcore.schedd.limits import check_submission
from epcore.submit import SubmittedCluster

if TYPE_CHECKING:
    from epcore.schedd.schedd import Schedd


def submit_cluster(
    schedd: Schedd, cluster: SubmittedCluster, uid: int, announced: int | None
) -> list[JobId]:
    """:meth:`Schedd.submit`: queue the jobs of ``cluster`` (or more of them)."""
    cluster_id = cluster.cluster_id
    if schedd.open_clusters.get(cluster_id) != uid:
        raise QueueError(f"cluster {cluster_id} was not opened by this user (NewCluster)")
    try:
        check_submission(
            schedd.queue_limits(),
            schedd.queue,
            cluster,
            submitted=schedd.submitted.get(cluster_id, 0),
            announced=announced,
        )
    except QueueError as refusal:
        schedd.log.info("cluster %d refused: %s", cluster_id, refusal)
        raise
    with schedd.queue.batch():
        if cluster_id in schedd.started_clusters:
            ids = schedd.queue.extend(cluster_id, cluster.cluster_ad, cluster.procs)
        else:
            ids = schedd.queue.submit(cluster_id, cluster.cluster_ad, cluster.procs)
            schedd.started_clusters.add(cluster_id)
        for job_id in ids:
            if schedd.queue.get(job_id).evaluate("JobStatus") == int(JobStatus.IDLE):
                schedd.now_idle(job_id)
    schedd.submitted[cluster_id] = schedd.submitted.get(cluster_id, 0) + len(ids)
    schedd.wants_negotiation = True
    schedd.log.info("submitted %d job(s) in cluster %d", len(ids), cluster.cluster_id)
    return ids
