"""ledger_import into a PostgreSQL ledger (--ledger postgres://… or LEDGER_DB): the same rows, the
same summary and the same checks as into a SQLite file, and the pages show what came in.

Runs on the SQLite pass: each test makes its own throwaway database (`postgres_database`).
"""

import json
import re
import sqlite3

import psycopg
import pytest
from importing import IMPORT_FIXTURES, comparable_rows, run_import

from ledgerfacts import schema
from ledgerweb.pg_schema import create_postgres_ledger

SAMPLES = IMPORT_FIXTURES / "samples"  # the real transcripts of /work/shared/samples, unedited
CLAUDE = IMPORT_FIXTURES / "claude-code"
# Real Claude Code and Codex sessions, and a session with a subagent (a child session written
# after its parent): every table the importers write.
INPUTS = {
    "claude-code": (SAMPLES / "claude-code", CLAUDE / "subagent.jsonl"),
    "codex": (SAMPLES / "codex",),
    # issue 32: chat exports and OTLP traces (written by OpenTelemetry's and OpenInference's
    # OpenAI instrumentations against a fake server, see tests/test_import_otlp.py)
    "chatgpt": (IMPORT_FIXTURES / "chatgpt",),
    "claude-ai": (IMPORT_FIXTURES / "claude-ai",),
    "otlp": (IMPORT_FIXTURES / "otlp",),
}
TABLES = (*schema.AGENTS_TABLES, *schema.OPTIONAL_TABLES)


def import_all(ledger) -> list[str]:
    """Every input into `ledger`; the summaries, less the line naming the ledger."""
    summaries = []
    for fmt, paths in INPUTS.items():
        out = run_import(fmt, *paths, ledger=ledger)
        summaries.append(re.sub(r"(?m)^(Created .* (at|in)|Imported \S+ into) .*\n", "", out))
    return summaries


def pg(url: str) -> psycopg.Connection:
    return psycopg.connect(url, autocommit=True)


def test_the_samples_come_into_postgresql_row_for_row_as_into_sqlite(tmp_path, postgres_database):
    into_sqlite = import_all(tmp_path / "ledger.sqlite3")
    into_postgres = import_all(postgres_database)
    assert into_postgres == into_sqlite  # the same summary: added, skipped, unknown, unmapped
    with sqlite3.connect(tmp_path / "ledger.sqlite3") as lite, pg(postgres_database) as central:
        for table in TABLES:
            assert comparable_rows(central, table) == comparable_rows(lite, table), table
        assert len(comparable_rows(central, "turn_usage")) > 0  # the optional table came too
        (children,) = central.execute(
            "SELECT count(*) FROM sessions WHERE routing_key LIKE 'subagent:%'"
        ).fetchone()
        assert children > 0


def test_importing_again_into_postgresql_adds_nothing(postgres_database):
    first = import_all(postgres_database)
    with pg(postgres_database) as central:
        before = {table: comparable_rows(central, table) for table in TABLES}
    second = import_all(postgres_database)
    for before_summary, again in zip(first, second, strict=True):
        for table in schema.AGENTS_TABLES:
            added = re.search(rf"^{table}: (\d+) added, 0 already there", before_summary, re.M)
            assert f"{table}: 0 added, {added[1]} already there" in again, again
    with pg(postgres_database) as central:
        assert {table: comparable_rows(central, table) for table in TABLES} == before


def test_an_empty_database_gets_the_ledgers_tables_and_the_summary_says_so(postgres_database):
    out = run_import("claude-code", CLAUDE / "rewind.jsonl", ledger=postgres_database)
    assert re.search(r"Created the ledger's tables in postgres://\S+/test_\d+", out)
    assert "sessions: 1 added" in out
    with pg(postgres_database) as central:
        assert central.execute("SELECT count(*) FROM sessions").fetchone() == (1,)


