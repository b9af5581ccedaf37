"""The indexed chooser against the plain algorithm on small random pools: same matches,
same reasons, same rejections, same accountant."""

from __future__ import annotations

from hypothesis import given, settings
from hypothesis import strategies as st
from negotiator_helpers import DOMAIN, NOW, config, cycle, job, slot

from epcore.classad import ClassAd, parse_expr
from epcore.interfaces import SubmitterJobs
from epcore.negotiator import Accountant, Cycle

USERS = ("alice", "bob", "carol")
_SLOT_REQUIREMENTS = ("true", 'TARGET.Owner != "bob"', "TARGET.RequestMemory <= MY.Memory")
_SLOT_RANKS = ("0.0", 'TARGET.Owner == "alice"', "TARGET.RequestMemory / 100")
_JOB_REQUIREMENTS = (
    "TARGET.Memory >= RequestMemory && TARGET.Cpus >= RequestCpus",
    'TARGET.Machine != "m0" && TARGET.Cpus >= RequestCpus',
    "TARGET.Memory >= RequestMemory",
)
_JOB_RANKS = ("0", "TARGET.Memory", "TARGET.SlotID", "-TARGET.Cpus")
_CONFIGS = (
    "",
    "PREEMPTION_REQUIREMENTS = True",
    "PREEMPTION_REQUIREMENTS = SubmitterUserPrio * 2 < RemoteUserPrio\n"
    "PREEMPTION_RANK = RemoteUserResourcesInUse",
    "PREEMPTION_REQUIREMENTS = True\nALLOW_PSLOT_PREEMPTION = True",
    "NEGOTIATOR_CONSIDER_PREEMPTION = False\nNEGOTIATE_ALL_JOBS_IN_CLUSTER = True",
    "NEGOTIATOR_PRE_JOB_RANK =\nNEGOTIATOR_POST_JOB_RANK = MY.Memory",
    "SIGNIFICANT_ATTRIBUTES = Owner\nNEGOTIATOR_USE_SLOT_WEIGHTS = False",
    "NEGOTIATOR_CROSS_SLOT_PRIOS = True\n"
    "PREEMPTION_REQUIREMENTS = slot1_RemoteUserPrio =?= undefined || slot2_RemoteUserPrio > 10",
)


@st.composite
def static_slots(draw: st.DrawFn, number: int) -> list[ClassAd]:
    machine = f"m{draw(st.integers(0, 2))}"
    running = draw(st.sampled_from((None, None, *USERS)))
    ad = slot(
        number,
        machine=machine,
        cpus=draw(st.integers(1, 3)),
        memory=draw(st.sampled_from((512, 1024, 2048))),
        requirements=draw(st.sampled_from(_SLOT_REQUIREMENTS)),
        rank=draw(st.sampled_from(_SLOT_RANKS)),
        running=None if running is None else f"{running}@{DOMAIN}",
    )
    if running is not None:
        ad["CurrentRank"] = float(draw(st.sampled_from((0, 0, 1, 10))))
    return [ad]


@st.composite
def partitionable(draw: st.DrawFn, number: int) -> list[ClassAd]:
    machine = f"p{number}"
    cpus = draw(st.integers(1, 4))
    pslot = slot(
        number,
        machine=machine,
        cpus=cpus,
        memory=draw(st.sampled_from((1024, 4096))),
        extra={"PartitionableSlot": True, "SlotType": "Partitionable"},
    )
    if draw(st.booleans()):
        pslot["ConsumptionCpus"] = parse_expr("quantize(target.RequestCpus, {1})")
        pslot["ConsumptionMemory"] = parse_expr("quantize(target.RequestMemory, {256})")
    ads = [pslot]
    for sub in range(1, draw(st.integers(0, 2)) + 1):
        user = draw(st.sampled_from(USERS))
        dslot = slot(
            number,
            machine=machine,
            cpus=draw(st.integers(1, 2)),
            memory=1024,
            running=f"{user}@{DOMAIN}",
            extra={"DynamicSlot": True, "SlotType": "Dynamic"},
        )
        dslot["Name"] = f"slot{number}_{sub}@{machine}"
        ads.append(dslot)
    return ads


@st.composite
def pools(draw: st.DrawFn) -> tuple[str, list[ClassAd], list[SubmitterJobs], dict[str, float]]:
    ads: list[ClassAd] = []
    for number in range(1, draw(st.integers(0, 7)) + 1):
        kind = static_slots(number) if draw(st.integers(0, 3)) else partitionable(number)
        ads.extend(draw(kind))
    queues = []
    cluster = 0
    for user in draw(st.lists(st.sampled_from(USERS), min_size=1, max_size=3, unique=True)):
        jobs = []
        for _ in range(draw(st.integers(1, 3))):
            cluster += 1
            requirements = draw(st.sampled_from(_JOB_REQUIREMENTS))
            rank = draw(st.sampled_from(_JOB_RANKS))
            for proc in range(draw(st.integers(1, 3))):
                jobs.append(
                    job(
                        cluster,
                        proc,
                        owner=user,
                        cpus=draw(st.integers(1, 2)),
                        memory=draw(st.sampled_from((256, 900, 3000))),
                        requirements=requirements,
                        rank=rank,
                    )
                )
        queues.append(SubmitterJobs(f"{user}@{DOMAIN}", tuple(jobs)))
    rups = {f"{u}@{DOMAIN}": draw(st.sampled_from((0.5, 2.0, 40.0))) for u in USERS}
    return draw(st.sampled_from(_CONFIGS)), ads, queues, rups


def _summary(result: Cycle) -> tuple[object, ...]:
    matches = [
        (m.submitter, m.job_id, m.slot_name, m.reason, m.preempts, m.weight, str(m.slot))
        for m in result.matches
    ]
    records = {name: record for name, record in result.accountant.records.items()}
    return matches, dict(result.rejections), dict(result.pie), records


@settings(max_examples=300, deadline=None)
@given(pools())
def test_indexed_chooser_agrees_with_plain_algorithm(
    case: tuple[str, list[ClassAd], list[SubmitterJobs], dict[str, float]],
) -> None:
    """On any small pool both choosers make the same cycle."""
    text, slots, queues, rups = case
    cfg = config(text)
    accountant = Accountant.empty(cfg)
    for name, rup in rups.items():
        accountant = accountant.set_priority(name, rup, NOW)
    accountant = accountant.update_usage(slots, NOW)
    fast = cycle(cfg, slots, queues, accountant, chooser="indexed")
    plain = cycle(cfg, slots, queues, accountant, chooser="plain")
    assert _summary(fast) == _summary(plain)
