"""Copy a host's SQLite ledger into a central PostgreSQL ledger, incrementally (ledger_ship).

Each run ships the sessions active since the last run (less an overlap, for rows committed late
with an earlier clock) and those the central ledger still holds unfinished, session by session
through the importers' writer (importers/writer.py): rows already there are skipped, unfinished
ones brought up to date, heads moved, collisions reported and kept. Requests go the same way in
batches. The source is opened read-only and read in one short transaction per session, so the
runtime writing it is never held up; a read the runtime's lock keeps out is tried again for a
while (class Patience). Where the next run starts (the watermark) is recorded in the central
ledger only when a run completes: a run killed or stopped midway is simply done again, and what
it had written is found already there. What a run could not write is kept in the central ledger
and tried again by every later run until it goes in (class LeftOut).
"""

import sqlite3
import time
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from pathlib import Path

from importers.bundle import ImportReport, SessionBundle
from importers.target import WriteTarget
from importers.writer import write, write_requests
from ledgerfacts import schema
from ledgerweb.pg_schema import create_postgres_ledger

# Sessions active this long before the last run's newest activity are shipped again: a row
# committed late with an earlier timestamp is still found; the writer skips what is there.
OVERLAP_MS = 10 * 60 * 1000
REQUEST_BATCH = 500
SHIPMENTS = "ledger_shipments"
LEFT_OUT = "ledger_ship_left_out"  # ledgerweb/sql/postgres/ledger_ship_left_out.sql
# How long a run waits, by default, for the runtime's lock on the source: in rollback-journal
# mode a writer committing (or holding BEGIN EXCLUSIVE) keeps every reader out.
LOCK_WAIT_S = 60
# Each attempt to read waits this long (SQLite's busy timeout) before the run says it waits.
LOCK_RETRY_S = 0.5
# Above any Unix ms and below any text: SQLite sorts numbers before text, so this keeps a text
# timestamp out of the watermark while the index on the column still serves the query.
LARGEST_MS = 10**15


@dataclass
class ShipResult:
    sessions: int  # sessions looked at
    requests: int  # requests looked at
    watermark: int | None
    created_schema: bool
    retried: int = 0  # of those, left out by an earlier run and tried again
    waited_s: float = 0  # how long the runtime's lock on the source held the run up


class SourceLocked(Exception):
    """The runtime kept its lock on the source longer than the run would wait."""


@dataclass
class Patience:
    """Reads of the source, retried while the runtime holds its lock, up to `wait_s` each."""

    source: Path
    wait_s: float
    notify: Callable[[str], None]
    waited_s: float = 0
    said: bool = field(default=False, repr=False)

    def read(self, reading: Callable, *args):
        """reading(*args), tried again while the source is locked."""
        deadline = time.monotonic() + self.wait_s
        while True:
            started = time.monotonic()
            try:
                return reading(*args)
            except sqlite3.OperationalError as error:
                if "locked" not in str(error) and "busy" not in str(error):
                    raise
            self.waited_s += time.monotonic() - started
            if time.monotonic() >= deadline:
                raise SourceLocked(
                    f"{self.source} stayed locked by its writer for {self.wait_s:g} s"
                )
            if not self.said:
                self.said = True
                self.notify(
                    f"{self.source} is locked by its writer: waiting (up to {self.wait_s:g} s)"
                )
            # SQLite may answer "busy" at once, without waiting its timeout: never spin.
            time.sleep(LOCK_RETRY_S / 5)


def open_source(path: Path) -> sqlite3.Connection:
    """The host's ledger, read-only; bytes that are not UTF-8 read as replacement characters."""
    conn = sqlite3.connect(
        path.resolve().as_uri() + "?mode=ro", uri=True, isolation_level=None, timeout=LOCK_RETRY_S
    )
    conn.text_factory = lambda raw: raw.decode("utf-8", "replace")
    conn.row_factory = lambda cursor, values: {
        column[0]: value for column, value in zip(cursor.description, values, strict=True)
    }
    return conn


