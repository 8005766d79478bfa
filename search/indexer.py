"""Builds the search index from the ledger, incrementally: each step reads only rows added since
the last one (rowid above the table's high-water mark), plus the rows indexed while they could
still change (a pending tool call, a turn still streaming, a request still processing), which are
read again until they settle. See docs/decisions.md, "Search". A PostgreSQL ledger has rowid as a
column, numbered at insert, its writers committing in that order (ledgerweb/sql/postgres/
rowids.sql): the same SQL runs there.

The index belongs to one ledger: its path (or database) and an anchor (the ledger's first turn,
id and time) that must still be there, and no table may hold fewer rows than the index has seen.
A replaced or rebuilt ledger fails the check and the index starts again from nothing, never
mixing the two.

Every step is bounded in time and in bytes, and never holds ledgerweb's own database while it
reads the ledger or cuts words: rows are read and their tokens cut first, then written in one
short transaction (which checks that no other worker moved the mark meanwhile). A row's first
document holds its fields' first CHUNK bytes; a field longer than that goes on in later chunks,
indexed SLICE bytes per step and transaction (search_pending says where the next starts), so a
60 MB tool result is indexed over many short steps instead of one long one that a worker's
timeout kills while sign-ins wait for the lock. Text is read as bytes and decoded leniently, so
invalid UTF-8 cannot stop the build.
"""

import math
import re
import time
import zlib
from collections.abc import Callable
from dataclasses import dataclass

from django.db import transaction
from django.db.models import F

from ledgerfacts.timestamps import now_ms
from ledgerweb import dialect, sqlite
from ledgerweb.db import ledger_identity
from ledgerweb.pg_schema import ROWIDS_FIX
from search import engine, words
from search.models import IndexState

CHUNK = 64 * 1024
OVERLAP = 256  # bytes each chunk repeats from the next, so a word cut at a border is still found
BATCH = 500  # ledger rows read per query
BATCH_BYTES = 1_000_000  # text read per batch of rows, at most (and at least one row)
SLICE = 16 * CHUNK  # bytes of a huge field read, cut and written per transaction
OPEN_STATUSES = ("pending", "streaming", "processing", "running")
COUNT_CAP = 10_000
OPEN_CHECKED = 5_000  # open rows whose fingerprint a step compares, at most
OPEN_FOR_MS = 86_400_000
CAUGHT_UP_EVERY_MS = 5_000


@dataclass(frozen=True)
class Source:
    """A ledger table and how its rows become documents. Its SQL selects, in order: rowid, id,
    time, session id, turn id, status, persona, channel, role, open, the turn's status (a tool
    call's, else NULL), then (length, first chunk) of each text field in `fields`; {where}
    selects the rows. Pages read rows back with the same SQL (by rowid)."""

    table: str
    kind: str
    fields: tuple[str, ...]  # "" = the role column names the field (messages)
    columns: tuple[str, ...]  # the field's column, as the SQL's alias.column
    sql: str
    open_sql: str  # the row may still change: SQL true/false over the same columns

    @property
    def alias(self) -> str:
        return self.columns[0].split(".")[0]

    def select(self, where: str, heads: bool = True) -> str:
        """The SQL of the rows `where` selects; without heads, only the fields' lengths."""
        texts = ", ".join(
            f"length({dialect.as_bytes(c)}), "
            + (f"substr({dialect.as_bytes(c)}, 1, {CHUNK + OVERLAP})" if heads else "NULL")
            for c in self.columns
        )
        return self.sql.format(open=self.open_sql, texts=texts, where=where)


