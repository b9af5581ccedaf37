"""The life of one job in its starter, in the order of :mod:`epcore.starter.starter`'s docstring.

:func:`run_job` is the whole of it: setup (sandbox, prepare hooks, command, tracking, launch),
supervision (the startd's commands, usage updates, the memory limit), and the end (cleanup,
then :mod:`epcore.starter.reporting`: JOB_EXIT hook, event logs, the Finished message until
acknowledged).
"""

from __future__ import annotations

import os
import selectors
import time
from typing import TYPE_CHECKING

import attrs

from epcore.classad import ClassAd
from epcore.errors import EpError, JobSetupError, UniverseOffline
from epcore.jobs.codes import HoldCode
from epcore.jobs.command import JobCommand, job_command
from epcore.starter import protocol
from epcore.starter.containers import (
    ContainerLaunch,
    finish_container,
    launch_container,
    runtime_for,
)
from epcore.starter.hooks import (
    HookError,
    HookRunner,
    JobRuntimeInfo,
    RunningHook,
    hook_path,
    prepare_job_input,
    prepare_outcome,
    starter_hook_keyword,
    update_job_info_input,
)
from epcore.starter.identity import job_user
from epcore.starter.joblog import JobLogs
from epcore.starter.launch import FORWARDED_SIGNALS, LaunchedJob, LaunchSpec, launch
from epcore.starter.outcome import EVICTED, HELD, REQUEUED, Ending
from epcore.starter.reporting import report_broken, report_ending
from epcore.starter.starter import Starter, _global_oom_kills
from epcore.starter.transfer import FileStamp
from epcore.starter.userlog import (
    ExecuteEvent,
    ImageSizeEvent,
    JobSuspendedEvent,
    JobUnsuspendedEvent,
)
from epcore.transfer import plan

if TYPE_CHECKING:
    from epcore.starter.fetch import RemoteTransfer

VANILLA = 5
#: How often the starter checks the job's memory limit while it runs.
OOM_CHECK_SECONDS = 0.5
#: The time limit of a hook the starter waits for (epcore's STARTER_JOB_HOOK_TIMEOUT).
DEFAULT_HOOK_TIMEOUT = 300.0
_HOOK_PATH = "/usr/local/bin:/usr/bin:/bin"
#: How long a job has to end after its soft kill when the startd's lease has run out.
LEASE_KILL_GRACE = 5.0


class _Supervision:
    """What the starter tracks while the job runs."""

    def __init__(
        self, starter: Starter, launched: LaunchedJob | ContainerLaunch, command: JobCommand
    ) -> None:
        self.starter = starter
        self.launched = launched
        self.command = command
        self.hooks: list[RunningHook] = []


def _runner(starter: Starter, cwd: str) -> HookRunner:
    user = starter.user
    assert user is not None
    environment = (("PATH", _HOOK_PATH), ("HOME", user.home), ("USER", user.name))
    timeout = starter.request.config.get_float("STARTER_JOB_HOOK_TIMEOUT", DEFAULT_HOOK_TIMEOUT)
    as_root = os.geteuid() == 0
    return HookRunner(
        uid=user.uid if as_root else None,
        gid=user.gid if as_root else None,
        groups=user.groups if as_root else (),
        cwd=cwd,
        environment=environment,
        log=starter.log,
        timeout=timeout,
    )


def _prepare(starter: Starter, runner: HookRunner, keyword: str | None) -> Ending | None:
    """Run the two prepare hooks; an Ending when one holds the job or sends it back."""
    if keyword is None:
        return None
    config = starter.request.config
    for name in ("PREPARE_JOB_BEFORE_TRANSFER", "PREPARE_JOB"):
        try:
            path = hook_path(config, keyword, name)
        except HookError as problem:
            raise JobSetupError(str(problem), HoldCode.HOOK_PREPARE_JOB_FAILURE) from problem
        if path is None:
            continue
        result = runner.run(path, (), prepare_job_input(starter.job), name=name)
        decided = prepare_outcome(result, name)
        starter.log.info("%s hook: %s (%s)", name, decided.kind, decided.message or "no message")
        if decided.kind == "hold":
            held = decided.hold_error()
            return Ending(HELD, held.reason, None, None, held.hold_code, held.hold_subcode)
        if decided.kind == "idle":
            return Ending(REQUEUED, decided.message or f"the {name} hook sent the job back")
        starter.job = decided.merged_into(starter.job)
    return None


