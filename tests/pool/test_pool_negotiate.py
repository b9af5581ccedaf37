"""A central manager (collector and negotiator) negotiating over CEDAR with a schedd in
another ``ep run`` process: slots and submitters advertised to its collector over CEDAR
(htcondor2's UPDATE_STARTD_AD and UPDATE_SUBMITTOR_AD), the negotiator authenticated to the
schedd with a DAEMON token, matches received by the schedd with concurrency limits and
group quotas honoured; without the token the schedd refuses and both logs say so.

Until a schedd can run alone (``DAEMON_LIST = SCHEDD`` with a remote collector, the advert
part of issue 23), the schedd's process also runs a collector and a negotiator of its own,
which see no slot and match nothing.
"""

from __future__ import annotations

import re
import time
from collections.abc import Callable
from pathlib import Path

import pytest
from click.testing import CliRunner

from epcore.cli.main import ep
from epcore.config import Config
from epcore.net import tokens
from epcore.net.client import connect, start_command
from epcore.net.commands import NEGOTIATOR_RESCHEDULE
from epcore.net.conversation import run_blocking
from epcore.net.sinful import parse_sinful
from epcore.testing.cedar import run_htcondor2
from epcore.testing.pool import PoolProcess, submit_as
from epcore.testing.system import SlotUser

pytestmark = pytest.mark.system

CENTRAL_MANAGER = """
DAEMON_LIST = COLLECTOR NEGOTIATOR
NEGOTIATOR_INTERVAL = 2
NEGOTIATOR_MIN_INTERVAL = 0
NEGOTIATOR_TIMEOUT = 10
SEC_TOKEN_DIRECTORY = $(LOCAL_DIR)/tokens.d
CONCURRENCY_LIMIT_DEFAULT = 100
LIC_LIMIT = 3
GROUP_NAMES = group_a
GROUP_QUOTA_group_a = 2
GROUP_ACCEPT_SURPLUS = False
"""
SUBMIT_HOST = """
DAEMON_LIST = COLLECTOR NEGOTIATOR SCHEDD
NEGOTIATOR_INTERVAL = 600
SEC_PASSWORD_DIRECTORY = {keys}
SEC_NEGOTIATOR_AUTHENTICATION = REQUIRED
SEC_NEGOTIATOR_AUTHENTICATION_METHODS = IDTOKENS
ALLOW_NEGOTIATOR = condor@{trust_domain}
"""
JOBS = """
executable = /bin/true
concurrency_limits = lic
queue 6
accounting_group = group_a
concurrency_limits =
queue 6
"""
SLOTS = 10
ADVERTISE = """
import classad2
ads = []
for n in range(1, {slots} + 1):
    ad = classad2.ClassAd()
    ad.update({{"MyType": "Machine", "Name": f"slot{{n}}@exec.example.org",
        "Machine": "exec.example.org", "MyAddress": "<127.0.0.1:1>",
        "StartdIpAddr": "<127.0.0.1:1>", "Cpus": 1, "Memory": 1024, "Disk": 10**8,
        "State": "Unclaimed", "Activity": "Idle", "SlotWeight": 1, "OpSys": "LINUX",
        "Arch": "X86_64", "HasFileTransfer": True}})
    ad["Requirements"] = classad2.ExprTree("true")
    ads.append(ad)
htcondor2.Collector().advertise(ads, "UPDATE_STARTD_AD")
submitters = []
for name in {submitters!r}:
    ad = classad2.ClassAd()
    ad.update({{"MyType": "Submitter", "Name": name, "ScheddIpAddr": "{schedd}",
        "ScheddName": "submit", "IdleJobs": 6}})
    submitters.append(ad)
htcondor2.Collector().advertise(submitters, "UPDATE_SUBMITTOR_AD")
result = len(ads) + len(submitters)
"""


def _address(pool: PoolProcess) -> str:
    return (pool.directory / "log" / ".collector_address").read_text().splitlines()[0]


def _token(pool: PoolProcess, identity: str) -> None:
    """A DAEMON token for ``identity`` in the pool's token directory."""
    made = CliRunner().invoke(
        ep, ["token", "create", "--config", str(pool.config_path), "--identity", identity]
    )
    assert made.exit_code == 0, made.stderr
    directory = pool.directory / "tokens.d"
    directory.mkdir(mode=0o700, exist_ok=True)
    (directory / "negotiator").write_text(made.stdout.strip() + "\n")
    (directory / "negotiator").chmod(0o600)


