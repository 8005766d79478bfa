"""What differs between a SQLite ledger and a PostgreSQL one and cannot be shared, in one place.

Most ledger SQL runs unchanged on both: a PostgreSQL ledger has the SQLite functions it uses
(ledgerweb/sql/postgres/functions.sql). What is left is here: SQL text (with %s placeholders)
for the ledger alias's engine, and plain_number to read a value back as SQLite gives it.
SQLite stays the reference: make test runs the page tests on both (tests/pg_ledger.py).
"""

from decimal import Decimal

from django.db import connections

from ledgerweb.db import LEDGER


def on_postgres(alias: str = LEDGER) -> bool:
    return connections[alias].vendor == "postgresql"


def table_names_sql(alias: str = LEDGER) -> str:
    if on_postgres(alias):
        return (
            "SELECT table_name FROM information_schema.tables"
            " WHERE table_schema = current_schema() AND table_type = 'BASE TABLE'"
        )
    return "SELECT name FROM sqlite_master WHERE type = 'table'"


def version_sql(alias: str = LEDGER) -> str:
    """A value that moves whenever another connection may have committed a change.

    SQLite: PRAGMA data_version. PostgreSQL: the current snapshot (xmin:xmax:in-progress ids).
    It moves whenever a writing transaction anywhere on the server begins or ends, so it never
    misses a change (a max(id)/count snapshot would miss updates: a head moved, a status set)
    and costs no scan; it moves also for other databases' writes, which only costs a rebuild.
    pg_stat_database's commit counter is no good: read-only transactions count too, and the
    statistics arrive late."""
    if on_postgres(alias):
        return "SELECT pg_current_snapshot()::text"
    return "PRAGMA data_version"


def plain_number(value):
    """A value as SQLite would give it: PostgreSQL sums BIGINTs into NUMERIC (a Decimal, which
    Django's SQLite adapter would even store as text); a whole one is an int, else a float."""
    if isinstance(value, Decimal):
        return int(value) if value == value.to_integral_value() else float(value)
    return value


def unindexed(column: str, alias: str = LEDGER) -> str:
    """`+column` on SQLite: the same value, but its index is not used (see sqlite.Unindexed);
    PostgreSQL's planner needs no such hint, and has no unary + on text."""
    return column if on_postgres(alias) else f"+{column}"


def position(needle: str, haystack: str, alias: str = LEDGER) -> str:
    """1-based index of needle in haystack, 0 when absent (SQLite instr, PostgreSQL strpos)."""
    name = "strpos" if on_postgres(alias) else "instr"
    return f"{name}({haystack}, {needle})"


def as_bytes(text: str, alias: str = LEDGER) -> str:
    """A text's UTF-8 bytes, whose length() and substr() count bytes, not characters: SQLite's
    CAST AS BLOB; PostgreSQL's convert_to (its CAST to bytea reads backslashes as escapes)."""
    return f"convert_to({text}, 'UTF8')" if on_postgres(alias) else f"CAST({text} AS BLOB)"


def byte_length(text: str, alias: str = LEDGER) -> str:
    """How many bytes a value's UTF-8 is, all of it: SQLite's length() of a TEXT counts the
    characters before its first NUL. PostgreSQL's octet_length (no copy, as convert_to makes)."""
    return f"octet_length({text})" if on_postgres(alias) else f"length(CAST({text} AS BLOB))"


def whole(column: str, alias: str = LEDGER) -> str:
    """`column` as SQL's substr() and length() read it whole: SQLite's of a TEXT stop at its
    first NUL (a message "before\\x00after" read as "before", its length 6), so a text holding
    one is read as a BLOB, its UTF-8 bytes (substr and length count bytes; decode them as a
    BLOB's). Any other value as it is. PostgreSQL's text holds no NUL: the column itself."""
    if on_postgres(alias):
        return column
    as_blob = f"CAST({column} AS BLOB)"
    return f"CASE WHEN instr({as_blob}, x'00') > 0 THEN {as_blob} ELSE {column} END"
