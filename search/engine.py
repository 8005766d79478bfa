"""The search index on SQLite FTS5: everything engine-specific about search, in one module.

Three tables in ledgerweb's own database:
- search_row: one row per indexed document, which is a ledger row (all its text fields) or one
  later chunk of a huge field. It keeps small integers only: the kind, the ledger rowid (its
  ids, text and current status are read back from the ledger), the chunk, and the values
  filters need (status, persona, channel, session) as ids of search_value. A row of several
  documents (a field over 64 KB) has `head`, its first document's id, on each of them; each
  of them also holds the tokens PIECES and piece_token(kind, src), so that a query finds such
  rows quickly and decides each one as a whole (search/results.py).
- search_pending: rows whose later chunks are still to be indexed (where the next one starts):
  a huge value is indexed a slice per step, each in a short transaction (indexer.py).
- search_value: each distinct status, persona, channel and session id, once.
- search_text: a contentless FTS5 table over the documents (rowid = search_row.id) with
  detail=none: it records which documents hold a token, not where. The tokens are cut in
  Python (search/words.py, the same on PostgreSQL) and handed to FTS5 as words separated by
  spaces, so its `ascii` tokenizer keeps each whole. That keeps the index at a
  fraction of the text (docs/benchmarks.md); a phrase is found as all its words here, then
  checked on the text read back from the ledger (search/results.py).

A document's id is its time: its Unix ms, or the next free id after it when that is taken (a
burst of rows in one ms). So "newest first" and a time range are a walk of the FTS index in
rowid order, which FTS5 does without sorting (a burst's rows may pass a time limit by a few
ms), and the id of the last document shown is the cursor of the next page.

When ledgerweb's own database is PostgreSQL, the same interface and layout run on its full-text
search (the words as a tsvector column of search_row with a GIN index): engine_postgres.py, to
which the functions below hand the parts that differ. Ids, values, filters, the time limit and
the phrase check (results.py) are the same on both.
"""

import sqlite3
import time
from contextlib import contextmanager
from dataclasses import dataclass

from django.db import connection

from ledgerweb.state_db import on_postgres
from search import engine_postgres

# The tokens arrive cut and folded (search/words.py): FTS5 only splits them at spaces (every
# character past ASCII, and '_', is part of a token for the ascii tokenizer).
TOKENIZER = "ascii tokenchars '_'"
# Tokens no query can make (words.py never yields '·'): on every document of a row of several
# documents, and on each of one row's documents.
PIECES = "·pieces"
# A document's id is its time in ms (or the next free id): the gaps between the ids of a word's
# documents stay small, and so its list in the index (a varint per gap).
MAX_MS = (1 << 62) - 1  # a time beyond this (junk) is clamped
# The kinds of ledger row, as search_row stores them.
KINDS = ("message", "tool_call", "request", "session", "compaction")
KIND_CODES = {kind: code for code, kind in enumerate(KINDS)}
# The row's values kept (as search_value ids) for filters.
VALUE_COLUMNS = ("status", "persona", "channel", "session")

PENDING_TABLE = """CREATE TABLE IF NOT EXISTS search_pending (
    kind INTEGER NOT NULL, src BIGINT NOT NULL, head BIGINT NOT NULL, field INTEGER NOT NULL,
    next_offset BIGINT NOT NULL, PRIMARY KEY (kind, src))"""
TABLES = [
    """CREATE TABLE IF NOT EXISTS search_row (
        id INTEGER PRIMARY KEY, kind INTEGER NOT NULL, src INTEGER NOT NULL,
        chunk INTEGER NOT NULL DEFAULT 0, field INTEGER NOT NULL DEFAULT 0,
        status INTEGER, persona INTEGER, channel INTEGER, session INTEGER,
        open INTEGER NOT NULL DEFAULT 0, head INTEGER)""",
    # Only open rows are ever looked up by ledger row (to read them again): a partial index.
    "CREATE INDEX IF NOT EXISTS search_row_open ON search_row(kind, src) WHERE open != 0",
    "CREATE INDEX IF NOT EXISTS search_row_head ON search_row(head) WHERE head IS NOT NULL",
    PENDING_TABLE,
    "CREATE TABLE IF NOT EXISTS search_value (id INTEGER PRIMARY KEY, text TEXT NOT NULL UNIQUE)",
    f"""CREATE VIRTUAL TABLE IF NOT EXISTS search_text
        USING fts5(body, content='', columnsize=0, detail=none, tokenize="{TOKENIZER}")""",
]
DROP = ["DROP TABLE IF EXISTS search_text", "DROP TABLE IF EXISTS search_item"] + [
    f"DROP TABLE IF EXISTS {name}" for name in ("search_row", "search_value", "search_pending")
]


