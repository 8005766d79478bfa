"""Retention of the Nexus Ledger on rows of every age, interrupted runs, and the Agents Ledger
left alone: on a SQLite ledger and (pytest --ledger-backend=postgres) a PostgreSQL one, each with
a file archive and, for a PostgreSQL ledger, a PostgreSQL archive too."""

import os
import re
import sqlite3
import subprocess
import sys
import threading
from contextlib import closing
from io import StringIO
from pathlib import Path

import psycopg
import pytest
from builders import LEDGER_DB
from django.core.management import CommandError, call_command
from psycopg.conninfo import conninfo_to_dict

from ledgerfacts import schema
from ledgerweb.db import is_postgres_url
from pipeline import retention
from pipeline.retention import DAY_MS, apply_retention

pytestmark = LEDGER_DB
NOW = 1_790_000_000_000
ROOT = Path(__file__).resolve().parent.parent


@pytest.fixture
def aged(ledger):
    """Requests 1, 10 and 40 days old (two of each), and a session that must not change."""
    for days in (1, 10, 40):
        for n in (1, 2):
            ledger.request(id=f"R{days}-{n}", started_at=NOW - days * DAY_MS,
                           request_snapshot='{"big": true}')  # fmt: skip
    s = ledger.session(id="S1")
    ledger.turn(s, id="T1")
    return ledger


def pytest_generate_tests(metafunc):
    """Where old rows go: a SQLite file; for a PostgreSQL ledger (make test's second ledger pass)
    also a PostgreSQL database. A SQLite ledger archives to files only (a test below says so)."""
    if "archive_kind" in metafunc.fixturenames:
        on_postgres = metafunc.config.getoption("--ledger-backend") == "postgres"
        metafunc.parametrize("archive_kind", ["file", "database"] if on_postgres else ["file"])


@pytest.fixture
def archive(archive_kind, request, tmp_path):
    if archive_kind == "file":
        return tmp_path / "archive.sqlite3"
    return request.getfixturevalue("postgres_database")


def table(location, sql):
    """Rows of a query on a ledger file or a PostgreSQL database, as tuples."""
    if isinstance(location, Path):
        with closing(sqlite3.connect(location)) as conn:
            return conn.execute(sql).fetchall()
    with psycopg.connect(location) as conn:
        return [tuple(row) for row in conn.execute(sql).fetchall()]


def connect(location):
    """A plain connection to a ledger file or a PostgreSQL database (commit to keep a change)."""
    return sqlite3.connect(location) if isinstance(location, Path) else psycopg.connect(location)


def ids(location) -> set[str]:
    return {row[0] for row in table(location, "SELECT id FROM nexus_requests")}


def snapshots(path) -> dict[str, bool]:
    return {
        i: s is not None for i, s in table(path, "SELECT id, request_snapshot FROM nexus_requests")
    }


def test_snapshots_go_after_7_days_and_rows_move_to_the_archive_after_30(aged, archive):
    report = apply_retention(aged.path, archive=archive, batch=1, now=NOW)
    assert snapshots(aged.path) == {"R1-1": True, "R1-2": True, "R10-1": False, "R10-2": False}
    assert ids(archive) == {"R40-1", "R40-2"}
    assert table(archive, "SELECT request_snapshot FROM nexus_requests")[0] == ('{"big": true}',)
    assert (report.snapshots_dropped, report.archived, report.removed) == (2, 2, 2)


def test_a_second_run_finds_nothing_to_do_and_changes_nothing(aged, archive):
    apply_retention(aged.path, archive=archive, now=NOW)
    live = table(aged.path, "SELECT * FROM nexus_requests ORDER BY id")
    again = apply_retention(aged.path, archive=archive, now=NOW)
    assert (again.snapshots_dropped, again.archived, again.removed) == (0, 0, 0)
    assert table(aged.path, "SELECT * FROM nexus_requests ORDER BY id") == live
    assert ids(archive) == {"R40-1", "R40-2"}