def _launch(starter: Starter, command: JobCommand) -> LaunchedJob:
    sandbox = starter.sandbox
    user = starter.user
    assert sandbox is not None and user is not None
    if command.universe != VANILLA:
        raise JobSetupError(
            f"JobUniverse {command.universe} is not run by this starter",
            HoldCode.FAILED_TO_CREATE_PROCESS,
        )
    environment = starter.environment(command)
    starter.start_tracking()
    setup = starter.scratch_setup()
    for tracking in starter.trackings:
        setup = setup.merged(tracking.child_setup())
    as_root = os.geteuid() == 0
    spec = LaunchSpec(
        argv=(command.executable, *command.arguments),
        environment=environment,
        cwd=command.iwd,
        stdin=command.stdin,
        stdout=command.stdout,
        stderr=command.stderr,
        uid=user.uid if as_root else None,
        gid=user.gid if as_root else None,
        groups=user.groups if as_root else (),
        setup=setup,
    )
    prepared = starter.request.prepared
    if prepared is not None:
        # The supervisor is in the prepared backend's groups already: the job is not moved.
        joined = set(prepared.tracking.child_setup().join_files)
        spec = attrs.evolve(
            spec,
            setup=attrs.evolve(
                setup, join_files=tuple(f for f in setup.join_files if f not in joined)
            ),
        )
        launched = prepared.supervisor.launch(spec)
    else:
        launched = launch(spec)
    starter.supervisor_pid = launched.supervisor_pid
    for tracking in starter.trackings:
        # A prepared supervisor leaves its job's groups once the job runs: not put it back.
        if prepared is None or tracking is not prepared.tracking:
            tracking.attach(launched.supervisor_pid)
    return launched


def _runtime(starter: Starter, launched: LaunchedJob | ContainerLaunch) -> JobRuntimeInfo:
    usage = starter.usage or starter.measure()
    return JobRuntimeInfo(
        state="Suspended" if starter.suspended else "Running",
        pid=launched.supervisor_pid,
        num_pids=usage.num_pids,
        start_date=int(starter.start_time or 0),
        sys_cpu=usage.system_cpu,
        user_cpu=usage.user_cpu,
        image_size_kb=usage.image_size_kb,
    )


def _suspend(starter: Starter, logs: JobLogs, on: bool) -> None:
    if starter.suspended == on:
        return
    for tracking in reversed(starter.trackings):
        if tracking.freeze() if on else tracking.thaw():
            break
    starter.suspended = on
    now = starter.clock()
    if on:
        logs.write(JobSuspendedEvent(job=logs.ids, when=now, processes=len(starter.job_pids())))
    else:
        logs.write(JobUnsuspendedEvent(job=logs.ids, when=now))


def _removing(run: _Supervision) -> None:
    """The startd's kill is for a removed job: a container job's runtime keeps nothing of it
    (a VM's checkpoint); a plain job has nothing to keep."""
    if isinstance(run.launched, ContainerLaunch):
        run.launched.removing()


def _soft_kill(starter: Starter, logs: JobLogs, run: _Supervision, why: str) -> None:
    starter.stopped_by = why
    _suspend(starter, logs, False)
    signum = run.command.kill_signal
    if isinstance(run.launched, ContainerLaunch):
        run.launched.soft_kill(signum)
    elif signum in FORWARDED_SIGNALS:
        run.launched.signal(signum)
    else:
        for tracking in starter.trackings:
            tracking.signal_all(signum)


def _update(starter: Starter, logs: JobLogs, run: _Supervision, keyword: str | None) -> None:
    previous = starter.usage.image_size_kb if starter.usage is not None else 0
    usage = starter.measure()
    payload = usage.attributes()
    payload["JobState"] = "Suspended" if starter.suspended else "Running"
    starter.send(protocol.UPDATE, payload)
    if usage.image_size_kb != previous:
        logs.write(
            ImageSizeEvent(
                job=logs.ids,
                when=starter.clock(),
                image_size_kb=usage.image_size_kb,
                memory_usage_mb=usage.memory_usage_mb,
                resident_set_kb=usage.resident_set_kb,
            )
        )
    if keyword is not None:
        path = hook_path(starter.request.config, keyword, "UPDATE_JOB_INFO")
        if path is not None and starter.runner is not None:
            text = update_job_info_input(starter.job, _runtime(starter, run.launched))
            run.hooks.append(starter.runner.start(path, (), text, name="UPDATE_JOB_INFO"))