def ship(
    source: Path,
    central,
    host: str,
    report: ImportReport,
    *,
    full: bool = False,
    progress: Callable[[Iterable, str], Iterable] = lambda items, _: items,
    wait_s: float = LOCK_WAIT_S,
    notify: Callable[[str], None] = lambda _: None,
) -> ShipResult:
    """Ship `source` into the psycopg connection `central` (autocommit), recording the run.

    Raises SourceLocked when the runtime holds its lock on the source longer than `wait_s`: what
    was written stays, the watermark does not move, and the next run ships the rest.
    """
    target = WriteTarget(central)
    created = _prepare_central(target)
    left_out = LeftOut.load(target, host, str(source))
    patience = Patience(source, wait_s, notify)
    conn = open_source(source)
    try:
        tables = patience.read(_columns_in_source, conn)
        last = None if full else _last_watermark(target, host, str(source))
        since = None if last is None else last - OVERLAP_MS

        watermark, session_ids, request_ids = patience.read(_plan, conn, target, tables, since)
        if "sessions" in tables:
            session_ids = _with_retries(session_ids, left_out.ids("session"))
        if "nexus_requests" in tables:
            request_ids = _with_retries(request_ids, left_out.ids("request"))
        for session_id in progress(session_ids, "sessions"):
            where = f"{source}: session {session_id}"
            bundle = patience.read(_read_session, conn, tables, session_id, where)
            _ship_session(target, bundle, session_id, report, left_out)
        for batch in progress(_request_batches(request_ids, left_out), "request batches"):
            columns = tables["nexus_requests"]
            rows = patience.read(_read_rows, conn, "nexus_requests", columns, "id", batch)
            _ship_requests(target, rows, batch, f"{source}: nexus_requests", report, left_out)
    finally:
        conn.close()
    watermark = max(watermark or 0, last or 0) or None
    if watermark is not None:
        _record(target, host, str(source), watermark, report)
    retried = sum(left_out.was_known("session", i) for i in session_ids)
    retried += sum(left_out.was_known("request", i) for i in request_ids)
    return ShipResult(
        len(session_ids), len(request_ids), watermark, created, retried, patience.waited_s
    )


def _plan(conn, target: WriteTarget, tables: dict, since: int | None) -> tuple:
    """In one read transaction: the source's newest activity, the sessions and requests to ship."""
    with _snapshot(conn):
        return (
            _newest_activity(conn, tables),
            _sessions_to_ship(conn, target, since) if "sessions" in tables else [],
            _requests_to_ship(conn, target, since) if "nexus_requests" in tables else [],
        )


def _with_retries(ids: list[str], retries: list[str]) -> list[str]:
    return list(dict.fromkeys([*ids, *retries]))


def _request_batches(ids: list[str], left_out: "LeftOut") -> list[list[str]]:
    """New requests in batches; those left out before one by one, so each is known apart."""
    fresh = [i for i in ids if not left_out.was_known("request", i)]
    batches = [fresh[i : i + REQUEST_BATCH] for i in range(0, len(fresh), REQUEST_BATCH)]
    return batches + [[i] for i in ids if left_out.was_known("request", i)]


def _ship_session(target, bundle, session_id: str, report, left_out: "LeftOut") -> None:
    if bundle is None:  # gone from the source: nothing left to ship
        left_out.forget("session", session_id)
        return
    mark = report.mark()
    write(target, bundle, report)
    left_out.update("session", session_id, report, mark)


def _ship_requests(target, rows, batch, where: str, report, left_out: "LeftOut") -> None:
    if not rows:
        for request_id in batch:
            left_out.forget("request", request_id)
        return
    mark = report.mark()
    failed = write_requests(target, rows, where, report)
    if len(batch) == 1:
        left_out.update("request", batch[0], report, mark)
        return
    for request_id, why in failed.items():
        left_out.record("request", request_id, why)


