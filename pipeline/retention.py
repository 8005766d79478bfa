"""The Nexus Ledger's retention policy (seed 002, "Retention Policy"):

    < 7 days      keep everything
    7–30 days     drop request_snapshot, keep the summary fields
    > 30 days     copy to an archive ledger, then remove from the live table

Only nexus_requests is ever touched. Old rows are removed only after they are safely in the
archive: each batch is first committed to the archive, then deleted from the live ledger where
the archive holds them. An interrupted run leaves a row in both files at worst, never in
neither, and the next run finishes the job. Without an archive nothing is removed.
"""

import sqlite3
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

from ledgerfacts import schema
from ledgerfacts.timestamps import now_ms

DAY_MS = 86_400_000
# Named, not *: an archive created elsewhere may order its columns differently.
COLUMNS = ", ".join(c.name for c in schema.expected_columns()["nexus_requests"])
BUSY_TIMEOUT_S = 30


@dataclass
class RetentionReport:
    snapshots_dropped: int = 0
    archived: int = 0
    removed: int = 0
    kept_old: int = 0  # rows past the delete age kept because there is no archive
    dry_run: bool = False

    def lines(self) -> list[str]:
        would = "would " if self.dry_run else ""
        lines = [
            f"{would}drop request_snapshot from {self.snapshots_dropped:,} requests",
            f"{would}copy {self.archived:,} requests to the archive",
            f"{would}remove {self.removed:,} archived requests from the live ledger",
        ]
        if self.kept_old:
            lines.append(
                f"kept {self.kept_old:,} requests past the delete age: retention cannot delete "
                "without an archive (pass --archive-to PATH)"
            )
        return lines


def connect(path: Path) -> sqlite3.Connection:
    conn = sqlite3.connect(path, timeout=BUSY_TIMEOUT_S, isolation_level=None)
    conn.execute("PRAGMA foreign_keys = OFF")  # events(id) lives in another ledger
    return conn


def apply_retention(
    ledger: Path,
    *,
    snapshot_days: int = 7,
    delete_days: int = 30,
    archive: Path | None = None,
    batch: int = 5_000,
    dry_run: bool = False,
    now: int | None = None,
    trace: Callable[[str], None] | None = None,
) -> RetentionReport:
    if delete_days < snapshot_days:
        raise ValueError("--delete-days must not be smaller than --snapshot-days")
    now = now_ms() if now is None else now
    drop_before, delete_before = now - snapshot_days * DAY_MS, now - delete_days * DAY_MS
    report = RetentionReport(dry_run=dry_run)
    conn = connect(ledger)
    if trace:
        conn.set_trace_callback(trace)
    try:
        report.snapshots_dropped = _drop_snapshots(conn, drop_before, delete_before, batch, dry_run)
        (old,) = conn.execute(
            "SELECT count(*) FROM nexus_requests WHERE started_at < ?", [delete_before]
        ).fetchone()
        if archive is None:
            report.kept_old = old
        elif dry_run:
            report.archived = report.removed = old
        else:
            report.archived, report.removed = _archive_old(conn, archive, delete_before, batch)
    finally:
        conn.close()
    return report


def _drop_snapshots(conn, drop_before, delete_before, batch, dry_run) -> int:
    where = "started_at < ? AND started_at >= ? AND request_snapshot IS NOT NULL"
    if dry_run:
        return conn.execute(f"SELECT count(*) FROM nexus_requests WHERE {where}",
                            [drop_before, delete_before]).fetchone()[0]  # fmt: skip
    total = 0
    while True:  # short transactions, so the live writer is never held up for long
        changed = conn.execute(
            f"""UPDATE nexus_requests SET request_snapshot = NULL WHERE rowid IN (
                    SELECT rowid FROM nexus_requests WHERE {where} LIMIT ?)""",
            [drop_before, delete_before, batch],
        ).rowcount
        total += changed
        if changed < batch:
            return total


def _archive_old(conn, archive: Path, delete_before: int, batch: int) -> tuple[int, int]:
    prepare_archive(archive)
    conn.execute("ATTACH DATABASE ? AS archive", [str(archive)])
    copied = removed = 0
    try:
        while True:
            ids = [
                row[0]
                for row in conn.execute(
                    "SELECT id FROM main.nexus_requests WHERE started_at < ? LIMIT ?",
                    [delete_before, batch],
                )
            ]
            if not ids:
                return copied, removed
            copied += _copy_batch(conn, ids)
            removed += _remove_batch(conn, ids)
    finally:
        if conn.in_transaction:
            conn.execute("ROLLBACK")
        conn.execute("DETACH DATABASE archive")


def _copy_batch(conn, ids: list[str]) -> int:
    """Into the archive, committed on its own; a repeat after an interruption adds nothing."""
    marks = ", ".join("?" * len(ids))
    conn.execute("BEGIN IMMEDIATE")
    copied = conn.execute(
        f"""INSERT OR IGNORE INTO archive.nexus_requests ({COLUMNS})
            SELECT {COLUMNS} FROM main.nexus_requests WHERE id IN ({marks})""",
        ids,
    ).rowcount
    conn.execute("COMMIT")
    return copied


def _remove_batch(conn, ids: list[str]) -> int:
    """Out of the live ledger: only the rows the archive now holds."""
    marks = ", ".join("?" * len(ids))
    conn.execute("BEGIN IMMEDIATE")
    removed = conn.execute(
        f"""DELETE FROM main.nexus_requests WHERE id IN ({marks})
            AND id IN (SELECT id FROM archive.nexus_requests)""",
        ids,
    ).rowcount
    conn.execute("COMMIT")
    return removed


def prepare_archive(archive: Path) -> None:
    """A new archive ledger from the DDL, or an existing one whose nexus_requests matches it."""
    if not archive.exists() or archive.stat().st_size == 0:
        schema.create_ledger(archive)
        return
    conn = sqlite3.connect(f"file:{archive}?mode=ro", uri=True)
    try:
        inspection = schema.inspect_ledger(conn)
    finally:
        conn.close()
    if "nexus_requests" not in inspection.tables:
        raise ValueError(f"{archive} has no nexus_requests table: not a ledger archive")
    if "nexus_requests" in inspection.mismatches:
        problems = "; ".join(inspection.mismatches["nexus_requests"])
        raise ValueError(f"{archive}'s nexus_requests differs from the schema: {problems}")
