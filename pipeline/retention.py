"""The Nexus Ledger's retention policy (seed 002, "Retention Policy"):

    < 7 days      keep everything
    7–30 days     drop request_snapshot, keep the summary fields
    > 30 days     copy to an archive ledger, then remove from the live table

Only nexus_requests is ever touched. Old rows are removed only after they are safely in the
archive: each batch is first committed to the archive, then read back from it by id, and a live
row is deleted only where the archive's row is the same, column by column. An interrupted run
leaves a row in both at worst, never in neither, and the next run finishes the job. Without an
archive nothing is removed, and an archive that is the live ledger itself (the same file by
device and inode, under any path, or one of its -wal/-shm/-journal files) is refused.

The live ledger is a SQLite file or a PostgreSQL database; the archive a SQLite file (portable:
ledgerweb opens it as a ledger) or, for a PostgreSQL ledger, also a PostgreSQL database. One
policy, one SQL text: the engines' differences sit in retention_db.py.
"""

from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

from ledgerfacts import schema
from ledgerfacts.timestamps import now_ms
from ledgerweb.db import shown_location
from pipeline.retention_db import (
    Location,
    RetentionDb,
    check_archive_file,
    open_archive,
    place_of,
    same_files,
)

DAY_MS = 86_400_000
# Named, not *: an archive created elsewhere may order its columns differently.
COLUMN_NAMES = [c.name for c in schema.expected_columns()["nexus_requests"]]
COLUMNS = ", ".join(COLUMN_NAMES)
# A batch's rows pass through this process on their way to the archive: at most this many text
# bytes of them (old requests keep their snapshots, which can be large), and at most this many
# ids in one statement (SQLite and PostgreSQL both cap the parameters of a statement).
BATCH_TEXT_BYTES = 16 * 1024 * 1024
MAX_IDS = 10_000
TEXT_SIZE = " + ".join(
    f"coalesce(length({c.name}), 0)"
    for c in schema.expected_columns()["nexus_requests"]
    if c.type == "TEXT"
)


@dataclass
class RetentionReport:
    snapshots_dropped: int = 0
    archived: int = 0
    removed: int = 0
    kept_old: int = 0  # rows past the delete age kept because there is no archive
    kept_without_id: int = 0  # rows past the delete age no archive can tell apart
    kept_differing: int = 0  # rows whose id the archive holds with other content
    dry_run: bool = False

    def lines(self) -> list[str]:
        would = "would " if self.dry_run else ""
        lines = [f"{would}drop request_snapshot from {self.snapshots_dropped:,} requests"]
        if self.kept_old:  # no archive: "would copy 0" would read as if nothing were old
            keep = "would keep" if self.dry_run else "kept"
            lines.append(
                f"{keep} {self.kept_old:,} requests past the delete age: retention cannot delete "
                "without an archive (pass --archive-to PATH or a postgres:// URL)"
            )
        else:
            lines += [
                f"{would}copy {self.archived:,} requests to the archive",
                f"{would}remove {self.removed:,} archived requests from the live ledger",
            ]
        if self.kept_without_id:
            lines.append(
                f"kept {self.kept_without_id:,} requests past the delete age that have no id: "
                "the archive could not show it holds them"
            )
        if self.kept_differing:
            lines.append(
                f"kept {self.kept_differing:,} requests the archive holds differently (a row of "
                "the same id with other content): compare them and remove one by hand"
            )
        return lines


def apply_retention(
    ledger: Location,
    *,
    snapshot_days: int = 7,
    delete_days: int = 30,
    archive: Location | None = None,
    batch: int = 5_000,
    dry_run: bool = False,
    now: int | None = None,
    trace: Callable[[str], None] | None = None,
    time_limit_s: float | None = None,
) -> RetentionReport:
    """Retention on a ledger file (a Path) or a PostgreSQL ledger (a URL or connection string),
    archiving to a SQLite file or a PostgreSQL database (see retention_db.py). With a time
    limit (a page's dry run), a query past it raises retention_db.TookTooLong."""
    if delete_days < snapshot_days:
        raise ValueError("--delete-days must not be smaller than --snapshot-days")
    now = now_ms() if now is None else now
    drop_before, delete_before = now - snapshot_days * DAY_MS, now - delete_days * DAY_MS
    report = RetentionReport(dry_run=dry_run)
    live = RetentionDb(ledger, trace, time_limit_s)
    try:
        if archive is not None:
            _refuse_archive(live, archive)
        report.snapshots_dropped = _drop_snapshots(live, drop_before, delete_before, batch, dry_run)
        old, report.kept_without_id = live.fetchall(
            "SELECT count(id), count(*) - count(id) FROM nexus_requests WHERE started_at < ?",
            [delete_before],
        )[0]
        if archive is None:
            report.kept_old = old
        elif dry_run:
            report.archived = report.removed = old
        else:
            report.archived, report.removed, report.kept_differing = _archive_old(
                live, archive, delete_before, batch
            )
    finally:
        live.close()
    return report


