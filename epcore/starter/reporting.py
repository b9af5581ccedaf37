"""How a starter reports its job's end: the job's event logs, the JOB_EXIT hook, the Finished
message to the startd until it acknowledges, and what the job left that could not be cleaned
up (:func:`report_ending`, :func:`report_broken`, called by :func:`epcore.starter.lifecycle.
run_job`)."""

from __future__ import annotations

from epcore.classad import ClassAd
from epcore.errors import EpError
from epcore.jobs.updates import add_job_updates
from epcore.slots.broken import STARTER_EXIT_IMMORTAL_LVM
from epcore.starter import protocol
from epcore.starter.hooks import (
    HookError,
    JobExitInfo,
    JobRuntimeInfo,
    hook_path,
    job_exit_input,
)
from epcore.starter.joblog import JobLogs
from epcore.starter.outcome import EXITED, HELD, HOOK_ARGUMENT, Ending
from epcore.starter.starter import Starter
from epcore.starter.userlog import (
    JobEvictedEvent,
    JobHeldEvent,
    JobTerminatedEvent,
    ResourceUsage,
)


def _log_ending(starter: Starter, logs: JobLogs, ending: Ending) -> None:
    now = starter.clock()
    usage = starter.usage
    cpu = ResourceUsage(usage.user_cpu, usage.system_cpu) if usage else ResourceUsage()
    if ending.outcome == EXITED:
        normal = ending.exit_signal is None
        code = ending.exit_code if normal else ending.exit_signal
        logs.write(
            JobTerminatedEvent(job=logs.ids, when=now, normal=normal, code=code or 0, run_usage=cpu)
        )
    elif ending.outcome == HELD:
        logs.write(
            JobHeldEvent(
                job=logs.ids,
                when=now,
                reason=ending.reason,
                code=ending.hold_code,
                subcode=ending.hold_subcode,
            )
        )
    elif starter.start_time is not None:
        logs.write(JobEvictedEvent(job=logs.ids, when=now))


def _job_exit_hook(starter: Starter, keyword: str | None, ending: Ending) -> None:
    if keyword is None or starter.runner is None or starter.start_time is None:
        return
    try:
        path = hook_path(starter.request.config, keyword, "JOB_EXIT")
    except HookError as error:
        starter.log.error("%s", error)
        return
    if path is None:
        return
    usage = starter.usage or starter.measure()
    info = JobRuntimeInfo(
        state="Running",
        pid=0,
        num_pids=0,
        start_date=int(starter.start_time),
        sys_cpu=usage.system_cpu,
        user_cpu=usage.user_cpu,
        image_size_kb=usage.image_size_kb,
    )
    by_signal = ending.exit_signal is not None
    exit_info = JobExitInfo(
        how=HOOK_ARGUMENT[ending.outcome],
        reason=ending.reason,
        exit_code=None if by_signal else (ending.exit_code or 0),
        exit_signal=ending.exit_signal,
        duration=starter.clock() - starter.start_time,
    )
    argument = exit_info.how
    starter.runner.run(
        path, (argument,), job_exit_input(starter.job, info, exit_info), name="JOB_EXIT"
    )


def _finished_message(starter: Starter, ending: Ending) -> ClassAd:
    ad = ending.attributes()
    if starter.usage is not None:
        usage = starter.usage.attributes()
        for name in usage:
            ad[name] = usage[name]
    for name in ("ClusterId", "ProcId", "GlobalJobId", "Owner", "User"):
        expr = starter.job.lookup(name)
        if expr is not None:
            ad[name] = expr
    if starter.start_time is not None:
        ad["JobStartDate"] = int(starter.start_time)
        ad["JobDuration"] = round(starter.clock() - starter.start_time, 3)
    if starter.user is not None:
        ad["RemoteOwner"] = starter.user.name
    if starter.offline is not None:
        ad[protocol.OFFLINE_UNIVERSE] = starter.offline.universe
        ad[protocol.OFFLINE_UNIVERSE_NUMBER] = starter.offline.universe_number
        ad[protocol.OFFLINE_REASON] = starter.offline.offline_reason
    for name in starter.transfer_figures:
        ad[name] = starter.transfer_figures[name]
    add_job_updates(ad, starter.job_updates)
    return ad


def report_broken(starter: Starter) -> int:
    """Tell the startd what the job left that could not be cleaned up, if anything; the
    starter's exit status (HTCondor's 15 for a volume it could not remove)."""
    broken = starter.broken
    if broken is None:
        return 0
    report = ClassAd()
    report["SlotBrokenCode"] = broken.code
    report["SlotBrokenReason"] = broken.reason
    report["EpCleanupBackend"] = broken.backend
    report["EpCleanupItem"] = broken.item
    starter.send(protocol.BROKEN, report)
    if starter.channel is not None and starter.channel.pending:
        starter.channel.flush()
    return STARTER_EXIT_IMMORTAL_LVM


def report_ending(
    starter: Starter, logs: JobLogs | None, keyword: str | None, ending: Ending
) -> None:
    """Log the job's end, run the JOB_EXIT hook and report to the startd until it
    acknowledges."""
    starter.log.info("job ended: %s (%s)", ending.outcome, ending.reason)
    if logs is None and starter.user is not None:
        # The job never got as far as its command: its logs are still relative to its Iwd.
        iwd = starter.job.evaluate("Iwd")
        if not isinstance(iwd, str) or not iwd:
            iwd = starter.sandbox.path if starter.sandbox is not None else "/"
        logs = JobLogs(starter.job, iwd, starter.user.uid, starter.user.gid, starter.log)
    if logs is not None:
        _log_ending(starter, logs, ending)
    try:
        _job_exit_hook(starter, keyword, ending)
    except EpError as error:
        starter.log.error("JOB_EXIT hook: %s", error)
    starter.wait_for_ack(_finished_message(starter, ending))
