"""The job queue's SQLite file: opening it safely, its schema and the schema's migrations."""

from __future__ import annotations

import os
import sqlite3
from collections.abc import Sequence
from pathlib import Path
from typing import Final

from epcore.errors import QueueError

SCHEMA_TABLE: Final = "epcore_job_queue_schema"

#: Each entry upgrades the schema by one version; a database at version n runs entries n..end.
MIGRATIONS: Final[Sequence[tuple[str, ...]]] = (
    (
        f"CREATE TABLE {SCHEMA_TABLE} (version INTEGER NOT NULL)",
        "CREATE TABLE counters (name TEXT PRIMARY KEY, value INTEGER NOT NULL) WITHOUT ROWID",
        "INSERT INTO counters (name, value) VALUES ('next_cluster', 1)",
        "CREATE TABLE clusters (cluster INTEGER PRIMARY KEY, ad TEXT NOT NULL)",
        "CREATE TABLE jobs ("
        " cluster INTEGER NOT NULL, proc INTEGER NOT NULL, status INTEGER NOT NULL,"
        " owner TEXT, submitter TEXT, ad TEXT NOT NULL,"
        " PRIMARY KEY (cluster, proc)) WITHOUT ROWID",
        "CREATE INDEX jobs_by_status ON jobs (status)",
        # Status stays out of these two: a status change then rewrites one index, not three.
        "CREATE INDEX jobs_by_owner ON jobs (owner)",
        "CREATE INDEX jobs_by_submitter ON jobs (submitter)",
        "CREATE TABLE history ("
        " seq INTEGER PRIMARY KEY AUTOINCREMENT, cluster INTEGER NOT NULL,"
        " proc INTEGER NOT NULL, status INTEGER NOT NULL, owner TEXT, submitter TEXT,"
        " finished_at REAL NOT NULL, ad TEXT NOT NULL)",
        "CREATE INDEX history_by_cluster ON history (cluster)",
        f"INSERT INTO {SCHEMA_TABLE} (version) VALUES (0)",
    ),
)

SCHEMA_VERSION: Final = len(MIGRATIONS)

CHECKPOINT_PAGES: Final = 4000


def connect(path: Path) -> sqlite3.Connection:
    """An open connection to the queue at ``path`` with the schema up to date; the file is
    made with mode 0600 when new. QueueError naming the file when it is not a job queue."""
    if not path.exists():
        try:
            descriptor = os.open(path, os.O_CREAT | os.O_RDWR | os.O_EXCL, 0o600)
        except OSError as error:
            raise QueueError(f"{path}: cannot create the job queue: {error}") from error
        os.close(descriptor)
    try:
        # Autocommit mode: the queue issues BEGIN and COMMIT itself.
        connection = sqlite3.connect(str(path), isolation_level=None, cached_statements=64)
    except sqlite3.Error as error:
        raise QueueError(f"{path}: cannot open the job queue: {error}") from error
    try:
        _prepare(connection, path)
    except sqlite3.DatabaseError as error:
        connection.close()
        raise QueueError(f"{path}: not a job queue database ({error})") from error
    except QueueError:
        connection.close()
        raise
    return connection


def _prepare(connection: sqlite3.Connection, path: Path) -> None:
    tables = {
        row[0] for row in connection.execute("SELECT name FROM sqlite_master WHERE type = 'table'")
    }
    # WAL with synchronous=NORMAL: a commit costs no fsync; a power cut may lose the last
    # commits but never corrupts the file, which is the trade the schedd's own log makes.
    connection.execute("PRAGMA journal_mode = WAL")
    connection.execute("PRAGMA synchronous = NORMAL")
    # Checkpoints are where WAL mode syncs the disk; fewer of them (every 16 MB of changes
    # instead of 4 MB) make status changes about a third cheaper. The size limit gives the
    # space back once a checkpoint has run.
    connection.execute(f"PRAGMA wal_autocheckpoint = {CHECKPOINT_PAGES}")
    connection.execute(f"PRAGMA journal_size_limit = {CHECKPOINT_PAGES * 4096}")
    if tables and SCHEMA_TABLE not in tables:
        raise QueueError(f"{path}: an SQLite database, but not an epcore job queue")
    version = 0
    if SCHEMA_TABLE in tables:
        row = connection.execute(f"SELECT version FROM {SCHEMA_TABLE}").fetchone()
        if row is None or not isinstance(row[0], int):
            raise QueueError(f"{path}: the job queue's schema version is missing")
        version = row[0]
    if version > SCHEMA_VERSION:
        raise QueueError(
            f"{path}: job queue schema version {version} is newer than this epcore's "
            f"({SCHEMA_VERSION})"
        )
    if version == SCHEMA_VERSION:
        return
    connection.execute("BEGIN IMMEDIATE")
    try:
        for statements in MIGRATIONS[version:]:
            for statement in statements:
                connection.execute(statement)
        connection.execute(f"UPDATE {SCHEMA_TABLE} SET version = ?", (SCHEMA_VERSION,))
        connection.execute("COMMIT")
    except BaseException:
        connection.execute("ROLLBACK")
        raise
