"""ledger_import: where it writes, what it refuses, and that a session is written whole or not."""

import sqlite3
from io import StringIO

import pytest
from django.core.management import CommandError, call_command
from importing import IMPORT_FIXTURES, IMPORTED_TABLES, LEFT_OUT, run_import, table_counts

from ledgerfacts import schema

CLAUDE = IMPORT_FIXTURES / "claude-code"
CODEX = IMPORT_FIXTURES / "codex"


def counts(ledger) -> dict[str, int]:
    return table_counts(ledger, IMPORTED_TABLES)


def test_a_new_ledger_file_is_created_with_the_ddl(tmp_path):
    dest = tmp_path / "imported.sqlite3"
    out = run_import("claude-code", CLAUDE / "rewind.jsonl", ledger=dest)
    assert f"Created a new ledger at {dest}" in out
    with sqlite3.connect(dest) as conn:
        inspection = schema.inspect_ledger(conn)
        assert conn.execute("PRAGMA journal_mode").fetchone() == ("wal",)
    assert inspection.tables >= set(schema.LEDGER_TABLES)
    assert inspection.mismatches == {}
    assert counts(dest)["sessions"] == 1


def test_the_summary_names_what_was_added_and_a_second_run_adds_nothing(tmp_path):
    dest = tmp_path / "l.sqlite3"
    first = run_import("claude-code", CLAUDE, ledger=dest, left_out=LEFT_OUT)
    after_first = counts(dest)
    second = run_import("claude-code", CLAUDE, ledger=dest, left_out=LEFT_OUT)
    assert counts(dest) == after_first
    assert f"turns: {after_first['turns']} added, 0 already there" in first
    assert f"turns: 0 added, {after_first['turns']} already there" in second
    assert f"messages: 0 added, {after_first['messages']} already there" in second
    assert f"tool_calls: 0 added, {after_first['tool_calls']} already there" in second


def test_it_writes_into_the_configured_ledger_without_ledger_option(ledger):
    run_import("codex", next(CODEX.glob("rollout-*.jsonl")))
    assert ledger.conn.execute("SELECT count(*) FROM sessions").fetchone() == (1,)


@pytest.mark.parametrize(
    ("fmt", "path", "expected"),
    [
        ("claude-code", CODEX / "malformed.jsonl", "not a Claude Code transcript"),
        ("claude-code", CLAUDE / "not-a-transcript.txt", "expected a Claude Code transcript"),
        ("codex", CLAUDE / "rewind.jsonl", "try 'claude-code'"),
        ("claude-code", next((CODEX / "layouts").glob("*.jsonl")), "try 'codex'"),  # flat layout
        ("codex", CLAUDE / "not-a-transcript.txt", "not a Codex CLI rollout"),
    ],
)
def test_an_input_of_the_wrong_format_is_refused_naming_the_expected_one(
    tmp_path, fmt, path, expected
):
    dest = tmp_path / "l.sqlite3"
    out = StringIO()
    with pytest.raises(CommandError, match=f"1 input\\(s\\) refused: not {fmt}"):
        call_command("ledger_import", fmt, str(path), "--ledger", str(dest), stdout=out)
    assert expected in out.getvalue()
    assert not dest.exists()


def test_a_sqlite_file_is_refused_as_a_transcript(tmp_path):
    other = tmp_path / "other.sqlite3"
    schema.create_ledger(other)
    out = StringIO()
    with pytest.raises(CommandError, match="refused"):
        call_command("ledger_import", "claude-code", str(other), "--ledger", str(tmp_path / "l"),
                     stdout=out)  # fmt: skip
    assert "is a SQLite database, not a Claude Code transcript" in out.getvalue()


def test_the_other_inputs_are_still_imported_when_one_is_refused(tmp_path):
    dest = tmp_path / "l.sqlite3"
    with pytest.raises(CommandError):
        run_import(
            "claude-code", CLAUDE / "not-a-transcript.txt", CLAUDE / "rewind.jsonl", ledger=dest
        )
    assert counts(dest)["sessions"] == 1


def test_a_missing_input_is_refused_before_anything_is_written(tmp_path):
    dest = tmp_path / "l.sqlite3"
    with pytest.raises(CommandError, match="No such file or folder: .*nowhere.jsonl"):
        run_import("claude-code", tmp_path / "nowhere.jsonl", ledger=dest)
    assert not dest.exists()


def test_a_database_that_is_not_an_agents_ledger_is_refused(tmp_path):
    dest = tmp_path / "shop.sqlite3"
    with sqlite3.connect(dest) as conn:
        conn.execute("CREATE TABLE orders (id INTEGER PRIMARY KEY)")
    with pytest.raises(CommandError, match="is not an Agents Ledger"):
        run_import("claude-code", CLAUDE / "rewind.jsonl", ledger=dest)


def test_a_session_that_cannot_be_written_is_left_out_entirely(tmp_path):
    """A failure halfway through a session (here: the ledger refuses failed tool calls, which
    rewind.jsonl has after its first rows) rolls the whole session back; the others go in."""
    dest = tmp_path / "l.sqlite3"
    schema.create_ledger(dest)
    with sqlite3.connect(dest) as conn:
        conn.execute(
            "CREATE TRIGGER refuse_failed BEFORE INSERT ON tool_calls WHEN NEW.status = 'failed' "
            "BEGIN SELECT RAISE(ABORT, 'refused by the test'); END"
        )
    out = run_import(
        "claude-code",
        CLAUDE / "rewind.jsonl",
        CLAUDE / "compaction.jsonl",
        ledger=dest,
        left_out="1 session\\(s\\) left out entirely",
    )
    assert "Sessions left out entirely: 1" in out
    assert "rewind.jsonl: IntegrityError: refused by the test" in out
    with sqlite3.connect(dest) as conn:
        assert conn.execute("SELECT label FROM sessions").fetchall() == [
            ("Write the release notes",)
        ]
        rewind_rows = conn.execute(
            "SELECT (SELECT count(*) FROM turns WHERE id LIKE 'a0000000%')"
            " + (SELECT count(*) FROM messages WHERE id LIKE 'a0000000%')"
        ).fetchone()[0]
    assert rewind_rows == 0


def test_an_unknown_format_is_refused_by_the_parser(tmp_path):
    with pytest.raises(CommandError, match="invalid choice: 'cursor'"):
        run_import("cursor", CLAUDE / "rewind.jsonl", ledger=tmp_path / "l.sqlite3")
