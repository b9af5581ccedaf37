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
from epcore.runtime.persist import replace_private


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


class FileSink:
    """The current ads in the file ``path``, one per line in the order of their names,
    replaced atomically after every change.

    It keeps each ad's line, not the ad: the startd advertises all its slots at each change
    of one, and with a thousand dynamic slots a copy and an unparse of every ad per
    advertisement made each claim cost more than the one before. A line is made from its
    bindings' kept texts (:meth:`ClassAd.line`), so an ad whose rebuild kept most of its
    bindings costs an unparse of only the changed ones; the file is not written again when
    no line changed.
    """

    def __init__(self, path: str) -> None:
        self.path = path
        self.lines: dict[str, str] = {}
        self.updates = 0
        # Whether the file lacks a change (none written yet, or its last write failed: the
        # next advertisement tries again).
        self._stale = True

    def advertise(self, ads: Sequence[ClassAd], now: float) -> None:
        lines = self.lines
        for ad in ads:
            name = _name(ad)
            line = ad.line()
            if not self._stale and lines.get(name) != line:
                self._stale = True
            lines[name] = line
        self.updates += 1
        self._write()

    def invalidate(self, names: Sequence[str], now: float) -> None:
        for name in names:
            if self.lines.pop(name, None) is not None:
                self._stale = True
        self._write()

    def _write(self) -> None:
        if not self._stale:
            return
        lines = self.lines
        replace_private(
            self.path, "".join([f"{lines[name]}\n" for name in sorted(lines)]).encode("utf-8")
        )
        self._stale = False
