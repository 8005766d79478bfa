"""Retention of the Nexus Ledger on rows of every age, interrupted runs, and the Agents Ledger
left alone."""

import re
import sqlite3
from io import StringIO

import pytest
from builders import LEDGER_DB
from django.core.management import CommandError, call_command

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


def table(path, sql):
    with sqlite3.connect(path) as conn:
        return conn.execute(sql).fetchall()


def snapshots(path) -> dict[str, bool]:
    return {
        i: s is not None for i, s in table(path, "SELECT id, request_snapshot FROM nexus_requests")
    }


def test_snapshots_go_after_7_days_and_rows_move_to_the_archive_after_30(aged, tmp_path):
    archive = tmp_path / "archive.sqlite3"
    report = apply_retention(aged.path, archive=archive, batch=1, now=NOW)
    assert snapshots(aged.path) == {"R1-1": True, "R1-2": True, "R10-1": False, "R10-2": False}
    assert sorted(r[0] for r in table(archive, "SELECT id FROM nexus_requests")) == [
        "R40-1",
        "R40-2",
    ]
    assert table(archive, "SELECT request_snapshot FROM nexus_requests")[0] == ('{"big": true}',)
    assert (report.snapshots_dropped, report.archived, report.removed) == (2, 2, 2)


def test_without_an_archive_nothing_is_deleted_and_it_says_why(aged):
    report = apply_retention(aged.path, now=NOW)
    assert len(snapshots(aged.path)) == 6
    assert report.kept_old == 2
    assert "cannot delete without an archive" in report.lines()[-1]


def test_a_dry_run_changes_nothing_and_says_what_it_would_do(aged, tmp_path):
    before = table(aged.path, "SELECT * FROM nexus_requests ORDER BY id")
    report = apply_retention(aged.path, archive=tmp_path / "a.sqlite3", dry_run=True, now=NOW)
    assert table(aged.path, "SELECT * FROM nexus_requests ORDER BY id") == before
    assert not (tmp_path / "a.sqlite3").exists()
    assert report.lines()[:3] == [
        "would drop request_snapshot from 2 requests",
        "would copy 2 requests to the archive",
        "would remove 2 archived requests from the live ledger",
    ]


def test_an_interrupted_run_leaves_rows_in_both_never_in_neither_and_resumes(
    aged, tmp_path, monkeypatch
):
    archive = tmp_path / "archive.sqlite3"

    def crash(conn, ids):
        raise KeyboardInterrupt  # the operator stops it between the archive's commit and the delete

    monkeypatch.setattr(retention, "_remove_batch", crash)
    with pytest.raises(KeyboardInterrupt):
        apply_retention(aged.path, archive=archive, batch=1, now=NOW)
    live = {r[0] for r in table(aged.path, "SELECT id FROM nexus_requests")}
    archived = {r[0] for r in table(archive, "SELECT id FROM nexus_requests")}
    assert archived == {"R40-1"} and {"R40-1", "R40-2"} <= live  # in both, never in neither

    monkeypatch.undo()
    apply_retention(aged.path, archive=archive, batch=1, now=NOW)  # run it again
    live = {r[0] for r in table(aged.path, "SELECT id FROM nexus_requests")}
    archived = {r[0] for r in table(archive, "SELECT id FROM nexus_requests")}
    assert archived == {"R40-1", "R40-2"} and not live & archived


def test_the_agents_ledger_is_never_written(aged, tmp_path):
    statements = []
    apply_retention(aged.path, archive=tmp_path / "a.sqlite3", now=NOW, trace=statements.append)
    write = re.compile(r"\s*(DELETE FROM|UPDATE|INSERT OR IGNORE INTO)\s+(\w+\.)?(\w+)", re.I)
    targets = {m.group(3) for s in statements if (m := write.match(s))}
    assert targets == {"nexus_requests"}
    assert table(aged.path, "SELECT id FROM sessions") == [("S1",)]
    assert table(aged.path, "SELECT id FROM turns") == [("T1",)]


def test_an_archive_that_is_not_a_ledger_is_refused(aged, tmp_path):
    other = tmp_path / "other.sqlite3"
    with sqlite3.connect(other) as conn:
        conn.execute("CREATE TABLE x (y)")
    with pytest.raises(ValueError, match="no nexus_requests table"):
        apply_retention(aged.path, archive=other, now=NOW)
    assert len(snapshots(aged.path)) == 6


def test_the_command_prints_what_it_did(aged, tmp_path, monkeypatch):
    monkeypatch.setattr(retention, "now_ms", lambda: NOW)
    out = StringIO()
    call_command("ledger_retention", "--archive-to", str(tmp_path / "a.sqlite3"), stdout=out)
    assert "copy 2 requests to the archive" in out.getvalue()
    with pytest.raises(CommandError, match="must not be smaller"):
        call_command("ledger_retention", "--snapshot-days", "40", stdout=StringIO())
