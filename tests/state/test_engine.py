"""The policy engine's rules, timers, claims and actions, event by event."""

from __future__ import annotations

import random

import attrs
import pytest

from epcore.classad import parse_ad
from epcore.slots.layout import plan_slots
from epcore.state.claims import lease_seconds, new_claim_id, public_part
from epcore.state.engine import Engine, EngineError
from epcore.state.records import ActionKind, EngineState, VacateReason
from epcore.state.rules import retirement_end, vacate_time
from epcore.state.scenario import Scenario
from epcore.state.simulator import Simulation

JOB = parse_ad('[Owner = "jones"; ClusterId = 7; ProcId = 1]')


def _setup(config: str = "", seed: int = 0) -> tuple[Engine, EngineState]:
    text = "NUM_SLOTS = 1\nRUNBENCHMARKS = False\n" + config
    sim = Simulation(Scenario("test", text, {}, ()), seed)
    state = sim.engine.start(plan_slots(sim.config, sim.inventory), 0)
    return sim.engine, sim.engine.poll(state, 0).state


def _place(state: EngineState, slot: str = "slot1") -> str:
    record = state.slot(slot)
    assert record is not None
    return str(record.place)


def _running(config: str = "") -> tuple[Engine, EngineState, str]:
    engine, state = _setup(config)
    claimed = engine.claim(state, "slot1", JOB, 10)
    assert claimed.claim_id is not None
    state = engine.activate(claimed.state, claimed.claim_id, 20).state
    return engine, state, claimed.claim_id


def test_claim_refused_when_start_is_false_leaves_state_unchanged() -> None:
    """A claim for a job START rejects is refused and changes nothing."""
    engine, state = _setup('START = Owner == "coltrane"\n')
    outcome = engine.claim(state, "slot1", JOB, 5)
    assert outcome.refused is not None and "START" in outcome.refused
    assert outcome.state is state and outcome.transitions == ()


def test_claim_ids_are_random_and_reproducible_from_the_seed() -> None:
    """ClaimIds carry 128 random bits from the injected source: seeds differ, runs repeat."""
    ids = []
    for seed in (1, 1, 2):
        engine, state = _setup(seed=seed)
        ids.append(engine.claim(state, "slot1", JOB, 5).claim_id)
    assert ids[0] == ids[1] != ids[2]
    assert ids[0] is not None and len(ids[0].rsplit("#", 1)[1]) == 32
    assert new_claim_id(random.Random(3), "<a:1>", 9, 4).startswith("<a:1>#9#4#")


@pytest.mark.parametrize(
    ("job", "expected"),
    [("[JobLeaseDuration = 100]", 100), ("[]", 1800), ("[JobLeaseDuration = 0]", 1800)],
)
def test_lease_comes_from_the_job_or_alive_interval(job: str, expected: int) -> None:
    """JobLeaseDuration sets the lease; otherwise ALIVE_INTERVAL x MAX_CLAIM_ALIVES_MISSED."""
    assert lease_seconds(parse_ad(job), 300, 6) == expected


def test_activate_spawns_the_starter_and_sets_job_start() -> None:
    """Activation moves Claimed/Idle to Busy (11) and asks for the starter."""
    engine, state = _setup()
    claimed = engine.claim(state, "slot1", JOB, 10)
    assert claimed.claim_id is not None
    outcome = engine.activate(claimed.state, claimed.claim_id, 20)
    assert [(t.number, str(t.new)) for t in outcome.transitions] == [(11, "Claimed/Busy")]
    assert [a.kind for a in outcome.actions] == [ActionKind.SPAWN_STARTER]
    assert type(outcome.actions[0].kind) is ActionKind
    status = outcome.state.statuses()["slot1"]
    assert status.job is not None and status.job.started_at == 20
    assert status.job.job_id == "7.1" and status.claim is not None
    assert status.claim.remote_owner == "jones"


@pytest.mark.parametrize(
    ("next_job", "refusal"),
    [
        ('[Owner = "jones"; ClusterId = 7; ProcId = 2]', None),
        ('[Owner = "coltrane"; ClusterId = 8; ProcId = 0]', "START is not TRUE"),
        (
            '[Owner = "jones"; ClusterId = 7; ProcId = 3; Requirements = TARGET.Cpus > 64]',
            "Requirements do not accept the slot",
        ),
    ],
)
def test_a_reused_claim_runs_the_next_job_the_slot_accepts(
    next_job: str, refusal: str | None
) -> None:
    """A claim reused for another job runs it when START and the job's Requirements agree,
    and refuses it with the reason otherwise."""
    engine, state, claim_id = _running('START = Owner == "jones"\n')
    state = engine.job_exit(state, claim_id, 0, 30).state
    job = parse_ad(next_job)
    outcome = engine.activate(state, claim_id, 40, job)
    if refusal is None:
        assert outcome.refused is None
        status = outcome.state.statuses()["slot1"]
        assert status.job is not None and status.job.job_id == "7.2"
        assert [a.kind for a in outcome.actions] == ["spawn_starter"]
    else:
        assert outcome.refused is not None and refusal in outcome.refused
        assert _place(outcome.state) == "Claimed/Idle"


