"""The two databases retention works on, the live ledger and its archive, each a SQLite file (a
Path) or a PostgreSQL database (a postgres:// URL or a libpq connection string), behind the few
operations the policy needs.

pipeline/retention.py writes its SQL once, with `?` placeholders and in forms both engines run
(`INSERT … ON CONFLICT (id) DO NOTHING`, `IN (…)` lists); what differs is here: connecting,
transactions, the key that tells rows apart, creating and checking an archive.
"""

import sqlite3
import time
from pathlib import Path

from ledgerfacts import schema
from ledgerfacts.dbapi import executemany, write_transaction
from ledgerweb.db import shown_location
from ledgerweb.pg_schema import create_postgres_ledger, inspect_postgres_ledger, postgres_tables

Location = Path | str
# How long a statement waits for a lock the live writer holds before giving up (SQLite's busy
# timeout; PostgreSQL's lock_timeout: a row the writer is updating, never the whole table).
BUSY_TIMEOUT_S = 30


class TookTooLong(Exception):
    """A connection opened with a time limit ran past it (the admin's dry run, a page)."""


class RetentionDb:
    """One connection in autocommit mode: each statement commits, unless inside transaction()."""

    def __init__(self, location: Location, trace=None, time_limit_s: float | None = None):
        self.location = location
        self.postgres = not isinstance(location, Path)
        self.trace = trace
        if self.postgres:
            import psycopg

            self.conn = psycopg.connect(location, autocommit=True)
            self.conn.execute(f"SET lock_timeout = '{BUSY_TIMEOUT_S}s'")
            if time_limit_s:
                self.conn.execute(f"SET statement_timeout = '{int(time_limit_s * 1000)}ms'")
        else:
            self.conn = sqlite3.connect(location, timeout=BUSY_TIMEOUT_S, isolation_level=None)
            self.conn.execute("PRAGMA foreign_keys = OFF")  # events(id) lives in another ledger
            if time_limit_s:
                ends_at = time.monotonic() + time_limit_s
                self.conn.set_progress_handler(lambda: time.monotonic() > ends_at, 10_000)

    @property
    def row_key(self) -> str:
        """What tells rows apart: SQLite's rowid (a row there may even lack an id); PostgreSQL's
        primary key never holds NULL."""
        return "id" if self.postgres else "rowid"

    def _sql(self, sql: str) -> str:
        if self.trace:
            self.trace(sql)
        return sql.replace("?", "%s") if self.postgres else sql

    def execute(self, sql: str, params=()) -> int:
        """Run one statement; the number of rows it changed."""
        return self.conn.execute(self._sql(sql), params).rowcount

    def executemany(self, sql: str, rows) -> int:
        return executemany(self.conn, self._sql(sql), rows)

    def fetchall(self, sql: str, params=()) -> list[tuple]:
        try:
            return self.conn.execute(self._sql(sql), params).fetchall()
        except Exception as error:
            if _is_time_limit(error):
                raise TookTooLong(str(error)) from error
            raise

    def transaction(self):
        """Committed when the block ends, rolled back when it raises (an interruption too)."""
        return write_transaction(self.conn)

    def place(self) -> tuple:
        """Which database this is, to refuse an archive that is the live ledger itself: the
        file, or the database on a server (its port and start time tell servers apart)."""
        if not self.postgres:
            return ("sqlite", str(self.location.resolve()))
        ((name, port, started),) = self.fetchall(
            "SELECT current_database(), current_setting('port'), pg_postmaster_start_time()::text"
        )
        return ("postgres", name, port, started)

    def close(self) -> None:
        self.conn.close()


def _is_time_limit(error: Exception) -> bool:
    """SQLite's progress handler interrupts; PostgreSQL's statement_timeout cancels."""
    if isinstance(error, sqlite3.OperationalError):
        return "interrupted" in str(error)
    return type(error).__name__ == "QueryCanceled"  # psycopg.errors, imported only when used


def place_of(location: Location) -> tuple:
    """RetentionDb.place without opening (or creating) a SQLite file."""
    if isinstance(location, Path):
        return ("sqlite", str(location.resolve()))
    db = RetentionDb(location)
    try:
        return db.place()
    finally:
        db.close()


def open_archive(location: Location, trace=None) -> RetentionDb:
    """A new archive ledger made from the DDL, or one whose nexus_requests matches the DDL."""
    if isinstance(location, Path) and (not location.exists() or location.stat().st_size == 0):
        schema.create_ledger(location)
    archive = RetentionDb(location, trace)
    try:
        if archive.postgres and not postgres_tables(archive.conn):
            with archive.conn.transaction():
                create_postgres_ledger(archive.conn)
        _check_archive(archive)
    except BaseException:
        archive.close()
        raise
    return archive


def _check_archive(archive: RetentionDb) -> None:
    if archive.postgres:
        inspection = inspect_postgres_ledger(archive.conn)
    else:
        inspection = schema.inspect_ledger(archive.conn)
    shown = shown_location(archive.location)
    if "nexus_requests" not in inspection.tables:
        raise ValueError(f"{shown} has no nexus_requests table: not a ledger archive")
    if "nexus_requests" in inspection.mismatches:
        problems = "; ".join(inspection.mismatches["nexus_requests"])
        raise ValueError(f"{shown}'s nexus_requests differs from the schema: {problems}")
