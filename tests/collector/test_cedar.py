"""The collector's CEDAR commands, driven through the handshake and a real collector."""

from __future__ import annotations

import logging
import time
from collections.abc import Generator

from epcore.classad import ClassAd, parse_expr
from epcore.collector.cedar import cedar_handlers
from epcore.collector.collector import Collector
from epcore.collector.service import CollectorService
from epcore.config import Config
from epcore.net import commands
from epcore.net.client import start_command
from epcore.net.conversation import Step, Stream, receive, send
from epcore.net.dispatch import CommandContext, CommandTable
from epcore.net.handshake import SecurityServer
from epcore.net.methods import default_registry
from tests.net.converse import converse, streams

CONFIG = """
ALLOW_READ = *
ALLOW_DAEMON = condor@*
SEC_DEFAULT_AUTHENTICATION = REQUIRED
SEC_READ_AUTHENTICATION = OPTIONAL
UID_DOMAIN = pool.test
"""


def _service() -> tuple[CollectorService, CommandTable, SecurityServer]:
    config = Config.from_text(CONFIG, subsystem="COLLECTOR")
    log = logging.getLogger("test.collector.cedar")
    service = CollectorService(
        Collector(config),
        config=lambda: config,
        persistent_log="/nonexistent",
        log=log,
        clock=time.time,
    )
    service.update(
        [
            ClassAd(
                {
                    "MyType": "Machine",
                    "Name": f"slot{n}@a",
                    "Cpus": n,
                    "ClaimId": "x",
                    "MyAddress": "<unix:/tmp/pool_control>",
                }
            )
            for n in (1, 2, 3)
        ],
        time.time(),
    )
    table = CommandTable()
    for command, handler in cedar_handlers(service).items():
        table.register(command, handler)
    security = SecurityServer(lambda: config, table.levels, methods=default_registry(), log=log)
    return service, table, security


def _run(
    table: CommandTable,
    security: SecurityServer,
    command: int,
    body: Generator[Step, bytes | None, object],
    stream: Stream,
) -> object:
    """The result of ``body`` run by a client after starting ``command``."""

    def client() -> Generator[Step, bytes | None, object]:
        yield from start_command(stream, command, Config.from_text("UID_DOMAIN = pool.test"))
        return (yield from body)

    def server(served: Stream) -> Generator[Step, bytes | None, object]:
        peer, first = yield from security.start(served)
        handler = table.handler(peer.command)
        assert handler is not None
        return (yield from handler(CommandContext(served, peer, first)))

    pair = (stream, streams()[1])
    client_side, server_side = converse(client(), server(pair[1]), pair)
    assert client_side.error is None, client_side.error
    assert server_side.error is None, server_side.error
    return client_side.result


def _query(stream: Stream, query: ClassAd) -> Generator[Step, bytes | None, list[ClassAd]]:
    yield from send(stream.writer().put_classad(query))
    reader = yield from receive(stream, "the answer")
    ads = []
    while reader.get_int():
        ads.append(reader.get_classad())
    return ads


def test_query_applies_constraint_projection_and_limit() -> None:
    """A startd query returns the matching slots, cut to the projection and the limit,
    without private attributes, with the address the client came in by."""
    _, table, security = _service()
    stream = streams()[0]
    query = ClassAd(
        {
            "Requirements": parse_expr("Cpus >= 2"),
            "Projection": "Name,MyAddress,ClaimId",
            "LimitResults": 1,
        }
    )
    ads = _run(table, security, commands.QUERY_STARTD_ADS.number, _query(stream, query), stream)
    assert len(ads) == 1  # type: ignore[arg-type]
    assert dict(ads[0].items()).keys() == {"Name", "MyAddress"}  # type: ignore[index]
    assert ads[0].evaluate("MyAddress") == "<127.0.0.1:9618>"  # type: ignore[index]


def test_any_type_query_follows_target_type() -> None:
    """QUERY_ANY_ADS answers the ads of the query's TargetType, or of every type for "Any"."""
    service, table, security = _service()
    service.update([ClassAd({"MyType": "Scheduler", "Name": "schedd@a"})], time.time())
    counts = []
    for target in ("Scheduler", "Any"):
        stream = streams()[0]
        query = ClassAd({"TargetType": target, "Projection": "Name"})
        ads = _run(table, security, commands.QUERY_ANY_ADS.number, _query(stream, query), stream)
        counts.append(len(ads))  # type: ignore[arg-type]
    assert counts == [1, 4]