def test_suspend_and_continue_are_actions() -> None:
    """SUSPEND asks the daemon to suspend the job; CONTINUE to continue it."""
    config = "WANT_SUSPEND = True\nSUSPEND = Stop =?= True\nCONTINUE = Stop =!= True\n"
    sim = Simulation(Scenario("test", "NUM_SLOTS = 1\n" + config, {}, ()))
    engine = sim.engine
    state = engine.start(plan_slots(sim.config, sim.inventory), 0)
    claimed = engine.claim(engine.poll(state, 0).state, "slot1", JOB, 10)
    assert claimed.claim_id is not None
    state = engine.activate(claimed.state, claimed.claim_id, 20).state
    sim.values["Stop"] = (True, 0)
    outcome = engine.poll(state, 30)
    assert [a.kind for a in outcome.actions] == ["suspend"]
    sim.values["Stop"] = (False, 0)
    resumed = engine.poll(outcome.state, 40)
    assert [a.kind for a in resumed.actions] == ["continue"]
    record = resumed.state.slot("slot1")
    assert record is not None and record.suspended_total == 10


def test_killing_timeout_gives_up_on_the_starter() -> None:
    """Without the job leaving, Killing ends after KILLING_TIMEOUT (a note says so)."""
    engine, state, _ = _running("WANT_VACATE = False\nKILLING_TIMEOUT = 30\n")
    outcome = engine.vacate(state, "slot1", False, 100)
    assert _place(outcome.state) == "Preempting/Killing"
    assert "hard_kill" in [a.kind for a in outcome.actions]
    assert engine.next_timer(outcome.state, 100) == 130
    assert _place(engine.poll(outcome.state, 129).state) == "Preempting/Killing"
    later = engine.poll(outcome.state, 130)
    assert [t.number for t in later.transitions][:1] == [25]
    assert any("KILLING_TIMEOUT" in note for note in later.notes)


def test_match_timeout_is_the_next_timer() -> None:
    """A matched slot's next timer is MATCH_TIMEOUT after the match."""
    engine, state = _setup("MATCH_TIMEOUT = 45\n")
    matched = engine.match(state, "slot1", JOB, 10).state
    assert engine.next_timer(matched, 10) == 55
    assert engine.ads(matched, 10)["slot1"].evaluate("Requirements") is False


@pytest.mark.parametrize(
    ("retire", "own", "suspended", "expected"),
    [(100, None, 0, 120), (100, None, 50, 170), (100, 30, 50, 100), (0, None, 0, 20)],
)
def test_retirement_end_excludes_suspension(
    retire: int, own: int | None, suspended: float, expected: float
) -> None:
    """Retirement counts from JobStart, the job may lower it, suspended time is added."""
    engine, state, _ = _running(f"MAXJOBRETIREMENTTIME = {retire}\n")
    record = state.slot("slot1")
    assert record is not None and record.claim is not None
    job = parse_ad(f"[MaxJobRetirementTime = {own}]") if own is not None else parse_ad("[]")
    record = attrs.evolve(
        record, suspended_total=suspended, claim=attrs.evolve(record.claim, job=job)
    )
    ad = engine.ads(state, 30)["slot1"]
    assert retirement_end(record, engine.policy(1), ad, 30) == expected