_OPEN = ", ".join(f"'{s}'" for s in OPEN_STATUSES)
SOURCES = [
    Source(
        "messages",
        "message",
        ("",),
        ("m.content",),
        """SELECT m.rowid, m.id, m.created_at, t.session_id, m.turn_id, t.status, s.persona,
            s.routing_key, m.role, {open}, NULL, {texts}
        FROM messages m LEFT JOIN turns t ON t.id = m.turn_id
        LEFT JOIN sessions s ON s.id = t.session_id WHERE {where}""",
        f"t.status IN ({_OPEN})",
    ),
    Source(
        "tool_calls",
        "tool_call",
        ("tool_name", "parameters", "result", "error"),
        ("c.tool_name", "c.parameters", "c.result", "c.error"),
        """SELECT c.rowid, c.id, c.started_at, t.session_id, c.turn_id, c.status, s.persona,
            s.routing_key, NULL, {open}, t.status, {texts}
        FROM tool_calls c LEFT JOIN turns t ON t.id = c.turn_id
        LEFT JOIN sessions s ON s.id = t.session_id WHERE {where}""",
        f"c.status IN ({_OPEN}) OR t.status IN ({_OPEN})",
    ),
    Source(
        "nexus_requests",
        "request",
        ("event_id", "error_message", "error_stack", "delivery_error"),
        ("r.event_id", "r.error_message", "r.error_stack", "r.delivery_error"),
        """SELECT r.rowid, r.id, r.started_at, t.session_id, r.turn_id, r.status,
            r.session_persona, r.event_source, NULL, {open}, NULL, {texts}
        FROM nexus_requests r LEFT JOIN turns t ON t.id = r.turn_id WHERE {where}""",
        f"r.status IN ({_OPEN})",
    ),
    Source(
        "sessions",
        "session",
        ("label",),
        ("s.label",),
        """SELECT s.rowid, s.id, s.created_at, s.id, NULL, s.status, s.persona,
            s.routing_key, NULL, {open}, NULL, {texts} FROM sessions s WHERE {where}""",
        # A session is often labelled after its first turns: it waits for its label.
        "coalesce(s.label, '') = ''",
    ),
    Source(
        "compactions",
        "compaction",
        ("summary",),
        ("k.summary",),
        """SELECT k.rowid, k.turn_id, k.created_at, t.session_id, k.turn_id, t.status,
            s.persona, s.routing_key, NULL, {open}, NULL, {texts}
        FROM compactions k LEFT JOIN turns t ON t.id = k.turn_id
        LEFT JOIN sessions s ON s.id = t.session_id WHERE {where}""",
        "0",
    ),
]
BY_KIND = {source.kind: source for source in SOURCES}

_CONTROL = re.compile(r"[\x00-\x08\x0b\x0c\x0e-\x1f\x7f]")


def clean_text(raw) -> str:
    """Ledger bytes as text the index takes: invalid UTF-8 replaced, control characters spaces."""
    if raw is None:
        return ""
    if isinstance(raw, (bytes, bytearray, memoryview)):
        raw = bytes(raw).decode("utf-8", "replace")
    return _CONTROL.sub(" ", str(raw))


def channel_of(routing_key) -> str | None:
    """A session's channel: its routing key's first part (imessage:+1555… → imessage)."""
    if not isinstance(routing_key, str) or not routing_key:
        return None
    return routing_key.split(":", 1)[0]


# -- Identity -------------------------------------------------------------------------------------


def ledger_anchor() -> dict:
    """The ledger's first turn (id, time), {} while it has none. Turns are never deleted (the
    Agents Ledger is append-only), unlike requests, which retention takes out."""
    if "turns" not in sqlite.table_names():  # a Nexus Ledger alone
        return {}
    found = sqlite.rows("SELECT id, started_at FROM turns ORDER BY rowid LIMIT 1")
    return {"turn": [str(found[0][0]), found[0][1]]} if found else {}


def indexable(tables: set[str]) -> list[Source]:
    """The sources this ledger has. Each reads its session through `turns`: a Nexus Ledger alone
    (no turns table) is not indexed, and ids still jump to their pages."""
    return [s for s in SOURCES if s.table in tables and "turns" in tables]


def keyed_sources(tables: set[str]) -> list[Source]:
    """The sources this ledger has, each table with the rowid the index keys its rows by (or
    RowidsMissing, on a PostgreSQL ledger made before rowids.sql)."""
    sources = indexable(tables)
    keyed = {"turns", *(source.table for source in sources)} if sources else set()  # the anchor
    if missing := sqlite.tables_without_rowid(keyed):
        raise RowidsMissing(missing)
    return sources


