"""canCreateVM at activation: the startd refuses a VM job's activation when VM_MAX_NUMBER VMs
run already or the VM memory left is below JobVMMemory (no libvirt: the running VMs are the
startd's busy VM claims, made busy without a starter; and a real pool, whose second guest
waits for the first)."""

from __future__ import annotations

from collections.abc import Callable, Iterator
from pathlib import Path

import pytest
from epcore_vm.admission import REFUSAL, refuse_activation, vm_memory
from epcore_vm.settings import read_settings
from vm_guest import Guest
from vm_pool import JOB_DEADLINE, domains, submit_vm, vm_config, write_disks

from epcore.classad import ClassAd, parse_ad
from epcore.config import Config
from epcore.errors import EpError
from epcore.testing.pool import user_home
from epcore.testing.startd import InProcessStartd

MakeStartd = Callable[[str], InProcessStartd]


def _vm_job(number: int, memory: int) -> ClassAd:
    return parse_ad(
        f'[ ClusterId = {number}; ProcId = 0; Owner = "nobody"; JobUniverse = 13; '
        f'JobVMType = "kvm"; JobVMMemory = {memory}; RequestMemory = {memory} ]'
    )


@pytest.fixture
def make_startd(tmp_path: Path) -> Iterator[MakeStartd]:
    """Startds of three static slots with the VM universe on and libvirt nowhere."""
    made: list[InProcessStartd] = []

    def make(knobs: str) -> InProcessStartd:
        local = tmp_path / f"local{len(made)}"
        local.mkdir()
        config = tmp_path / f"condor_config{len(made)}"
        config.write_text(
            f"LOCAL_DIR = {local}\nRUNBENCHMARKS = False\nIS_OWNER = False\nNUM_CPUS = 3\n"
            "MEMORY = 1536\nNUM_SLOTS = 3\nSTART = True\nVM_TYPE = kvm\n"
            f"VM_LIBVIRT_URI = qemu:///system?socket={tmp_path}/no-libvirtd\n{knobs}"
        )
        opened = InProcessStartd.open(str(config))
        made.append(opened)
        startd = opened.startd
        now = startd.clock()
        startd.take(startd.engine.poll(startd.state, now), now)  # Owner -> Unclaimed
        return opened

    yield make
    for opened in made:
        opened.close()


def _running(opened: InProcessStartd, slot: str, job: ClassAd) -> None:
    """``job`` runs on ``slot`` as far as the startd knows (Busy; no starter is forked)."""
    startd = opened.startd
    claim_id = startd.claim(slot, job)
    startd.state = startd.engine.activate(startd.state, claim_id, startd.clock()).state
    assert str(startd.state.slot(slot).place) == "Claimed/Busy"  # type: ignore[union-attr]


def _refused(opened: InProcessStartd, slot: str, job: ClassAd) -> str:
    """Claim ``slot`` for ``job`` and activate it, which must be refused: the reason."""
    startd = opened.startd
    claim_id = startd.claim(slot, job)
    with pytest.raises(EpError) as refused:
        startd.activate(claim_id)
    # The claim is kept, Claimed/Idle, as HTCondor's startd keeps it: the schedd gives it back.
    assert str(startd.state.slot(slot).place) == "Claimed/Idle"  # type: ignore[union-attr]
    assert startd.slot_of(claim_id) == slot
    return str(refused.value)


def test_vm_max_number_running_refuses_the_next_vm_job(make_startd: MakeStartd) -> None:
    """With VM_MAX_NUMBER = 1 and one VM job busy, a second VM job's activation is refused
    with HTCondor's reason and the count, in the startd's log too."""
    opened = make_startd("VM_MEMORY = 2048\nVM_MAX_NUMBER = 1\n")
    startd = opened.startd
    _running(opened, "slot1", _vm_job(1, 128))
    reason = _refused(opened, "slot2", _vm_job(2, 128))
    assert reason.startswith(REFUSAL)
    assert "1 VMs run already, VM_MAX_NUMBER allows 1" in reason
    for handler in startd.log.handlers:
        handler.flush()
    logged = Path(startd.paths.startd_log).read_text()
    assert "activation of claim" in logged
    assert "refused: " + reason in logged