@pytest.mark.parametrize(
    ("retire", "job_vacate", "expected"),
    [
        (0, None, 600),  # MachineMaxVacateTime
        (100, None, 600),  # retirement is converted only up to a JobMaxVacateTime
        (100, 60, 60),  # the job's smaller setting is used
        (1000, 800, 800),  # 990 s of retirement left: converted up to JobMaxVacateTime
        (300, 800, 600),  # 290 s left, less than the machine's 600: the machine's
    ],
)
def test_vacate_time_follows_the_seed_rule(
    retire: int, job_vacate: int | None, expected: float
) -> None:
    """MachineMaxVacateTime; JobMaxVacateTime when smaller; when larger, spare retirement is
    turned into vacating time up to JobMaxVacateTime (seed 000, MachineMaxVacateTime)."""
    engine, state, _ = _running(f"MAXJOBRETIREMENTTIME = {retire}\nMachineMaxVacateTime = 600\n")
    record = state.slot("slot1")
    assert record is not None and record.claim is not None
    if job_vacate is not None:
        job = parse_ad(f"[JobMaxVacateTime = {job_vacate}]")
        record = attrs.evolve(record, claim=attrs.evolve(record.claim, job=job))
    ad = engine.ads(state, 30)["slot1"]
    assert vacate_time(record, engine.policy(1), ad, 30) == expected


def test_total_time_accumulators() -> None:
    """Leaving an activity adds its time to Total<State><Activity>Time."""
    engine, state, claim_id = _running()
    done = engine.job_exit(state, claim_id, 0, 120).state
    record = done.slot("slot1")
    assert record is not None
    assert record.totals["ClaimedBusy"] == 100 and record.totals["ClaimedIdle"] == 10
    assert engine.ads(done, 130)["slot1"].evaluate("TotalTimeClaimedIdle") == 20


def test_preempting_claim_needs_a_better_rank() -> None:
    """A claim on a claimed slot is refused unless RANK prefers the new job."""
    engine, state, _ = _running('RANK = Owner == "garrison"\n')
    refused = engine.claim(state, "slot1", parse_ad('[Owner = "tyner"]'), 30)
    assert refused.refused is not None and "RANK" in refused.refused
    accepted = engine.claim(state, "slot1", parse_ad('[Owner = "garrison"]'), 30)
    assert accepted.claim_id is not None and accepted.transitions[0].number == 13


def test_bad_events_raise_engine_errors() -> None:
    """Unknown slots or claims and unknown drain kinds are EngineErrors."""
    engine, state = _setup()
    with pytest.raises(EngineError):
        engine.claim(state, "slot9", JOB, 1)
    with pytest.raises(EngineError):
        engine.activate(state, "no-such-claim", 1)
    with pytest.raises(EngineError):
        engine.drain(state, "slowly", 1)
    assert engine.cancel_drain(state, 1).refused is not None


def test_transition_records_carry_edge_and_cause() -> None:
    """Each move is recorded with its time, slot, places, number, letter and cause."""
    engine, state = _setup()
    outcome = engine.match(state, "slot1", JOB, 7)
    (record,) = outcome.transitions
    assert (record.time, record.slot, record.number, record.letter) == (7, "slot1", 6, "C")
    assert (
        str(record) == "slot1: Unclaimed/Idle -> Matched/Idle [6 C] the negotiator matched the slot"
    )


def test_job_exit_while_suspended_ends_the_claim_through_preempting() -> None:
    """A suspended job that exits takes the slot through Preempting (17) to Owner (22)."""
    config = "WANT_SUSPEND = True\nSUSPEND = True\nCONTINUE = False\n"
    engine, state, claim_id = _running(config)
    assert _place(state) == "Claimed/Suspended"
    outcome = engine.job_exit(state, claim_id, 0, 50)
    assert [t.number for t in outcome.transitions][:2] == [17, 22]


def test_peaceful_shutdown_keeps_suspended_jobs_and_releases_idle_claims() -> None:
    """A peaceful shutdown lets a suspended job retire without end and releases idle claims."""
    config = "NUM_SLOTS = 2\nWANT_SUSPEND = True\nSUSPEND = SlotID == 1\nCONTINUE = SlotID != 1\n"
    engine, state, _ = _running(config)
    idle = engine.claim(state, "slot2", JOB, 25)
    outcome = engine.shutdown(idle.state, False, 30)
    assert _place(outcome.state) == "Claimed/Suspended"
    assert _place(outcome.state, "slot2") == "Unclaimed/Idle"
    assert engine.ads(outcome.state, 30)["slot2"].evaluate("Requirements") is False
    record = outcome.state.slot("slot1")
    assert record is not None and record.retire_from == 30


