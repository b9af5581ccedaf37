"""Running a submit description: statements in order, one job per queued item and step."""

from __future__ import annotations

import posixpath
import re

import attrs

from epcore.classad import ClassAd, parse_expr
from epcore.config.conditions import ConditionError, IfStack
from epcore.errors import ClassAdSyntaxError, SubmitError
from epcore.submit.jobad import JobAttribute, build_job_ad, constant_attributes
from epcore.submit.macros import SubmitMacros
from epcore.submit.model import (
    Assignment,
    Conditional,
    Include,
    QueueStatement,
    Statement,
    SubmitContext,
    SubmitDescription,
    SubmitHost,
    SubmittedCluster,
)
from epcore.submit.parser import parse_submit

_ROW_SPLIT = re.compile(r"[\s,]+")
#: More jobs than this in one submission is certainly a mistake (a count typed wrong).
MAX_JOBS = 1_000_000
#: How deeply include files may nest (a file that includes itself stops here).
MAX_INCLUDE_DEPTH = 20


def _count(statement: QueueStatement, macros: SubmitMacros) -> int:
    text = macros.expand(statement.count, "queue count", statement.line).strip()
    if not text:
        return 1
    try:
        value = parse_expr(text).evaluate()
    except ClassAdSyntaxError as error:
        raise SubmitError(
            f"queue: count {text!r} is not a number", macros.source, statement.line
        ) from error
    if type(value) is not int or not 0 <= value <= MAX_JOBS:
        raise SubmitError(
            f"queue: count {text!r} is not a number from 0 to {MAX_JOBS}",
            macros.source,
            statement.line,
        )
    return value


def _split_row(row: str, variables: tuple[str, ...]) -> dict[str, str]:
    """One ``from`` row: a field per variable, the last variable takes the rest of the row."""
    values: dict[str, str] = {}
    rest = row.strip()
    for index, name in enumerate(variables):
        if index == len(variables) - 1:
            values[name] = rest
            break
        parts = _ROW_SPLIT.split(rest, maxsplit=1)
        values[name] = parts[0]
        rest = parts[1] if len(parts) > 1 else ""
    return values


def _rows(
    statement: QueueStatement, macros: SubmitMacros, host: SubmitHost, base_dir: str
) -> list[dict[str, str]]:
    """The item rows of a queue statement (before slicing), each a variable -> value map.

    Relative item files and patterns are found under ``base_dir``, the submit directory: the
    items are known before any job's initialdir (which may itself use ``$(Item)``).
    """
    variables = statement.variables
    if statement.mode == "count":
        return [{}]
    source, line = macros.source, statement.line
    if statement.mode == "in":
        lines = statement.items or ()
        words = [w for text in lines for w in _ROW_SPLIT.split(text) if w]
        return [_in_row(word, variables) for word in words]
    if statement.mode == "from":
        if statement.items is not None:
            lines = statement.items
        else:
            path = macros.expand(statement.path or "", "queue from", line).strip()
            full = path if posixpath.isabs(path) else posixpath.join(base_dir, path)
            try:
                lines = tuple(host.read_text(full).splitlines())
            except OSError as error:
                raise SubmitError(
                    f"queue: cannot read the item file {full}: {error.strerror or error}",
                    source,
                    line,
                ) from error
        rows = [text.strip() for text in lines]
        return [_split_row(row, variables) for row in rows if row and not row.startswith("#")]
    names: dict[str, None] = {}  # ordered and without duplicates
    for pattern in statement.patterns:
        expanded = macros.expand(pattern, "queue matching", line)
        full = expanded if posixpath.isabs(expanded) else posixpath.join(base_dir, expanded)
        for match in sorted(host.glob(full)):
            is_dir = host.is_dir(match)
            if (statement.matching_kind == "files" and is_dir) or (
                statement.matching_kind == "dirs" and not is_dir
            ):
                continue
            name = match if posixpath.isabs(expanded) else posixpath.relpath(match, base_dir)
            names.setdefault(name)
    return [_in_row(name, variables) for name in names]


def _in_row(word: str, variables: tuple[str, ...]) -> dict[str, str]:
    # Only the first variable receives an item of an `in` list; the others are empty.
    return {name: (word if index == 0 else "") for index, name in enumerate(variables)}


def _live(cluster_id: int, proc_id: int, row: int, step: int) -> dict[str, str]:
    return {
        "Cluster": str(cluster_id),
        "ClusterId": str(cluster_id),
        "Process": str(proc_id),
        "ProcId": str(proc_id),
        "Row": str(row),
        "ItemIndex": str(row),
        "Step": str(step),
    }


def _common(procs: list[ClassAd]) -> ClassAd:
    cluster = ClassAd()
    if not procs:
        return cluster
    first = procs[0]
    for name in first:
        if name.lower() == "procid":
            continue
        expr = first[name]
        if all(other.lookup(name) == expr for other in procs[1:]):
            cluster[name] = expr
    return cluster