def _refuse_archive(live: RetentionDb, archive: Location) -> None:
    """Archives that would lose rows or change them, refused before anything is done (a dry
    run too: it says what the run would do, and the run would refuse)."""
    if not live.postgres and not isinstance(archive, Path):
        # PostgreSQL's typed columns cannot hold all a SQLite ledger may (1.5 in a BIGINT,
        # 'true' in a BOOLEAN): rows would be changed or stuck. A file archive holds them all.
        raise ValueError("a SQLite ledger is archived to a SQLite file: pass --archive-to PATH")
    if isinstance(archive, Path):
        check_archive_file(archive)
    _refuse_the_live_ledger(live, archive)


def _refuse_the_live_ledger(live: RetentionDb, archive: Location) -> None:
    """Every row would be "held by the archive" and deleted: lost. Asked again once the archive
    is open (a file it created may be reached by a path that did not exist before)."""
    if isinstance(archive, Path):
        same = not live.postgres and same_files(live.location, archive)
    else:
        same = place_of(archive) == live.place()
    if same:
        raise ValueError(
            f"the archive is the live ledger itself ({shown_location(archive)} is "
            f"{shown_location(live.location)}, or one of its files): pass another --archive-to"
        )


def _drop_snapshots(live: RetentionDb, drop_before, delete_before, batch, dry_run) -> int:
    where = "started_at < ? AND started_at >= ? AND request_snapshot IS NOT NULL"
    if dry_run:
        return live.fetchall(f"SELECT count(*) FROM nexus_requests WHERE {where}",
                             [drop_before, delete_before])[0][0]  # fmt: skip
    total, key = 0, live.row_key
    while True:  # short transactions, so the live writer is never held up for long
        changed = live.execute(
            f"""UPDATE nexus_requests SET request_snapshot = NULL WHERE {key} IN (
                    SELECT {key} FROM nexus_requests WHERE {where} LIMIT ?)""",
            [drop_before, delete_before, batch],
        )
        total += changed
        if changed < batch:
            return total


def _archive_old(live: RetentionDb, location: Location, delete_before: int, batch: int):
    archive = open_archive(location, live.trace)
    copied = removed = differing = 0
    try:
        _refuse_the_live_ledger(live, location)
        after = None  # batches in id order: a row kept (differing) is not met again
        while ids := _old_ids(live, delete_before, batch, after):
            copied += _copy_batch(live, archive, ids)
            removed_now, differing_now = _remove_batch(live, archive, ids)
            removed, differing = removed + removed_now, differing + differing_now
            after = ids[-1]
        return copied, removed, differing
    finally:
        archive.close()


def _old_ids(live: RetentionDb, delete_before: int, batch: int, after: str | None) -> list[str]:
    """The next batch's ids after `after`, in id order: at most `batch` rows and
    BATCH_TEXT_BYTES of text (at least one)."""
    past = "" if after is None else " AND id > ?"
    found = live.fetchall(
        f"SELECT id, {TEXT_SIZE} FROM nexus_requests WHERE started_at < ? AND id IS NOT NULL"
        f"{past} ORDER BY id LIMIT ?",
        [delete_before, *([] if after is None else [after]), min(batch, MAX_IDS)],
    )
    ids, size = [], 0
    for request_id, text_bytes in found:
        if ids and size + text_bytes > BATCH_TEXT_BYTES:
            break
        ids.append(request_id)
        size += text_bytes
    return ids


def _marks(values: list) -> str:
    return ", ".join("?" * len(values))


def _copy_batch(live: RetentionDb, archive: RetentionDb, ids: list[str]) -> int:
    """Into the archive, committed on its own; a repeat after an interruption adds nothing."""
    rows = live.fetchall(f"SELECT {COLUMNS} FROM nexus_requests WHERE id IN ({_marks(ids)})", ids)
    with archive.transaction():
        return archive.executemany(
            f"INSERT INTO nexus_requests ({COLUMNS}) VALUES ({_marks(COLUMN_NAMES)})"
            " ON CONFLICT (id) DO NOTHING",
            rows,
        )


def _remove_batch(live: RetentionDb, archive: RetentionDb, ids: list[str]) -> tuple[int, int]:
    """Out of the live ledger: only the rows the archive now holds (it committed them), read
    back from it by id and the same in every column. The live rows are read again under the
    write lock, so a row the live writer changed after its copy stays. Returns how many rows
    were removed and how many the archive holds differently."""
    held = {
        row[0]: row
        for row in archive.fetchall(
            f"SELECT {COLUMNS} FROM nexus_requests WHERE id IN ({_marks(ids)})", ids
        )
    }
    with live.transaction():
        rows = live.fetchall(
            f"SELECT {COLUMNS} FROM nexus_requests WHERE id IN ({_marks(ids)}){live.for_update}",
            ids,
        )
        same = [row[0] for row in rows if row[0] in held and _same_row(row, held[row[0]])]
        differing = sum(1 for row in rows if row[0] in held) - len(same)
        if not same:
            return 0, differing
        removed = live.execute(f"DELETE FROM nexus_requests WHERE id IN ({_marks(same)})", same)
    return removed, differing


def _same_row(live_row: tuple, archived_row: tuple) -> bool:
    """Column by column, as Python compares them: a SQLite archive of a PostgreSQL ledger holds
    a BOOLEAN as 1 or 0 (True == 1), an INTEGER stays an int and a REAL a float."""
    return len(live_row) == len(archived_row) and all(
        a == b for a, b in zip(live_row, archived_row, strict=True)
    )