def test_without_an_archive_nothing_is_deleted_and_it_says_why(aged):
    report = apply_retention(aged.path, now=NOW)
    assert len(snapshots(aged.path)) == 6
    assert report.kept_old == 2
    assert "cannot delete without an archive" in report.lines()[-1]


def test_a_dry_run_changes_nothing_and_says_what_it_would_do(aged, archive):
    before = table(aged.path, "SELECT * FROM nexus_requests ORDER BY id")
    report = apply_retention(aged.path, archive=archive, dry_run=True, now=NOW)
    assert table(aged.path, "SELECT * FROM nexus_requests ORDER BY id") == before
    if isinstance(archive, Path):
        assert not archive.exists()
    else:
        assert table(archive, "SELECT table_name FROM information_schema.tables"
                              " WHERE table_schema = current_schema()") == []  # fmt: skip
    assert report.lines()[:3] == [
        "would drop request_snapshot from 2 requests",
        "would copy 2 requests to the archive",
        "would remove 2 archived requests from the live ledger",
    ]


def test_an_interrupted_run_leaves_rows_in_both_never_in_neither_and_resumes(
    aged, archive, monkeypatch
):
    def crash(*args):
        raise KeyboardInterrupt  # the operator stops it between the archive's commit and the delete

    monkeypatch.setattr(retention, "_remove_batch", crash)
    with pytest.raises(KeyboardInterrupt):
        apply_retention(aged.path, archive=archive, batch=1, now=NOW)
    live, archived = ids(aged.path), ids(archive)
    assert len(archived) == 1 and archived < {"R40-1", "R40-2"} <= live  # in both, not in neither

    monkeypatch.undo()
    apply_retention(aged.path, archive=archive, batch=1, now=NOW)  # run it again
    live, archived = ids(aged.path), ids(archive)
    assert archived == {"R40-1", "R40-2"} and not live & archived


def test_a_batch_goes_on_next_to_a_live_writer_and_loses_none_of_its_rows(aged, archive):
    """The runtime writes while retention runs: SQLite makes retention wait for the writer's
    commit (busy timeout), PostgreSQL lets both go on; either way both get their work done."""
    if isinstance(aged.path, Path):
        writer = sqlite3.connect(aged.path, isolation_level=None, check_same_thread=False)
        writer.execute("BEGIN IMMEDIATE")
    else:
        writer = psycopg.connect(aged.path)  # a transaction opens with the first statement
    insert = "INSERT INTO nexus_requests (id, event_id, event_type, event_source, stage, status,"
    insert += " started_at) VALUES ('R-NEW', 'e', 'message', 'imessage', 'runAgent', 'processing', "
    writer.execute(insert + f"{NOW})")
    writer.execute("UPDATE nexus_requests SET status = 'failed' WHERE id = 'R1-1'")
    commit = threading.Timer(0.5, writer.commit if not isinstance(writer, sqlite3.Connection)
                             else lambda: writer.execute("COMMIT"))  # fmt: skip
    commit.start()
    try:
        report = apply_retention(aged.path, archive=archive, batch=1, now=NOW)
    finally:
        commit.join()
        writer.close()
    assert (report.snapshots_dropped, report.archived, report.removed) == (2, 2, 2)
    assert ids(aged.path) == {"R-NEW", "R1-1", "R1-2", "R10-1", "R10-2"}
    assert table(aged.path, "SELECT status FROM nexus_requests WHERE id = 'R1-1'") == [("failed",)]
    assert ids(archive) == {"R40-1", "R40-2"}


