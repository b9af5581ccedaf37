"""Queue statements: counts, item lists, files, globs, slices and several queues per file."""

from __future__ import annotations

import pytest
from submit_support import SUBMIT_DIR, Builder

from epcore.submit import QueueStatement, parse_submit

EXE = "executable = /bin/true\n"
PROBE = '+Probe = "$(Process)|$(Row)|$(Step)|$(Item)|$(a)|$(b)"\n'

# (queue text, files, dirs, the Probe of every job)
QUEUE_CASES = [
    ("queue", {}, (), ["0|0|0|||"]),
    ("queue 3", {}, (), ["0|0|0|||", "1|0|1|||", "2|0|2|||"]),
    ("Queue 0", {}, (), []),
    ("N = 2\nqueue $(N)", {}, (), ["0|0|0|||", "1|0|1|||"]),
    ("queue in (x y)", {}, (), ["0|0|0|x||", "1|1|0|y||"]),
    ("queue a in (x, y)", {}, (), ["0|0|0||x|", "1|1|0||y|"]),
    ("queue a in x y", {}, (), ["0|0|0||x|", "1|1|0||y|"]),
    ("queue 2 a in (x)", {}, (), ["0|0|0||x|", "1|0|1||x|"]),
    ("queue a in (\n x y\n z\n)", {}, (), ["0|0|0||x|", "1|1|0||y|", "2|2|0||z|"]),
    ("queue a,b from (\n1 2\n3, 4 5\n)", {}, (), ["0|0|0||1|2", "1|1|0||3|4 5"]),
    ("queue a b from (p q)", {}, (), ["0|0|0||p|q"]),
    ("queue a,b from items.txt", {"items.txt": "1,2\n\n3 4\n"}, (), ["0|0|0||1|2", "1|1|0||3|4"]),
    ("queue from items.txt", {"items.txt": "one two\n"}, (), ["0|0|0|one two||"]),
    ("queue a in [1:] (x y z)", {}, (), ["0|1|0||y|", "1|2|0||z|"]),
    ("queue a in [::2] (x y z)", {}, (), ["0|0|0||x|", "1|2|0||z|"]),
    ("queue a from [:1] (\nx\ny\n)", {}, (), ["0|0|0||x|"]),
    (
        "queue a matching *.dat",
        {"b.dat": "", "a.dat": "", "c.txt": ""},
        ("d.dat",),
        ["0|0|0||a.dat|", "1|1|0||b.dat|", "2|2|0||d.dat|"],
    ),
    ("queue a matching files *.dat", {"a.dat": ""}, ("d.dat",), ["0|0|0||a.dat|"]),
    ("queue a matching dirs *.dat", {"a.dat": ""}, ("d.dat",), ["0|0|0||d.dat|"]),
    ("queue a matching (*.x *.y)", {"1.y": "", "2.x": ""}, (), ["0|0|0||2.x|", "1|1|0||1.y|"]),
    ("queue\nqueue 2", {}, (), ["0|0|0|||", "1|0|0|||", "2|0|1|||"]),
]


@pytest.mark.parametrize(("queue", "files", "dirs", "probes"), QUEUE_CASES)
def test_queue_statement_makes_jobs(
    build: Builder, queue: str, files: dict[str, str], dirs: tuple[str, ...], probes: list[str]
) -> None:
    """Each queue form queues one job per item and step, with the live variables set."""
    cluster = build(f"{EXE}{PROBE}{queue}\n", files=files, dirs=dirs)
    assert [ad.evaluate("Probe") for ad in cluster.procs] == probes
    assert [ad.evaluate("ProcId") for ad in cluster.procs] == list(range(len(probes)))


def test_commands_between_queues_apply_to_later_jobs(build: Builder) -> None:
    """A command after a queue statement changes only the jobs queued after it."""
    text = f"{EXE}arguments = first\nqueue 2\narguments = second\nqueue\n"
    cluster = build(text)
    assert [ad.evaluate("Arguments") for ad in cluster.procs] == ["first", "first", "second"]
    assert all(ad.evaluate("ClusterId") == 12 for ad in cluster.procs)


def test_cluster_ad_holds_the_shared_attributes(build: Builder) -> None:
    """The cluster ad keeps attributes equal in every proc, and drops those that differ."""
    cluster = build(f"{EXE}arguments = $(Process)\nqueue 2\n")
    assert cluster.cluster_ad.evaluate("Cmd") == "/bin/true"
    assert "Arguments" not in cluster.cluster_ad
    assert "ProcId" not in cluster.cluster_ad


def test_absolute_matching_keeps_absolute_names(build: Builder) -> None:
    """A pattern given as an absolute path yields absolute item names."""
    cluster = build(f"{EXE}{PROBE}queue a matching {SUBMIT_DIR}/*.in\n", files={"x.in": ""})
    assert cluster.procs[0].evaluate("Probe") == f"0|0|0||{SUBMIT_DIR}/x.in|"


PARSED_CASES = [
    ("queue", QueueStatement(line=1)),
    ("queue 5", QueueStatement(line=1, count="5")),
    ("queue $(N)", QueueStatement(line=1, count="$(N)")),
    ("queue in (a b)", QueueStatement(line=1, variables=("Item",), mode="in", items=("a b",))),
    (
        "queue 2 x,y from f.txt",
        QueueStatement(line=1, count="2", variables=("x", "y"), mode="from", path="f.txt"),
    ),
    (
        "queue x matching files *.c",
        QueueStatement(
            line=1, variables=("x",), mode="matching", patterns=("*.c",), matching_kind="files"
        ),
    ),
]


@pytest.mark.parametrize(("text", "expected"), PARSED_CASES)
def test_queue_statement_parses(text: str, expected: QueueStatement) -> None:
    """Queue statements parse into their count, variables, mode and source of items."""
    assert parse_submit(text + "\n").queue_statements == (expected,)
