"""The collector's CEDAR answers reuse each stored ad's encoding until the ad is replaced."""

from __future__ import annotations

import logging
import time

from epcore.classad import ClassAd, parse_ad
from epcore.collector.cedar import AnswerCache, cedar_handlers
from epcore.collector.collector import Collector
from epcore.collector.service import CollectorService
from epcore.config import Config
from epcore.net import commands
from epcore.net.codec import Reader, Writer
from tests.net.drive import drive

HERE = ("127.0.0.1", 9618)


def _service() -> CollectorService:
    config = Config.from_text("", subsystem="COLLECTOR")
    return CollectorService(
        Collector(config),
        config=lambda: config,
        persistent_log="/nonexistent",
        log=logging.getLogger("test.collector.cache"),
        clock=time.time,
    )


def _slot(name: str, cpus: int) -> ClassAd:
    return parse_ad(
        f'[ MyType = "Machine"; Name = "{name}"; Cpus = {cpus}; ClaimId = "secret";'
        ' MyAddress = "<unix:/tmp/pool_control>" ]'
    )


def _answer(service: CollectorService, query: str = "[ Requirements = true ]") -> list[ClassAd]:
    handler = cedar_handlers(service)[commands.QUERY_STARTD_ADS]
    (reader,) = drive(handler, 5, [Writer().put_classad(parse_ad(query)).bytes()])
    ads = []
    while reader.get_int():
        ads.append(reader.get_classad())
    return ads


def test_encoding_is_kept_for_the_same_ad_and_made_again_for_its_update() -> None:
    """The same stored ad is encoded once; an update (a new stored ad) is encoded afresh; the
    stored ad keeps its unix MyAddress while the answer carries the port's, without ClaimId."""
    service = _service()
    service.update([_slot("slot1@a", 1)], time.time())
    cache = AnswerCache()
    (stored,) = service.query_stored("Machine", now=time.time())
    first = cache.encoded(stored, False, HERE)
    assert cache.encoded(stored, False, HERE) is first
    shown = Reader(first[8:]).get_classad()
    assert shown.evaluate("MyAddress") == "<127.0.0.1:9618>" and "ClaimId" not in shown
    assert stored.evaluate("MyAddress") == "<unix:/tmp/pool_control>"
    service.update([_slot("slot1@a", 8)], time.time())
    (updated,) = service.query_stored("Machine", now=time.time())
    assert Reader(cache.encoded(updated, False, HERE)[8:]).get_classad().evaluate("Cpus") == 8


def test_answers_follow_updates_constraints_and_limits() -> None:
    """A query answered from kept encodings still sees an update, its constraint and its
    LimitResults, and a projection is answered as before."""
    service = _service()
    service.update([_slot(f"slot{n}@a", n) for n in (1, 2, 3)], time.time())
    assert [ad.evaluate("Cpus") for ad in _answer(service)] == [1, 2, 3]
    service.update([_slot("slot2@a", 20)], time.time())
    assert [ad.evaluate("Cpus") for ad in _answer(service)] == [1, 20, 3]
    assert [ad.evaluate("Cpus") for ad in _answer(service, "[ Requirements = Cpus > 2 ]")] == [
        20,
        3,
    ]
    assert len(_answer(service, "[ Requirements = true; LimitResults = 2 ]")) == 2
    projected = _answer(service, '[ Requirements = true; Projection = "Name" ]')
    assert [list(ad) for ad in projected] == [["Name"]] * 3


def test_kept_encodings_of_departed_ads_are_forgotten() -> None:
    """Once the kept encodings outnumber twice the stored ads, those of ads no longer held
    are dropped."""
    service = _service()
    cache = AnswerCache()
    for round_ in range(200):
        service.update([_slot("slot1@a", round_ + 1)], time.time())
        for ad in service.query_stored("Machine", now=time.time()):
            cache.encoded(ad, False, HERE)
        cache.prune(service)
    assert 1 <= len(cache._parts) <= 2 * len(service.collector) + 64
    (latest,) = service.query_stored("Machine", now=time.time())
    assert any(kept is latest for kept, _ in cache._parts.values())


def test_a_submitter_ads_in_process_schedd_address_is_answered_as_the_port() -> None:
    """A submitter ad naming its schedd of this process by ``<unix:...>`` (ScheddIpAddr,
    which HTCondor's tools contact) is answered with the port the client came in by, with
    or without a projection; the stored ad keeps its own."""
    service = _service()
    ad = parse_ad(
        '[ MyType = "Submitter"; Name = "alice@x"; ScheddIpAddr = "<unix:/tmp/pool_control>" ]'
    )
    service.update([ad], time.time())
    handler = cedar_handlers(service)[commands.QUERY_SUBMITTOR_ADS]
    for query in (
        "[ Requirements = true ]",
        '[ Requirements = true; Projection = "ScheddIpAddr" ]',
    ):
        (reader,) = drive(
            handler,
            commands.QUERY_SUBMITTOR_ADS.number,
            [Writer().put_classad(parse_ad(query)).bytes()],
        )
        assert reader.get_int() == 1
        assert reader.get_classad().evaluate("ScheddIpAddr") == "<127.0.0.1:9618>"
    (stored,) = service.query_stored("Submitter", now=time.time())
    assert stored.evaluate("ScheddIpAddr") == "<unix:/tmp/pool_control>"