def test_update_stamps_identity_and_merges_the_private_ad() -> None:
    """An update stores the public and private ad as one, with who sent it and how."""
    service, table, security = _service()
    stream = streams()[0]

    def update() -> Generator[Step, bytes | None, None]:
        public = ClassAd(
            {"MyType": "Machine", "Name": "new@b", "Cpus": 8, "AuthenticatedIdentity": "forged@x"}
        )
        private = ClassAd({"Capability": "secret"})
        yield from send(stream.writer().put_classad(public).put_classad(private, private=True))

    _run(table, security, commands.UPDATE_STARTD_AD.number, update(), stream)
    stored = service.query("Machine", 'Name == "new@b"', now=time.time())[0]
    assert stored.evaluate("AuthenticatedIdentity") == "condor@pool.test"
    assert stored.evaluate("AuthenticationMethod") == "FS"
    assert stored.evaluate("Capability") == "secret"


def test_invalidation_by_requirements_and_by_name() -> None:
    """INVALIDATE_STARTD_ADS drops the slots its Requirements match, or the one it names."""
    service, table, security = _service()
    for query in (ClassAd({"Requirements": parse_expr("Cpus <= 2")}), ClassAd({"Name": "slot3@a"})):
        stream = streams()[0]

        def invalidate(
            ad: ClassAd = query, out: Stream = stream
        ) -> Generator[Step, bytes | None, None]:
            yield from send(out.writer().put_classad(ad))

        _run(table, security, commands.INVALIDATE_STARTD_ADS.number, invalidate(), stream)
    assert service.query("Machine", None, now=time.time()) == []


def _send_ads(
    table: CommandTable, security: SecurityServer, command: int, ads: list[ClassAd]
) -> None:
    """Each ad sent by its own ``command`` conversation (an update or an invalidation)."""
    for ad in ads:
        stream = streams()[0]

        def body(sent: ClassAd = ad, out: Stream = stream) -> Generator[Step, bytes | None, None]:
            yield from send(out.writer().put_classad(sent))

        _run(table, security, command, body(), stream)


def test_two_startds_of_one_name_at_two_addresses_are_one_ad() -> None:
    """UPDATE_STARTD_AD from two startds naming the same slot at two addresses leaves one ad,
    the later one (as HTCondor's collector since HTCONDOR-1948); INVALIDATE_STARTD_ADS of
    that Name from either removes it."""
    service, table, security = _service()
    same = [
        ClassAd({"MyType": "Machine", "Name": "slot1@x", "MyAddress": f"<10.77.0.{n}:9618>"})
        for n in (3, 4)
    ]
    _send_ads(table, security, commands.UPDATE_STARTD_AD.number, same)
    (stored,) = service.query("Machine", 'Name == "slot1@x"', now=time.time())
    assert stored.evaluate("MyAddress") == "<10.77.0.4:9618>"
    assert stored.evaluate("UpdatesTotal") == 2
    invalidation = ClassAd({"Name": "slot1@x", "MyAddress": "<10.77.0.3:9618>"})
    _send_ads(table, security, commands.INVALIDATE_STARTD_ADS.number, [invalidation])
    assert service.query("Machine", 'Name == "slot1@x"', now=time.time()) == []


def test_one_users_submitter_ads_from_two_schedds_stay_apart_over_cedar() -> None:
    """UPDATE_SUBMITTOR_AD of one user from two schedds keeps both ads; an
    INVALIDATE_SUBMITTOR_ADS naming the user and one schedd drops that schedd's only, and
    one by Requirements drops what it matches."""
    service, table, security = _service()
    ads = [
        ClassAd({"Name": "alice@pool.test", "ScheddName": schedd, "IdleJobs": 1})
        for schedd in ("s1@a", "s2@b", "s3@c")
    ]
    _send_ads(table, security, commands.UPDATE_SUBMITTOR_AD.number, ads)

    def schedds() -> set[str]:
        found = service.query("Submitter", None, ["ScheddName"], now=time.time())
        return {str(ad.evaluate("ScheddName")) for ad in found}

    assert schedds() == {"s1@a", "s2@b", "s3@c"}
    _send_ads(
        table,
        security,
        commands.INVALIDATE_SUBMITTOR_ADS.number,
        [
            ClassAd({"Name": "alice@pool.test", "ScheddName": "s2@b"}),
            ClassAd({"Requirements": parse_expr('ScheddName == "s3@c"')}),
        ],
    )
    assert schedds() == {"s1@a"}
