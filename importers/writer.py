"""Write importer bundles into an Agents Ledger: one transaction per session, safe to repeat.

The ledger is a SQLite file (ledger_import) or a central PostgreSQL database (ledger_ship): the
SQL below runs on both through importers/target.py.

Every row goes in with INSERT … ON CONFLICT DO NOTHING on its (deterministic) id, so importing the
same input again adds nothing, and a transcript that has grown adds only its new rows. Some
existing rows move forward instead of being ignored, because the source went on after the last
import: a turn or tool call the ledger holds as unfinished (pending/streaming) takes the finished
status, times and tokens; a finished turn that the source shows ending later takes the later end
and tokens; and the session's head, last activity, label and root are brought up to date. Nothing
else of an existing row is changed, and nothing is ever deleted. A row already there that differs
in anything else is a collision (two sources gave one id to different things): reported, never
overwritten.
"""

from collections import Counter

from importers.bundle import ImportReport, SessionBundle
from importers.target import WriteTarget
from ledgerfacts.schema import expected_columns

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
# Columns of a row already there that the source may legitimately have moved on: the progress
# above, a session's head and activity (and its status: a user may have archived it since), a
# turn's growing usage; and the time of a message or call, which an importer may place apart
# from its record's by a millisecond to keep the transcript's order (importers/times.py), so a
# ledger imported before that is not full of false collisions. Any other difference is a
# collision.
MAY_MOVE = {
    "sessions": ("label", "root_turn_id", "current_turn_id", "updated_at", "status"),
    "turns": PROGRESS_COLUMNS["turns"],
    "tool_calls": (*PROGRESS_COLUMNS["tool_calls"], "started_at"),
    "messages": ("created_at",),
    "turn_usage": tuple(c.name for c in expected_columns()["turn_usage"]),
}
# ledgerweb's own optional tables, which an import creates in a ledger that lacks them.
OWN_TABLES = ("turn_usage", "tool_call_source_ids")
# The key of each table's rows (the others' is `id`).
KEYS = {"compactions": "turn_id", "turn_usage": "turn_id", "tool_call_source_ids": "tool_call_id"}
# How many ids one collision check looks up at a time (SQLite allows 32,766 parameters).
ID_BATCH = 500


def write(conn, bundle: SessionBundle, report: ImportReport) -> None:
    """Write one session (and then its subagent children) each in one transaction.

    INSERT OR IGNORE on every row, so importing again adds nothing; a grown transcript adds only
    its new turns/messages/tool calls and moves the session's current_turn_id/updated_at forward.
    Any error rolls that session back entirely and is reported with session_failed(). The
    connection (sqlite3 or psycopg) must be in autocommit mode, outside any transaction.
    """
    target = conn if isinstance(conn, WriteTarget) else WriteTarget(conn)
    counts = {"added": Counter(), "present": Counter(), "updated": Counter()}
    unmapped: Counter[str] = Counter()
    collisions: list[tuple[str, str]] = []
    try:
        with target.transaction():
            _write_session(target, bundle, counts, unmapped, collisions)
    except Exception as error:  # noqa: BLE001 - any failure leaves the whole session out
        report.session_failed(bundle.where, f"{type(error).__name__}: {error}")
        for child in _descendants(bundle):
            report.session_failed(child.where, "its parent session could not be imported")
        return
    for name, counter in counts.items():
        getattr(report, name).update(counter)
    for what, n in unmapped.items():
        report.unmapped(what, n)
    for where, why in collisions:
        report.collided(where, why)
    for child in bundle.children:
        write(target, child, report)


