"""The search index on SQLite FTS5: everything engine-specific about search, in one module.

Three tables in ledgerweb's own database:
- search_row: one row per indexed ledger row, with what a result shows and filters on: kind,
  ids, status, persona, channel.
- search_item: one row per indexed piece of text (a field of a ledger row, or one chunk of a
  huge field): its search_row, field and chunk offset.
- search_text: a contentless FTS5 table over the items (rowid = search_item.id). It keeps only
  the index, not the text, which stays in the ledger: snippets are read from there.

An item's id is its time: (Unix ms << 20) + a serial. So "newest first" and a time range are a
walk of the FTS index in rowid order, which FTS5 does without sorting, and the id of the last
hit shown is the cursor of the next page.

When ledgerweb's own database is PostgreSQL, the same interface runs on its full-text search
(a tsvector column with a GIN index): engine_postgres.py, to which the functions below hand the
parts that differ.
"""

import sqlite3
import time
from contextlib import contextmanager
from dataclasses import dataclass

from django.db import connection

from ledgerweb.state_db import on_postgres
from search import engine_postgres

# Letters, digits and '_' make a token: session_fork and run_terminal_command_v2 are one word
# each, file paths are their parts. Case and diacritics are folded.
TOKENIZER = "unicode61 tokenchars '_'"
SERIAL_BITS = 20
MAX_MS = (1 << 62 >> SERIAL_BITS) - 1  # a time beyond this (junk) is clamped

TABLES = [
    """CREATE TABLE IF NOT EXISTS search_row (
        id INTEGER PRIMARY KEY, kind TEXT NOT NULL, item_id TEXT NOT NULL,
        session_id TEXT, turn_id TEXT, status TEXT, persona TEXT, channel TEXT,
        open INTEGER NOT NULL DEFAULT 0)""",
    # Only open rows are ever looked up by item (to read them again): a partial index.
    "CREATE INDEX IF NOT EXISTS search_row_open ON search_row(kind, item_id) WHERE open = 1",
    """CREATE TABLE IF NOT EXISTS search_item (
        id INTEGER PRIMARY KEY, row INTEGER NOT NULL, field TEXT NOT NULL,
        chunk INTEGER NOT NULL DEFAULT 0)""",
    f"""CREATE VIRTUAL TABLE IF NOT EXISTS search_text
        USING fts5(body, content='', columnsize=0, tokenize="{TOKENIZER}")""",
]


class QueryTooSlow(Exception):
    """A search ran past its time limit."""


class QueryNotUnderstood(Exception):
    """The engine could not parse a query (query.py catches most cases before)."""


@dataclass
class Doc:
    """One piece of text to index, and what a hit on it shows."""

    kind: str  # message, tool_call, request, session
    item_id: str
    field: str  # user, assistant, tool_name, parameters, result, error, error_message...
    text: str
    at: int  # Unix ms: the row's time
    chunk: int = 0  # byte offset of this piece in the field (huge fields come in chunks)
    session_id: str | None = None
    turn_id: str | None = None
    status: str | None = None
    persona: str | None = None
    channel: str | None = None
    open: bool = False  # the row may still change: re-read at each step until it settles


def create_tables(cursor) -> None:
    if cursor.db.vendor == "postgresql":
        engine_postgres.create_tables(cursor)
        return
    for sql in TABLES:
        cursor.execute(sql)


def clear() -> None:
    if on_postgres():
        engine_postgres.clear()
        return
    with connection.cursor() as cursor:
        cursor.execute("DELETE FROM search_row")
        cursor.execute("DELETE FROM search_item")
        # A contentless FTS5 table is emptied by its own command, not by DELETE.
        cursor.execute("INSERT INTO search_text (search_text) VALUES ('delete-all')")


def first_id(at) -> int:
    at = at if isinstance(at, int) else 0
    return min(max(at, 0), MAX_MS) << SERIAL_BITS


