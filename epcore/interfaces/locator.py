"""Finding a peer's link by its address: the in-process peers the assembly registered, and,
when the assembly gives a way to connect, a link to a peer in another process or on
another host (made once per address and kept)."""

from __future__ import annotations

from collections.abc import Callable
from typing import Generic, TypeVar

from epcore.errors import EpError

Link = TypeVar("Link")


class PeerUnreachable(EpError):
    """No link to the daemon at this address: not in this process, and no way to reach
    another process was given (or the address cannot be reached)."""


class Locator(Generic[Link]):
    """The links to the peers of one kind (``what``: "startd"...), by their address.

    ``connect`` makes the link to a peer at an address nobody registered (a link that
    speaks to another process, over CEDAR); it raises PeerUnreachable for an address it
    cannot use. Without it, only registered peers are found.
    """

    def __init__(self, what: str, connect: Callable[[str], Link] | None = None) -> None:
        self.what = what
        self.links: dict[str, Link] = {}
        self.connect = connect
        self._remote: dict[str, Link] = {}

    def register(self, address: str, link: Link) -> None:
        """``link`` answers for the peer at ``address`` from now on."""
        self.links[address] = link

    def link(self, address: str) -> Link:
        """The link to the peer at ``address``; PeerUnreachable when none is known and none
        can be made."""
        found = self.links.get(address)
        if found is not None:
            return found
        remote = self._remote.get(address)
        if remote is not None:
            return remote
        if self.connect is None:
            raise PeerUnreachable(f"no {self.what} at {address} in this process")
        remote = self._remote[address] = self.connect(address)
        return remote

    def forget(self, address: str) -> None:
        """Drop the link made for a remote ``address`` (the next use makes a new one)."""
        self._remote.pop(address, None)

    def addresses(self) -> list[str]:
        """The addresses of every registered peer, in the order they were registered, then
        those of the remote links made so far."""
        return [*self.links, *(a for a in self._remote if a not in self.links)]
