"""Write importer bundles into an Agents Ledger: one transaction per session, safe to repeat.

Every row goes in with INSERT OR IGNORE on its (deterministic) id, so importing the same input
again adds nothing, and a transcript that has grown adds only its new rows. Some existing rows
move forward instead of being ignored, because the source went on after the last import: a turn
or tool call the ledger holds as unfinished (pending/streaming) takes the finished status, times
and tokens; a finished turn that the source shows ending later takes the later end and tokens;
and the session's head, last activity, label and root are brought up to date. Nothing else of an
existing row is changed, and nothing is ever deleted.
"""

import sqlite3
from collections import Counter

from importers.bundle import ImportReport, SessionBundle
from ledgerfacts.schema import ddl, expected_columns, table_statements

FINISHED = ("completed", "failed")
# The columns a finished source row may bring to a row the ledger holds as unfinished.
PROGRESS_COLUMNS = {
    "turns": (
        "status",
        "completed_at",
        "prompt_tokens",
        "completion_tokens",
        "total_tokens",
        "model",
    ),
    "tool_calls": ("status", "result", "error", "completed_at"),
}


def write(conn: sqlite3.Connection, bundle: SessionBundle, report: ImportReport) -> None:
    """Write one session (and then its subagent children) each in one transaction.

    INSERT OR IGNORE on every row, so importing again adds nothing; a grown transcript adds only
    its new turns/messages/tool calls and moves the session's current_turn_id/updated_at forward.
    Any error rolls that session back entirely and is reported with session_failed(). The
    connection must not be inside a transaction when called.
    """
    counts = {"added": Counter(), "present": Counter(), "updated": Counter()}
    unmapped: Counter[str] = Counter()
    try:
        # IMMEDIATE takes the write lock now, so a live writer makes us wait (busy timeout)
        # before anything is written rather than halfway through.
        conn.execute("BEGIN IMMEDIATE")
        _write_session(conn, bundle, counts, unmapped)
        conn.execute("COMMIT")
    except Exception as error:  # noqa: BLE001 - any failure leaves the whole session out
        if conn.in_transaction:
            conn.execute("ROLLBACK")
        report.session_failed(bundle.where, f"{type(error).__name__}: {error}")
        for child in _descendants(bundle):
            report.session_failed(child.where, "its parent session could not be imported")
        return
    for name, counter in counts.items():
        getattr(report, name).update(counter)
    for what, n in unmapped.items():
        report.unmapped(what, n)
    for child in bundle.children:
        write(conn, child, report)


def _write_session(conn, bundle: SessionBundle, counts: dict, unmapped: Counter) -> None:
    for table, rows in bundle.rows().items():
        if not rows:
            continue
        if table == "compactions" and not _has_table(conn, "compactions"):
            unmapped["compactions (this ledger has no compactions table)"] += len(rows)
            continue
        if table == "turn_usage" and not _has_table(conn, "turn_usage"):
            # ledgerweb's own optional table (ledgerweb/sql/turn_usage.sql): an import that
            # knows billed input brings it, so the pages can show it and price cache tokens.
            for statement in table_statements(ddl(("turn_usage.sql",))):
                conn.execute(statement)
        added = _insert(conn, table, rows)
        counts["added"][table] += added
        counts["present"][table] += len(rows) - added
        if table in PROGRESS_COLUMNS:
            counts["updated"][table] += _finish_unfinished(conn, table, rows)
        elif table == "turn_usage":
            counts["updated"][table] += _grow_usage(conn, rows)
    if counts["added"]["sessions"] == 0:
        counts["updated"]["sessions"] += _move_session_forward(conn, bundle.session)


def _insert(conn: sqlite3.Connection, table: str, rows: list[dict]) -> int:
    columns = _columns_of(table, rows)
    sql = (
        f"INSERT OR IGNORE INTO {table} ({', '.join(columns)}) "
        f"VALUES ({', '.join('?' * len(columns))})"
    )
    before = conn.total_changes
    conn.executemany(sql, [tuple(row.get(c) for c in columns) for row in rows])
    return conn.total_changes - before


def _columns_of(table: str, rows: list[dict]) -> list[str]:
    """The schema's columns the rows set, in schema order; a key the schema lacks is an error."""
    known = [column.name for column in expected_columns()[table]]
    given = set().union(*rows)
    if unknown := given - set(known):
        raise ValueError(f"{table} has no column {', '.join(sorted(unknown))}")
    return [name for name in known if name in given]


def _finish_unfinished(conn: sqlite3.Connection, table: str, rows: list[dict]) -> int:
    """Bring rows the ledger holds as unfinished up to date with a source that finished them.

    A turn also moves forward when the source shows it went on longer (a transcript imported
    while its last turn was still running: the turn gained tool calls and tokens since).
    """
    finished = [row for row in rows if row.get("status") in FINISHED]
    if not finished:
        return 0
    later = " OR completed_at < :completed_at" if table == "turns" else ""
    before = conn.total_changes
    for row in finished:
        columns = [c for c in PROGRESS_COLUMNS[table] if c in row]
        conn.execute(
            f"UPDATE {table} SET {', '.join(f'{c} = :{c}' for c in columns)} "
            f"WHERE id = :id AND (status IN ('pending', 'streaming'){later})",
            {
                **{c: row[c] for c in columns},
                "id": row["id"],
                "completed_at": row.get("completed_at"),
            },
        )
    return conn.total_changes - before


def _grow_usage(conn: sqlite3.Connection, rows: list[dict]) -> int:
    """A turn that made more model calls since the last import (it was still running) takes
    the source's larger usage; the same usage again changes nothing."""
    before = conn.total_changes
    conn.executemany(
        """UPDATE turn_usage SET model_calls = :model_calls, input_tokens = :input_tokens,
               cache_read_tokens = :cache_read_tokens, cache_write_tokens = :cache_write_tokens,
               output_tokens = :output_tokens
           WHERE turn_id = :turn_id AND model_calls < :model_calls""",
        rows,
    )
    return conn.total_changes - before


def _move_session_forward(conn: sqlite3.Connection, session: dict) -> int:
    """Bring an imported session's head and last activity up to date; fill a missing label/root.

    The status is left alone: a user may have archived the session since the last import.
    """
    cursor = conn.execute(
        """
        UPDATE sessions SET
            label = COALESCE(label, :label),
            root_turn_id = COALESCE(root_turn_id, :root_turn_id),
            current_turn_id = CASE WHEN updated_at < :updated_at
                THEN COALESCE(:current_turn_id, current_turn_id) ELSE current_turn_id END,
            updated_at = MAX(updated_at, :updated_at)
        WHERE id = :id AND (
            updated_at < :updated_at
            OR (label IS NULL AND :label IS NOT NULL)
            OR (root_turn_id IS NULL AND :root_turn_id IS NOT NULL))
        """,
        {
            "id": session["id"],
            "label": session.get("label"),
            "root_turn_id": session.get("root_turn_id"),
            "current_turn_id": session.get("current_turn_id"),
            "updated_at": session["updated_at"],
        },
    )
    return cursor.rowcount


def _has_table(conn: sqlite3.Connection, name: str) -> bool:
    found = conn.execute(
        "SELECT 1 FROM sqlite_master WHERE type = 'table' AND name = ?", (name,)
    ).fetchone()
    return found is not None


def _descendants(bundle: SessionBundle):
    for child in bundle.children:
        yield child
        yield from _descendants(child)
