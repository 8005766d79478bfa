"""Helpers for the importer tests (tests/test_import_*.py): running ledger_import, reading the
ledger it wrote, reading JSONL inputs plainly, and building other programs' SQLite ledgers."""

import json
import shutil
import sqlite3
from contextlib import closing
from io import StringIO
from itertools import count
from pathlib import Path

import pytest
from django.core.management import CommandError, call_command

from ledgerfacts import schema

IMPORT_FIXTURES = Path(__file__).parent / "fixtures" / "import"
IMPORTED_TABLES = (*schema.AGENTS_TABLES, "compactions")
# The error of an import that skipped malformed records or left a session out (a non-zero exit).
LEFT_OUT = r"malformed record\(s\) skipped|session\(s\) left out entirely"


def answered_call(alias: str = "") -> str:
    """SQL true for a Codex tool call that got its output (when is not always known: an output
    without a time of its own leaves the call's end unknown)."""
    column = f"{alias}." if alias else ""
    return (
        f"{column}status IN ('completed', 'failed')"
        f" AND coalesce({column}error, '') <> 'no output for this call in the rollout'"
    )


def run_import(fmt: str, *paths, ledger: Path | None = None, left_out: str | None = None) -> str:
    """`ledger_import FMT PATH...` into `ledger` (else the configured ledger); its summary.

    An import that leaves something out fails (a non-zero exit): pass `left_out`, a pattern of
    the error it must then end with (e.g. "malformed record"), to get its summary all the same.
    """
    into = ["--ledger", str(ledger)] if ledger else []
    out = StringIO()
    args = ("ledger_import", fmt, *map(str, paths), *into)
    if left_out is None:
        call_command(*args, stdout=out, stderr=StringIO())
    else:
        with pytest.raises(CommandError, match=left_out):
            call_command(*args, stdout=out, stderr=StringIO())
    return out.getvalue()


def query(ledger: Path, sql: str, *params) -> list[tuple]:
    with closing(sqlite3.connect(ledger)) as conn:
        return conn.execute(sql, params).fetchall()


def one(ledger: Path, sql: str, *params):
    """The first value of the first row."""
    return query(ledger, sql, *params)[0][0]


def table_counts(ledger: Path, tables=schema.AGENTS_TABLES) -> dict[str, int]:
    return {table: one(ledger, f"SELECT count(*) FROM {table}") for table in tables}


def all_rows(ledger: Path) -> dict[str, list]:
    """Every imported row by table, sorted: two ledgers holding the same rows compare equal."""
    return {t: sorted(query(ledger, f"SELECT * FROM {t}"), key=repr) for t in IMPORTED_TABLES}


def comparable_rows(conn, table: str) -> set[tuple]:
    """A table's rows, from a sqlite3 or psycopg connection, in a form both compare equal in
    (PostgreSQL's true is SQLite's 1; its 2 equals SQLite's 2.0)."""
    columns = ", ".join(c.name for c in schema.expected_columns()[table])
    found = conn.execute(f"SELECT {columns} FROM {table}").fetchall()
    return {tuple(int(v) if isinstance(v, bool) else v for v in row) for row in found}


def json_objects(*paths: Path) -> list[dict]:
    """The JSON object lines of JSONL files, read plainly: any other line is passed over."""
    found = []
    for path in paths:
        for line in path.read_text().splitlines():
            try:
                value = json.loads(line)
            except ValueError:
                continue
            if isinstance(value, dict):
                found.append(value)
    return found


def plain_reading(path: Path) -> dict:
    """The session and response items of a Codex rollout file (any layout), read without the
    importer."""
    if path.suffix == ".json":
        document = json.loads(path.read_text())
        return {"meta": document["session"], "items": document["items"]}
    lines = json_objects(path)
    if any("payload" in line for line in lines):
        meta = next(line["payload"] for line in lines if line.get("type") == "session_meta")
        items = [line["payload"] for line in lines if line.get("type") == "response_item"]
        return {"meta": meta, "items": items}
    return {"meta": lines[0], "items": [line for line in lines[1:] if "type" in line]}


class GrowingCopy:
    """A copy of a JSONL file holding only its first `cut` lines until grow() appends the rest,
    as an agent appends to its transcript while it runs."""

    def __init__(self, original: Path, cut: int, folder: Path):
        lines = original.read_text().splitlines(keepends=True)
        self.path = folder / original.name
        self.path.write_text("".join(lines[:cut]))
        self._rest = lines[cut:]

    def grow(self) -> None:
        with self.path.open("a") as file:
            file.writelines(self._rest)


def assert_a_second_import_adds_nothing(fmt: str, source: Path, ledger: Path) -> None:
    run_import(fmt, source, ledger=ledger)
    before = table_counts(ledger)
    summary = run_import(fmt, source, ledger=ledger)
    after = table_counts(ledger)
    assert after == before, f"{after} != {before}"
    for table in schema.AGENTS_TABLES:
        assert f"{table}: 0 added, {before[table]} already there" in summary, summary


def assert_sessions_render(client, session_ids) -> None:
    """Each session's page answers and its JSON lists no problems with its rows."""
    for session_id in session_ids:
        assert client.get(f"/sessions/{session_id}/").status_code == 200, session_id
        detail = client.get(f"/sessions/{session_id}/?format=json").json()
        assert detail["problems"] == [], (session_id, detail["problems"])


class SourceLedger:
    """Another program's SQLite ledger, created from `schema_sql` when the file is new; every
    row is committed at once, as those programs write."""

    def __init__(
        self, path: Path, schema_sql: Path, conn: sqlite3.Connection | None = None, first_id=1
    ):
        self.path = path
        self.conn = conn or sqlite3.connect(path, isolation_level=None)
        if not self.conn.execute("SELECT 1 FROM sqlite_master").fetchone():
            self.conn.executescript(schema_sql.read_text())
        self._ids = count(first_id)

    def insert(self, table: str, *, verb: str = "INSERT", **row) -> dict:
        columns = ", ".join(row)
        marks = ", ".join("?" for _ in row)
        self.conn.execute(f"{verb} INTO {table} ({columns}) VALUES ({marks})", list(row.values()))
        return row

    def count(self, sql: str, *params) -> int:
        return self.conn.execute(sql, params).fetchone()[0]


def home_with_history(folder: Path) -> Path:
    """A home folder holding Claude Code and Codex history where the agents keep it."""
    home = folder / "home"
    projects = home / ".claude" / "projects" / "-home-ada-shop"
    shutil.copytree(IMPORT_FIXTURES / "samples" / "claude-code", projects)
    day = home / ".codex" / "sessions" / "2025" / "10" / "01"
    day.mkdir(parents=True)
    for rollout in (IMPORT_FIXTURES / "codex").glob("rollout-*.jsonl"):
        shutil.copy(rollout, day)
    return home
