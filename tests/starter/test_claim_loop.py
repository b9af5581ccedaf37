"""The claim loop's NEXT message: what the startd sends a kept starter, and what it takes."""

from __future__ import annotations

import logging
import socket
import threading

import attrs
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from epcore.classad import ClassAd, parse_ad
from epcore.config import Config
from epcore.runtime import framing
from epcore.starter import protocol
from epcore.starter.claim_loop import (
    NextJobError,
    next_key_prefix,
    next_message,
    next_request,
    wait_for_next,
)
from epcore.starter.starter import StarterOrder, StarterRequest

ORDER = StarterOrder(
    slot_name="slot1_1",
    slot_id=1,
    claim_id="<10.0.0.1:9618>#1#2#3",
    job=parse_ad('[ ClusterId = 4; ProcId = 2; Cmd = "/bin/true"; Owner = "alice" ]'),
    machine_text='Name = "slot1_1@host"\nCpus = 1\n',
    execute_dir="/var/lib/condor/execute",
    startd_socket="/var/lock/condor/startd_starters",
    startd_address="<10.0.0.1:9618>",
    cpus=1.0,
    memory_mb=512,
    startd_memory_mb=4096,
    starter_log="/var/log/condor/StarterLog.slot1_1",
    lease=1200,
    keeps=True,
)


def _current() -> StarterRequest:
    first = attrs.evolve(ORDER, job=parse_ad("[ ClusterId = 4; ProcId = 1 ]"), lease=60)
    return StarterRequest(
        **attrs.asdict(first, recurse=False), config=Config.from_text(""), isolation=()
    )


def _over_the_wire(ad: ClassAd) -> ClassAd:
    """``ad`` as a NEXT message, encoded and decoded as the channel does."""
    line = framing.encode(framing.message(protocol.NEXT, ad))
    return framing.decode(line, protocol.STARTD_COMMANDS)


def test_next_carries_the_next_job_and_its_slot_figures() -> None:
    """The request a kept starter builds from NEXT has the next job, its slot text, lease and
    resources, and keeps the starter's own claim, log and connection settings."""
    taken = next_request(_over_the_wire(next_message(ORDER)), _current())
    assert taken.job.evaluate("ProcId") == 2
    assert taken.job.evaluate("Cmd") == "/bin/true"
    assert (taken.machine_text, taken.lease, taken.cpus) == (ORDER.machine_text, 1200, 1.0)
    assert (taken.memory_mb, taken.startd_memory_mb) == (512, 4096)
    assert taken.claim_id == ORDER.claim_id and taken.starter_log == ORDER.starter_log
    assert taken.prepared is None and taken.machine_ad is None and taken.keeps


@pytest.mark.parametrize(
    ("field", "value"),
    [
        ("claim_id", "<10.0.0.1:9618>#9#9#9"),
        ("slot_name", "slot1_2"),
        ("startd_socket", "/tmp/elsewhere"),
        ("starter_log", "/tmp/StarterLog.other"),
    ],
)
def test_next_for_another_claim_slot_startd_or_log_is_refused(field: str, value: str) -> None:
    """A NEXT naming another claim, slot, startd socket or StarterLog is refused with the
    attribute it got wrong."""
    message = next_message(attrs.evolve(ORDER, **{field: value}))
    with pytest.raises(NextJobError, match="another"):
        next_request(_over_the_wire(message), _current())


@pytest.mark.parametrize(
    ("name", "value", "complaint"),
    [
        ("Job", '"not an ad"', "ClassAd Job"),
        ("Lease", '"soon"', "integer Lease"),
        ("Memory", "true", "integer Memory"),
        ("Cpus", "undefined", "number Cpus"),
        ("MachineText", "42", "string MachineText"),
    ],
)
def test_a_malformed_next_is_refused_naming_the_attribute(
    name: str, value: str, complaint: str
) -> None:
    """A NEXT with an attribute missing or of the wrong type is refused, naming it."""
    message = next_message(ORDER)
    message[name] = parse_ad(f"[ X = {value} ]").lookup("X")
    with pytest.raises(NextJobError, match=complaint):
        next_request(_over_the_wire(message), _current())


@settings(max_examples=200, deadline=None)
@given(
    st.dictionaries(
        st.sampled_from(
            ["Job", "Lease", "Memory", "Cpus", "MachineText", "SlotId", "ClaimId", "ExecuteDir"]
        ),
        st.one_of(
            st.integers(-(2**63), 2**63 - 1),
            st.text(
                st.characters(exclude_categories=("Cs",), exclude_characters="\x00"), max_size=20
            ),
            st.booleans(),
            st.floats(),
            st.none(),
        ),
    )
)
def test_any_next_is_taken_or_refused_never_anything_else(changes: dict[str, object]) -> None:
    """Whatever a NEXT holds, next_request returns a request or raises NextJobError."""
    message = next_message(ORDER)
    for name, value in changes.items():
        if value is None:
            del message[name]
        else:
            message[name] = value
    try:
        taken = next_request(_over_the_wire(message), _current())
    except NextJobError:
        return
    assert isinstance(taken.job, ClassAd)


def test_next_groups_are_named_for_their_starter_alone() -> None:
    """The prefix of a kept starter's next-job groups matches its own keys, not those of a
    starter whose PID starts with the same digits."""
    prefix = next_key_prefix("/var/lib/condor/execute", "slot1_1", 123)
    assert f"{prefix}1".startswith(prefix)
    assert not next_key_prefix("/var/lib/condor/execute", "slot1_1", 1234).startswith(prefix)


def test_a_retire_read_with_the_next_job_ends_the_following_wait_at_once() -> None:
    """Messages read together with NEXT stay for the next wait, which takes them without
    waiting for the socket to say more (here RETIRE, right behind NEXT)."""
    starter_end, startd_end = socket.socketpair()
    channel = framing.Channel(starter_end, protocol.STARTD_COMMANDS)
    both = framing.encode(framing.message(protocol.NEXT, next_message(ORDER))) + framing.encode(
        framing.message(protocol.RETIRE)
    )
    startd_end.sendall(both)
    log = logging.getLogger("test")
    taken = wait_for_next(channel, _current(), log)
    assert taken is not None and taken.job.evaluate("ProcId") == 2
    outcome: list[object] = []
    waiter = threading.Thread(target=lambda: outcome.append(wait_for_next(channel, taken, log)))
    waiter.start()
    waiter.join(5)
    alive = waiter.is_alive()
    startd_end.close()  # ends a wait that did block, so the test does not hang
    waiter.join(5)
    assert not alive and outcome == [None]
    starter_end.close()