class QueryTooSlow(Exception):
    """A search ran past its time limit."""


class QueryNotUnderstood(Exception):
    """The engine could not parse a query (query.py catches most cases before)."""


def piece_token(kind: str, src: int) -> str:
    """The token every document of one row of several documents holds."""
    return f"·{KIND_CODES[kind]}x{src}"


@dataclass
class Doc:
    """One document to index (a ledger row's text fields, or one chunk of a huge field), and
    the values filters need."""

    kind: str  # message, tool_call, request, session, compaction
    src: int  # the ledger row's rowid
    tokens: list[str]  # its distinct tokens (search/words.py), cut before the write lock
    at: int  # Unix ms: the row's time
    chunk: int = 0  # byte offset of this piece in its field (0: the row's first pieces)
    field: int = 0  # the field a chunk belongs to (its place in the kind's fields)
    session_id: str | None = None
    status: str | None = None
    persona: str | None = None
    channel: str | None = None
    # The row may still change: the fingerprint of what it was when indexed (indexer.py reads it
    # again and indexes it again when that changed); 0: settled.
    open: int = 0
    # A field over one chunk (indexer.CHUNK), the first such: the row's later chunks are
    # documents of their own (indexer.py indexes them a slice per step).
    long_field: int | None = None

    @property
    def pieces(self) -> bool:
        """Whether this is the first document of several."""
        return self.long_field is not None


def create_tables(cursor) -> None:
    on_pg = cursor.db.vendor == "postgresql"
    tables = [*engine_postgres.TABLES, PENDING_TABLE] if on_pg else TABLES
    for sql in tables:
        cursor.execute(sql)


def recreate_tables(cursor) -> None:
    """Drop the index tables (of any earlier layout) and create them empty."""
    for sql in DROP:
        cursor.execute(sql)
    create_tables(cursor)


def clear() -> None:
    if on_postgres():
        engine_postgres.clear()
        return
    with connection.cursor() as cursor:
        cursor.execute("DELETE FROM search_row")
        cursor.execute("DELETE FROM search_value")
        cursor.execute("DELETE FROM search_pending")
        # A contentless FTS5 table is emptied by its own command, not by DELETE.
        cursor.execute("INSERT INTO search_text (search_text) VALUES ('delete-all')")


def first_id(at) -> int:
    at = at if isinstance(at, int) else 0
    return min(max(at, 0), MAX_MS)


def add(docs: list[Doc]) -> dict[tuple[str, int], int]:
    """Index docs (rows' first documents), each with the next free id at its time. Runs under
    the index's write lock, so the ids counted from max(id) are free. Returns the id of each
    row of several documents (its head), by (kind, src)."""
    if not docs:
        return {}
    heads = {}
    with connection.cursor() as cursor:
        values = _value_ids(cursor, docs)
        ids = _IdAllocator(cursor)
        rows, texts = [], []
        for doc in docs:
            doc_id = ids.take(first_id(doc.at))
            tokens = doc.tokens
            if doc.pieces:
                heads[(doc.kind, doc.src)] = doc_id
                tokens = [*tokens, PIECES, piece_token(doc.kind, doc.src)]
            filtered = (doc.status, doc.persona, doc.channel, doc.session_id)
            rows.append(
                (doc_id, KIND_CODES[doc.kind], doc.src, doc.chunk, doc.field,
                 *(values.get(_value(v)) for v in filtered), doc.open,
                 doc_id if doc.pieces else None)
            )  # fmt: skip
            texts.append((doc_id, tokens))
        _insert(cursor, rows, texts)
    return heads


