"""The startd as its peers reach it in the same process: the in-process
:class:`~epcore.interfaces.StartdLink`.

Its peers name slots as the startd's ads do (``slot1@host``); the startd's engine names them
without the host, so the link takes the host off (refusing another host's slot) and puts it
on again. ``ep vacate`` and ``ep drain`` come through here too, never by reading the
engine's state from outside.
"""

from __future__ import annotations

from collections.abc import Iterable

from epcore.classad import ClassAd
from epcore.runtime.control import ControlError
from epcore.runtime.persist import read_history
from epcore.startd.startd import Startd

#: How much of the end of the startd's history is read for a restarted schedd's question
#: about the ends of jobs its queue did not record (those of the last moments before the
#: previous process died).
RECENT_HISTORY_BYTES = 4 * 1024 * 1024


class LocalStartdLink:
    """A :class:`Startd` of this process behind the :class:`~epcore.interfaces.StartdLink`
    interface."""

    def __init__(self, startd: Startd) -> None:
        self.startd = startd

    @property
    def address(self) -> str:
        return self.startd.address

    def _own(self, slot: str) -> str:
        """``slot``'s short name; ControlError when it names another host's slot."""
        name, _, host = slot.partition("@")
        if host and host != self.startd.host_name:
            raise ControlError(f"{slot} is not a slot of {self.startd.host_name}")
        return name

    def claim(self, slot: str, job: ClassAd, client: str = "", by_priority: bool = False) -> str:
        return self.startd.claim(self._own(slot), job, client, by_priority)

    def activate(self, claim_id: str, job: ClassAd | None = None) -> None:
        self.startd.activate(claim_id, job)

    def release(self, claim_id: str, *, removed: bool = False) -> None:
        self.startd.release(claim_id, removed=removed)

    def alive(self, claim_id: str) -> None:
        self.startd.alive(claim_id)

    def vacate(self, slot: str, fast: bool = False) -> None:
        self.startd.vacate(self._own(slot), fast)

    def vacate_slots(self, slot: str | None, fast: bool = False) -> list[str]:
        """Vacate ``slot`` (any host part is ignored, as condor_vacate does) or, when None,
        every claimed slot; the short names of the slots vacated."""
        startd = self.startd
        names = [slot.split("@", 1)[0]] if slot else [r.name for r in startd.state.slots]
        done = []
        for name in names:
            record = startd.state.slot(name)
            if record is None:
                raise ControlError(f"no slot {name} on {startd.host_name}")
            if record.claim is None:
                continue
            startd.vacate(name, fast)
            done.append(name)
        return done

    def drain(
        self,
        how: str,
        check: str | None = None,
        start: str | None = None,
        *,
        reason: str | None = None,
        resume: bool = False,
    ) -> None:
        self.startd.drain(how, check, start, reason=reason, resume=resume)

    def cancel_drain(self) -> None:
        self.startd.cancel_drain()

    def query(self, constraint: str | None = None) -> list[ClassAd]:
        return self.startd.query(constraint)

    def claim_ready(self, claim_id: str) -> bool:
        return self.startd.claim_ready(claim_id)

    def slot_of(self, claim_id: str) -> str | None:
        name = self.startd.slot_of(claim_id)
        return None if name is None else f"{name}@{self.startd.host_name}"

    def claims(self) -> list[tuple[str, ClassAd]]:
        return self.startd.claims()

    def recent_results(self, claim_ids: Iterable[str]) -> list[ClassAd]:
        return list(
            read_history(
                self.startd.paths.history_file,
                last_bytes=RECENT_HISTORY_BYTES,
                containing=set(claim_ids),
            )
        )