def test_the_agents_ledger_is_never_written(aged, archive):
    statements = []
    apply_retention(aged.path, archive=archive, now=NOW, trace=statements.append)
    write = re.compile(r"\s*(DELETE FROM|UPDATE|INSERT INTO)\s+(\w+\.)?(\w+)", re.I)
    targets = {m.group(3) for s in statements if (m := write.match(s))}
    assert targets == {"nexus_requests"}
    assert table(aged.path, "SELECT id FROM sessions") == [("S1",)]
    assert table(aged.path, "SELECT id FROM turns") == [("T1",)]


def test_an_archive_that_is_not_a_ledger_is_refused(aged, archive):
    if isinstance(archive, Path):
        with closing(sqlite3.connect(archive)) as conn:
            conn.execute("CREATE TABLE x (y)")
    else:
        with psycopg.connect(archive) as conn:
            conn.execute("CREATE TABLE x (y text)")
    with pytest.raises(ValueError, match="no nexus_requests table"):
        apply_retention(aged.path, archive=archive, now=NOW)
    assert len(snapshots(aged.path)) == 6


def test_the_live_ledger_is_refused_as_its_own_archive(aged):
    with pytest.raises(ValueError, match="the archive is the live ledger itself"):
        apply_retention(aged.path, archive=aged.path, now=NOW)
    assert len(snapshots(aged.path)) == 6


def test_a_sqlite_ledger_is_archived_to_a_file_only(tmp_path):
    # PostgreSQL's columns cannot hold every value a SQLite ledger may hold: refused, said.
    path = tmp_path / "ledger.sqlite3"
    schema.create_ledger(path)
    with pytest.raises(ValueError, match="archived to a SQLite file"):
        apply_retention(path, archive="postgres://nobody@nowhere/archive", now=NOW)


def test_rows_without_an_id_stay_and_are_counted(ledger, tmp_path):
    # SQLite lets a TEXT primary key hold NULL; no archive can show it holds such a row.
    ledger.request(id=None, started_at=NOW - 40 * DAY_MS)
    ledger.request(id="R-OLD", started_at=NOW - 40 * DAY_MS)
    report = apply_retention(ledger.path, archive=tmp_path / "a.sqlite3", now=NOW)
    assert (report.archived, report.removed, report.kept_without_id) == (1, 1, 1)
    assert "kept 1 requests past the delete age that have no id" in report.lines()[-1]
    assert table(ledger.path, "SELECT count(*) FROM nexus_requests WHERE id IS NULL") == [(1,)]


def test_the_command_prints_what_it_did(aged, archive, monkeypatch):
    monkeypatch.setattr(retention, "now_ms", lambda: NOW)
    out = StringIO()
    call_command("ledger_retention", "--archive-to", str(archive), stdout=out)
    assert "copy 2 requests to the archive" in out.getvalue()
    if is_postgres_url(aged.path):  # named as a database, without a password
        name = conninfo_to_dict(aged.path)["dbname"]
        assert re.match(rf"Retention on postgres://[^:]*@\S*/{name}\n", out.getvalue())
    else:
        assert out.getvalue().startswith(f"Retention on {aged.path}\n")
    assert ids(archive) == {"R40-1", "R40-2"}
    assert "R40-1" not in ids(aged.path)
    with pytest.raises(CommandError, match="must not be smaller"):
        call_command("ledger_retention", "--snapshot-days", "40", stdout=StringIO())


# -- The archive is the live ledger under another name: refused, nothing lost (issue 25) --------
# Each case counts the live rows before and after: a refusal that deleted anything is a failure.


def live_count(ledger) -> int:
    return table(ledger.path, "SELECT count(*) FROM nexus_requests")[0][0]


def refused(ledger, archive, match: str, **options) -> None:
    """The run (and its dry run) refuses the archive with a clear message; no live row goes."""
    before, said = live_count(ledger), []
    for dry_run in (True, False):
        try:
            apply_retention(ledger.path, archive=archive, now=NOW, dry_run=dry_run, **options)
            said.append("(not refused)")
        except ValueError as error:
            said.append(str(error))
    assert live_count(ledger) == before == 6
    assert all(re.search(match, message) for message in said), said


