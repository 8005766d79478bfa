"""The ledger the writer writes: a SQLite file (ledger_import) or a central PostgreSQL database
(ledger_ship), behind the few operations the writer needs.

The writer's SQL is written once, in sqlite3's placeholder style (`?` and `:name`), and in SQL
both engines accept (INSERT … ON CONFLICT DO NOTHING, CASE instead of two-argument MAX). Here it
is translated for psycopg, and values are made fit for PostgreSQL's strict columns: SQLite holds
2.0 in an INTEGER column or 1 in a BOOLEAN one, PostgreSQL takes 2 and true; a value it cannot
hold with the same meaning (1.5 as a token count, 'true' or '' in a BOOLEAN, a NUL byte in
text) raises ValueError, so the row is left out and reported rather than stored changed.
"""

import re
import sqlite3

from ledgerfacts.dbapi import executemany, write_transaction
from ledgerfacts.schema import ddl, expected_columns, index_statements, table_statements
from ledgerweb.pg_schema import create_postgres_ledger

# `:name` placeholders, not PostgreSQL's `::type` casts.
NAMED_PLACEHOLDER = re.compile(r"(?<!:):([a-z_]+)")


class WriteTarget:
    """A SQLite or psycopg connection in autocommit mode, as the writer uses it."""

    def __init__(self, conn):
        self.conn = conn
        self.postgres = not isinstance(conn, sqlite3.Connection)

    def _sql(self, sql: str) -> str:
        if not self.postgres:
            return sql
        return NAMED_PLACEHOLDER.sub(r"%(\1)s", sql.replace("?", "%s"))

    def execute(self, sql: str, params=()) -> int:
        """Run one statement; the number of rows it changed."""
        return self.conn.execute(self._sql(sql), params).rowcount

    def executemany(self, sql: str, rows) -> int:
        return executemany(self.conn, self._sql(sql), rows)

    def fetchall(self, sql: str, params=()) -> list[tuple]:
        return self.conn.execute(self._sql(sql), params).fetchall()

    def transaction(self):
        """One transaction: committed when the block ends, rolled back when it raises."""
        return write_transaction(self.conn)

    def has_table(self, name: str) -> bool:
        if self.postgres:
            sql = "SELECT 1 FROM information_schema.tables WHERE table_name = %s"
            sql += " AND table_schema = current_schema()"
        else:
            sql = "SELECT 1 FROM sqlite_master WHERE type = 'table' AND name = ?"
        return bool(self.conn.execute(sql, (name,)).fetchall())

    def create_table(self, ddl_file: str) -> None:
        """One of ledgerweb's optional tables (ledgerweb/sql/<ddl_file>), in this engine's DDL."""
        if self.postgres:
            create_postgres_ledger(self.conn, (ddl_file,))
            return
        sql = ddl((ddl_file,))
        for statement in table_statements(sql) + index_statements(sql):
            self.conn.execute(statement)

    def values(self, table: str, columns: list[str], row: dict) -> tuple:
        """A row's values for `columns`, as this engine can store them."""
        if not self.postgres:
            return tuple(row.get(c) for c in columns)
        types = {column.name: column.type for column in expected_columns()[table]}
        return tuple(
            fit_for_postgres(row.get(c), types[c], f"{table}.{c} of {row.get('id', '?')}")
            for c in columns
        )


def fit_for_postgres(value, sql_type: str, where: str):
    """`value` as PostgreSQL's column of SQLite type `sql_type` holds it, unchanged in meaning;
    ValueError for a value it cannot hold without changing it."""
    if value is None:
        return None
    if sql_type == "INTEGER" and isinstance(value, float):
        if value.is_integer():
            return int(value)
        raise ValueError(f"{where} holds {value!r}, which a BIGINT column cannot hold")
    if sql_type == "BOOLEAN" and isinstance(value, int) and not isinstance(value, bool):
        if value in (0, 1):
            return bool(value)
        raise ValueError(f"{where} holds {value!r}, which a BOOLEAN column cannot hold")
    if isinstance(value, str) and sql_type in ("INTEGER", "REAL", "BOOLEAN"):
        # PostgreSQL would parse '17' or 'true', but ledgerweb reads text there as unreadable
        # on SQLite (pipeline/flags.py): stored as a number it would say something else.
        raise ValueError(f"{where} holds the text {value[:40]!r} where {sql_type} is declared")
    if isinstance(value, bytes):
        raise ValueError(f"{where} holds bytes (a BLOB), which a {sql_type} column cannot hold")
    if isinstance(value, str) and "\x00" in value:
        raise ValueError(f"{where} holds a NUL character, which PostgreSQL text cannot hold")
    return value
