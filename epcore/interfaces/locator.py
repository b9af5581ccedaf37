"""Finding a peer's link by its address; in-process: a table the assembly fills."""

from __future__ import annotations

from typing import Generic, TypeVar

from epcore.errors import EpError

Link = TypeVar("Link")


class PeerUnreachable(EpError):
    """No link to the daemon at this address (not in this process; the network links come
    with issue 22)."""


class Locator(Generic[Link]):
    """The links to the peers of one kind (``what``: "startd"...), by their address."""

    def __init__(self, what: str) -> None:
        self.what = what
        self.links: dict[str, Link] = {}

    def register(self, address: str, link: Link) -> None:
        """``link`` answers for the peer at ``address`` from now on."""
        self.links[address] = link

    def link(self, address: str) -> Link:
        """The link to the peer at ``address``; PeerUnreachable when none is known."""
        found = self.links.get(address)
        if found is None:
            message = (
                f"no {self.what} at {address} in this process"
                " (reaching another process needs the network links of issue 22)"
            )
            raise PeerUnreachable(message)
        return found

    def addresses(self) -> list[str]:
        """The addresses of every known peer, in the order they were registered."""
        return list(self.links)