def same_ledger(state: IndexState, tables: set[str]) -> bool:
    if state.ledger != ledger_identity():
        return False
    if state.anchor:
        turn_id, at = state.anchor["turn"]
        found = "SELECT 1 FROM turns WHERE id = %s AND started_at IS NOT DISTINCT FROM %s"
        if not sqlite.rows(found, [turn_id, at]):
            return False
    for source in SOURCES:
        mark = state.marks.get(source.table, 0)
        if mark and (source.table not in tables or _max_rowid(source.table) < mark):
            return False  # rows the index has seen are gone: a rebuilt ledger
    return True


def _max_rowid(table: str) -> int:
    return sqlite.rows(f"SELECT coalesce(max(rowid), 0) FROM {table}")[0][0]


def _state() -> IndexState:
    state = IndexState.objects.first()
    return state or IndexState.objects.create()


def _reset(state: IndexState) -> None:
    engine.clear()
    state.ledger = ledger_identity()
    state.anchor, state.marks, state.caught_up_at = {}, {}, None
    state.save()


# -- Reading rows into documents --------------------------------------------------------------


@dataclass
class LedgerRow:
    """A ledger row as a Source's SQL reads it."""

    rowid: int
    id: object
    at: object
    session_id: object
    turn_id: object
    status: object
    persona: object
    routing_key: object
    role: object
    open: object
    turn_status: object
    pieces: list[tuple[str, int, str]]  # per field: (name, length in bytes, first chunk)

    @classmethod
    def of(cls, source: Source, row: tuple) -> "LedgerRow":
        role = row[8]
        pieces = []
        for index, field in enumerate(source.fields):
            length, head = row[11 + 2 * index : 13 + 2 * index]
            name = field or (str(role) if role not in (None, "") else "message")
            pieces.append((name, length or 0, clean_text(head)))
        return cls(*row[:11], pieces)

    def open_mark(self) -> int:
        """0 for a settled row; for a row that may still change, a fingerprint (never 0) of its
        status, its turn's and its fields' lengths: what changes as a tool call completes, a
        message streams in or a request fails. A row stuck for a day (a tool call left pending
        in a finished turn) would be read again for ever: it counts as settled."""
        if not self.open or _ms(self.at) < now_ms() - OPEN_FOR_MS:
            return 0
        state = (self.status, self.turn_status, self.open, [n for _, n, _ in self.pieces])
        return zlib.crc32(repr(state).encode()) % 0x7FFFFFFF + 1


def _ms(at) -> int:
    """A row's time as whole ms: REAL times are odd but normal (1700000000000.5), junk is 0."""
    return int(at) if isinstance(at, int | float) and math.isfinite(at) else 0


def _docs(source: Source, row: tuple) -> list[engine.Doc]:
    """A ledger row's first document: its fields' first pieces together (a field over CHUNK
    bytes goes on in later chunks, indexed by _index_pending)."""
    found = LedgerRow.of(source, row)
    meta = {
        "kind": source.kind,
        "src": found.rowid,
        "at": _ms(found.at),
        "session_id": found.session_id,
        "status": found.status,
        "persona": found.persona,
        "channel": str(found.routing_key)
        if source.kind == "request"
        else channel_of(found.routing_key),
        "open": found.open_mark(),
    }
    heads = [head for _, length, head in found.pieces if length]
    if not heads and not meta["open"]:
        return []
    # (An open row with no text yet, a pending tool call, keeps an empty document: it is how
    # the index knows to read the row again when its text arrives.)
    tokens = sorted(words.index_tokens("\n".join(heads)))
    return [engine.Doc(tokens=tokens, long_field=_next_piece(found.pieces, -1), **meta)]


def _next_piece(pieces: list[tuple[str, int, str]], after_field: int) -> int | None:
    """The next field after `after_field` longer than one chunk (its later chunks start at
    CHUNK), or None."""
    for index, (_, length, _) in enumerate(pieces):
        if index > after_field and length > CHUNK:
            return index
    return None