sqlite_ledger_only = pytest.mark.skipif(
    "config.getoption('--ledger-backend') == 'postgres'",
    reason="about the live ledger's file: a PostgreSQL ledger has none",
)


@sqlite_ledger_only
@pytest.mark.parametrize("ages", [{}, {"snapshot_days": 1, "delete_days": 1}])
def test_a_hard_link_to_the_live_ledger_is_refused_as_its_archive(aged, tmp_path, ages):
    link = tmp_path / "archive.sqlite3"
    link.hardlink_to(aged.path)
    refused(aged, link, "is the live ledger", **ages)


@sqlite_ledger_only
def test_the_live_ledger_through_a_symlinked_folder_is_refused(aged, tmp_path):
    folder = tmp_path / "elsewhere"
    folder.symlink_to(aged.path.parent, target_is_directory=True)
    refused(aged, folder / aged.path.name, "is the live ledger")


@sqlite_ledger_only
def test_a_symlink_to_the_live_ledger_is_refused(aged, tmp_path):
    link = tmp_path / "archive.sqlite3"
    link.symlink_to(aged.path)
    refused(aged, link, "is the live ledger")


@sqlite_ledger_only
def test_the_live_ledger_through_another_mount_path_is_refused(aged, tmp_path):
    """A bind mount shows the same file under another path, as a second mount of a disk does:
    same device and inode, different path. Run in a mount namespace of its own (unshare)."""
    mount = tmp_path / "mnt"
    mount.mkdir()
    script = (
        f"mount --bind {aged.path.parent} {mount} && "
        f"{sys.executable} manage.py ledger_retention --archive-to {mount / aged.path.name}"
    )
    env = {"PATH": os.environ["PATH"], "LEDGER_DB": str(aged.path),
           "DJANGO_DB": str(tmp_path / "django.sqlite3")}  # fmt: skip
    ran = subprocess.run(["unshare", "--map-root-user", "--mount", "sh", "-c", script],
                         env=env, capture_output=True, text=True, cwd=ROOT)  # fmt: skip
    if "mount" in ran.stderr and "ledger_retention" not in ran.stderr and ran.returncode:
        pytest.skip(f"this machine cannot bind-mount in a namespace: {ran.stderr.strip()}")
    assert ran.returncode == 1, ran.stderr
    assert "is the live ledger" in ran.stderr and "Traceback" not in ran.stderr
    assert live_count(aged) == 6


@sqlite_ledger_only
@pytest.mark.parametrize("suffix", ["-wal", "-shm", "-journal"])
def test_a_companion_file_of_the_live_ledger_is_refused(aged, suffix):
    companion = Path(f"{aged.path}{suffix}")
    refused(aged, companion, "SQLite companion file")


@pytest.mark.parametrize("suffix", ["-wal", "-shm", "-journal", "-mj0123ABCD"])
def test_every_companion_name_is_refused_wherever_it_is(aged, tmp_path, suffix):
    # Any file so named is part of a database beside it: writing an archive into it corrupts that.
    refused(aged, tmp_path / f"archive.sqlite3{suffix}", "SQLite companion file")
    link = tmp_path / "innocent.sqlite3"
    link.symlink_to(tmp_path / f"other.sqlite3{suffix}")  # named innocently, pointing at one
    refused(aged, link, "SQLite companion file")


@sqlite_ledger_only
def test_an_archive_whose_journal_is_the_live_ledger_is_refused(aged, tmp_path):
    # Opening the archive would play its "hot journal" (the live ledger) back and delete it.
    Path(f"{tmp_path / 'archive.sqlite3'}-journal").hardlink_to(aged.path)
    refused(aged, tmp_path / "archive.sqlite3", "is the live ledger")


def test_a_folder_as_the_archive_is_refused_with_a_clear_message(aged, tmp_path):
    refused(aged, tmp_path, "is a folder")