def add(docs: list[Doc]) -> None:
    """Index docs: a search_row per ledger row (docs of one row come together), and each doc
    as an item with the next free id at its time. Runs under the index's write lock, so the
    row ids counted from max(id) are free."""
    if not docs:
        return
    with connection.cursor() as cursor:
        cursor.execute("SELECT coalesce(max(id), 0) FROM search_row")
        (row_id,) = cursor.fetchone()
        next_free: dict[int, int] = {}
        rows, items, texts = [], [], []
        last_key = None
        for doc in docs:
            if (doc.kind, doc.item_id) != last_key:
                last_key = (doc.kind, doc.item_id)
                row_id += 1
                rows.append(
                    (row_id, doc.kind, doc.item_id, doc.session_id, doc.turn_id, doc.status,
                     doc.persona, doc.channel, int(doc.open))
                )  # fmt: skip
            base = first_id(doc.at)
            if base not in next_free:
                cursor.execute(
                    "SELECT max(id) FROM search_item WHERE id >= %s AND id < %s",
                    [base, base + (1 << SERIAL_BITS)],
                )
                (top,) = cursor.fetchone()
                next_free[base] = base if top is None else top + 1
            item_id = next_free[base]
            next_free[base] += 1
            items.append((item_id, row_id, doc.field, doc.chunk))
            texts.append((item_id, doc.text))
        cursor.executemany(
            "INSERT INTO search_row (id, kind, item_id, session_id, turn_id, status, persona, "
            "channel, open) VALUES (%s, %s, %s, %s, %s, %s, %s, %s, %s)",
            rows,
        )
        if on_postgres():
            engine_postgres.insert_items(cursor, items, texts)
            return
        cursor.executemany(
            "INSERT INTO search_item (id, row, field, chunk) VALUES (%s, %s, %s, %s)", items
        )
        cursor.executemany("INSERT INTO search_text (rowid, body) VALUES (%s, %s)", texts)


def forget(kind: str, item_ids: list[str]) -> None:
    """Take open rows out of the results (before indexing them again). Their items and the
    words the contentless FTS index keeps for them stay, under a row that is gone: a search
    joins them away, and a rebuild (ledger_index --rebuild) drops them. Only rows that were
    still changing are ever forgotten, so little is left behind."""
    with connection.cursor() as cursor:
        for start in range(0, len(item_ids), 500):
            part = item_ids[start : start + 500]
            marks = ", ".join(["%s"] * len(part))
            cursor.execute(
                f"DELETE FROM search_row WHERE open = 1 AND kind = %s AND item_id IN ({marks})",
                [kind, *part],
            )
        if on_postgres():
            engine_postgres.forget_items(cursor)


def open_items(limit: int) -> list[tuple[str, str]]:
    """(kind, item_id) of rows indexed while they could still change."""
    with connection.cursor() as cursor:
        cursor.execute("SELECT kind, item_id FROM search_row WHERE open = 1 LIMIT %s", [limit])
        return cursor.fetchall()


@dataclass
class Filters:
    kinds: list[str]
    persona: str = ""
    channel: str = ""
    status: str = ""
    since_ms: int | None = None
    until_ms: int | None = None
    session_id: str = ""


def _where(match: str, filters: Filters, before: int | None) -> tuple[str, list]:
    if on_postgres():
        match_sql, item_id = engine_postgres.MATCH_SQL, engine_postgres.ID_COLUMN
        match = engine_postgres.tsquery(match)
    else:
        match_sql, item_id = "search_text MATCH %s", ITEM_ID
    clauses, params = [match_sql], [match]
    upper = first_id(filters.until_ms) if filters.until_ms is not None else None
    if before is not None:
        upper = before if upper is None else min(upper, before)
    if upper is not None:
        clauses.append(f"{item_id} < %s")
        params.append(upper)
    if filters.since_ms is not None:
        clauses.append(f"{item_id} >= %s")
        params.append(first_id(filters.since_ms))
    if filters.kinds:
        clauses.append(f"r.kind IN ({', '.join(['%s'] * len(filters.kinds))})")
        params.extend(filters.kinds)
    for column in ("persona", "channel", "status", "session_id"):
        if getattr(filters, column):
            clauses.append(f"r.{column} = %s")
            params.append(getattr(filters, column))
    return " AND ".join(clauses), params


