"""Retention of the Nexus Ledger on rows of every age, interrupted runs, and the Agents Ledger
left alone: on a SQLite ledger and (pytest --ledger-backend=postgres) a PostgreSQL one, each with
a file archive and, for a PostgreSQL ledger, a PostgreSQL archive too."""

import re
import sqlite3
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
