"""``ep status``, ``ep q`` and ``ep userprio`` with ``-pool`` (and ``-name``) from the submit
host and from an execute host reach the central manager and the schedd in other network
namespaces (issue 23)."""

from __future__ import annotations

import os
from collections.abc import Callable
from pathlib import Path

import pytest

from epcore.net import commands
from epcore.testing.netns import Host
from epcore.testing.netns_pool import NetnsHosts
from epcore.testing.pool import user_home
from epcore.testing.system import SlotUser

pytestmark = [pytest.mark.netns, pytest.mark.system]


def _ok(hosts: NetnsHosts, host: Host, *args: str) -> str:
    """What ``ep ARGS`` printed inside ``host``'s namespace; fails with its error otherwise."""
    done = hosts.ep(host, *args)
    assert done.status == 0, f"ep {' '.join(args)} on {host.name}: {done.stderr}"
    return done.stdout


def test_the_pool_tools_answer_from_the_submit_host_and_from_an_execute_host(
    netns_hosts_factory: Callable[..., NetnsHosts],
    slot_users: tuple[SlotUser, ...],
    shared_dir: Path,
) -> None:
    """With two held jobs of a user on the submit host, from both the submit host and an
    execute host: ``ep status -pool`` lists both execute hosts' slots, ``-schedd`` the
    submit host's schedd, ``ep q -pool -allusers`` and ``ep q -name <schedd> -pool`` the
    user's two jobs, and ``ep userprio -pool`` answers (the negotiator's priorities)."""
    hosts = netns_hosts_factory(executes=2)
    user = slot_users[0]
    home = user_home(shared_dir, user)
    (home / "job.sub").write_text("executable = /bin/true\nhold = true\nqueue 2\n")
    os.chown(home / "job.sub", user.uid, user.gid)
    submitted = hosts.ep(hosts.submit, "submit", "job.sub", user=user, cwd=str(home))
    assert submitted.status == 0, submitted.stderr
    hosts.wait(lambda: bool(hosts.query(commands.QUERY_SUBMITTOR_ADS)), 30, "the submitter ad")
    (schedd,) = hosts.query(commands.QUERY_SCHEDD_ADS)
    schedd_name = str(schedd.evaluate("Name"))
    pool = hosts.collector
    for where in (hosts.submit, hosts.executes[0]):
        status = _ok(hosts, where, "status", "-pool", pool)
        assert all(f"@{host.name}." in status for host in hosts.executes), status
        assert schedd_name in _ok(hosts, where, "status", "-pool", pool, "-schedd")
        listed = _ok(hosts, where, "q", "-pool", pool, "-allusers")
        assert "2 jobs" in listed and user.name in listed, listed
        named = _ok(hosts, where, "q", "-name", schedd_name, "-pool", pool, "-allusers")
        assert "2 jobs" in named and user.name in named, named
        priorities = _ok(hosts, where, "userprio", "-pool", pool)
        assert "Last Priority Update" in priorities and "Number of users:" in priorities
