"""A starter that runs its claim's successive jobs, one after the other.

HTCondor forks a starter per job. Here the first job of a claim gets a starter from the
startd's zygote as always; once its job's end is acknowledged, the starter says
:data:`~epcore.starter.protocol.READY` and waits. The startd sends the claim's next job
(:data:`~epcore.starter.protocol.NEXT`, the fields of a :class:`StarterOrder`) on the same
connection, or :data:`~epcore.starter.protocol.RETIRE` when the claim is over; the starter
also exits when the connection breaks while it waits (it runs no job then: a restarted
startd has nothing of it to adopt). Each job still gets a :class:`Starter` of its own, its
own sandbox, cgroups, supervisor and reports: only the process, its log and its connection
carry over. Forking and tearing down a starter cost more than half of a short job's CPU
(benchmarks/README.md), and a starter that stays pays its copy-on-write faults once.

While a job runs, the starter makes its claim's next job ready as the startd's zygote would
(:mod:`epcore.startd.prepare`): the job's groups and a supervisor already inside them, so
that the next job starts without the kernel's wait to move a process into a cgroup. Their
names start with :func:`next_key_prefix`, so that a startd that finds the starter dead
removes them; READY names them, for the claims file's record of the job that gets them.

``STARTER_KEEP_FOR_CLAIM`` (epcore's, default true) turns this off: a starter per job.
"""

from __future__ import annotations

import functools
import logging
import os
import selectors

import attrs

from epcore.classad import ClassAd
from epcore.config import Config
from epcore.errors import EpError
from epcore.runtime import framing
from epcore.starter import protocol
from epcore.starter.cgroups.home import OwnGroup, own_groups
from epcore.starter.lifecycle import run_job
from epcore.starter.prepared import give_up, prepare_job
from epcore.starter.starter import (
    PreparedJob,
    Starter,
    StarterOrder,
    StarterRequest,
    cgroup_key,
    job_id,
    tracking_request,
)

#: epcore's knob: whether a starter runs its claim's next jobs (default true).
KEEP_KNOB = "STARTER_KEEP_FOR_CLAIM"
#: The isolation backends whose groups a supervisor can join ahead of its job.
PREPARED_BACKENDS = ("cgroup",)


class NextJobError(EpError):
    """A NEXT message the starter cannot take (it names another claim, or is malformed)."""


def next_key_prefix(execute_dir: str, slot_name: str, pid: int) -> str:
    """The start of the keys of the groups the starter ``pid`` makes for its claim's next
    jobs: a startd that finds the starter dead removes what is left of them by it."""
    return cgroup_key(execute_dir, slot_name, f"{pid}r")


def keeps_starter(config: Config) -> bool:
    """Whether starters run their claims' successive jobs (``STARTER_KEEP_FOR_CLAIM``)."""
    return config.get_bool(KEEP_KNOB, True)


# -- the next job on the wire ----------------------------------------------------------------

#: The StarterOrder fields the starter has already and checks in NEXT, by attribute name;
#: :func:`next_message` writes the others and :func:`next_request` reads them back.
_CHECKED = {
    "SlotName": "slot_name",
    "ClaimId": "claim_id",
    "StartdSocket": "startd_socket",
    "StarterLog": "starter_log",
}


def next_message(order: StarterOrder) -> ClassAd:
    """The payload of NEXT for ``order`` (a job no container runtime runs: no slot ad)."""
    ad = ClassAd()
    for name, field in _CHECKED.items():
        ad[name] = getattr(order, field)
    ad["MachineText"] = order.machine_text
    ad["ExecuteDir"] = order.execute_dir
    ad["StartdAddress"] = order.startd_address
    ad["SlotId"] = order.slot_id
    ad["Memory"] = order.memory_mb
    ad["StartdMemory"] = order.startd_memory_mb
    ad["Lease"] = order.lease
    ad["Cpus"] = float(order.cpus)
    ad["Job"] = order.job
    return ad


def next_request(message: ClassAd, current: StarterRequest) -> StarterRequest:
    """The request of the job NEXT ``message`` orders, for a starter whose last request was
    ``current``; NextJobError when it is for another claim, slot, startd or log, or a field
    is missing or of the wrong type."""
    for name, field in _CHECKED.items():
        if message.evaluate(name) != getattr(current, field):
            raise NextJobError(f"NEXT names another {name} than this starter's")
    cpus = message.evaluate("Cpus")
    if not isinstance(cpus, int | float) or isinstance(cpus, bool):
        raise NextJobError("NEXT has no number Cpus")
    job = message.evaluate("Job")
    if not isinstance(job, ClassAd):
        raise NextJobError("NEXT has no ClassAd Job")
    return attrs.evolve(
        current,
        keeps=True,
        machine_text=_string(message, "MachineText"),
        execute_dir=_string(message, "ExecuteDir"),
        startd_address=_string(message, "StartdAddress"),
        slot_id=_integer(message, "SlotId"),
        memory_mb=_integer(message, "Memory"),
        startd_memory_mb=_integer(message, "StartdMemory"),
        lease=_integer(message, "Lease"),
        cpus=float(cpus),
        job=job,
        machine_ad=None,
        prepared=None,
    )