@attrs.define
class _Run:
    """The state of one submission while its statements run (files included)."""

    context: SubmitContext
    host: SubmitHost
    cluster_id: int
    macros: SubmitMacros
    attributes: dict[str, JobAttribute] = attrs.field(factory=dict)
    procs: list[ClassAd] = attrs.field(factory=list)
    base: ClassAd = attrs.field(factory=constant_attributes)
    depth: int = 0

    def run(self, description: SubmitDescription) -> None:
        """Run the statements of one file (its if/endif blocks are its own)."""
        blocks = IfStack()
        outer_source = self.macros.source
        self.macros.source = description.source
        try:
            for statement in description.statements:
                if isinstance(statement, Conditional):
                    _conditional(blocks, statement, self.macros)
                elif blocks.enabled():
                    self.step(statement, description.source)
        finally:
            self.macros.source = outer_source

    def step(self, statement: Statement, source: str) -> None:
        """One enabled statement."""
        macros = self.macros
        if isinstance(statement, Assignment):
            if statement.attribute:
                self.attributes[statement.name.lower()] = JobAttribute(
                    statement.name, statement.value, statement.line, source
                )
                macros.define(f"MY.{statement.name}", statement.value, statement.line)
            else:
                macros.define(statement.name, statement.value, statement.line)
        elif isinstance(statement, Include):
            self.include(statement, source)
        elif isinstance(statement, QueueStatement):
            for name, value in self.context.extra_macros:
                macros.define(name, value, None)
            self.procs.extend(
                _queue(
                    statement,
                    macros,
                    self.context,
                    self.host,
                    self.cluster_id,
                    len(self.procs),
                    tuple(self.attributes.values()),
                    self.base,
                )
            )

    def include(self, statement: Include, source: str) -> None:
        """Read and run an included submit file."""
        if self.depth >= MAX_INCLUDE_DEPTH:
            raise SubmitError(
                f"include : nested more than {MAX_INCLUDE_DEPTH} deep (a file includes itself?)",
                source,
                statement.line,
            )
        path = self.macros.expand(statement.path, "include", statement.line).strip()
        full = path if posixpath.isabs(path) else posixpath.join(self.context.submit_dir, path)
        try:
            text = self.host.read_text(full)
        except OSError as error:
            if statement.optional:
                return
            raise SubmitError(
                f"include : cannot read {full}: {error.strerror or error}", source, statement.line
            ) from error
        self.depth += 1
        try:
            self.run(parse_submit(text, source=full))
        finally:
            self.depth -= 1


def build_jobs(
    description: SubmitDescription,
    context: SubmitContext,
    host: SubmitHost,
    *,
    cluster_id: int,
) -> SubmittedCluster:
    """Run ``description``: every ``queue`` adds jobs with consecutive ProcIds to one cluster."""
    source = description.source
    macros = SubmitMacros.empty(source, context.environ, context.now)
    arch = context.config.get("ARCH") or "X86_64"
    opsys = context.config.get("OPSYS") or "LINUX"
    for name, value in (("ARCH", arch), ("OPSYS", opsys), ("SUBMIT_FILE", source)):
        macros.define(name, value, None)
    macros.set_live(_live(cluster_id, 0, 0, 0))
    for name, value in context.extra_macros:
        macros.define(name, value, None)
    run = _Run(context, host, cluster_id, macros)
    run.run(description)
    procs = run.procs
    return SubmittedCluster(cluster_id=cluster_id, cluster_ad=_common(procs), procs=tuple(procs))


def _conditional(blocks: IfStack, statement: Conditional, macros: SubmitMacros) -> None:
    try:
        if statement.keyword == "if":
            value = blocks.enabled() and macros.condition(statement.condition, statement.line)
            blocks.begin_if(value)
        elif statement.keyword == "elif":
            value = blocks.elif_needs_value() and macros.condition(
                statement.condition, statement.line
            )
            blocks.begin_elif(value)
        elif statement.keyword == "else":
            blocks.begin_else()
        else:
            blocks.end_if()
    except ConditionError as error:
        raise SubmitError(str(error), macros.source, statement.line) from error


def _queue(
    statement: QueueStatement,
    macros: SubmitMacros,
    context: SubmitContext,
    host: SubmitHost,
    cluster_id: int,
    first_proc: int,
    attributes: tuple[JobAttribute, ...],
    base: ClassAd,
) -> list[ClassAd]:
    count = _count(statement, macros)
    rows = _rows(statement, macros, host, context.submit_dir)
    indexed = list(enumerate(rows))
    if statement.item_slice is not None:
        indexed = list(statement.item_slice.select(tuple(indexed)))
    if first_proc + count * len(indexed) > MAX_JOBS:
        raise SubmitError(f"queue: more than {MAX_JOBS} jobs", macros.source, statement.line)
    procs: list[ClassAd] = []
    for row_index, row in indexed:
        for step in range(count):
            proc_id = first_proc + len(procs)
            job_macros = macros.copy()
            live = _live(cluster_id, proc_id, row_index, step)
            live.update(row)
            job_macros.set_live(live)
            procs.append(
                build_job_ad(
                    job_macros,
                    context,
                    host,
                    cluster_id=cluster_id,
                    proc_id=proc_id,
                    queue_line=statement.line,
                    attributes=attributes,
                    base=base,
                )
            )
    return procs
