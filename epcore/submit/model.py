"""The records of the submit language: statements, the context of a submission, the result."""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from types import MappingProxyType
from typing import Protocol, TypeVar

import attrs

from epcore.classad import ClassAd
from epcore.config import Config

T = TypeVar("T")


@attrs.frozen
class Assignment:
    """``name = value`` (a command or a macro), or ``+Attr`` / ``My.Attr`` when ``attribute``."""

    name: str
    value: str
    line: int
    attribute: bool = False


@attrs.frozen
class Conditional:
    """One of ``if <condition>``, ``elif <condition>``, ``else`` or ``endif``."""

    keyword: str
    condition: str
    line: int


@attrs.frozen
class ItemSlice:
    """The ``[start:stop:step]`` that selects items of a ``queue ... in/from/matching``."""

    start: int | None = None
    stop: int | None = None
    step: int | None = None

    def select(self, items: tuple[T, ...]) -> tuple[T, ...]:
        """The selected items, with Python's slice semantics (as HTCondor's)."""
        return items[self.start : self.stop : self.step]


@attrs.frozen
class QueueStatement:
    """A ``queue`` statement, parsed but not yet evaluated.

    ``count`` is the unexpanded count text (``""`` means 1). ``mode`` is ``"count"`` (no item
    list), ``"in"``, ``"from"`` or ``"matching"``. For ``in``/``from`` with an inline list,
    ``items`` holds its lines (``in`` items are split later); ``from`` a file names ``path``;
    ``matching`` keeps its glob ``patterns`` and whether only ``files`` or ``dirs`` match.
    """

    line: int
    count: str = ""
    variables: tuple[str, ...] = ()
    mode: str = "count"
    items: tuple[str, ...] | None = None
    path: str | None = None
    patterns: tuple[str, ...] = ()
    matching_kind: str = "any"
    item_slice: ItemSlice | None = None


@attrs.frozen
class Include:
    """``include : path`` (``optional`` for ``include ifexist : path``): read another submit
    file at this point, when the jobs are built."""

    path: str
    line: int
    optional: bool = False


Statement = Assignment | Conditional | Include | QueueStatement


@attrs.frozen
class SubmitDescription:
    """A parsed submit file: its statements in order, and where it came from."""

    statements: tuple[Statement, ...]
    source: str = "<submit>"

    @property
    def queue_statements(self) -> tuple[QueueStatement, ...]:
        """The ``queue`` statements, in order."""
        return tuple(s for s in self.statements if isinstance(s, QueueStatement))


def _frozen_environ(
    environ: Mapping[str, str] | Iterable[tuple[str, str]],
) -> Mapping[str, str]:
    """A read-only copy of an environment given as a mapping or as (name, value) pairs."""
    return MappingProxyType(dict(environ))


@attrs.frozen
class SubmitContext:
    """Who submits, from where and when, and the configuration condor_submit would read.

    ``submit_dir`` is absolute and is the default ``Iwd``; ``now`` becomes ``QDate``;
    ``extra_macros`` are ``name=value`` definitions from the command line; ``environ`` is the
    submitter's environment (a mapping or name-value pairs), for ``$ENV(...)`` and ``getenv``.
    """

    owner: str
    submit_dir: str
    now: int
    config: Config
    extra_macros: tuple[tuple[str, str], ...] = ()
    environ: Mapping[str, str] = attrs.field(factory=dict, converter=_frozen_environ)


class SubmitHost(Protocol):
    """The few file operations a submission needs (all paths absolute)."""

    def read_text(self, path: str) -> str:
        """The text of a file; OSError when it cannot be read."""
        ...

    def glob(self, pattern: str) -> list[str]:
        """Absolute paths matching ``pattern`` (shell wildcards), in any order."""
        ...

    def is_dir(self, path: str) -> bool:
        """True when ``path`` is a directory."""
        ...

    def file_size(self, path: str) -> int | None:
        """The size in bytes of a regular file, or None when there is none."""
        ...

    def directory_problem(self, path: str) -> str | None:
        """Why the submitter cannot enter the directory ``path`` (None: they can)."""
        ...

    def log_problem(self, path: str) -> str | None:
        """Why the submitter cannot append to the log ``path``, made when missing (None:
        they can)."""
        ...


@attrs.frozen
class SubmittedCluster:
    """The jobs of one submission: ``cluster_ad`` holds the attributes (and values) that all
    of them share, and each of ``procs`` is one job's ad with its ProcId.

    As the submit reader builds them, ``procs`` are complete job ads (ProcId 0..n-1); on
    their way to the queue (:func:`epcore.pool.requests.proc_differences`) they carry only
    what each job adds to ``cluster_ad``. The queue overlays each on the cluster ad, so both
    forms queue the same jobs."""

    cluster_id: int
    cluster_ad: ClassAd
    procs: tuple[ClassAd, ...]