def add_pieces(kind: str, src: int, head: int, pieces: list[tuple[int, int, list[str]]]) -> None:
    """Index later chunks of a row of several documents: (field, byte offset, tokens) each,
    with the values of its first document (head), at ids after it."""
    with connection.cursor() as cursor:
        cursor.execute(
            "SELECT status, persona, channel, session, open FROM search_row WHERE id = %s",
            [head],
        )
        found = cursor.fetchone()
        if found is None:  # the row was forgotten meanwhile (read again): nothing to add to
            return
        ids = _IdAllocator(cursor)
        rows, texts = [], []
        for field_index, offset, tokens in pieces:
            doc_id = ids.take(head)
            rows.append((doc_id, KIND_CODES[kind], src, offset, field_index, *found, head))
            texts.append((doc_id, [*tokens, PIECES, piece_token(kind, src)]))
        _insert(cursor, rows, texts)


def _insert(cursor, rows: list[tuple], texts: list[tuple[int, list[str]]]) -> None:
    if on_postgres():
        engine_postgres.insert_rows(cursor, rows, texts)
        return
    cursor.executemany(
        "INSERT INTO search_row (id, kind, src, chunk, field, status, persona, channel, "
        "session, open, head) VALUES (%s, %s, %s, %s, %s, %s, %s, %s, %s, %s, %s)",
        rows,
    )
    cursor.executemany(
        "INSERT INTO search_text (rowid, body) VALUES (%s, %s)",
        [(doc_id, " ".join(tokens)) for doc_id, tokens in texts],
    )


# -- Rows whose later chunks are still to be indexed ---------------------------------------------


@dataclass
class Pending:
    kind: str
    src: int
    head: int
    field: int
    next_offset: int


def pending(limit: int) -> list[Pending]:
    with connection.cursor() as cursor:
        cursor.execute(
            "SELECT kind, src, head, field, next_offset FROM search_pending ORDER BY head LIMIT %s",
            [limit],
        )
        return [Pending(KINDS[k], src, head, f, at) for k, src, head, f, at in cursor.fetchall()]


def pending_count() -> int:
    with connection.cursor() as cursor:
        cursor.execute("SELECT count(*) FROM search_pending")
        return cursor.fetchone()[0]


def set_pending(kind: str, src: int, head: int, field: int | None, next_offset: int) -> None:
    """Where a row's next chunk starts; field None: the row is done."""
    with connection.cursor() as cursor:
        cursor.execute(
            "DELETE FROM search_pending WHERE kind = %s AND src = %s", [KIND_CODES[kind], src]
        )
        if field is not None:
            cursor.execute(
                "INSERT INTO search_pending (kind, src, head, field, next_offset)"
                " VALUES (%s, %s, %s, %s, %s)",
                [KIND_CODES[kind], src, head, field, next_offset],
            )


def is_pending(item: Pending) -> bool:
    """Whether a pending row is still where `item` says (no other step moved it meanwhile)."""
    with connection.cursor() as cursor:
        cursor.execute(
            "SELECT 1 FROM search_pending WHERE kind = %s AND src = %s AND head = %s"
            " AND field = %s AND next_offset = %s",
            [KIND_CODES[item.kind], item.src, item.head, item.field, item.next_offset],
        )
        return cursor.fetchone() is not None


class _IdAllocator:
    """Free document ids: a document's time in ms, or the next id after it that is free (rows
    of one millisecond, a burst, lie side by side)."""

    def __init__(self, cursor):
        self.cursor = cursor
        self.next_free: dict[int, int] = {}
        self.used: set[int] = set()

    def take(self, base: int) -> int:
        doc_id = self.next_free.get(base, base)
        while True:
            doc_id = self._free_from(doc_id)
            if doc_id not in self.used:
                break
            doc_id += 1
        self.next_free[base] = doc_id + 1
        self.used.add(doc_id)
        return doc_id

    def _free_from(self, low: int) -> int:
        """The smallest id >= low that search_row does not hold."""
        self.cursor.execute(
            "SELECT CASE WHEN NOT EXISTS (SELECT 1 FROM search_row WHERE id = %s) THEN %s"
            " ELSE (SELECT r.id + 1 FROM search_row r WHERE r.id >= %s AND NOT EXISTS"
            " (SELECT 1 FROM search_row n WHERE n.id = r.id + 1) ORDER BY r.id LIMIT 1) END",
            [low, low, low],
        )
        return self.cursor.fetchone()[0]