class LeftOut:
    """What runs of one host's source left out (a value PostgreSQL cannot hold, an id collision),
    kept in the central ledger: every run tries those again, and drops one once it goes in. One
    still left out is listed apart in the summary ("still left out since …") and not counted as
    a new problem, so a row that can never be stored is neither lost nor new work each run."""

    def __init__(self, target: WriteTarget, host: str, source: str, known: dict):
        self.target, self.host, self.source = target, host, source
        self.known = known  # (kind, id) -> first left out at (Unix ms)

    @classmethod
    def load(cls, target: WriteTarget, host: str, source: str) -> "LeftOut":
        found = target.fetchall(
            f"SELECT kind, item_id, first_left_out_at FROM {LEFT_OUT}"
            " WHERE host = ? AND source = ? ORDER BY first_left_out_at, item_id",
            (host, source),
        )
        return cls(target, host, source, {(kind, i): at for kind, i, at in found})

    def ids(self, kind: str) -> list[str]:
        return [i for (k, i) in self.known if k == kind]

    def was_known(self, kind: str, item_id: str) -> bool:
        return (kind, item_id) in self.known

    def update(self, kind: str, item_id: str, report: ImportReport, mark) -> None:
        """After one item was written: recorded when it was left out, dropped when it went in;
        one left out again is moved apart in the report (it was reported when first left out)."""
        problems = report.problems_since(mark)
        if not problems:
            self.forget(kind, item_id)
            return
        self.record(kind, item_id, problems[0][1])
        if (kind, item_id) in self.known:
            report.set_aside_since(mark, since_ms=self.known[(kind, item_id)])

    def record(self, kind: str, item_id: str, why: str) -> None:
        now = int(time.time() * 1000)
        self.target.execute(
            f"INSERT INTO {LEFT_OUT} (host, source, kind, item_id, why, first_left_out_at,"
            " last_tried_at) VALUES (:host, :source, :kind, :id, :why, :now, :now)"
            " ON CONFLICT (host, source, kind, item_id)"
            " DO UPDATE SET why = excluded.why, last_tried_at = excluded.last_tried_at",
            {"host": self.host, "source": self.source, "kind": kind, "id": item_id,
             "why": why, "now": now},
        )  # fmt: skip

    def forget(self, kind: str, item_id: str) -> None:
        if (kind, item_id) in self.known:
            self.target.execute(
                f"DELETE FROM {LEFT_OUT} WHERE host = ? AND source = ? AND kind = ?"
                " AND item_id = ?",
                (self.host, self.source, kind, item_id),
            )


class _snapshot:
    """One short read transaction on the source."""

    def __init__(self, conn):
        self.conn = conn

    def __enter__(self):
        self.conn.execute("BEGIN")

    def __exit__(self, *exc):
        self.conn.execute("COMMIT")


def _prepare_central(target: WriteTarget) -> bool:
    """Create the ledger's tables in an empty central database (True) and the shipments table."""
    created = False
    with target.transaction():
        if not target.has_table("sessions"):
            create_postgres_ledger(target.conn)
            created = True
        for table in (SHIPMENTS, LEFT_OUT):
            if not target.has_table(table):
                create_postgres_ledger(target.conn, (f"{table}.sql",))
    return created


def _columns_in_source(conn) -> dict[str, list[str]]:
    """The ledger tables the source has → the schema's columns it has, in schema order."""
    present = {row["name"] for row in conn.execute("SELECT name FROM sqlite_master")}
    tables = {}
    for table, columns in schema.expected_columns().items():
        if table in present:
            have = {
                row["name"]
                for row in conn.execute("SELECT name FROM pragma_table_info(?)", (table,))
            }
            tables[table] = [c.name for c in columns if c.name in have]
    return tables


def _last_watermark(target: WriteTarget, host: str, source: str) -> int | None:
    found = target.fetchall(
        f"SELECT watermark FROM {SHIPMENTS} WHERE host = ? AND source = ?", (host, source)
    )
    return found[0][0] if found else None


def _newest_activity(conn, tables: dict) -> int | None:
    """The newest timestamp of the source (a number, never a text timestamp)."""
    newest = []
    for table, column in (("sessions", "updated_at"), ("turns", "started_at"),
                          ("nexus_requests", "started_at")):  # fmt: skip
        if table in tables:
            row = conn.execute(
                f"SELECT {column} AS t FROM {table} WHERE {column} < ?"
                f" ORDER BY {column} DESC LIMIT 1",
                (LARGEST_MS,),
            ).fetchone()
            if row and isinstance(row["t"], int | float):
                newest.append(int(row["t"]))
    return max(newest, default=None)


