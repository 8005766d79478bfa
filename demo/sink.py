"""Buffered bulk inserts: rows go to per-table lists and leave in executemany batches."""

import sqlite3

from ledgerfacts.schema import expected_columns

# The tables the demo writes, each with its columns in the DDL's order: a demo row is a tuple in
# that order (tuples, not dicts: a benchmark ledger has millions of rows). A column added to the
# DDL changes the tuple's length, and executemany then refuses the batch rather than shift values.
DEMO_TABLES = ("sessions", "turns", "messages", "tool_calls", "compactions", "nexus_requests")
_SCHEMA = expected_columns()
COLUMNS = {table: tuple(column.name for column in _SCHEMA[table]) for table in DEMO_TABLES}

BATCH_ROWS = 20_000


class RowSink:
    """Collects rows (tuples in COLUMNS order) and writes each table in batches.

    Memory stays bounded by BATCH_ROWS per table whatever the scale of the build.
    """

    def __init__(self, conn: sqlite3.Connection, batch_rows: int = BATCH_ROWS):
        self.conn = conn
        self.batch_rows = batch_rows
        self.counts = dict.fromkeys(COLUMNS, 0)
        self._pending: dict[str, list[tuple]] = {table: [] for table in COLUMNS}
        self._insert = {
            table: f"INSERT INTO {table} ({', '.join(cols)}) VALUES ({', '.join('?' * len(cols))})"
            for table, cols in COLUMNS.items()
        }

    def add(self, table: str, row: tuple) -> None:
        pending = self._pending[table]
        pending.append(row)
        if len(pending) >= self.batch_rows:
            self._flush(table)

    def flush(self) -> None:
        for table in COLUMNS:
            self._flush(table)

    def _flush(self, table: str) -> None:
        pending = self._pending[table]
        if pending:
            self.conn.executemany(self._insert[table], pending)
            self.counts[table] += len(pending)
            pending.clear()