def _value(value) -> str | None:
    return None if value is None else str(value)


def _value_ids(cursor, docs: list[Doc]) -> dict[str, int]:
    """search_value's id of each status, persona, channel and session id of the docs."""
    wanted = sorted(
        {_value(v) for d in docs for v in (d.status, d.persona, d.channel, d.session_id)} - {None}
    )
    cursor.executemany(
        "INSERT INTO search_value (text) VALUES (%s) ON CONFLICT DO NOTHING",
        [(v,) for v in wanted],
    )
    found = {}
    for start in range(0, len(wanted), 500):
        part = wanted[start : start + 500]
        if on_postgres():
            found.update(engine_postgres.value_ids(cursor, part))
            continue
        marks = ", ".join(["%s"] * len(part))
        cursor.execute(f"SELECT text, id FROM search_value WHERE text IN ({marks})", part)
        found.update(cursor.fetchall())
    return found


def forget(kind: str, srcs: list[int]) -> None:
    """Take open rows out of the results (before indexing them again). The words the contentless
    FTS index keeps for them stay, under a document that is gone: a search joins them away, and
    a rebuild (ledger_index --rebuild) drops them. Only rows that were still changing are ever
    forgotten, so little is left behind."""
    with connection.cursor() as cursor:
        for start in range(0, len(srcs), 500):
            part = srcs[start : start + 500]
            marks = ", ".join(["%s"] * len(part))
            cursor.execute(
                f"DELETE FROM search_row WHERE open != 0 AND kind = %s AND src IN ({marks})",
                [KIND_CODES[kind], *part],
            )
            cursor.execute(
                f"DELETE FROM search_pending WHERE kind = %s AND src IN ({marks})",
                [KIND_CODES[kind], *part],
            )


def open_items(limit: int) -> list[tuple[str, int, int]]:
    """(kind, ledger rowid, fingerprint) of rows indexed while they could still change."""
    with connection.cursor() as cursor:
        cursor.execute(
            "SELECT kind, src, max(open) FROM search_row WHERE open != 0 GROUP BY kind, src"
            " LIMIT %s",
            [limit],
        )
        return [(KINDS[kind], src, fingerprint) for kind, src, fingerprint in cursor.fetchall()]


@dataclass
class Filters:
    kinds: list[str]
    persona: str = ""
    channel: str = ""
    status: str = ""
    since_ms: int | None = None
    until_ms: int | None = None
    session_id: str = ""
    # Only rows of annotated turns and sessions (annotations.store.Scope), kept by the walk of
    # search/results.py: annotations live in another database than the index.
    marked: object | None = None


def _where(
    match: str, filters: Filters, before: int | None, rows_of_pieces: bool = False
) -> tuple[str, list]:
    """The WHERE clause of a search: rows of one document (rows_of_pieces False), or the
    documents of rows of several, placed at their first document's id (their head)."""
    match_sql, doc_id, value_id = "search_text MATCH %s", DOC_ID, VALUE_ID_SQL
    if on_postgres():
        match_sql, doc_id = engine_postgres.MATCH_SQL, engine_postgres.ID_COLUMN
        value_id, match = engine_postgres.VALUE_ID_SQL, engine_postgres.tsquery(match)
    clauses, params = [match_sql], [match]
    if rows_of_pieces:
        doc_id = "r.head"
    else:
        clauses.append("r.head IS NULL")
    upper = first_id(filters.until_ms) if filters.until_ms is not None else None
    if before is not None:
        upper = before if upper is None else min(upper, before)
    if upper is not None:
        clauses.append(f"{doc_id} < %s")
        params.append(upper)
    if filters.since_ms is not None:
        clauses.append(f"{doc_id} >= %s")
        params.append(first_id(filters.since_ms))
    if filters.kinds:
        clauses.append(f"r.kind IN ({', '.join(['%s'] * len(filters.kinds))})")
        params.extend(KIND_CODES[kind] for kind in filters.kinds)
    wanted = (filters.status, filters.persona, filters.channel, filters.session_id)
    for column, value in zip(VALUE_COLUMNS, wanted, strict=True):
        if value:
            clauses.append(f"r.{column} = {value_id}")
            params.extend([value] * value_id.count("%s"))
    return " AND ".join(clauses), params