ITEM_ID = "search_text.rowid"
HIT_COLUMNS = "i.id, r.kind, r.item_id, i.field, i.chunk, r.session_id, r.turn_id, r.status"
# The items a search matches, with their rows (an item whose row was forgotten drops out).
MATCHED = (
    "search_text JOIN search_item i ON i.id = search_text.rowid JOIN search_row r ON r.id = i.row"
)


def _matched() -> tuple[str, str]:
    """The FROM clause of matched items with their rows, and the items' id (time) column."""
    if on_postgres():
        return engine_postgres.MATCHED, engine_postgres.ID_COLUMN
    return MATCHED, ITEM_ID


def search(match: str, filters: Filters, before: int | None, limit: int) -> list[tuple]:
    """The newest `limit` hits older than the id `before`: rows of HIT_COLUMNS."""
    where, params = _where(match, filters, before)
    matched, item_id = _matched()
    sql = f"SELECT {HIT_COLUMNS} FROM {matched} WHERE {where} ORDER BY {item_id} DESC LIMIT %s"
    return _run(sql, [*params, limit])


def count(match: str, filters: Filters, cap: int) -> int:
    """How many hits, counting at most cap + 1."""
    where, params = _where(match, filters, None)
    sql = f"SELECT count(*) FROM (SELECT 1 FROM {_matched()[0]} WHERE {where} LIMIT %s) hits"
    return _run(sql, [*params, cap + 1])[0][0]


def turn_ids(match: str, filters: Filters, limit: int) -> list[str]:
    """The turns (oldest first) whose messages, tool calls or requests match: find in a session."""
    where, params = _where(match, filters, None)
    matched, item_id = _matched()
    sql = (
        f"SELECT turn_id FROM (SELECT r.turn_id, min({item_id}) AS first FROM {matched} "
        f"WHERE {where} AND r.turn_id IS NOT NULL GROUP BY r.turn_id LIMIT %s) turns ORDER BY first"
    )
    return [row[0] for row in _run(sql, [*params, limit])]


def size_bytes() -> int:
    """The index's size on disk (both tables and their indexes), where SQLite can tell."""
    if on_postgres():
        return engine_postgres.size_bytes()
    try:
        rows = _run("SELECT sum(pgsize) FROM dbstat WHERE name LIKE 'search\\_%' ESCAPE '\\'", [])
    except sqlite3.Error:
        return 0
    return rows[0][0] or 0


# Every search has a time limit, like every ledger query (ledgerweb.sqlite), checked every
# PROGRESS_STEPS SQLite instructions.
QUERY_LIMIT_S = 2.0
PROGRESS_STEPS = 1000


def _run(sql: str, params: list) -> list[tuple]:
    if on_postgres():
        return engine_postgres.run(sql, params, QUERY_LIMIT_S, QueryTooSlow, QueryNotUnderstood)
    with connection.cursor() as cursor, _time_limit(QUERY_LIMIT_S):
        try:
            cursor.execute(sql, params)
            return cursor.fetchall()
        except Exception as error:
            text = str(error)
            if "interrupted" in text:
                raise QueryTooSlow from error
            if "fts5" in text or "syntax error" in text or "malformed MATCH" in text:
                raise QueryNotUnderstood(text) from error
            raise


@contextmanager
def _time_limit(seconds: float):
    connection.ensure_connection()
    raw = connection.connection
    ends = time.monotonic() + seconds
    raw.set_progress_handler(lambda: 1 if time.monotonic() > ends else 0, PROGRESS_STEPS)
    try:
        yield
    finally:
        raw.set_progress_handler(None, 0)