def read_slice(source: Source, field: int, offset: int, size: int, rowid: int) -> bytes | None:
    """size bytes of one field of one row from a byte offset (None: the row is gone)."""
    name = source.columns[field].split(".")[1]
    found = sqlite.rows(
        f"SELECT substr({dialect.as_bytes(name)}, %s, %s) FROM {source.table} WHERE rowid = %s",
        [offset + 1, size, rowid],
    )
    if not found:
        return None
    value = found[0][0]
    return bytes(value) if value is not None else b""


def read_chunk(source: Source, field: int, offset: int, rowids: list[int]) -> dict[int, str]:
    """One field's text at one byte offset (a chunk of a huge value), of rows by rowid."""
    name = source.columns[field].split(".")[1]
    listed, params = sqlite.in_list(rowids)
    found = sqlite.rows(
        f"SELECT rowid, substr({dialect.as_bytes(name)}, %s, %s) FROM {source.table} "
        f"WHERE rowid IN {listed}",
        [offset + 1, CHUNK + OVERLAP, *params],
    )
    return {rowid: clean_text(text) for rowid, text in found}


def read_rows(kind: str, rowids: list[int], heads: bool = True) -> dict[int, LedgerRow]:
    """Ledger rows of one kind by rowid, as indexed (a row that is gone has none)."""
    source = BY_KIND[kind]
    if source.table not in sqlite.table_names():
        return {}
    listed, params = sqlite.in_list(rowids)
    rows = sqlite.rows(source.select(f"{source.alias}.rowid IN {listed}", heads), params)
    return {row[0]: LedgerRow.of(source, row) for row in rows}


# -- Steps ----------------------------------------------------------------------------------------


class RowidsMissing(Exception):
    """A PostgreSQL ledger made before its tables had the rowid column the index keys rows by."""

    fix = ROWIDS_FIX

    def __init__(self, tables: list[str]):
        self.tables = tables
        self.reason = (
            f"Search cannot index this ledger: its tables {', '.join(tables)} have no rowid column"
            " (the PostgreSQL ledger was made before search could read one)."
        )
        super().__init__(f"{self.reason} An administrator adds it with: {self.fix}")


@dataclass
class Progress:
    indexed: int = 0  # ledger rows read in this call
    backlog: dict | None = None  # table → rows not yet indexed (capped)
    reset: bool = False  # the index was started again for another ledger
    pending: int = 0  # rows whose later chunks are still to be indexed
    pieces_bytes: int = 0  # bytes of later chunks indexed in this call
    caught_up_at: int | None = None  # Unix ms when the index last reached the ledger's end

    @property
    def more(self) -> bool:
        return bool(self.pending or any((self.backlog or {}).values()))


# What a step may read and cut when not told otherwise (a search page tells less).
STEP_BYTES = 64_000_000


def step(
    budget_s: float,
    on_batch: Callable[[str, int], None] | None = None,
    budget_bytes: int = STEP_BYTES,
) -> Progress:
    """Index for about budget_s seconds and budget_bytes of text: first rows that were still
    changing, then new rows, a batch at a time, then later chunks of huge values, a slice at a
    time; each batch or slice read first, then committed in a short transaction with its mark
    (safe to interrupt)."""
    deadline = time.monotonic() + budget_s
    budget = _Budget(deadline, budget_bytes)
    tables = sqlite.table_names()
    sources = keyed_sources(tables)
    progress = Progress()
    state = _state()
    # Most page views find nothing to do: they read, and take the write lock only for work.
    new_anchor = not state.anchor and ledger_anchor()
    same = same_ledger(state, tables)
    changed = _read_changed_open_rows(sources) if same else {}
    if new_anchor or not same or changed:
        anchor = ledger_anchor()  # (read before the lock, like every ledger read here)
        with transaction.atomic():
            locked = _locked_state()
            if (locked.ledger, locked.anchor, locked.marks) != (
                state.ledger,
                state.anchor,
                state.marks,
            ):
                return _progress_of(progress, sources, locked)  # another worker moved on
            state = locked
            if not same:
                progress.reset = bool(state.ledger)  # (a new index has no ledger to lose)
                _reset(state)
                changed = {}
            if not state.anchor:
                state.anchor = anchor
                state.save(update_fields=["anchor"])
            progress.indexed += _reindex_open(changed)
    waiting = backlog(sources, state)
    todo = [source for source in sources if waiting[source.table]]
    while todo and budget.left():
        for source in list(todo):
            done, more = _index_batch(source, budget)
            progress.indexed += done
            if on_batch and done:
                on_batch(source.table, done)
            if not more:
                todo.remove(source)
            if not budget.left():
                break
    progress.backlog = backlog(sources) if progress.indexed else waiting
    progress.pending = engine.pending_count()
    while progress.pending and budget.left() and _index_pending(budget, progress):
        progress.pending = engine.pending_count()
    progress.caught_up_at = state.caught_up_at
    if not progress.more:
        progress.caught_up_at = _caught_up(state.caught_up_at)
    return progress