def test_a_refused_import_leaves_an_empty_database_as_it_found_it(postgres_database):
    out = run_import(
        "claude-code", CLAUDE / "not-a-transcript.txt", ledger=postgres_database, left_out="refused"
    )
    assert re.search(r"Nothing imported: the ledger's tables were not left in postgres://", out)
    with pg(postgres_database) as central:
        assert central.execute(
            "SELECT count(*) FROM pg_class WHERE relnamespace = 'public'::regnamespace"
        ).fetchone() == (0,)
        assert central.execute(
            "SELECT count(*) FROM pg_proc WHERE pronamespace = 'public'::regnamespace"
        ).fetchone() == (0,)


def test_a_database_that_is_not_an_agents_ledger_is_refused(postgres_database):
    with pg(postgres_database) as shop:
        shop.execute("CREATE TABLE orders (id integer PRIMARY KEY)")
    with pytest.raises(
        Exception, match=r"postgres://\S+/test_\d+ is not an Agents Ledger .no messages, sessions"
    ):
        run_import("claude-code", CLAUDE / "rewind.jsonl", ledger=postgres_database)
    with pg(postgres_database) as shop:
        tables = shop.execute("SELECT tablename FROM pg_tables WHERE schemaname = 'public'")
        assert tables.fetchall() == [("orders",)]


def test_a_value_postgresql_cannot_hold_leaves_its_session_out_and_says_which(
    tmp_path, postgres_database
):
    """A NUL character is text to SQLite; PostgreSQL's text cannot hold it: that session is
    reported and left out (never stored changed), the other session comes in."""
    lines = (CLAUDE / "rewind.jsonl").read_text().splitlines()
    for n, line in enumerate(lines):
        record = json.loads(line)
        if record.get("type") == "user" and isinstance(record["message"].get("content"), str):
            record["message"]["content"] += "\x00 and the rest"
            lines[n] = json.dumps(record)
            break
    else:
        pytest.fail("rewind.jsonl has no user prompt to put a NUL into")
    odd = tmp_path / "nul.jsonl"
    odd.write_text("\n".join(lines) + "\n")

    out = run_import(
        "claude-code", odd, CLAUDE / "compaction.jsonl", ledger=postgres_database,
        left_out=r"1 session\(s\) left out entirely",
    )  # fmt: skip
    assert "Sessions left out entirely: 1" in out
    assert "nul.jsonl: ValueError" in out and "NUL character" in out
    with pg(postgres_database) as central:
        assert central.execute("SELECT label FROM sessions").fetchall() == [
            ("Write the release notes",)
        ]


@pytest.mark.django_db(transaction=True, databases="__all__")
def test_without_ledger_option_it_imports_into_the_central_ledger_and_pages_show_it(
    central, viewer_client
):
    with pg(central) as conn:
        create_postgres_ledger(conn)
    out = run_import("claude-code", *INPUTS["claude-code"])
    assert "Created" not in out
    assert re.search(r"Imported claude-code into postgres://\S+/test_\d+", out)
    listed = viewer_client.get("/sessions/?format=json").json()["sessions"]
    with pg(central) as conn:
        assert conn.execute("SELECT count(*) FROM sessions").fetchone() == (len(listed),)
        (session_id, label, turns) = conn.execute(
            "SELECT s.id, s.label, count(t.id) FROM sessions s JOIN turns t ON t.session_id = s.id"
            " GROUP BY s.id, s.label ORDER BY count(t.id) DESC LIMIT 1"
        ).fetchone()
    page = viewer_client.get(f"/sessions/{session_id}/")
    assert page.status_code == 200
    assert label in page.content.decode()
    detail = viewer_client.get(f"/sessions/{session_id}/?format=json").json()
    assert detail["problems"] == []
    assert len(detail["turns"]) == turns


def test_a_database_that_cannot_be_reached_is_refused_before_anything_is_read(tmp_path):
    unreachable = f"postgres://nobody@/ledger?host={tmp_path}&port=1"
    with pytest.raises(Exception, match="Cannot connect to the ledger database: "):
        run_import("claude-code", CLAUDE / "rewind.jsonl", ledger=unreachable)
