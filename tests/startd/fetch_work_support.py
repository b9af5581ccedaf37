"""Real fetch-work hook scripts over a SQLite table of work, for the startd's end-to-end tests.

The table ``work`` holds one row per job: its queue (which keyword's hook hands it out), its
state (``pending``, ``taken``, ``rejected``, ``evicted``), the job ad's attributes, and the slot
that took it. The FETCH_WORK script takes one pending row of its queue (the oldest), prints the
job ad in old ClassAd syntax and marks the row taken, all in one transaction, so four slots
fetching at once never take the same row. The REPLY_FETCH script logs its argument and puts a
rejected row back to pending (or to ``rejected`` for a row marked ``poison``). The EVICT_CLAIM
script logs the claim's job and, when the slot was taken from a running job (Preempting), marks
its row ``evicted``.
"""

from __future__ import annotations

import sqlite3
import sys
from pathlib import Path

SCHEMA = """
CREATE TABLE work (
    id INTEGER PRIMARY KEY,
    queue TEXT NOT NULL,
    state TEXT NOT NULL DEFAULT 'pending',
    ad TEXT NOT NULL,
    poison INTEGER NOT NULL DEFAULT 0,
    slot TEXT,
    fetches INTEGER NOT NULL DEFAULT 0
)
"""

# The slot ad arrives on stdin; the row's ad lines go to stdout with WorkId added.
FETCH = """#!{python}
import sqlite3, sys
slot_ad = sys.stdin.read()
name = ""
for line in slot_ad.splitlines():
    if line.startswith("Name = "):
        name = line.split("=", 1)[1].strip().strip('"')
db = sqlite3.connect({db!r}, timeout=60, isolation_level=None)
db.execute("BEGIN IMMEDIATE")
row = db.execute(
    "SELECT id, ad FROM work WHERE state = 'pending' AND queue = ? ORDER BY id LIMIT 1",
    ({queue!r},),
).fetchone()
if row is not None:
    db.execute(
        "UPDATE work SET state = 'taken', slot = ?, fetches = fetches + 1 WHERE id = ?",
        (name, row[0]),
    )
db.execute("COMMIT")
if row is not None:
    print("WorkId = %d" % row[0])
    print(row[1])
"""

REPLY = """#!{python}
import sqlite3, sys
text = sys.stdin.read()
job, separator, slot = text.partition("\\n-----\\n")
work_id = None
for line in job.splitlines():
    if line.startswith("WorkId = "):
        work_id = int(line.split("=", 1)[1])
slot_name = ""
for line in slot.splitlines():
    if line.startswith("Name = "):
        slot_name = line.split("=", 1)[1].strip().strip('"')
with open({log!r}, "a") as log:
    log.write("%s %s %s %s\\n" % (sys.argv[1], work_id, slot_name, bool(separator)))
if sys.argv[1] == "reject" and work_id is not None:
    db = sqlite3.connect({db!r}, timeout=60, isolation_level=None)
    db.execute(
        "UPDATE work SET state = CASE poison WHEN 1 THEN 'rejected' ELSE 'pending' END "
        "WHERE id = ?",
        (work_id,),
    )
"""

EVICT = """#!{python}
import sqlite3, sys
text = sys.stdin.read()
job, separator, slot = text.partition("\\n-----\\n")
work_id = None
for line in job.splitlines():
    if line.startswith("WorkId = "):
        work_id = int(line.split("=", 1)[1])
state = ""
for line in slot.splitlines():
    if line.startswith("State = "):
        state = line.split("=", 1)[1].strip().strip('"')
with open({log!r}, "a") as log:
    log.write("evict %s %s %s %d\\n" % (work_id, state, bool(separator), len(sys.argv)))
if work_id is not None and state == "Preempting":
    # The job was running when its claim went (a claim of finished work ends Claimed/Idle).
    db = sqlite3.connect({db!r}, timeout=60, isolation_level=None)
    db.execute("UPDATE work SET state = 'evicted' WHERE id = ?", (work_id,))
"""


def script(path: Path, text: str, **values: str) -> Path:
    """Write an executable script from ``text`` with ``values`` filled in (python: ours)."""
    path.write_text(text.format(python=sys.executable, **values))
    path.chmod(0o755)
    return path


def make_table(db: Path) -> None:
    """Create the empty work table."""
    with sqlite3.connect(db) as connection:
        connection.execute(SCHEMA)


def add_work(db: Path, work_id: int, queue: str, ad_lines: str, *, poison: bool = False) -> None:
    """Add one pending row, ``work_id`` being the job's WorkId."""
    with sqlite3.connect(db, timeout=60) as connection:
        connection.execute(
            "INSERT INTO work (id, queue, ad, poison) VALUES (?, ?, ?, ?)",
            (work_id, queue, ad_lines, poison),
        )


def rows(db: Path) -> list[tuple[int, str, str, str | None]]:
    """Every row as (id, queue, state, slot)."""
    with sqlite3.connect(db, timeout=60) as connection:
        return list(connection.execute("SELECT id, queue, state, slot FROM work ORDER BY id"))
