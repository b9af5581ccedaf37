"""``ep run --role``: which daemons a role runs, which sets of daemons are refused (and with
which knob), and a real process for each role."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

import pytest

from epcore.config import Config
from epcore.errors import PoolError
from epcore.pool.roles import ROLES, check_reachable, daemons_of
from epcore.runtime.control import ControlError
from epcore.startd.control import StartdClient
from epcore.testing.pool import PoolProcess, run_ep


def _config(text: str) -> Config:
    return Config.from_text(text, subsystem="MASTER")


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("", ROLES["personal"]),
        ("use ROLE: Personal", ROLES["personal"]),
        ("use ROLE: CentralManager", ROLES["central-manager"]),
        ("use ROLE: Submit", ROLES["submit"]),
        ("use ROLE: Execute", ROLES["execute"]),
        ("use ROLE: CentralManager\nuse ROLE: Submit", {"collector", "negotiator", "schedd"}),
    ],
)
def test_without_a_role_the_configuration_chooses(text: str, expected: frozenset[str]) -> None:
    """DAEMON_LIST (as ``use ROLE:`` sets it) names the daemons; one naming none of them (the
    default, MASTER alone) means the personal pool."""
    assert daemons_of(None, _config(text)) == expected


def test_a_role_given_wins_over_the_configuration() -> None:
    """``--role execute`` runs the startd alone whatever DAEMON_LIST says."""
    assert daemons_of("execute", _config("use ROLE: CentralManager")) == {"startd"}


def test_an_unknown_role_is_refused_with_the_known_ones() -> None:
    """A misspelt role is an error listing the roles."""
    with pytest.raises(PoolError, match="no role 'submitter'; the roles are personal, "):
        daemons_of("submitter", _config(""))


@pytest.mark.parametrize(
    ("role", "text", "expected"),
    [
        (None, "", ROLES["personal"]),
        (None, "DAEMON_LIST = MASTER, DEFRAG", ROLES["personal"] | {"defrag"}),
        (None, "use ROLE: CentralManager\nDAEMON_LIST = $(DAEMON_LIST) DEFRAG", None),
        ("personal", "DAEMON_LIST = MASTER DEFRAG", ROLES["personal"] | {"defrag"}),
        ("central-manager", "DAEMON_LIST = MASTER DEFRAG", {"collector", "negotiator", "defrag"}),
        ("execute", "DAEMON_LIST = MASTER DEFRAG", {"startd"}),
        ("central-manager", "", ROLES["central-manager"]),
    ],
)
def test_defrag_runs_only_when_daemon_list_names_it(
    role: str | None, text: str, expected: frozenset[str] | None
) -> None:
    """No role runs the defrag daemon by default; DAEMON_LIST naming DEFRAG adds it to the
    daemons it chooses, or to a role given that runs the collector it needs."""
    want = ROLES["central-manager"] | {"defrag"} if expected is None else expected
    assert daemons_of(role, _config(text)) == want


def test_defrag_without_a_collector_names_the_knob() -> None:
    """A defrag daemon listed without a collector in the process is refused: it works on
    the collector's store, which lives only beside it."""
    config = _config("DAEMON_LIST = MASTER STARTD DEFRAG\nCOLLECTOR_HOST = cm.example.org")
    with pytest.raises(PoolError, match=r"the defrag runs only beside its collector.*COLLECTOR"):
        check_reachable(daemons_of(None, config), config)


@pytest.mark.parametrize("role", ["personal", "central-manager", "submit", "execute"])
def test_every_role_runs_alone_when_a_collector_is_named(role: str) -> None:
    """Each role may run in its own process once COLLECTOR_HOST names the collector."""
    check_reachable(ROLES[role], _config("COLLECTOR_HOST = cm.example.org"))