def _sessions_to_ship(conn, target: WriteTarget, since: int | None) -> list[str]:
    if since is None:
        return [row["id"] for row in conn.execute("SELECT id FROM sessions ORDER BY rowid")]
    active = conn.execute(
        "SELECT id FROM sessions WHERE updated_at >= :since"
        " UNION SELECT session_id FROM turns WHERE started_at >= :since",
        {"since": since},
    )
    ids = [row["id"] for row in active]
    # Sessions with turns or calls the central ledger still holds unfinished (any host's: a
    # session this host does not have is not found below and skipped).
    unfinished = target.fetchall(
        "SELECT session_id FROM turns WHERE status IN ('pending', 'streaming')"
        " UNION SELECT t.session_id FROM tool_calls c JOIN turns t ON t.id = c.turn_id"
        " WHERE c.status = 'pending'"
    )
    return list(dict.fromkeys([*ids, *(session_id for (session_id,) in unfinished)]))


def _requests_to_ship(conn, target: WriteTarget, since: int | None) -> list[str]:
    if since is None:
        return [row["id"] for row in conn.execute("SELECT id FROM nexus_requests ORDER BY rowid")]
    ids = [
        row["id"]
        for row in conn.execute("SELECT id FROM nexus_requests WHERE started_at >= ?", (since,))
    ]
    processing = target.fetchall("SELECT id FROM nexus_requests WHERE status = 'processing'")
    return list(dict.fromkeys([*ids, *(request_id for (request_id,) in processing)]))


def _read_session(conn, tables: dict, session_id: str, where: str) -> SessionBundle | None:
    """One session with all its rows, read in one short transaction; None when it is not here."""
    with _snapshot(conn):
        sessions = _read_rows(conn, "sessions", tables["sessions"], "id", [session_id])
        if not sessions:
            return None
        turns = _read_rows(conn, "turns", tables.get("turns", []), "session_id", [session_id])
        turn_ids = [turn["id"] for turn in turns]

        def of_turns(table: str) -> list[dict]:
            return _read_rows(conn, table, tables.get(table, []), "turn_id", turn_ids)

        tool_calls = of_turns("tool_calls")
        call_ids = [call["id"] for call in tool_calls]
        source_ids = tables.get("tool_call_source_ids", [])
        return SessionBundle(
            where=where,
            session=sessions[0],
            turns=turns,
            messages=of_turns("messages"),
            tool_calls=tool_calls,
            compactions=of_turns("compactions"),
            turn_usage=of_turns("turn_usage"),
            tool_call_source_ids=_read_rows(
                conn, "tool_call_source_ids", source_ids, "tool_call_id", call_ids
            ),
        )


def _read_rows(conn, table: str, columns: list[str], key: str, values: list) -> list[dict]:
    """The rows of `table` whose `key` is one of `values` (the schema's columns only)."""
    if not columns or not values:
        return []
    rows = []
    for start in range(0, len(values), REQUEST_BATCH):
        batch = values[start : start + REQUEST_BATCH]
        rows += conn.execute(
            f"SELECT {', '.join(columns)} FROM {table}"
            f" WHERE {key} IN ({', '.join('?' * len(batch))}) ORDER BY rowid",
            batch,
        ).fetchall()
    return rows


def _record(target: WriteTarget, host: str, source: str, watermark: int, report) -> None:
    target.execute(
        f"INSERT INTO {SHIPMENTS} (host, source, watermark, shipped_at, rows_added, problems)"
        " VALUES (:host, :source, :watermark, :now, :added, :problems)"
        " ON CONFLICT (host, source) DO UPDATE SET watermark = excluded.watermark,"
        " shipped_at = excluded.shipped_at, rows_added = excluded.rows_added,"
        " problems = excluded.problems",
        {
            "host": host,
            "source": source,
            "watermark": watermark,
            "now": int(time.time() * 1000),
            "added": sum(report.added.values()),
            "problems": report.left_out_count,
        },
    )
