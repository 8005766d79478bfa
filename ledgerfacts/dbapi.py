"""What differs between a sqlite3 and a psycopg connection in autocommit mode, for the programs
that write a ledger through a connection of their own: the importers' writer (importers/target.py)
and retention (pipeline/retention_db.py)."""

import sqlite3
from contextlib import contextmanager

# Taken by every write transaction on a PostgreSQL ledger, so that rows become visible in rowid
# order (see ledgerweb/sql/postgres/rowids.sql). One fixed key: the bytes of "ledgrow".
ROWID_ORDER_LOCK = "SELECT pg_advisory_xact_lock(30510779391438711)"


@contextmanager
def write_transaction(conn):
    """Committed when the block ends, rolled back when it raises (an interruption too)."""
    if not isinstance(conn, sqlite3.Connection):  # psycopg
        with conn.transaction():
            conn.execute(ROWID_ORDER_LOCK)  # writers take turns
            yield
        return
    # IMMEDIATE takes the write lock now, so a live writer makes us wait (busy timeout) before
    # anything is written rather than halfway through.
    conn.execute("BEGIN IMMEDIATE")
    try:
        yield
    except BaseException:
        if conn.in_transaction:
            conn.execute("ROLLBACK")
        raise
    conn.execute("COMMIT")


def executemany(conn, sql: str, rows) -> int:
    """Run one statement for each row; the number of rows changed in all."""
    if isinstance(conn, sqlite3.Connection):
        return conn.executemany(sql, rows).rowcount
    with conn.cursor() as cursor:
        cursor.executemany(sql, rows)
        return cursor.rowcount
