"""The optional turn_usage table: importers record what a turn's model calls billed (cache reads
and writes included), in ledgers that have the table and in those that do not yet."""

import sqlite3
from contextlib import closing

from importing import IMPORT_FIXTURES, query, run_import

from ledgerfacts import schema

ROLLOUT = next((IMPORT_FIXTURES / "codex").glob("rollout-*.jsonl"))
USAGE = "SELECT model_calls, input_tokens, cache_read_tokens, cache_write_tokens, output_tokens"


def test_a_codex_turn_records_each_model_call_it_made(tmp_path):
    dest = tmp_path / "ledger.sqlite3"
    run_import("codex", ROLLOUT, ledger=dest)
    rows = query(
        dest,
        f"""{USAGE}, t.prompt_tokens FROM turns t JOIN turn_usage u ON u.turn_id = t.id
            ORDER BY t.started_at""",
    )
    # The first turn made two calls (12,000 then 13,000 input tokens): billed 25,000, while its
    # prompt_tokens keep the seeds' meaning, the context of the last call (13,000).
    assert rows[0] == (2, 25_000, 0, 0, 230, 13_000)
    assert [row[:2] for row in rows[1:]] == [(1, 14_000), (1, 3_000)]


def test_the_import_brings_the_table_to_a_ledger_without_it(tmp_path):
    dest = tmp_path / "old.sqlite3"
    with closing(sqlite3.connect(dest)) as conn:
        conn.executescript(schema.ddl(("agents_ledger.sql",)))
    summary = run_import("codex", ROLLOUT, ledger=dest)
    assert "turn_usage: 3 added" in summary
    assert query(dest, "SELECT count(*) FROM turn_usage") == [(3,)]
    again = run_import("codex", ROLLOUT, ledger=dest)
    assert "turn_usage: 0 added, 3 already there" in again