def _supervise(starter: Starter, run: _Supervision, logs: JobLogs, keyword: str | None) -> None:
    """Until the job's first process exits: commands, updates, the memory limit."""
    config = starter.request.config
    initial = config.get_float("STARTER_INITIAL_UPDATE_INTERVAL", 8.0)
    interval = max(config.get_float("STARTER_UPDATE_INTERVAL", 300.0), 1.0)
    next_update = time.monotonic() + initial
    next_oom_check = time.monotonic() + OOM_CHECK_SECONDS
    scratch = starter.request.scratch
    disk_interval = scratch.check_interval if scratch is not None else float("inf")
    next_disk_check = time.monotonic() + disk_interval
    starter.selector.register(run.launched, selectors.EVENT_READ, "job")

    def on_command(command: str, ad: ClassAd) -> None:
        why = ad.evaluate("Why")
        reason = why if isinstance(why, str) else command
        starter.log.info("the startd says %s (%s)", command, reason)
        code, subcode = ad.evaluate("VacateReasonCode"), ad.evaluate("VacateReasonSubCode")
        if isinstance(code, int) and command in (protocol.SOFT_KILL, protocol.HARD_KILL):
            starter.vacate_code = (code, subcode if isinstance(subcode, int) else 0)
        killing = command in (protocol.SOFT_KILL, protocol.HARD_KILL)
        if killing and ad.evaluate(protocol.REMOVED) is True:
            _removing(run)
        if command == protocol.SUSPEND:
            _suspend(starter, logs, True)
        elif command == protocol.CONTINUE:
            _suspend(starter, logs, False)
        elif command == protocol.SOFT_KILL:
            starter.log.info("soft kill (%s): signal %d", reason, run.command.kill_signal)
            _soft_kill(starter, logs, run, reason)
        elif command == protocol.HARD_KILL:
            starter.log.info("hard kill (%s)", reason)
            starter.stopped_by = reason
            starter.kill_everything()

    try:
        while run.launched.poll() is None:
            if starter.lease_expired() and starter.stopped_by is None:
                _end_for_lost_startd(starter, logs, run)
                continue
            starter.connect()
            if starter.channel is not None and starter.channel.has_message:
                # Read with the claim's next job (NEXT), before this job started: the socket
                # has nothing more to say about them, so a select would not wake for them.
                starter.read_startd(on_command)
            now = time.monotonic()
            timeout = max(0.0, min(next_update, next_oom_check, next_disk_check) - now)
            for key, _events in starter.selector.select(timeout=min(timeout, 1.0)):
                if key.data == "startd":
                    starter.read_startd(on_command)
            now = time.monotonic()
            if now >= next_update:
                _update(starter, logs, run, keyword)
                next_update = now + interval
            if now >= next_oom_check:
                next_oom_check = now + OOM_CHECK_SECONDS
                if any(t.out_of_memory() for t in starter.trackings):
                    starter.log.warning("the job went over its memory limit")
                    starter.measure()
                    starter.kill_everything()
            if now >= next_disk_check:
                next_disk_check = now + disk_interval
                verdict = starter.check_scratch()
                if verdict is not None:
                    starter.log.warning("scratch filesystem: %s", verdict.reason)
                    starter.measure()
                    starter.kill_everything()
            run.hooks = [hook for hook in run.hooks if hook.poll() is None]
    finally:
        starter.selector.unregister(run.launched)


def _end_for_lost_startd(starter: Starter, logs: JobLogs, run: _Supervision) -> None:
    """The startd did not come back within the claim's lease: soft kill the job, give it
    LEASE_KILL_GRACE seconds, then kill whatever is left (the job is then evicted)."""
    why = "the startd did not come back within the claim's lease"
    starter.log.error(
        "no reconnect from the startd for %d s (the claim's lease): ending the job",
        starter.request.lease,
    )
    _soft_kill(starter, logs, run, why)
    deadline = time.monotonic() + LEASE_KILL_GRACE
    while run.launched.poll() is None and time.monotonic() < deadline:
        time.sleep(0.05)
    starter.kill_everything()


