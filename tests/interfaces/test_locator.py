"""The in-process locator of peers: links by address, a clear error for the rest."""

from __future__ import annotations

import pytest

from epcore.errors import EpError
from epcore.interfaces import Locator, PeerUnreachable


def test_a_registered_link_is_found_by_its_address() -> None:
    """The link registered for an address is the one the locator gives for it."""
    locator: Locator[str] = Locator("startd")
    locator.register("<unix:/a>", "link a")
    locator.register("<unix:/b>", "link b")
    assert locator.link("<unix:/b>") == "link b"
    assert locator.addresses() == ["<unix:/a>", "<unix:/b>"]


def test_an_unknown_address_says_the_peer_is_not_in_this_process() -> None:
    """A peer at an address nobody registered is unreachable, with the peer's kind and the
    address in the message, as an EpError."""
    locator: Locator[str] = Locator("schedd")
    with pytest.raises(PeerUnreachable, match=r"no schedd at <10\.0\.0\.1:9618> in this process"):
        locator.link("<10.0.0.1:9618>")
    assert issubclass(PeerUnreachable, EpError)


def test_an_unregistered_address_is_connected_once_and_kept() -> None:
    """With a way to connect, an address nobody registered gets a link made for it, made
    only once while it is kept, and made anew after it is forgotten."""
    made: list[str] = []

    def connect(address: str) -> str:
        made.append(address)
        return f"remote {address}"

    locator: Locator[str] = Locator("startd", connect=connect)
    locator.register("<unix:/a>", "link a")
    assert locator.link("<unix:/a>") == "link a"
    assert locator.link("<10.0.0.2:9618>") == "remote <10.0.0.2:9618>"
    assert locator.link("<10.0.0.2:9618>") == "remote <10.0.0.2:9618>"
    assert made == ["<10.0.0.2:9618>"]
    assert locator.addresses() == ["<unix:/a>", "<10.0.0.2:9618>"]
    locator.forget("<10.0.0.2:9618>")
    locator.link("<10.0.0.2:9618>")
    assert made == ["<10.0.0.2:9618>", "<10.0.0.2:9618>"]


def test_a_connect_that_refuses_an_address_raises_peer_unreachable() -> None:
    """The connect function's PeerUnreachable reaches the caller and nothing is kept."""

    def connect(address: str) -> str:
        raise PeerUnreachable(f"cannot reach {address}")

    locator: Locator[str] = Locator("startd", connect=connect)
    with pytest.raises(PeerUnreachable, match="cannot reach <x>"):
        locator.link("<x>")
    assert locator.addresses() == []