@dataclass
class Match:
    """A document the index matched: its id (the cursor) and where its text is in the ledger."""

    id: int
    kind: str
    src: int  # the ledger row's rowid
    chunk: int
    field: int


DOC_ID = "search_text.rowid"
VALUE_ID_SQL = "(SELECT id FROM search_value WHERE text = %s)"
MATCHED = "search_text JOIN search_row r ON r.id = search_text.rowid"


def _matched() -> tuple[str, str]:
    """The FROM clause of matched documents with their rows, and the documents' id column."""
    if on_postgres():
        return engine_postgres.MATCHED, engine_postgres.ID_COLUMN
    return MATCHED, DOC_ID


def search(match: str, filters: Filters, before: int | None, limit: int) -> list[Match]:
    """The newest `limit` rows of one document older than the id `before` that hold the query's
    words (an FTS5 expression without phrases: detail=none keeps no positions). Rows of several
    documents are found by pieces_rows and decided as a whole (search/results.py)."""
    where, params = _where(match, filters, before)
    matched, doc_id = _matched()
    sql = (
        f"SELECT r.id, r.kind, r.src, r.chunk, r.field FROM {matched} WHERE {where} "
        f"ORDER BY {doc_id} DESC LIMIT %s"
    )
    return [
        Match(doc_id, KINDS[kind], src, chunk, field)
        for doc_id, kind, src, chunk, field in _run(sql, [*params, limit])
    ]


def pieces_rows(
    any_match: str, filters: Filters, before: int | None, limit: int
) -> list[tuple[int, str, int]]:
    """The newest `limit` rows of several documents (head id < before) with a document holding
    any of the query's words (any_match): (head, kind, src) each, newest first. Their
    documents all hold PIECES, so FTS5 walks only those."""
    where, params = _where(f'({any_match}) AND "{PIECES}"', filters, before, rows_of_pieces=True)
    sql = (
        f"SELECT r.head, r.kind, r.src FROM {_matched()[0]} WHERE {where} "
        "GROUP BY r.head, r.kind, r.src ORDER BY r.head DESC LIMIT %s"
    )
    return [(head, KINDS[kind], src) for head, kind, src in _run(sql, [*params, limit])]


def docs_holding(term: str, rows: list[tuple[str, int]]) -> dict[tuple[str, int], list]:
    """Of these rows of several documents ((kind, src) each), the documents holding a term's
    words (an FTS5 expression): (kind, src) → [(field, chunk)], in field and chunk order."""
    if not rows:
        return {}
    tokens = " OR ".join(f'"{piece_token(kind, src)}"' for kind, src in rows)
    match = f"({term}) AND ({tokens})"
    matched = MATCHED
    match_sql = "search_text MATCH %s"
    if on_postgres():
        matched, match_sql = engine_postgres.MATCHED, engine_postgres.MATCH_SQL
        match = engine_postgres.tsquery(match)
    found: dict[tuple[str, int], list] = {}
    sql = f"SELECT r.kind, r.src, r.field, r.chunk FROM {matched} WHERE {match_sql}"
    for kind, src, field, chunk in sorted(_run(sql, [match]), key=lambda r: (r[3] > 0, r[2], r[3])):
        found.setdefault((KINDS[kind], src), []).append((field, chunk))
    return found


def count(match: str, filters: Filters, cap: int) -> int:
    """How many rows of one document hold the query's words, counting at most cap + 1."""
    where, params = _where(match, filters, None)
    sql = f"SELECT count(*) FROM (SELECT 1 FROM {_matched()[0]} WHERE {where} LIMIT %s) hits"
    return _run(sql, [*params, cap + 1])[0][0]


def size_bytes() -> int:
    """The index's size on disk (its tables and their indexes), where SQLite can tell."""
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