def test_claim_run_time_adds_up_the_jobs_of_a_reused_claim() -> None:
    """TotalClaimRunTime counts every job run on the claim; TotalJobRunTime only the current one."""
    sim = Simulation(Scenario("test", "NUM_SLOTS = 1\nRUNBENCHMARKS = False\n", {}, ()))
    engine = sim.engine
    state = engine.poll(engine.start(plan_slots(sim.config, sim.inventory), 0), 0).state
    claimed = engine.claim(state, "slot1", JOB, 10)
    assert claimed.claim_id is not None
    state = engine.activate(claimed.state, claimed.claim_id, 20).state
    state = engine.job_exit(state, claimed.claim_id, 0, 120).state
    state = engine.activate(state, claimed.claim_id, 130).state
    ad = sim.ads(state, 160)["slot1"]
    assert ad.evaluate("TotalJobRunTime") == 30
    assert ad.evaluate("TotalClaimRunTime") == 100 + 30
    assert ad.evaluate("TotalTimeClaimedBusy") == 100 + 30
    assert ad.evaluate("TotalTimeClaimedIdle") == 10 + 10


def test_client_machine_comes_from_the_claim_or_the_global_job_id() -> None:
    """ClientMachine is the claiming schedd's host, else the host part of GlobalJobId."""
    engine, state = _setup()
    job = parse_ad('[Owner = "jones"; GlobalJobId = "submit.example.org#7.1#1700000000"]')
    by_job = engine.claim(state, "slot1", job, 10).state.statuses()["slot1"].claim
    assert by_job is not None and by_job.client_machine == "submit.example.org"
    named = engine.claim(state, "slot1", JOB, 10, client="ap.example.org")
    claim = named.state.statuses()["slot1"].claim
    assert claim is not None and claim.client_machine == "ap.example.org"


def test_drain_advertises_its_reason_and_expected_figures() -> None:
    """A drain's reason is the machine's DrainReason while it drains; before it, the expected
    figures count the running job: a quick drain ends now and loses its run time, a graceful
    one ends when the job's own retirement does."""
    retiring = parse_ad('[Owner = "jones"; ClusterId = 7; ProcId = 1; MaxJobRetirementTime = 100]')
    engine, state = _setup("NUM_CPUS = 1\nMAXJOBRETIREMENTTIME = 1000\n")
    claimed = engine.claim(state, "slot1", retiring, 10)
    assert claimed.claim_id is not None
    state = engine.activate(claimed.state, claimed.claim_id, 20).state
    before = state.draining_totals(50)
    assert (before.draining, before.reason) == (False, None)
    assert (before.quick_completion, before.quick_badput) == (50, 30)
    assert (before.graceful_completion, before.graceful_badput) == (120, 100)
    drained = engine.drain(state, "graceful", 60, reason="Defrag cm").state
    during = drained.draining_totals(60)
    assert (during.draining, during.reason) == (True, "Defrag cm")


def test_drain_resuming_on_completion_returns_the_slot_to_service() -> None:
    """A drain that resumes on completion (condor_defrag's) sends the slot back to Owner (34)
    and on to Unclaimed once its job is gone, and the machine stops draining; one that does
    not leaves it Drained."""
    for resume, place in ((True, "Unclaimed/Idle"), (False, "Drained/Idle")):
        engine, state, _ = _running()
        state = engine.drain(state, "fast", 30, finalize=resume).state
        state = engine.job_gone(state, "slot1", 31).state
        state = engine.poll(state, 32).state
        assert _place(state) == place
        assert (state.drain is None) is resume


def test_a_vacate_with_a_reason_keeps_it_until_the_job_left() -> None:
    """vacate(reason=...) marks the slot with the reason for the kill; the job's end clears it."""
    engine, state, _claim = _running()
    why = VacateReason("Startd hibernated", 1016)
    outcome = engine.vacate(state, "slot1", True, 30, why)
    record = outcome.state.slot("slot1")
    assert record is not None and record.vacate_reason == why
    assert ActionKind.HARD_KILL in [a.kind for a in outcome.actions]
    gone = engine.job_gone(outcome.state, "slot1", 31).state.slot("slot1")
    assert gone is not None and gone.vacate_reason is None
    plain = engine.vacate(state, "slot1", True, 30).state.slot("slot1")
    assert plain is not None and plain.vacate_reason is None


def test_an_unknown_claim_is_named_by_its_public_part_only() -> None:
    """The error for a claim id no slot holds quotes the id without its secret, since errors
    are logged and sent back to whoever asked."""
    secret_id = new_claim_id(random.Random(7), "<127.0.0.1:9618>", 1700000000, 3)
    assert public_part(secret_id) == "<127.0.0.1:9618>#1700000000#3"
    engine, state = _setup()
    with pytest.raises(EngineError) as raised:
        engine.release(state, secret_id, 5)
    assert secret_id.rsplit("#", 1)[1] not in str(raised.value)
    assert "<127.0.0.1:9618>#1700000000#3" in str(raised.value)
