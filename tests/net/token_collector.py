"""A collector behind epcore's CEDAR listener, run as a process of its own for the tests that
drive it with HTCondor's own client: ``python tests/net/token_collector.py CONFIG PORT``.

It serves the collector's commands with every authentication method epcore has (FS,
CLAIMTOBE, TOKEN) and the ECDH key exchange, after making the POOL signing key as a
collector does, and holds one made-up slot ad whose attributes a test looks for on the wire.
It logs to standard error and stops at SIGTERM.
"""

from __future__ import annotations

import logging
import sys
import time
from pathlib import Path

from epcore.classad import ClassAd
from epcore.collector.cedar import cedar_handlers
from epcore.collector.collector import Collector
from epcore.collector.service import CollectorService
from epcore.config import Config
from epcore.net.dispatch import CommandTable
from epcore.net.handshake import SecurityServer
from epcore.net.keyexchange import EcdhKeyExchange
from epcore.net.listener import CedarListener
from epcore.net.methods import default_registry
from epcore.net.tokens import TokenSettings, create_signing_key
from epcore.runtime.loop import EventLoop

#: The attribute of the made-up slot a packet capture must not show in the clear.
SECRET = "epcore-secret-argument-4f2a9"


def main(config_path: str, port: int) -> None:
    logging.basicConfig(level=logging.DEBUG, stream=sys.stderr, format="%(message)s")
    log = logging.getLogger("token_collector")
    config = Config.load(config_path, subsystem="COLLECTOR")
    create_signing_key(Path(TokenSettings.from_lookup(config.get).pool_key_file))
    collector = Collector(config)
    slot = ClassAd(
        {
            "MyType": "Machine",
            "Name": "slot1@token-test",
            "Machine": "token-test",
            "Args": SECRET,
        }
    )
    collector.update([slot], time.time())
    service = CollectorService(
        collector,
        config=lambda: config,
        persistent_log=str(Path(config_path).parent / "collector.ads"),
        log=log,
        clock=time.time,
    )
    table = CommandTable()
    for command, handler in cedar_handlers(service).items():
        table.register(command, handler)
    security = SecurityServer(
        lambda: config,
        table.levels,
        methods=default_registry(),
        log=log,
        key_exchange=EcdhKeyExchange(),
    )
    listener = CedarListener("127.0.0.1", port, table, security, config=lambda: config, log=log)
    EventLoop([listener, service], log=log, name="the token test's collector").run()


if __name__ == "__main__":
    main(sys.argv[1], int(sys.argv[2]))