def _progress_of(progress: Progress, sources: list[Source], state: IndexState) -> Progress:
    progress.backlog = backlog(sources, state)
    progress.pending = engine.pending_count()
    progress.caught_up_at = state.caught_up_at
    return progress


@dataclass
class _Budget:
    deadline: float
    bytes: int

    def left(self) -> bool:
        return self.bytes > 0 and time.monotonic() < self.deadline


def _caught_up(known: int | None) -> int:
    """Note when the index last reached the ledger's end (written at most every few seconds,
    not on every page view)."""
    now = now_ms()
    if known is not None and known >= now - CAUGHT_UP_EVERY_MS:
        return known
    IndexState.objects.filter(caught_up_at__isnull=True).update(caught_up_at=now)
    IndexState.objects.filter(caught_up_at__lt=now - CAUGHT_UP_EVERY_MS).update(caught_up_at=now)
    return now


def _locked_state() -> IndexState:
    """The state, read after taking the write lock: two workers indexing at once take turns, and
    the second sees the first one's marks (no row is indexed twice). The write comes first: a
    read before it would pin a snapshot that another worker's commit makes too old to write."""
    IndexState.objects.update(ledger=F("ledger"))
    return _state()


def _index_batch(source: Source, budget: _Budget) -> tuple[int, bool]:
    """Index the next rows of a table: (rows indexed, whether more may follow). The rows are
    read and their tokens cut before the write lock is taken; another worker that moved the
    mark meanwhile wins, and this batch is dropped (read again next time)."""
    mark = _state().marks.get(source.table, 0)
    rows, more = _read_new_rows(source, mark)
    if not rows:
        return 0, False
    docs = [doc for row in rows for doc in _docs(source, row)]
    budget.bytes -= sum(len(head) for row in rows for head in row[12::2] if head)
    with transaction.atomic():
        state = _locked_state()
        if state.marks.get(source.table, 0) != mark:
            return 0, True
        _add_rows(docs)
        state.marks[source.table] = rows[-1][0]
        state.save(update_fields=["marks"])
    return len(rows), more


def _add_rows(docs: list[engine.Doc]) -> None:
    """Index rows' first documents; a row with later chunks is noted as pending."""
    heads = engine.add(docs)
    for doc in docs:
        if doc.pieces:
            engine.set_pending(doc.kind, doc.src, heads[(doc.kind, doc.src)], doc.long_field, CHUNK)


def _read_new_rows(source: Source, mark: int) -> tuple[list[tuple], bool]:
    """The rows past the mark, BATCH at most and as many as keep their first pieces under
    BATCH_BYTES (at least one): a batch of huge rows is read a few at a time."""
    alias = source.alias
    sizes = sqlite.rows(
        source.select(f"{alias}.rowid > %s ORDER BY {alias}.rowid LIMIT %s", heads=False),
        [mark, BATCH],
    )
    if not sizes:
        return [], False
    taken, total = 0, 0
    for row in sizes:
        taken += 1
        total += sum(min(length or 0, CHUNK + OVERLAP) for length in row[11::2])
        if total >= BATCH_BYTES:
            break
    rows = sqlite.rows(
        source.select(f"{alias}.rowid > %s AND {alias}.rowid <= %s ORDER BY {alias}.rowid"),
        [mark, sizes[taken - 1][0]],
    )
    return rows, taken < len(sizes) or len(sizes) == BATCH