@pytest.mark.parametrize("role", ["submit", "execute"])
def test_condor_host_alone_names_the_collector(role: str) -> None:
    """CONDOR_HOST is where the collector is when COLLECTOR_HOST is not set (HTCondor's
    default COLLECTOR_HOST is $(CONDOR_HOST))."""
    check_reachable(ROLES[role], _config("CONDOR_HOST = cm.example.org"))


@pytest.mark.parametrize("role", ["submit", "execute"])
def test_a_role_without_any_collector_named_is_refused_naming_the_knob(role: str) -> None:
    """A schedd or startd alone with neither COLLECTOR_HOST nor CONDOR_HOST set cannot find
    its collector: the error names both knobs and what to set them to."""
    with pytest.raises(PoolError) as caught:
        check_reachable(ROLES[role], _config(""))
    message = str(caught.value)
    assert "does not run in this process" in message
    assert "set COLLECTOR_HOST (or CONDOR_HOST)" in message


def test_a_negotiator_without_its_collector_is_refused() -> None:
    """The negotiator reads the collector's store in its own process: DAEMON_LIST naming it
    without the collector is refused, saying to add COLLECTOR."""
    config = _config("DAEMON_LIST = MASTER NEGOTIATOR\nCOLLECTOR_HOST = cm.example.org")
    with pytest.raises(PoolError, match="the negotiator runs only beside its collector"):
        check_reachable(daemons_of(None, config), config)


def test_ep_run_as_a_submit_point_without_a_collector_refuses_to_start(tmp_path: Path) -> None:
    """``ep run --role submit`` with no collector named exits with the error naming
    COLLECTOR_HOST, starting nothing."""
    local = tmp_path / "local"
    local.mkdir()
    config = tmp_path / "condor_config"
    config.write_text(f"LOCAL_DIR = {local}\nLOG = {local}/log\nSPOOL = {local}/spool\n")
    result = run_ep(["run", "--role", "submit", "--config", str(config)])
    assert result.status != 0
    assert "COLLECTOR_HOST" in result.stderr
    assert not (local / "spool" / "pool_control").exists()


def test_a_central_manager_answers_queries_and_refuses_jobs(
    pool_factory: Callable[..., PoolProcess],
) -> None:
    """With ``use ROLE: CentralManager`` the process runs the collector and the negotiator:
    status and priority queries are answered (no slots, no users yet), a submission is
    refused as nothing here queues jobs, and no startd runs."""
    pool = pool_factory("DAEMON_LIST = MASTER\nuse ROLE: CentralManager\n")
    assert pool.client.query_ads("Machine") == []
    assert any(ad.evaluate("MyType") == "Negotiator" for ad in pool.client.query_ads(None))
    assert pool.client.user_prio() == []
    with pytest.raises(ControlError, match="NewCluster: no daemon here answers it"):
        pool.client.new_cluster()
    assert not (pool.directory / "log" / "StartLog").exists()


def test_an_execute_point_runs_a_startd_with_its_control_socket(
    pool_factory: Callable[..., PoolProcess],
) -> None:
    """With ``use ROLE: Execute`` the process runs the startd alone: its control socket
    answers with the slots' ads, the pool's socket refuses the central manager's queries, and
    the StartLog says where the collector it advertises to is."""
    pool = pool_factory("DAEMON_LIST = MASTER\nuse ROLE: Execute\n", start=False)
    pool.launch()
    startd = StartdClient(str(pool.directory / "lock" / "startd_control"), timeout=10)

    def answers() -> bool:
        pool.check_alive()
        try:
            return bool(startd.query())
        except ControlError:
            return False

    pool.wait_for(answers, 60.0, "the startd to answer on its control socket")
    assert all(str(ad.evaluate("Name")).startswith("slot") for ad in startd.query())
    with pytest.raises(ControlError, match="QueryAds: no daemon here answers it"):
        pool.client.query_ads("Machine")
    assert "(COLLECTOR_HOST); this process advertises to it over CEDAR" in pool.log("StartLog")