def _write_session(
    target: WriteTarget, bundle: SessionBundle, counts: dict, unmapped: Counter, collisions: list
) -> None:
    for table, rows in bundle.rows().items():
        if not rows:
            continue
        if table == "compactions" and not target.has_table("compactions"):
            unmapped["compactions (this ledger has no compactions table)"] += len(rows)
            continue
        if table in OWN_TABLES and not target.has_table(table):
            # ledgerweb's own optional tables (ledgerweb/sql/): an import that knows billed
            # input or a transcript's call ids brings them, so the pages can show and find them.
            target.create_table(f"{table}.sql")
        added = _insert(target, table, rows)
        counts["added"][table] += added
        counts["present"][table] += len(rows) - added
        if added < len(rows):
            # Before the updates below: they bring the stored row to the source's values.
            collisions += _collisions(target, table, rows, bundle.where)
        if table in PROGRESS_COLUMNS:
            counts["updated"][table] += _finish_unfinished(target, table, rows)
        elif table == "turn_usage":
            counts["updated"][table] += _grow_usage(target, rows)
    if counts["added"]["sessions"] == 0:
        counts["updated"]["sessions"] += _move_session_forward(target, bundle.session)


def _insert(target: WriteTarget, table: str, rows: list[dict]) -> int:
    columns = _columns_of(table, rows)
    sql = (
        f"INSERT INTO {table} ({', '.join(columns)}) "
        f"VALUES ({', '.join('?' * len(columns))}) ON CONFLICT DO NOTHING"
    )
    return target.executemany(sql, [target.values(table, columns, row) for row in rows])


def _collisions(target: WriteTarget, table: str, rows: list[dict], where: str) -> list:
    """(where, why) for each row already stored under its id with other content than a
    legitimate update would give it: two sources gave one id to different things."""
    key = KEYS.get(table, "id")
    may_move = (key, *MAY_MOVE.get(table, ()))
    fixed = [key] + [c for c in _columns_of(table, rows) if c not in may_move]
    if len(fixed) == 1:
        return []  # nothing of such a row is fixed (turn_usage grows)
    found = []
    for start in range(0, len(rows), ID_BATCH):
        batch = {row[key]: row for row in rows[start : start + ID_BATCH]}
        stored = target.fetchall(
            f"SELECT {', '.join(fixed)} FROM {table} WHERE {key} IN"
            f" ({', '.join('?' * len(batch))})",
            list(batch),
        )
        for values in stored:
            theirs = dict(zip(fixed, values, strict=True))
            row = batch[theirs[key]]
            differ = [c for c in fixed if not _same(row.get(c), theirs[c])]
            if differ:
                found.append((where, f"{table} {row[key]}: other {', '.join(differ)} already"))
    return found


def _same(ours, theirs) -> bool:
    """Equal as stored: SQLite's 2.0 is PostgreSQL's 2, SQLite's 1 is PostgreSQL's true."""
    if ours == theirs:
        return True
    return ours is not None and theirs is not None and str(ours) == str(theirs)


def _columns_of(table: str, rows: list[dict]) -> list[str]:
    """The schema's columns the rows set, in schema order; a key the schema lacks is an error."""
    known = [column.name for column in expected_columns()[table]]
    given = set().union(*rows)
    if unknown := given - set(known):
        raise ValueError(f"{table} has no column {', '.join(sorted(unknown))}")
    return [name for name in known if name in given]


def _finish_unfinished(target: WriteTarget, table: str, rows: list[dict]) -> int:
    """Bring rows the ledger holds as unfinished up to date with a source that finished them.

    A turn also moves forward when the source shows it went on longer (a transcript imported
    while its last turn was still running: the turn gained tool calls and tokens since).
    """
    finished = [row for row in rows if row.get("status") in FINISHED]
    if not finished:
        return 0
    later = " OR completed_at < :completed_at" if table == "turns" else ""
    updated = 0
    for row in finished:
        columns = [c for c in PROGRESS_COLUMNS[table] if c in row]
        values = dict(zip(columns, target.values(table, columns, row), strict=True))
        updated += target.execute(
            f"UPDATE {table} SET {', '.join(f'{c} = :{c}' for c in columns)} "
            f"WHERE id = :id AND (status IN ('pending', 'streaming'){later})",
            {**values, "id": row["id"], "completed_at": values.get("completed_at")},
        )
    return updated


def _grow_usage(target: WriteTarget, rows: list[dict]) -> int:
    """A turn that made more model calls since the last import (it was still running) takes
    the source's larger usage; the same usage again changes nothing."""
    return target.executemany(
        """UPDATE turn_usage SET model_calls = :model_calls, input_tokens = :input_tokens,
               cache_read_tokens = :cache_read_tokens, cache_write_tokens = :cache_write_tokens,
               output_tokens = :output_tokens
           WHERE turn_id = :turn_id AND model_calls < :model_calls""",
        rows,
    )


