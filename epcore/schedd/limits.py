"""The schedd's limits on the queue, read from the configuration, and their checks.

As HTCondor's schedd (``NewCluster``/``NewProc``) applies them, with its defaults:

- MAX_JOBS_SUBMITTED (2147483647): jobs in the whole queue; no new cluster when the queue
  holds that many, no job beyond it;
- MAX_JOBS_PER_OWNER (100000): jobs one owner has in the queue;
- MAX_JOBS_PER_SUBMISSION (20000): jobs one submission (one cluster) adds;
- MAX_JOBS_RUNNING (10000): jobs the schedd runs at once; beyond it, it asks the negotiator
  for no more slots and claims none (a claim it holds may still run the owner's next job).

A submission over a limit is refused whole, with condor_submit's words ("Number of submitted
jobs would exceed MAX_JOBS_PER_OWNER") and the counts. HTCondor spells the running limit
MAX_JOBS_RUNNING; there is no MAX_RUNNING_JOBS knob.

How one owner's claims give way to another's jobs, as in HTCondor: the schedd runs the next
job of the same owner on a claim whose job ended (claim reuse) only while the startd accepts
it, and the startd refuses a new job on a claim older than CLAIM_WORKLIFE (1200 s by
default); the claim then goes back and the negotiator shares the freed resources by user
priority at its next cycle (within NEGOTIATOR_MIN_INTERVAL of the release), so another
submitter, whose priority is better for having used nothing, gets them first. The longest
another submitter's job waits behind a busy owner is thus about CLAIM_WORKLIFE plus the
running time of the last job started on the claim plus one negotiation.
"""

from __future__ import annotations

import attrs

from epcore.config import Config
from epcore.errors import QueueError
from epcore.schedd.jobqueue import JobQueue
from epcore.submit import SubmittedCluster

#: HTCondor's default limits (``param_info``), the same in epcore's defaults table.
DEFAULT_MAX_JOBS_SUBMITTED = 2147483647
DEFAULT_MAX_JOBS_PER_OWNER = 100000
DEFAULT_MAX_JOBS_PER_SUBMISSION = 20000
DEFAULT_MAX_JOBS_RUNNING = 10000


@attrs.frozen
class QueueLimits:
    """The limits in force (see the module docstring)."""

    max_jobs_submitted: int = DEFAULT_MAX_JOBS_SUBMITTED
    max_jobs_per_owner: int = DEFAULT_MAX_JOBS_PER_OWNER
    max_jobs_per_submission: int = DEFAULT_MAX_JOBS_PER_SUBMISSION
    max_jobs_running: int = DEFAULT_MAX_JOBS_RUNNING

    @classmethod
    def from_config(cls, config: Config) -> QueueLimits:
        return cls(
            max_jobs_submitted=config.get_int(
                "MAX_JOBS_SUBMITTED", DEFAULT_MAX_JOBS_SUBMITTED, minimum=0
            ),
            max_jobs_per_owner=config.get_int(
                "MAX_JOBS_PER_OWNER", DEFAULT_MAX_JOBS_PER_OWNER, minimum=0
            ),
            max_jobs_per_submission=config.get_int(
                "MAX_JOBS_PER_SUBMISSION", DEFAULT_MAX_JOBS_PER_SUBMISSION, minimum=0
            ),
            max_jobs_running=config.get_int(
                "MAX_JOBS_RUNNING", DEFAULT_MAX_JOBS_RUNNING, minimum=0
            ),
        )

    def new_cluster_refusal(self, queued: int) -> str | None:
        """Why no cluster may be opened while ``queued`` jobs are in the queue, or None."""
        if queued >= self.max_jobs_submitted:
            return (
                "MAX_JOBS_SUBMITTED exceeded. "
                f"Current={queued}, Limit={self.max_jobs_submitted}: "
                "Number of submitted jobs would exceed MAX_JOBS_SUBMITTED"
            )
        return None

    def submission_refusal(
        self, *, owner: str, queued: int, owned: int, submitted: int, adding: int
    ) -> str | None:
        """Why ``owner`` may not add ``adding`` jobs to a submission that has ``submitted``
        already, with ``queued`` jobs in the queue of which ``owned`` are theirs; or None."""
        checks = (
            ("MAX_JOBS_SUBMITTED", queued, self.max_jobs_submitted, "the queue holds"),
            ("MAX_JOBS_PER_OWNER", owned, self.max_jobs_per_owner, f"{owner} has"),
            (
                "MAX_JOBS_PER_SUBMISSION",
                submitted,
                self.max_jobs_per_submission,
                "this submission has",
            ),
        )
        for knob, current, limit, whose in checks:
            if current + adding > limit:
                return (
                    f"Number of submitted jobs would exceed {knob}: {whose} {current} "
                    f"job(s), {adding} more asked for, the limit is {limit}"
                )
        return None

    def may_start(self, running: int) -> bool:
        """Whether the schedd may claim a slot for another job with ``running`` started."""
        return running < self.max_jobs_running


def check_submission(
    limits: QueueLimits,
    queue: JobQueue,
    cluster: SubmittedCluster,
    *,
    submitted: int,
    announced: int | None,
) -> None:
    """Refuse (QueueError) the part ``cluster`` of a submission that has queued ``submitted``
    jobs so far when it would pass a limit; the first part counts as the whole submission
    when the client ``announced`` its size."""
    owner = cluster.cluster_ad.evaluate("Owner")
    owner_name = owner if isinstance(owner, str) else ""
    adding = len(cluster.procs)
    if announced is not None and submitted == 0:
        adding = max(adding, announced)
    refusal = limits.submission_refusal(
        owner=owner_name,
        queued=queue.count(),
        owned=queue.count(owner=owner_name),
        submitted=submitted,
        adding=adding,
    )
    if refusal is not None:
        raise QueueError(refusal)