def _index_pending(budget: _Budget, progress: Progress) -> bool:
    """Index the next slice of later chunks of the first row still pending; False when none
    is left (or another worker took it meanwhile: the next step goes on)."""
    found = engine.pending(1)
    if not found:
        return False
    item = found[0]
    source = BY_KIND[item.kind]
    raw = read_slice(source, item.field, item.next_offset, SLICE + OVERLAP, item.src)
    pieces = []
    if raw:
        for start in range(0, min(len(raw), SLICE), CHUNK):
            if start >= len(raw):
                break
            text = clean_text(raw[start : start + CHUNK + OVERLAP])
            pieces.append((item.field, item.next_offset + start, sorted(words.index_tokens(text))))
    field, next_offset = item.field, item.next_offset + SLICE
    if raw is None:
        field = None  # the row is gone
    elif len(raw) <= SLICE:  # the field ends in this slice: on to the next long one, if any
        field, next_offset = _next_long_field(source, item), CHUNK
    budget.bytes -= len(raw or b"")
    progress.pieces_bytes += len(raw or b"")
    with transaction.atomic():
        _locked_state()
        if not engine.is_pending(item):
            return True
        if pieces:
            engine.add_pieces(item.kind, item.src, item.head, pieces)
        engine.set_pending(item.kind, item.src, item.head, field, next_offset)
    return True


def _next_long_field(source: Source, item: engine.Pending) -> int | None:
    rows = read_rows(item.kind, [item.src], heads=False)
    row = rows.get(item.src)
    return None if row is None else _next_piece(row.pieces, item.field)


def _read_changed_open_rows(sources: list[Source]) -> dict[str, tuple[list[int], list]]:
    """Per kind, the rows indexed while they could still change whose fingerprint is another
    now (or which are gone), BATCH at most, with their documents made again (read before the
    write lock). Finding them is a read of their lengths and statuses, no text, so that the
    many page views that find nothing changed write nothing."""
    indexed: dict[str, dict[int, int]] = {}
    for kind, src, mark in engine.open_items(OPEN_CHECKED):
        indexed.setdefault(kind, {})[src] = mark
    changed = {}
    for source in sources:
        marks = indexed.get(source.kind)
        if not marks:
            continue
        listed, params = sqlite.in_list(sorted(marks))
        rows = sqlite.rows(source.select(f"{source.alias}.rowid IN {listed}", heads=False), params)
        now = {row[0]: LedgerRow.of(source, row).open_mark() for row in rows}
        different = [src for src, mark in marks.items() if now.get(src, 0) != mark][:BATCH]
        if different:
            listed, params = sqlite.in_list(different)
            rows = sqlite.rows(source.select(f"{source.alias}.rowid IN {listed}"), params)
            changed[source.kind] = (different, [d for row in rows for d in _docs(source, row)])
    return changed


def _reindex_open(changed: dict[str, tuple[list[int], list]]) -> int:
    """Index again the rows that changed since they were indexed (forget, add)."""
    count = 0
    for kind, (ids, docs) in changed.items():
        engine.forget(kind, ids)
        _add_rows(docs)
        count += len(ids)
    return count


def backlog(sources: list[Source] | None = None, state: IndexState | None = None) -> dict[str, int]:
    """Rows each table holds beyond the index (counted up to COUNT_CAP + 1)."""
    if sources is None:
        sources = keyed_sources(sqlite.table_names())
    state = state or _state()
    return {
        s.table: sqlite.rows(
            # ORDER BY: the rowid index even where PostgreSQL has no statistics yet (a central
            # ledger just shipped), where it would scan the table for a small backlog.
            f"SELECT count(*) FROM (SELECT 1 FROM {s.table} WHERE rowid > %s"
            " ORDER BY rowid LIMIT %s) AS new",
            [state.marks.get(s.table, 0), COUNT_CAP + 1],
        )[0][0]
        for s in sources
    }


def rebuild() -> None:
    """Start again from nothing (drops the words of forgotten rows, too)."""
    with transaction.atomic():
        _reset(_locked_state())