def run_job(starter: Starter) -> int:
    """Run the starter's job from setup to the startd's acknowledgement; the exit status of
    the starter process (0 unless the starter itself failed, 15 when the job left a volume it
    could not remove)."""
    request = starter.request
    oom_before = _global_oom_kills()
    starter.connect()
    keyword: str | None = None
    launched: LaunchedJob | ContainerLaunch | None = None
    before: dict[str, FileStamp] = {}
    ending: Ending | None = None
    logs: JobLogs | None = None
    remote: RemoteTransfer | None = None
    cleaned = False
    try:
        starter.user = job_user(request.config, starter.job, request.slot_id)
        sandbox = starter.make_sandbox()
        starter.runner = _runner(starter, sandbox.path)
        keyword = starter_hook_keyword(request.config, starter.job)
        ending = _prepare(starter, starter.runner, keyword)
        if ending is None:
            # The startd sends the slot's ad when a runtime runs the job with it; without
            # one it found none, and the slot text is not parsed again for a vanilla job.
            runtime = runtime_for(request.containers, starter.job, request.machine_ad)
            run_ad = starter.job
            if runtime is None and plan.travels_here(starter.job, request.config):
                # A container job's files are copied by its runtime's setup (containers.py).
                # Imported here: the CEDAR client stays out of the zygote every starter is
                # forked from, and out of every starter whose job runs in place (the schedd
                # offers a key to each job that may travel; importing it costs a starter
                # about 50 ms of CPU).
                from epcore.starter.fetch import remote_transfer

                remote = remote_transfer(
                    starter.job,
                    request.config,
                    slot_name=request.slot_name,
                    user=starter.user,
                    sandbox=sandbox.path,
                    clock=starter.clock,
                )
                if remote is not None:
                    starter.transfer_figures = remote.figures
                    run_ad = remote.fetch()
            command = job_command(run_ad, sandbox.path)
            logs = JobLogs(
                starter.job, command.iwd, starter.user.uid, starter.user.gid, starter.log
            )
            logs.check()
            if runtime is None:
                launched = _launch(starter, command)
            else:
                starter.container_job = True
                launched, before = launch_container(starter, runtime, command)
            starter.start_time = starter.clock()
            starter.stage = "running"
            started = ClassAd()
            started["JobStartDate"] = int(starter.start_time)
            started["JobId"] = f"{logs.ids.cluster}.{logs.ids.proc}"
            starter.send(protocol.STARTED, started)
            logs.write(
                ExecuteEvent(
                    job=logs.ids,
                    when=starter.start_time,
                    host=request.startd_address,
                    slot_name=request.slot_name,
                )
            )
            if starter.after_launch is not None and runtime is None:
                starter.after_launch()
            run = _Supervision(starter, launched, command)
            _supervise(starter, run, logs, keyword)
            status = launched.poll()
            assert status is not None
            starter.measure()
            starter.kill_everything(starter.measured_pids)
            # No process of the job is left to start another: no need to look again below
            # (a container's are looked at again after its runtime has finished with it).
            cleaned = not isinstance(launched, ContainerLaunch)
            for hook in run.hooks:
                hook.kill()
            ending = starter.ending(status.code, status.signal, oom_before)
            if isinstance(launched, ContainerLaunch):
                ending = finish_container(starter, launched, before, ending)
            elif remote is not None:
                ending = remote.send_back(ending)
    except JobSetupError as error:
        starter.log.error("the job cannot run: %s", error)
        if isinstance(error, UniverseOffline):
            starter.offline = error
        ending = starter.setup_failure(error)
    except EpError as error:
        starter.log.error("the starter failed: %s", error)
        ending = Ending(EVICTED, f"the starter failed: {error}")
    finally:
        if launched is not None:
            if not cleaned:
                starter.kill_everything()
            launched.close()
        elif request.prepared is not None:
            # Never launched: its prepared supervisor still sits in the job's cgroups, which
            # go with the rest of the tracking.
            request.prepared.supervisor.abandon()
            if request.prepared.tracking not in starter.trackings:
                starter.trackings.append(request.prepared.tracking)
    assert ending is not None
    try:
        report_ending(starter, logs, keyword, ending)
    finally:
        # After the report: removing cgroups and the sandbox takes milliseconds the next
        # job on the claim need not wait for (the job's processes are already gone). The
        # cgroups go first: a sandbox its user keeps changing may take a while.
        starter.release_tracking()
        starter.remove_sandbox()
    return report_broken(starter)
