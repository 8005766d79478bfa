"""The SQL a page runs on the ledger: captured from Django, replayed with plain sqlite3.

Capture: one request through Django's test client with an execute wrapper on the `ledger`
connection, which sees every statement with its parameters exactly as the view passes them
(what CaptureQueriesContext records too, but before the parameters are quoted into the text).
Replay: the same statements and parameters on a read-only sqlite3 connection, every row fetched.
For Datasette, whose query page takes no positional parameters, the parameters are written into
the SQL as literals.
"""

import re
import sqlite3
import time
from dataclasses import dataclass

# Django's placeholders: %s (format), %(name)s (pyformat), and %% for a literal percent sign.
PLACEHOLDER = re.compile(r"%%|%s|%\((\w+)\)s")


@dataclass(frozen=True)
class Statement:
    sql: str  # qmark style, as Django's SQLite backend hands it to sqlite3
    params: tuple | dict
    literal_sql: str  # parameters written in as SQL literals

    @property
    def is_select(self) -> bool:
        return self.sql.lstrip().lower().startswith(("select", "with"))


def sql_literal(value) -> str:
    if value is None:
        return "NULL"
    if isinstance(value, bool):
        return str(int(value))
    if isinstance(value, int | float):
        return repr(value)
    if isinstance(value, bytes):
        return f"X'{value.hex()}'"
    return "'" + str(value).replace("'", "''") + "'"


def convert(sql: str, params) -> Statement:
    """Django's SQL and parameters → a Statement (both styles)."""
    if isinstance(params, dict):
        qmark = PLACEHOLDER.sub(lambda m: "%" if m[0] == "%%" else f":{m[1]}", sql)
        literal = PLACEHOLDER.sub(lambda m: "%" if m[0] == "%%" else sql_literal(params[m[1]]), sql)
        return Statement(qmark, dict(params), literal)
    params = tuple(params or ())
    values = iter(params)
    qmark = PLACEHOLDER.sub(lambda m: "%" if m[0] == "%%" else "?", sql)
    literal = PLACEHOLDER.sub(lambda m: "%" if m[0] == "%%" else sql_literal(next(values)), sql)
    return Statement(qmark, params, literal)


TRANSACTION_CONTROL = ("begin", "commit", "rollback", "savepoint", "release")


def capture(client, url: str, headers: dict[str, str]) -> tuple[list[Statement], int]:
    """The ledger statements of one GET of url through Django's test client, and the status."""
    from django.db import connections

    from ledgerweb.db import LEDGER

    seen: list[Statement] = []

    def record(execute, sql, params, many, context):
        if not many and not sql.lstrip().lower().startswith(TRANSACTION_CONTROL):
            seen.append(convert(sql, params))
        return execute(sql, params, many, context)

    with connections[LEDGER].execute_wrapper(record):
        response = client.get(url, headers=headers)
    return seen, response.status_code


def replay(conn: sqlite3.Connection, statements: list[Statement]) -> tuple[float, list[float]]:
    """Run the statements in one read transaction, fetch every row: total and per-statement ms."""
    each = []
    start = time.perf_counter()
    conn.execute("BEGIN")
    try:
        for s in statements:
            t0 = time.perf_counter()
            conn.execute(s.sql, s.params).fetchall()
            each.append((time.perf_counter() - t0) * 1000)
    finally:
        conn.execute("COMMIT")
    return (time.perf_counter() - start) * 1000, each


def row_count(conn: sqlite3.Connection, statement: Statement) -> int:
    return len(conn.execute(statement.sql, statement.params).fetchall())