def _string(message: ClassAd, name: str) -> str:
    value = message.evaluate(name)
    if not isinstance(value, str):
        raise NextJobError(f"NEXT has no string {name}")
    return value


def _integer(message: ClassAd, name: str) -> int:
    value = message.evaluate(name)
    if not isinstance(value, int) or isinstance(value, bool):
        raise NextJobError(f"NEXT has no integer {name}")
    return value


# -- the next job's groups and supervisor ----------------------------------------------------


class NextJob:
    """The claim's next job as this starter makes it ready: its groups and a supervisor
    inside them (:attr:`prepared`, None until made or when they cannot be)."""

    def __init__(self, log: logging.Logger) -> None:
        self.log = log
        self.prepared: PreparedJob | None = None
        self._made = 0
        self._groups: tuple[OwnGroup, ...] | None = None

    def prepare(self, request: StarterRequest) -> None:
        """Make the groups of the next job on ``request``'s slot and have a supervisor made
        inside them (by the supervisor server the zygote connected this starter to);
        nothing when there is no such server, no backend can, or one is made already."""
        supervisors = request.supervisors
        backend = next((b for b in request.isolation if b.name in PREPARED_BACKENDS), None)
        if supervisors is None or backend is None or self.prepared is not None:
            return
        self._made += 1
        prefix = next_key_prefix(request.execute_dir, request.slot_name, os.getpid())
        key = f"{prefix}{self._made}"
        tracking_of = tracking_request(
            request.config,
            key,
            request.slot_name,
            request.slot_id,
            request.cpus,
            request.memory_mb,
            request.startd_memory_mb,
        )
        try:
            if self._groups is None:
                self._groups = own_groups()
            self.prepared = prepare_job(backend, tracking_of, supervisors, self._groups)
        except (EpError, OSError) as error:
            self.log.warning("cannot prepare the claim's next job: %s", error)

    def take(self) -> PreparedJob | None:
        """The prepared job, handed to the next job's starter (None: nothing prepared)."""
        prepared, self.prepared = self.prepared, None
        return prepared

    def give_up(self) -> None:
        """Kill the prepared supervisor and remove its groups."""
        prepared = self.take()
        if prepared is None:
            return
        try:
            give_up(prepared)
        except EpError as error:
            self.log.error("cannot remove the next job's groups: %s", error)


# -- the loop --------------------------------------------------------------------------------


def _ready(channel: framing.Channel, next_job: NextJob) -> None:
    payload = ClassAd()
    if next_job.prepared is not None:
        payload[protocol.NEXT_TRACKING_KEY] = next_job.prepared.job_key
    channel.send(framing.message(protocol.READY, payload))


def wait_for_next(
    channel: framing.Channel, current: StarterRequest, log: logging.Logger
) -> StarterRequest | None:
    """Wait on ``channel`` for the claim's next job after READY; its request, or None when
    the startd retires this starter, the connection breaks or NEXT cannot be taken."""
    with selectors.DefaultSelector() as selector:
        selector.register(channel, selectors.EVENT_READ)
        while not channel.closed:
            if channel.pending:
                channel.flush()
                selector.modify(
                    channel,
                    selectors.EVENT_READ | (selectors.EVENT_WRITE if channel.pending else 0),
                )
            if not channel.has_message:
                selector.select()
            try:
                for ad in channel.receive():
                    command = ad.evaluate("Command")
                    if command == protocol.RETIRE:
                        log.info("the startd retires this starter")
                        return None
                    if command != protocol.NEXT:
                        log.warning("%s while waiting for the claim's next job", command)
                        continue
                    try:
                        return next_request(ad, current)
                    except NextJobError as error:
                        log.error("cannot take the claim's next job: %s", error)
                        return None
            except framing.ProtocolError as error:
                log.error("bad message from the startd: %s", error)
                return None
        log.info("the startd's connection closed while waiting for the claim's next job")
        return None


def run_claim(request: StarterRequest, log: logging.Logger) -> int:
    """Run ``request``'s job, then each next job the startd sends on the claim; the
    starter's exit status (that of the last job's :func:`run_job`)."""
    keep = request.keeps
    next_job = NextJob(log)
    channel: framing.Channel | None = None
    try:
        while True:
            starter = Starter(request, log, channel=channel)
            if keep:
                starter.after_launch = functools.partial(next_job.prepare, request)
            code = run_job(starter)
            starter.selector.close()
            channel = starter.channel
            if (
                code != 0
                or not keep
                or starter.container_job
                or not starter.acknowledged
                or channel is None
                or channel.closed
            ):
                return code
            _ready(channel, next_job)
            following = wait_for_next(channel, request, log)
            if following is None:
                return 0
            request = attrs.evolve(following, prepared=next_job.take())
            log.info("next job on the claim: %s", job_id(request.job))
    finally:
        next_job.give_up()
