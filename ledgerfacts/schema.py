"""The ledger's schema: the .sql files in ledgerweb/sql/ are its single source of truth.

Creating a ledger, checking a file against the schema and the model drift test all read the same
DDL text, so the models, the demo ledger and the tests cannot drift apart silently.
"""

import sqlite3
from dataclasses import dataclass
from functools import cache
from pathlib import Path

# The DDL stays where ARCHITECTURE.md §3 puts it (beside the project, with its PostgreSQL
# variants): this package reads the files by path and imports nothing from there.
SQL_DIR = Path(__file__).resolve().parent.parent / "ledgerweb" / "sql"

# File → the tables it creates. The order matters only for readability of created files.
DDL_FILES = {
    "agents_ledger.sql": ("sessions", "turns", "messages", "tool_calls"),
    "nexus_ledger.sql": ("nexus_requests",),
    "compactions.sql": ("compactions",),
    "turn_usage.sql": ("turn_usage",),
    "tool_call_source_ids.sql": ("tool_call_source_ids",),
}
AGENTS_TABLES = DDL_FILES["agents_ledger.sql"]
NEXUS_TABLES = DDL_FILES["nexus_ledger.sql"]
# Tables a ledger may lack: pages check for them (sqlite.table_names()) and do without.
OPTIONAL_TABLES = (
    DDL_FILES["compactions.sql"]
    + DDL_FILES["turn_usage.sql"]
    + DDL_FILES["tool_call_source_ids.sql"]
)
LEDGER_TABLES = AGENTS_TABLES + NEXUS_TABLES + OPTIONAL_TABLES


def ddl(files: tuple[str, ...] = tuple(DDL_FILES)) -> str:
    return "\n".join((SQL_DIR / name).read_text() for name in files)


def split_statements(sql: str) -> list[str]:
    """Split DDL text into complete statements, without the comment lines between them."""
    statements, current = [], ""
    for line in sql.splitlines(keepends=True):
        if not current and (not line.strip() or line.lstrip().startswith("--")):
            continue  # a comment or blank line before a statement belongs to none
        current += line
        if sqlite3.complete_statement(current):
            statements.append(current.strip())
            current = ""
    return statements


def table_statements(sql: str) -> list[str]:
    return [s for s in split_statements(sql) if _is_create(s, "TABLE")]


def index_statements(sql: str) -> list[str]:
    return [s for s in split_statements(sql) if _is_create(s, "INDEX")]


def _is_create(statement: str, kind: str) -> bool:
    return statement.split()[:2] == ["CREATE", kind]


@dataclass(frozen=True)
class Column:
    name: str
    type: str  # declared type, upper-case: TEXT, INTEGER, BOOLEAN
    not_null: bool
    primary_key: bool
    default: str | None


def columns_of(conn: sqlite3.Connection, table: str) -> list[Column]:
    rows = conn.execute(
        'SELECT name, type, "notnull", dflt_value, pk FROM pragma_table_info(?)', (table,)
    ).fetchall()
    return [
        # SQLite lets a TEXT PRIMARY KEY hold NULL (a legacy quirk); a key is never meant to.
        Column(name, (decl or "").upper(), bool(notnull) or bool(pk), bool(pk), default)
        for name, decl, notnull, default, pk in rows
    ]


@cache
def expected_columns() -> dict[str, tuple[Column, ...]]:
    """Every ledger table's columns as the DDL declares them."""
    conn = sqlite3.connect(":memory:")
    try:
        conn.executescript(ddl())
        return {table: tuple(columns_of(conn, table)) for table in LEDGER_TABLES}
    finally:
        conn.close()


def create_ledger(path: Path, *, with_indexes: bool = True) -> None:
    """Create a new ledger file with every table (and, by default, index) in WAL mode."""
    conn = sqlite3.connect(path)
    try:
        conn.execute("PRAGMA journal_mode = WAL")
        sql = ddl()
        for statement in table_statements(sql) + (index_statements(sql) if with_indexes else []):
            conn.execute(statement)
        conn.commit()
    finally:
        conn.close()


def create_indexes(conn: sqlite3.Connection) -> None:
    """The DDL's indexes, for a file created with_indexes=False and then bulk-loaded."""
    for statement in index_statements(ddl()):
        conn.execute(statement)


@dataclass
class LedgerInspection:
    """What a SQLite file holds, compared with the ledger's schema."""

    tables: set[str]
    mismatches: dict[str, list[str]]  # table → what differs from the DDL

    @property
    def ledger_tables(self) -> set[str]:
        return self.tables & set(LEDGER_TABLES)

    @property
    def other_tables(self) -> set[str]:
        return {t for t in self.tables - set(LEDGER_TABLES) if not t.startswith("sqlite_")}

    @property
    def missing_tables(self) -> set[str]:
        return set(AGENTS_TABLES + NEXUS_TABLES) - self.tables

    @property
    def is_ledger(self) -> bool:
        return bool(self.ledger_tables)


def inspect_ledger(conn: sqlite3.Connection) -> LedgerInspection:
    tables = {row[0] for row in conn.execute("SELECT name FROM sqlite_master WHERE type = 'table'")}
    mismatches = {}
    for table, expected in expected_columns().items():
        if table in tables:
            problems = column_differences(expected, columns_of(conn, table))
            if problems:
                mismatches[table] = problems
    return LedgerInspection(tables, mismatches)


def column_differences(expected: tuple[Column, ...], found: list[Column]) -> list[str]:
    want = {c.name: c for c in expected}
    have = {c.name: c for c in found}
    problems = [f"missing column {name}" for name in want.keys() - have.keys()]
    problems += [f"extra column {name}" for name in have.keys() - want.keys()]
    for name in want.keys() & have.keys():
        if (want[name].type, want[name].not_null) != (have[name].type, have[name].not_null):
            problems.append(
                f"column {name} is {have[name].type or 'untyped'}"
                f"{' NOT NULL' if have[name].not_null else ''}, expected {want[name].type}"
                f"{' NOT NULL' if want[name].not_null else ''}"
            )
    return sorted(problems)
