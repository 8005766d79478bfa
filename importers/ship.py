"""Copy a host's SQLite ledger into a central PostgreSQL ledger, incrementally (ledger_ship).

Each run ships the sessions active since the last run (less an overlap, for rows committed late
with an earlier clock) and those the central ledger still holds unfinished, session by session
through the importers' writer (importers/writer.py): rows already there are skipped, unfinished
ones brought up to date, heads moved, collisions reported and kept. Requests go the same way in
batches. The source is opened read-only and read in one short transaction per session, so the
runtime writing it is never held up. Where the next run starts (the watermark) is recorded in
the central ledger only when a run completes: a run killed midway is simply done again, and what
it had written is found already there.
"""

import sqlite3
import time
from collections.abc import Callable, Iterable
from dataclasses import dataclass
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
# Above any Unix ms and below any text: SQLite sorts numbers before text, so this keeps a text
# timestamp out of the watermark while the index on the column still serves the query.
LARGEST_MS = 10**15


@dataclass
class ShipResult:
    sessions: int  # sessions looked at
    requests: int  # requests looked at
    watermark: int | None
    created_schema: bool


def open_source(path: Path) -> sqlite3.Connection:
    """The host's ledger, read-only; bytes that are not UTF-8 read as replacement characters."""
    conn = sqlite3.connect(path.resolve().as_uri() + "?mode=ro", uri=True, isolation_level=None)
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
) -> ShipResult:
    """Ship `source` into the psycopg connection `central` (autocommit), recording the run."""
    target = WriteTarget(central)
    created = _prepare_central(target)
    conn = open_source(source)
    try:
        tables = _columns_in_source(conn)
        last = None if full else _last_watermark(target, host, str(source))
        since = None if last is None else last - OVERLAP_MS
        with _snapshot(conn):
            watermark = _newest_activity(conn, tables)
            session_ids = _sessions_to_ship(conn, target, since) if "sessions" in tables else []
            request_ids = (
                _requests_to_ship(conn, target, since) if "nexus_requests" in tables else []
            )
        for session_id in progress(session_ids, "sessions"):
            bundle = _read_session(conn, tables, session_id, f"{source}: session {session_id}")
            if bundle is not None:
                write(target, bundle, report)
        batches = [
            request_ids[i : i + REQUEST_BATCH] for i in range(0, len(request_ids), REQUEST_BATCH)
        ]
        for batch in progress(batches, "request batches"):
            rows = _read_rows(conn, "nexus_requests", tables["nexus_requests"], "id", batch)
            if rows:
                write_requests(target, rows, f"{source}: nexus_requests", report)
    finally:
        conn.close()
    watermark = max(watermark or 0, last or 0) or None
    if watermark is not None:
        _record(target, host, str(source), watermark, report)
    return ShipResult(len(session_ids), len(request_ids), watermark, created)


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
        if not target.has_table(SHIPMENTS):
            create_postgres_ledger(target.conn, (f"{SHIPMENTS}.sql",))
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

        return SessionBundle(
            where=where,
            session=sessions[0],
            turns=turns,
            messages=of_turns("messages"),
            tool_calls=of_turns("tool_calls"),
            compactions=of_turns("compactions"),
            turn_usage=of_turns("turn_usage"),
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
    problems = len(report.failed_sessions) + len(report.failed_requests) + len(report.collisions)
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
            "problems": problems,
        },
    )