def _move_session_forward(target: WriteTarget, session: dict) -> int:
    """Bring an imported session's head and last activity up to date; fill a missing label/root.

    The status is left alone: a user may have archived the session since the last import.
    """
    columns = ["id", "label", "root_turn_id", "current_turn_id", "updated_at"]
    values = dict(zip(columns, target.values("sessions", columns, session), strict=True))
    # CASTs: PostgreSQL must know a parameter's type to test it for NULL.
    return target.execute(
        """
        UPDATE sessions SET
            label = COALESCE(label, CAST(:label AS TEXT)),
            root_turn_id = COALESCE(root_turn_id, CAST(:root_turn_id AS TEXT)),
            current_turn_id = CASE WHEN updated_at < :updated_at
                THEN COALESCE(CAST(:current_turn_id AS TEXT), current_turn_id)
                ELSE current_turn_id END,
            updated_at = CASE WHEN updated_at < :updated_at THEN :updated_at ELSE updated_at END
        WHERE id = :id AND (
            updated_at < :updated_at
            OR (label IS NULL AND CAST(:label AS TEXT) IS NOT NULL)
            OR (root_turn_id IS NULL AND CAST(:root_turn_id AS TEXT) IS NOT NULL))
        """,
        values,
    )


def write_requests(conn, rows: list[dict], where: str, report: ImportReport) -> dict[str, str]:
    """Nexus Ledger rows (ledger_ship), in one transaction. The runtime upserts a request stage
    by stage: a row the ledger holds as still processing takes the source's later state; a row
    it holds as finished and the source shows otherwise is a collision, reported and kept.
    Returns the requests left out (failed or collided): id → why."""
    target = conn if isinstance(conn, WriteTarget) else WriteTarget(conn)
    try:
        with target.transaction():
            added = _insert(target, "nexus_requests", rows)
            updated, collisions = _advance_requests(target, rows) if added < len(rows) else (0, [])
    except Exception as error:  # noqa: BLE001 - one bad row: the others go in one by one
        if len(rows) > 1:
            left_out = {}
            for row in rows:
                left_out |= write_requests(target, [row], where, report)
            return left_out
        why = f"{type(error).__name__}: {error}"
        report.request_failed(f"{where} {rows[0].get('id')}", why)
        return {rows[0].get("id"): why}
    report.added["nexus_requests"] += added
    report.present["nexus_requests"] += len(rows) - added
    report.updated["nexus_requests"] += updated
    left_out = {}
    for request_id, differ in collisions:
        why = f"nexus_requests {request_id}: other {', '.join(differ)} already"
        report.collided(where, why)
        left_out[request_id] = why
    return left_out


def _advance_requests(target: WriteTarget, rows: list[dict]) -> tuple[int, list]:
    columns = _columns_of("nexus_requests", rows)
    by_id = {row["id"]: row for row in rows}
    updated, collisions = 0, []
    for start in range(0, len(rows), ID_BATCH):
        ids = [row["id"] for row in rows[start : start + ID_BATCH]]
        stored = target.fetchall(
            f"SELECT {', '.join(columns)} FROM nexus_requests"
            f" WHERE id IN ({', '.join('?' * len(ids))})",
            ids,
        )
        for values in stored:
            theirs = dict(zip(columns, values, strict=True))
            row = by_id[theirs["id"]]
            differ = [c for c in columns if not _same(row.get(c), theirs[c])]
            if not differ:
                continue
            if theirs["status"] != "processing":
                collisions.append((row["id"], differ))
                continue
            fitted = dict(zip(columns, target.values("nexus_requests", columns, row), strict=True))
            updated += target.execute(
                f"UPDATE nexus_requests SET {', '.join(f'{c} = :{c}' for c in columns)}"
                " WHERE id = :id AND status = 'processing'",
                fitted,
            )
    return updated, collisions


def _descendants(bundle: SessionBundle):
    for child in bundle.children:
        yield child
        yield from _descendants(child)