def test_a_file_that_is_not_a_database_is_refused_with_a_clear_message(aged, tmp_path):
    notes = tmp_path / "notes.txt"
    notes.write_text("these are my notes, not a ledger\n" * 100)
    refused(aged, notes, "not a SQLite database")
    assert notes.read_text() == "these are my notes, not a ledger\n" * 100


def test_an_archive_in_a_missing_folder_is_refused_with_a_clear_message(aged, tmp_path):
    refused(aged, tmp_path / "nowhere" / "archive.sqlite3", "folder .* does not exist")


@pytest.mark.parametrize(
    "bad", ["folder", "text file", "hard link", "-wal"], ids=lambda bad: bad.replace(" ", "-")
)
def test_the_command_refuses_a_bad_archive_in_one_line_without_a_traceback(aged, tmp_path, bad):
    archive = {
        "folder": tmp_path,
        "text file": tmp_path / "notes.txt",
        "hard link": tmp_path / "link.sqlite3",
        "-wal": tmp_path / "archive.sqlite3-wal",
    }[bad]
    if bad == "text file":
        archive.write_text("not a ledger")
    if bad == "hard link":
        if is_postgres_url(aged.path):
            pytest.skip("a PostgreSQL ledger has no file to link")
        archive.hardlink_to(aged.path)
    with pytest.raises(CommandError):
        call_command("ledger_retention", "--archive-to", str(archive), stdout=StringIO())
    assert live_count(aged) == 6


def test_the_live_database_under_another_spelling_is_refused(aged):
    """A PostgreSQL ledger named by a connection string instead of its URL is still itself."""
    if not is_postgres_url(aged.path):
        pytest.skip("about a PostgreSQL ledger (make test's second ledger pass)")
    spelled = conninfo_to_dict(aged.path)
    other = " ".join(f"{key}={value}" for key, value in spelled.items())
    refused(aged, other, "the archive is the live ledger itself")


def test_a_row_the_archive_holds_differently_is_not_removed(aged, archive):
    """The archive already holds a request of the same id with other content (another ledger's,
    or an older copy): it does not hold this row, so the live row stays, and the report says so."""
    apply_retention(aged.path, archive=archive, now=NOW, delete_days=10_000)  # makes the archive
    with closing(connect(archive)) as conn:
        conn.execute(
            "INSERT INTO nexus_requests (id, event_id, event_type, event_source, stage, status,"
            " started_at) VALUES ('R40-1', 'other', 'message', 'x', 'finalize', 'completed', 1)"
        )
        conn.commit()
    report = apply_retention(aged.path, archive=archive, now=NOW)
    assert ids(aged.path) == {"R1-1", "R1-2", "R10-1", "R10-2", "R40-1"}
    assert (report.archived, report.removed, report.kept_differing) == (1, 1, 1)
    assert "kept 1 requests the archive holds differently" in "\n".join(report.lines())
    again = apply_retention(aged.path, archive=archive, now=NOW)  # stays kept, said again
    assert (again.removed, again.kept_differing) == (0, 1)
    assert "R40-1" in ids(aged.path)


def test_a_row_changed_after_its_copy_is_not_removed(aged, archive, monkeypatch):
    """The live writer updates an old row between the copy and the delete: the archive holds the
    old content only, so the row stays live, counted in the report."""
    copy = retention._copy_batch

    def copy_then_change(live, archive_db, batch_ids):
        copied = copy(live, archive_db, batch_ids)
        with closing(connect(aged.path)) as conn:
            conn.execute("UPDATE nexus_requests SET status = 'failed' WHERE id = 'R40-1'")
            conn.commit()
        return copied

    monkeypatch.setattr(retention, "_copy_batch", copy_then_change)
    report = apply_retention(aged.path, archive=archive, now=NOW)
    assert "R40-1" in ids(aged.path) and "R40-2" not in ids(aged.path)
    assert report.kept_differing == 1