def _pools(
    pool_factory: Callable[..., PoolProcess], slot_users: list[SlotUser], shared_dir: Path
) -> tuple[PoolProcess, PoolProcess, list[str]]:
    """The central manager and the submit host (its jobs queued); the submitters' names."""
    manager = pool_factory(CENTRAL_MANAGER)
    settings = tokens.TokenSettings.from_lookup(Config.load(manager.config_path).get)
    submit = pool_factory(
        SUBMIT_HOST.format(
            keys=manager.directory / "passwords.d", trust_domain=settings.trust_domain
        )
    )
    user = slot_users[0]
    submit_as(submit, user, shared_dir, JOBS)
    names: list[str] = []
    deadline = time.monotonic() + 30
    while len(names) < 2 and time.monotonic() < deadline:
        names = sorted(str(ad.evaluate("Name")) for ad in submit.client.query_ads("Submitter"))
        time.sleep(0.2)
    assert len(names) == 2, names
    return manager, submit, names


def _advertise(manager: PoolProcess, submit: PoolProcess, names: list[str]) -> None:
    code = ADVERTISE.format(slots=SLOTS, submitters=names, schedd=_address(submit))
    assert run_htcondor2(str(manager.config_path), code) == SLOTS + len(names)


def _rounds(submit: PoolProcess) -> list[tuple[str, int]]:
    """Each negotiation round the schedd finished: the submitter, its matches."""
    found = re.findall(
        r"Negotiation for (\S+) with \S+ ended: (\d+) jobs matched", submit.log("SchedLog")
    )
    return [(name, int(count)) for name, count in found]


def test_the_negotiator_matches_a_remote_schedds_jobs_within_limits_and_quotas(
    pool_factory: Callable[..., PoolProcess], slot_users: list[SlotUser], shared_dir: Path
) -> None:
    """With a DAEMON token the central manager's negotiator negotiates with the schedd in
    the other process: the schedd receives the matches (and, no startd being reachable,
    logs that it cannot claim them); the jobs asking for the license never have more than
    LIC_LIMIT (3) matches pending, and group_a's never more than its quota (2) in one
    cycle, while 10 slots were free."""
    manager, submit, names = _pools(pool_factory, slot_users, shared_dir)
    settings = tokens.TokenSettings.from_lookup(Config.load(manager.config_path).get)
    _token(manager, f"condor@{settings.trust_domain}")
    _advertise(manager, submit, names)
    group = next(name for name in names if name.startswith("group_a."))
    plain = next(name for name in names if name != group)
    submit.wait_for(
        lambda: (
            {name for name, _ in _rounds(submit)} == {group, plain} and len(_rounds(submit)) >= 4
        ),
        60,
        "two negotiation cycles of both submitters",
    )
    rounds = _rounds(submit)
    assert all(0 < count <= 2 for name, count in rounds if name == group), rounds
    assert 0 < sum(count for name, count in rounds if name == plain) <= 3, rounds
    log = submit.log("SchedLog")
    # The matches reached the schedd, which tried to claim the (fake, unreachable) slots
    # over CEDAR (epcore.links.startd).
    found = re.search(r"the claim of slot\d+@exec.example.org was refused: .*127.0.0.1:1", log)
    assert found, log[-2000:]
    negotiator = manager.log("NegotiatorLog")
    assert "Matched 1." in negotiator and "failed" not in negotiator


def test_without_a_token_the_schedd_refuses_and_both_logs_say_so(
    pool_factory: Callable[..., PoolProcess], slot_users: list[SlotUser], shared_dir: Path
) -> None:
    """A negotiator without a DAEMON token cannot authenticate for NEGOTIATE: the schedd
    refuses it (its log names the command), the negotiator's log names the schedd, and no
    job is matched; the cycle itself goes on."""
    manager, submit, names = _pools(pool_factory, slot_users, shared_dir)
    _advertise(manager, submit, names)
    address = _address(submit)
    manager.wait_for(
        lambda: f"negotiation with the schedd at {address} failed" in manager.log("NegotiatorLog"),
        60,
        "the negotiator to report the schedd",
    )
    assert _rounds(submit) == []
    assert "NEGOTIATE" in submit.log("CollectorLog") + submit.log("SchedLog")


def test_reschedule_at_the_central_manager_starts_a_cycle_soon(
    pool_factory: Callable[..., PoolProcess],
) -> None:
    """A central manager without a schedd answers RESCHEDULE (a schedd elsewhere asking, at
    DAEMON level: here root by FS) with a cycle at once, although NEGOTIATOR_INTERVAL is ten
    minutes."""
    manager = pool_factory(
        CENTRAL_MANAGER.replace("NEGOTIATOR_INTERVAL = 2", "NEGOTIATOR_INTERVAL = 600")
    )
    manager.wait_for(
        lambda: "negotiation cycle 1:" in manager.log("NegotiatorLog"), 30, "the first cycle"
    )
    sinful = parse_sinful(_address(manager))
    config = Config.load(str(manager.config_path))
    sock, stream = connect(sinful.host, sinful.port)
    with sock:
        run_blocking(sock, stream, start_command(stream, NEGOTIATOR_RESCHEDULE.number, config))
    manager.wait_for(
        lambda: "negotiation cycle 2:" in manager.log("NegotiatorLog"), 15, "the rescheduled cycle"
    )
