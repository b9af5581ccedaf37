"""Where the startd sends its slot ads: a collector, or anything that takes ads.

The startd advertises every slot's ad at UPDATE_INTERVAL and whenever a slot changes State or
Activity, and invalidates the ads of slots that went away (a deleted dynamic slot) and, at
shutdown, of all of them. The pool's collector implements
:class:`~epcore.interfaces.AdSink`; so does
:class:`MemorySink` (an embedding program reads ads from it) and :class:`FileSink` (the
current ads in one file, one per line, replaced atomically, for tools on the same machine).
"""

from __future__ import annotations

from collections.abc import Sequence

from epcore.classad import ClassAd
from epcore.runtime.persist import write_ad_lines


def _name(ad: ClassAd) -> str:
    value = ad.evaluate("Name")
    return value if isinstance(value, str) else ""


class MemorySink:
    """Keeps the latest copy of every advertised ad, by Name."""

    def __init__(self) -> None:
        self.ads: dict[str, ClassAd] = {}
        self.updates = 0

    def advertise(self, ads: Sequence[ClassAd], now: float) -> None:
        for ad in ads:
            self.ads[_name(ad)] = ad.copy()
        self.updates += 1

    def invalidate(self, names: Sequence[str], now: float) -> None:
        for name in names:
            self.ads.pop(name, None)


class FileSink(MemorySink):
    """A :class:`MemorySink` that also writes its ads to ``path`` after every change."""

    def __init__(self, path: str) -> None:
        super().__init__()
        self.path = path

    def _write(self) -> None:
        write_ad_lines(self.path, [self.ads[name] for name in sorted(self.ads)])

    def advertise(self, ads: Sequence[ClassAd], now: float) -> None:
        super().advertise(ads, now)
        self._write()

    def invalidate(self, names: Sequence[str], now: float) -> None:
        super().invalidate(names, now)
        self._write()
