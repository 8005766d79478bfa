"""The two databases retention works on, the live ledger and its archive, each a SQLite file (a
Path) or a PostgreSQL database (a postgres:// URL or a libpq connection string), behind the few
operations the policy needs.

pipeline/retention.py writes its SQL once, with `?` placeholders and in forms both engines run
(`INSERT … ON CONFLICT (id) DO NOTHING`, `IN (…)` lists); what differs is here: connecting,
transactions, the key that tells rows apart, creating and checking an archive.
"""

import os
import re
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


# The files SQLite keeps beside a database, named for it: its rollback journal, its write-ahead
# log and the log's index, and a transaction's super-journal (<name>-mjXXXXXXXX). Each is part of
# that database: an archive written into one corrupts it, and one hard-linked to another
# database's file makes SQLite play that file back as a "hot journal".
COMPANION_SUFFIXES = ("-journal", "-wal", "-shm")
SUPER_JOURNAL = re.compile(r"-mj[0-9A-Fa-f]{8}$")
SQLITE_HEADER = b"SQLite format 3\x00"


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

    @property
    def for_update(self) -> str:
        """Locks the rows a SELECT reads until the transaction ends: PostgreSQL's row locks; a
        SQLite write transaction (BEGIN IMMEDIATE) already keeps every other writer out."""
        return " FOR UPDATE" if self.postgres else ""

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
        """Which database this is on its server (its port and start time tell servers apart),
        to refuse an archive that is the live ledger itself under another URL. A file's
        sameness is its device and inode: see same_files."""
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


def place_of(location: str) -> tuple:
    """RetentionDb.place of a PostgreSQL database named by a URL or connection string."""
    db = RetentionDb(location)
    try:
        return db.place()
    finally:
        db.close()


def is_companion_name(path: Path) -> bool:
    """A name SQLite gives the files it keeps beside a database (COMPANION_SUFFIXES)."""
    return path.name.endswith(COMPANION_SUFFIXES) or bool(SUPER_JOURNAL.search(path.name))


def file_identities(database: Path) -> set[tuple[int, int]]:
    """The device and inode of a SQLite database's file and of each companion file it has now:
    what the operating system says a file is, whatever path (a hard link, a symlinked folder,
    another mount of the same disk) reaches it."""
    found = set()
    for path in [database, *(Path(f"{database}{suffix}") for suffix in COMPANION_SUFFIXES)]:
        try:
            status = os.stat(path)  # follows symlinks: the file a path reaches
        except OSError:
            continue
        found.add((status.st_dev, status.st_ino))
    return found


def same_files(live: Path, archive: Path) -> bool:
    """Whether any file of the archive (the database or a companion) is a file of the live
    ledger, by device and inode."""
    return bool(file_identities(live) & file_identities(archive))


def check_archive_file(path: Path) -> None:
    """An archive path that cannot be an archive ledger, refused with what it is instead: a
    companion file's name (given, or reached through a symlink), a folder, a missing folder,
    something other than a file, a file that is not a SQLite database."""
    shown = str(path)
    for name in (path, path.resolve()):
        if is_companion_name(name):
            raise ValueError(
                f"{shown} is named like a SQLite companion file ({name.name}: a database's "
                "-journal, -wal, -shm or super-journal); an archive is a database file of its own"
            )
    if path.is_dir():
        raise ValueError(f"{shown} is a folder: --archive-to names the archive ledger's file")
    if not path.parent.is_dir():
        raise ValueError(f"the folder {path.parent} does not exist: create it first")
    if not path.exists():
        return  # created from the DDL by open_archive
    if not path.is_file():
        raise ValueError(f"{shown} is not a regular file: --archive-to names a ledger file")
    try:
        with path.open("rb") as file:
            header = file.read(len(SQLITE_HEADER))
    except OSError as error:
        raise ValueError(f"{shown} cannot be read: {error.strerror}") from None
    if header and header != SQLITE_HEADER:
        raise ValueError(f"{shown} is not a SQLite database: an archive is a ledger file")


def open_archive(location: Location, trace=None) -> RetentionDb:
    """A new archive ledger made from the DDL, or one whose nexus_requests matches the DDL."""
    if isinstance(location, Path):
        check_archive_file(location)
        if not location.exists() or location.stat().st_size == 0:
            schema.create_ledger(location)
    try:
        archive = RetentionDb(location, trace)
    except sqlite3.Error as error:
        raise ValueError(f"{location} cannot be opened as a ledger: {error}") from None
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
    shown = shown_location(archive.location)
    if archive.postgres:
        inspection = inspect_postgres_ledger(archive.conn)
    else:
        try:
            inspection = schema.inspect_ledger(archive.conn)
        except sqlite3.DatabaseError as error:  # a damaged file past its header
            raise ValueError(f"{shown} cannot be read as a ledger: {error}") from None
    if "nexus_requests" not in inspection.tables:
        raise ValueError(f"{shown} has no nexus_requests table: not a ledger archive")
    if "nexus_requests" in inspection.mismatches:
        problems = "; ".join(inspection.mismatches["nexus_requests"])
        raise ValueError(f"{shown}'s nexus_requests differs from the schema: {problems}")
