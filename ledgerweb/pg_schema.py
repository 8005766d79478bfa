"""The ledger's schema on PostgreSQL: ledgerweb/sql/postgres/ holds the DDL of ledgerweb/sql/
translated table for table, and this module creates it and reads a database's schema back in the
terms of ledgerweb/schema.py (SQLite's declared types), so the two can be compared
(tests/test_schema_drift.py) and a central ledger checked like a file.
"""

from ledgerfacts.schema import (
    DDL_FILES,
    SQL_DIR,
    Column,
    LedgerInspection,
    column_differences,
    expected_columns,
)

POSTGRES_SQL_DIR = SQL_DIR / "postgres"

# SQLite's declared type → the PostgreSQL type that holds the same values.
POSTGRES_TYPE = {
    "TEXT": "text",
    "INTEGER": "bigint",  # SQLite integers are 64-bit: Unix ms need more than 32
    "REAL": "double precision",
    "BOOLEAN": "boolean",
}
SQLITE_TYPE = {pg: sqlite for sqlite, pg in POSTGRES_TYPE.items()}


def postgres_ddl(files: tuple[str, ...] = tuple(DDL_FILES)) -> str:
    return "\n".join((POSTGRES_SQL_DIR / name).read_text() for name in files)


# The functions the ledger queries use that PostgreSQL lacks: SQLite's, and the error signature.
SQLITE_FUNCTIONS = "functions.sql"
# SQLite's implicit rowid made a column, on every ledger table (search keys rows by it).
ROWID = "rowid"
ROWIDS = "rowids.sql"
# How to give a ledger made before rowids.sql its rowids (the search page and /health/ say it).
ROWIDS_FIX = f'psql "$LEDGER_DB" -f ledgerweb/sql/postgres/{ROWIDS}'


def create_postgres_ledger(conn, files: tuple[str, ...] = tuple(DDL_FILES)) -> None:
    """Create the ledger's tables and indexes on a psycopg connection (in its transaction), their
    rowid columns, and the SQLite functions its queries use."""
    conn.execute(postgres_ddl(files))
    conn.execute((POSTGRES_SQL_DIR / ROWIDS).read_text())
    create_sqlite_functions(conn)


def create_sqlite_functions(conn) -> None:
    conn.execute((POSTGRES_SQL_DIR / SQLITE_FUNCTIONS).read_text())


def postgres_tables(conn) -> set[str]:
    found = conn.execute(
        "SELECT table_name FROM information_schema.tables"
        " WHERE table_schema = current_schema() AND table_type = 'BASE TABLE'"
    ).fetchall()
    return {name for (name,) in found}


def inspect_postgres_ledger(conn) -> LedgerInspection:
    """schema.inspect_ledger's twin: what a PostgreSQL ledger holds, compared with the schema."""
    tables = postgres_tables(conn)
    mismatches = {}
    for table, expected in expected_columns().items():
        found = [c for c in postgres_columns(conn, table) if c.name != ROWID]  # not drift: ours
        problems = table in tables and column_differences(expected, found)
        if problems:
            mismatches[table] = problems
    return LedgerInspection(tables, mismatches)


def postgres_columns(conn, table: str) -> list[Column]:
    """A table's columns with SQLite's names for their types, in declaration order."""
    found = conn.execute(
        """
        SELECT c.column_name, c.data_type, c.is_nullable = 'NO', c.column_default,
               EXISTS (
                   SELECT 1 FROM information_schema.key_column_usage k
                   JOIN information_schema.table_constraints t
                     USING (constraint_schema, constraint_name, table_name)
                   WHERE t.constraint_type = 'PRIMARY KEY' AND k.table_name = c.table_name
                     AND k.column_name = c.column_name AND k.table_schema = c.table_schema)
        FROM information_schema.columns c
        WHERE c.table_schema = current_schema() AND c.table_name = %s
        ORDER BY c.ordinal_position""",
        [table],
    ).fetchall()
    return [
        Column(name, SQLITE_TYPE.get(pg_type, pg_type), not_null, pk, _plain_default(default))
        for name, pg_type, not_null, default, pk in found
    ]


def _plain_default(default: str | None) -> str | None:
    """'active'::text → 'active': the literal as SQLite reports it."""
    if default is None:
        return None
    return default.split("::", 1)[0] if default.startswith("'") else default


def postgres_indexes(conn) -> dict[str, tuple[str, tuple[tuple[str, bool], ...]]]:
    """Index name → (table, ((column, descending), …)), primary keys left out; key columns
    only, as sqlite_indexes (an INCLUDE column is PostgreSQL's counterpart of SQLite's rowid)."""
    found = conn.execute(
        """
        SELECT i.relname, t.relname, pg_get_indexdef(x.indexrelid, k, true),
               (x.indoption[k - 1] & 1) = 1
        FROM pg_index x
        JOIN pg_class i ON i.oid = x.indexrelid
        JOIN pg_class t ON t.oid = x.indrelid
        CROSS JOIN LATERAL generate_series(1, x.indnkeyatts) AS k
        WHERE t.relnamespace = current_schema()::regnamespace AND NOT x.indisprimary
        ORDER BY i.relname, k"""
    ).fetchall()
    indexes: dict[str, tuple[str, list]] = {}
    for name, table, column, descending in found:
        indexes.setdefault(name, (table, []))[1].append((column, descending))
    return {name: (table, tuple(columns)) for name, (table, columns) in indexes.items()}


def sqlite_indexes(conn) -> dict[str, tuple[str, tuple[tuple[str, bool], ...]]]:
    """The same description of a SQLite database's declared indexes."""
    found = conn.execute(
        "SELECT name, tbl_name FROM sqlite_master WHERE type = 'index' AND sql IS NOT NULL"
    ).fetchall()
    return {
        name: (
            table,
            tuple(
                (column, bool(desc))
                for _, _, column, desc, _, key in conn.execute(
                    "SELECT * FROM pragma_index_xinfo(?)", (name,)
                )
                if key
            ),
        )
        for name, table in found
    }