def test_too_little_vm_memory_left_refuses_and_a_fitting_job_passes(
    make_startd: MakeStartd, monkeypatch: pytest.MonkeyPatch
) -> None:
    """VM_MEMORY = 300 with a 200 MB guest busy: a 200 MB guest is refused (100 MB free),
    a 100 MB one is activated (the starter spawn is reached)."""
    opened = make_startd("VM_MEMORY = 300\n")
    startd = opened.startd
    _running(opened, "slot1", _vm_job(1, 200))
    reason = _refused(opened, "slot2", _vm_job(2, 200))
    assert "asks for 200 MB of VM memory, 100 MB are free" in reason
    spawned: list[str] = []
    monkeypatch.setattr(startd, "act", lambda action, now: spawned.append(action.kind))
    startd.activate(startd.claim("slot3", _vm_job(3, 100)))
    assert str(startd.state.slot("slot3").place) == "Claimed/Busy"  # type: ignore[union-attr]
    assert spawned == ["spawn_starter"]


def test_a_busy_vm_job_s_slot_is_not_counted_against_itself(
    make_startd: MakeStartd, monkeypatch: pytest.MonkeyPatch
) -> None:
    """VM_MAX_NUMBER = 1 and no VM running: the first VM job is activated."""
    opened = make_startd("VM_MEMORY = 256\nVM_MAX_NUMBER = 1\n")
    startd = opened.startd
    monkeypatch.setattr(startd, "act", lambda action, now: None)
    startd.activate(startd.claim("slot1", _vm_job(1, 256)))
    assert str(startd.state.slot("slot1").place) == "Claimed/Busy"  # type: ignore[union-attr]


def test_refuse_activation_follows_cancreatevm() -> None:
    """No type, a full count, a job without memory or with 0 MB are refused; VM_MAX_NUMBER
    unset is unlimited; RequestMemory stands in for JobVMMemory."""
    on = read_settings(Config.from_text("VM_TYPE = kvm\nVM_MEMORY = 512\nVM_MAX_NUMBER = 2\n"))
    unlimited = read_settings(Config.from_text("VM_TYPE = kvm\nVM_MEMORY = 5120\n"))
    off = read_settings(Config.from_text("VM_MEMORY = 512\n"))
    small = _vm_job(1, 64)
    assert refuse_activation(on, small, []) is None
    assert refuse_activation(on, small, [small]) is None
    assert "VM_MAX_NUMBER allows 2" in (refuse_activation(on, small, [small, small]) or "")
    assert refuse_activation(unlimited, small, [small] * 50) is None
    assert "VM_TYPE is not defined" in (refuse_activation(off, small, []) or "")
    assert "no VM memory" in (refuse_activation(on, parse_ad("[ JobUniverse = 13 ]"), []) or "")
    assert "asks for 0 MB" in (refuse_activation(on, _vm_job(1, 0), []) or "")
    assert vm_memory(parse_ad("[ RequestMemory = 96 ]")) == 96
    assert vm_memory(parse_ad("[ JobVMMemory = 48; RequestMemory = 96 ]")) == 48


@pytest.mark.xdist_group("libvirtd")
def test_a_pool_runs_its_vm_jobs_one_at_a_time_under_vm_max_number_1(
    leftover_domains: None,
    pool_factory,
    slot_users,
    shared_dir: Path,
    libvirt_uri: str,
    vm_guest: Guest,
) -> None:
    """VM_MAX_NUMBER = 1 with two slots and VM_AvailNum left stale (VM_USAGE_INTERVAL 600 s):
    the second job of a pair is matched while the first guest runs, its activation refused
    with canCreateVM's reason in the StartLog, and it stays idle, then runs once the first is
    done: both complete, and never two guests at once."""
    extra = "VM_MAX_NUMBER = 1\nVM_USAGE_INTERVAL = 600\nNUM_SLOTS = 2\n"
    pool = pool_factory(vm_config(libvirt_uri, vm_guest, extra), cpus=2, memory=2048)
    user = slot_users[0]
    home = user_home(shared_dir, user)
    write_disks(home, user)
    submit_vm(pool, user, home, "queue 1")  # with the template's own queue: two jobs
    most = 0

    def done() -> bool:
        nonlocal most
        most = max(most, len(domains(libvirt_uri, shared_dir.name)))
        return not pool.jobs()

    pool.wait_for(done, 2 * JOB_DEADLINE, "both VM jobs to leave the queue")
    history = pool.jobs(history=True)
    assert sorted(j.evaluate("JobStatus") for j in history) == [4, 4], history
    assert most <= 1
    startd_log = pool.log("StartLog")
    assert f"refused: {REFUSAL}: 1 VMs run already, VM_MAX_NUMBER allows 1" in startd_log, (
        startd_log[-3000:]
    )
