"""`ledger_import aix`: an AIX/Mnemonic ledger (seeds/001) becomes Agents Ledger sessions.

Source ledgers are built from the spec's fields (tests/fixtures/import/aix/schema.sql) with rows
shaped like the spec's examples: Cursor sessions with tool-call bubbles, a branch, a subagent
spawned by a Task call, failed, rejected and cancelled calls. Counts are checked against SQL on
the source, not against numbers written in the test.
"""

import hashlib
import json
import sqlite3
import uuid
from io import StringIO

import pytest
from builders import LEDGER_DB, T0
from django.core.management import CommandError, call_command
from importing import (
    IMPORT_FIXTURES,
    LEFT_OUT,
    SourceLedger,
    assert_a_second_import_adds_nothing,
    assert_sessions_render,
    one,
    run_import,
    table_counts,
)

from importers import aix
from importers.bundle import ImportReport, WrongFormat
from ledgerfacts import schema

pytestmark = LEDGER_DB

SCHEMA = IMPORT_FIXTURES / "aix" / "schema.sql"
MAIN = "a3730dd7-5c30-4081-9876-3c28e4505cc9"
TASK_CALL = "toolu_bdrk_01BFM9VaztN9grH5e4zFhQyZ"
SUBAGENT = f"task-{TASK_CALL}"
CODEX = "53a4d6c2-9752-41f9-b466-1d9d1ae08dee"


class AixSource(SourceLedger):
    """An AIX ledger file, written as the program syncing it from Cursor and others does."""

    def new_id(self) -> str:
        return str(uuid.UUID(int=next(self._ids)))

    def session(self, id: str, **fields) -> dict:
        row = {
            "id": id,
            "source": "cursor",
            "model": "claude-4.5-opus-high-thinking",
            "project": "nexus",
            "created_at": T0,
            "is_subagent": 0,
            "is_agentic": 1,
        } | fields
        return self.insert("agent_sessions", **row)

    def message(self, session: dict, role: str, content: str, at: int, **fields) -> dict:
        (last,) = self.conn.execute(
            "SELECT max(sequence) FROM agent_messages WHERE session_id = ?", (session["id"],)
        ).fetchone()
        row = {
            "id": self.new_id(),
            "session_id": session["id"],
            "role": role,
            "content": content,
            "sequence": 0 if last is None else last + 1,
            "timestamp": at,
        } | fields
        return self.insert("agent_messages", **row)

    def turn(self, session, query: list[dict], response: dict, parent=None, **fields) -> dict:
        row = {
            "id": response["id"],
            "session_id": session["id"],
            "parent_turn_id": parent["id"] if parent else None,
            "query_message_ids": json.dumps([m["id"] for m in query]),
            "response_message_id": response["id"],
            "model": session["model"],
            "token_count": 1337,
            "timestamp": response["timestamp"],
        } | fields
        return self.insert("agent_turns", **row)

    def call(self, message: dict, tool_name: str, number: int = 0, **fields) -> dict:
        row = {
            "id": f"toolu_{self.new_id()[-12:]}",
            "message_id": message["id"],
            "session_id": message["session_id"],
            "tool_name": tool_name,
            "tool_number": number,
            "params_json": json.dumps({"path": "README.md"}),
            "result_json": json.dumps({"ok": True}),
            "status": "completed",
            "started_at": message["timestamp"],
            "completed_at": message["timestamp"] + 400,
        } | fields
        return self.insert("agent_tool_calls", **row)

    def exchange(self, session, parent, prompt: str, reply: str, at: int, calls=()) -> dict:
        """A user query, a tool-call bubble when there are calls, and the response: one turn."""
        query = self.message(session, "user", prompt, at, checkpoint_id=self.new_id())
        if calls:
            bubble = self.message(
                session, "assistant", "", at + 1000, metadata_json='{"_v": 3, "type": 2}'
            )
            for number, (name, fields) in enumerate(calls):
                self.call(bubble, name, number, **fields)
        response = self.message(
            session,
            "assistant",
            reply,
            at + 5000,
            metadata_json=json.dumps({"_v": 3, "tokenCount": {"inputTokens": 1250}}),
        )
        return self.turn(session, [query], response, parent)


def cursor_history(src: AixSource) -> dict:
    """A Cursor session with a system prompt, tool bubbles, a branch and a Task subagent; its
    subagent; and a Codex session with a cancelled call."""
    main = src.session(
        MAIN,
        workspace_path="/Users/t/nexus",
        context_token_limit=176000,
        context_tokens_used=38191,
        force_mode="edit",
    )
    src.message(main, "system", "You are a careful coding agent.", T0)
    t1 = src.exchange(
        main,
        None,
        "Rename ca_repo.py to conversation_analysis_repository.py",
        "Renamed it and updated the imports.",
        T0 + 1000,
        calls=[("read_file", {})],
    )
    failing = json.dumps({"error": "exit status 1: no such file"})
    task = json.dumps({"description": "Update ONBOARDING.md to align"})
    t2 = src.exchange(
        main,
        t1,
        "Update the onboarding doc too",
        "Done: a subagent updated ONBOARDING.md.",
        T0 + 60_000,
        calls=[
            ("run_terminal_command_v2", {"status": "failed", "result_json": failing}),
            ("edit_file_v2", {"status": "rejected", "result_json": None}),
            ("Task", {"id": TASK_CALL, "params_json": task, "child_session_id": SUBAGENT}),
        ],
    )
    t3a = src.exchange(main, t2, "Now run the tests", "All 12 tests pass.", T0 + 120_000)
    t3b = src.exchange(  # the user edited the last query: a second branch from t2
        main,
        t2,
        "Now run the tests with coverage",
        "Coverage is 91%.",
        T0 + 180_000,
        calls=[("run_terminal_cmd", {"params_json": json.dumps({"command": "pytest --cov"})})],
    )

    sub = src.session(
        SUBAGENT,
        model="composer-1",
        created_at=T0 + 62_000,
        parent_session_id=MAIN,
        tool_call_id=TASK_CALL,
        task_description="Update ONBOARDING.md to align",
        task_status="completed",
        is_subagent=1,
    )
    src.exchange(
        sub,
        None,
        "Update ONBOARDING.md to align with the new module name",
        "Updated ONBOARDING.md.",
        T0 + 62_000,
        calls=[("edit_file_v2", {})],
    )

    codex = src.session(CODEX, source="codex", project=None, model="gpt-5.2-codex-xhigh")
    src.exchange(
        codex,
        None,
        "Apply the patch",
        "I stopped: the patch was cancelled.",
        T0 + 3_600_000,
        calls=[("apply_patch", {"status": "cancelled", "result_json": None})],
    )
    return {"t1": t1, "t2": t2, "t3a": t3a, "t3b": t3b}


@pytest.fixture
def src(tmp_path) -> AixSource:
    source = AixSource(tmp_path / "aix.sqlite3", SCHEMA)
    yield source
    source.conn.close()


# -- a faithful import ---------------------------------------------------------------------------


def test_every_session_turn_message_and_tool_call_arrives(src, ledger):
    cursor_history(src)
    run_import("aix", src.path)
    assert table_counts(ledger.path) == {
        "sessions": src.count("SELECT count(*) FROM agent_sessions"),
        "turns": src.count("SELECT count(*) FROM agent_turns"),
        "messages": src.count("SELECT count(*) FROM agent_messages"),
        "tool_calls": src.count("SELECT count(*) FROM agent_tool_calls"),
    }
    for (session_id,) in src.conn.execute("SELECT id FROM agent_sessions"):
        assert one(
            ledger.path, "SELECT count(*) FROM turns WHERE session_id = ?", session_id
        ) == src.count("SELECT count(*) FROM agent_turns WHERE session_id = ?", session_id)


def test_branches_parents_root_and_head_follow_the_source(src, ledger):
    turns = cursor_history(src)
    run_import("aix", src.path)
    branch_points = """
        SELECT count(*) FROM (SELECT parent_turn_id FROM {table} WHERE parent_turn_id IS NOT NULL
                              GROUP BY parent_turn_id HAVING count(*) > 1)"""
    assert one(ledger.path, branch_points.format(table="turns")) == src.count(
        branch_points.format(table="agent_turns")
    )
    parents = dict(ledger.conn.execute("SELECT id, parent_turn_id FROM turns"))
    assert parents == dict(src.conn.execute("SELECT id, parent_turn_id FROM agent_turns"))
    root, head = ledger.conn.execute(
        "SELECT root_turn_id, current_turn_id FROM sessions WHERE id = ?", (MAIN,)
    ).fetchone()
    assert (root, head) == (turns["t1"]["id"], turns["t3b"]["id"])  # the latest branch's leaf


def test_a_turn_holds_its_query_tool_bubbles_and_response_in_order(src, ledger):
    turns = cursor_history(src)
    run_import("aix", src.path)
    in_t1 = ledger.conn.execute(
        "SELECT role, content, sequence FROM messages WHERE turn_id = ? ORDER BY sequence",
        (turns["t1"]["id"],),
    ).fetchall()
    # The system prompt before the first query belongs to the first exchange.
    assert in_t1 == [
        ("system", "You are a careful coding agent.", 1),
        ("user", "Rename ca_repo.py to conversation_analysis_repository.py", 2),
        ("assistant", "", 3),
        ("assistant", "Renamed it and updated the imports.", 4),
    ]
    started, completed, tokens, model = ledger.conn.execute(
        "SELECT started_at, completed_at, total_tokens, model FROM turns WHERE id = ?",
        (turns["t1"]["id"],),
    ).fetchone()
    assert (started, completed, tokens, model) == (
        T0,
        turns["t1"]["timestamp"],
        1337,
        "claude-4.5-opus-high-thinking",
    )


def test_tool_calls_keep_their_ids_params_results_and_failures(src, ledger):
    turns = cursor_history(src)
    run_import("aix", src.path)
    calls = ledger.conn.execute(
        "SELECT tool_name, status, error, sequence FROM tool_calls WHERE turn_id = ?"
        " ORDER BY sequence",
        (turns["t2"]["id"],),
    ).fetchall()
    assert calls == [
        ("run_terminal_command_v2", "failed", "exit status 1: no such file", 1),
        ("edit_file_v2", "failed", "rejected", 2),
        ("Task", "completed", None, 3),
    ]
    failed_in_source = src.count(
        "SELECT count(*) FROM agent_tool_calls WHERE status IN ('failed', 'rejected', 'cancelled')"
    )
    assert one(ledger.path, "SELECT count(*) FROM tool_calls WHERE status = 'failed'") == (
        failed_in_source
    )
    same = "SELECT id, tool_name, params_json, result_json FROM agent_tool_calls ORDER BY id"
    assert ledger.conn.execute(
        "SELECT id, tool_name, parameters, result FROM tool_calls ORDER BY id"
    ).fetchall() == [(i, n, p or "{}", r) for i, n, p, r in src.conn.execute(same)]


def test_a_subagent_becomes_a_subagent_session_of_its_task_call(src, ledger, viewer_client):
    cursor_history(src)
    run_import("aix", src.path)
    routing_key, label, persona = ledger.conn.execute(
        "SELECT routing_key, label, persona FROM sessions WHERE id = ?", (SUBAGENT,)
    ).fetchone()
    assert routing_key == f"subagent:{MAIN}:{TASK_CALL}"
    assert (label, persona) == ("Update ONBOARDING.md to align", "cursor")
    assert one(
        ledger.path, "SELECT count(*) FROM sessions WHERE routing_key LIKE 'subagent:%'"
    ) == src.count("SELECT count(*) FROM agent_sessions WHERE is_subagent = 1")

    child = viewer_client.get(f"/sessions/{SUBAGENT}/?format=json").json()
    assert child["parent_session"]["id"] == MAIN
    assert child["spawning_tool_call"]["id"] == TASK_CALL
    parent = viewer_client.get(f"/sessions/{MAIN}/?format=json").json()
    assert [c["id"] for c in parent["children"]] == [SUBAGENT]


def test_a_subagent_without_tool_call_id_is_found_through_its_task_call(src, ledger):
    main = src.session(MAIN)
    task = {"id": "toolu_spawner", "child_session_id": "worker-7"}
    src.exchange(main, None, "Delegate it", "Delegated.", T0, calls=[("Task", task)])
    worker = src.session("worker-7", parent_session_id=MAIN, is_subagent=1, created_at=T0 + 1)
    src.exchange(worker, None, "Do the delegated work", "Done.", T0 + 2000)
    run_import("aix", src.path)
    assert ledger.conn.execute(
        "SELECT routing_key, label FROM sessions WHERE id = 'worker-7'"
    ).fetchone() == (f"subagent:{MAIN}:toolu_spawner", "Do the delegated work")


def test_main_sessions_are_named_by_their_source_and_routed_by_their_project(src, ledger):
    """The persona names the program; the routing key's channel is the project
    (importers/naming.py), so the breadcrumb does not read "cursor › cursor"."""
    cursor_history(src)
    run_import("aix", src.path)
    sessions = "SELECT id, persona, routing_key, label FROM sessions"
    rows = {i: (p, r, lbl) for i, p, r, lbl in ledger.conn.execute(sessions)}
    assert rows[MAIN] == (
        "cursor",
        f"nexus:nexus:{MAIN}",
        "Rename ca_repo.py to conversation_analysis_repository.py",
    )
    assert rows[CODEX] == ("codex", f"imported:{CODEX}", "Apply the patch")  # no project


def test_what_the_agents_ledger_cannot_hold_is_counted_per_column(src):
    cursor_history(src)
    summary = run_import("aix", src.path)
    for table, column in [
        ("agent_messages", "metadata_json"),
        ("agent_messages", "checkpoint_id"),
        ("agent_sessions", "workspace_path"),
        ("agent_sessions", "is_agentic"),
        ("agent_sessions", "task_status"),
    ]:
        n = src.count(f"SELECT count(*) FROM {table} WHERE {column} IS NOT NULL AND {column} != ''")
        assert n > 0
        assert f"  {table}.{column}: {n}\n" in summary
    assert "agent_messages.content" not in summary


def test_imported_sessions_render(src, viewer_client):
    cursor_history(src)
    run_import("aix", src.path)
    assert_sessions_render(viewer_client, (MAIN, SUBAGENT, CODEX))
    page = viewer_client.get(f"/sessions/{MAIN}/").content.decode()
    assert "Coverage is 91%." in page  # the head's turn is open in the panel


def test_the_source_is_only_read(src):
    cursor_history(src)
    src.conn.close()
    before = hashlib.sha256(src.path.read_bytes()).hexdigest()
    run_import("aix", src.path)
    assert hashlib.sha256(src.path.read_bytes()).hexdigest() == before


def test_a_source_being_written_is_read_as_its_last_commit(src, ledger):
    cursor_history(src)
    src.conn.execute("PRAGMA journal_mode = WAL")
    writer = sqlite3.connect(src.path, isolation_level=None)
    try:
        writer.execute("BEGIN IMMEDIATE")  # the syncing program is mid-write
        late = AixSource(src.path, SCHEMA, conn=writer, first_id=1000)
        late.exchange(late.session("in-flight"), None, "half written", "not yet", T0)
        run_import("aix", src.path)
    finally:
        writer.execute("ROLLBACK")
        writer.close()
    assert table_counts(ledger.path)["sessions"] == src.count("SELECT count(*) FROM agent_sessions")
    assert not one(ledger.path, "SELECT count(*) FROM sessions WHERE id = 'in-flight'")


# -- idempotent and incremental ------------------------------------------------------------------


def test_a_second_import_adds_nothing(src, ledger):
    cursor_history(src)
    assert_a_second_import_adds_nothing("aix", src.path, ledger.path)


def test_a_grown_source_adds_only_its_new_rows_and_moves_the_head(src, ledger):
    turns = cursor_history(src)
    run_import("aix", src.path)
    before = table_counts(ledger.path)

    main = {"id": MAIN, "model": "claude-4.5-opus-high-thinking"}
    t4 = src.exchange(
        main,
        turns["t3b"],
        "Commit it",
        "Committed as 3f2a1c.",
        T0 + 240_000,
        calls=[("run_terminal_command_v2", {}), ("read_lints", {})],
    )
    late = src.session("7c1e0b0a-0000-4000-8000-000000000001", created_at=T0 + 300_000)
    src.exchange(late, None, "Hello again", "Hi!", T0 + 300_000)

    summary = run_import("aix", src.path)
    assert table_counts(ledger.path) == {
        "sessions": before["sessions"] + 1,
        "turns": before["turns"] + 2,
        "messages": before["messages"] + 3 + 2,
        "tool_calls": before["tool_calls"] + 2,
    }
    assert "turns: 2 added" in summary
    head, updated = ledger.conn.execute(
        "SELECT current_turn_id, updated_at FROM sessions WHERE id = ?", (MAIN,)
    ).fetchone()
    assert head == t4["id"]
    assert updated == src.count(
        "SELECT max(timestamp) FROM agent_messages WHERE session_id = ?", MAIN
    )


def test_an_open_exchange_waits_for_its_turn(src, ledger):
    """A query with no turn yet is left out (and said so), then arrives with its turn."""
    turns = cursor_history(src)
    main = {"id": MAIN, "model": "claude-4.5-opus-high-thinking"}
    query = src.message(main, "user", "And deploy it", T0 + 400_000)
    summary = run_import("aix", src.path)  # not an error: the next import brings it
    assert "Left for a later import (not finished in the source): 1" in summary
    assert f"agent_messages id={query['id']}: no turn holds it yet" in summary
    assert not one(ledger.path, "SELECT count(*) FROM messages WHERE id = ?", query["id"])

    response = src.message(main, "assistant", "Deployed.", T0 + 405_000)
    src.turn(main, [query], response, turns["t3b"])
    run_import("aix", src.path)
    assert ledger.conn.execute(
        "SELECT turn_id, sequence FROM messages WHERE id = ?", (query["id"],)
    ).fetchone() == (response["id"], 1)


# -- bad input -----------------------------------------------------------------------------------


def test_a_file_that_is_not_sqlite_is_refused_naming_the_format(tmp_path, ledger):
    path = tmp_path / "notes.sqlite3"
    path.write_text("these are my notes, not a database\n" * 100)
    with pytest.raises(CommandError, match="not aix"):
        run_import("aix", path)
    report = ImportReport()
    with pytest.raises(WrongFormat, match="not an AIX ledger: .* is not a SQLite database"):
        list(aix.read([path], report))
    assert table_counts(ledger.path)["sessions"] == 0


def test_an_agents_ledger_is_not_an_aix_ledger(tmp_path):
    path = tmp_path / "agents.sqlite3"
    schema.create_ledger(path)
    with pytest.raises(WrongFormat, match="^not an AIX ledger: no agent_sessions table$"):
        list(aix.read([path], ImportReport()))


def test_a_source_lacking_a_needed_column_is_refused(src):
    src.conn.execute("ALTER TABLE agent_turns DROP COLUMN query_message_ids")
    with pytest.raises(
        WrongFormat, match="not an AIX ledger: agent_turns has no query_message_ids column"
    ):
        list(aix.read([src.path], ImportReport()))


def test_a_refused_input_does_not_stop_the_others(src, tmp_path, ledger):
    cursor_history(src)
    junk = tmp_path / "junk.db"
    junk.write_bytes(b"\x00\x01garbage" * 50)
    out = StringIO()
    with pytest.raises(CommandError):
        call_command("ledger_import", "aix", str(junk), str(src.path), stdout=out)
    assert f"Refused {junk}: not an AIX ledger" in out.getvalue()
    assert table_counts(ledger.path)["sessions"] == src.count("SELECT count(*) FROM agent_sessions")


def test_malformed_rows_are_reported_and_the_rest_imported(src, ledger):
    cursor_history(src)
    main = {"id": MAIN, "model": "x"}
    no_role = src.message(main, None, "who said this?", T0 + 500_000)
    bad_time = src.message(main, "user", "when?", "yesterday-ish")
    lost = src.insert(
        "agent_messages",
        id="m-orphan",
        session_id="no-such-session",
        role="user",
        content="hello?",
        sequence=0,
        timestamp=T0,
    )
    nameless = src.call({"id": bad_time["id"], "session_id": MAIN, "timestamp": T0}, None)
    summary = run_import("aix", src.path, left_out=LEFT_OUT)

    for row, why in [
        (no_role, "it has no role"),
        (bad_time, "its timestamp 'yesterday-ish' is not a time"),
        (lost, "its session 'no-such-session' does not exist"),
    ]:
        assert f"agent_messages id={row['id']}: {why}" in summary
    assert f"agent_tool_calls id={nameless['id']}: it has no tool_name" in summary
    good = src.count("SELECT count(*) FROM agent_messages") - 3
    assert table_counts(ledger.path)["messages"] == good


def test_a_turn_with_a_dangling_parent_is_left_out_with_its_descendants(src, ledger):
    cursor_history(src)
    main = {"id": MAIN, "model": "x"}
    ghost = {"id": "turn-that-was-never-written"}
    stray = src.exchange(main, ghost, "Where was I?", "No idea.", T0 + 600_000, [("grep", {})])
    below = src.exchange(main, stray, "And then?", "Still no idea.", T0 + 700_000)
    summary = run_import("aix", src.path, left_out=LEFT_OUT)

    assert (
        f"agent_turns id={stray['id']}: its parent turn turn-that-was-never-written"
        " does not exist" in summary
    )
    assert f"agent_turns id={below['id']}: its parent turn {stray['id']} was left out" in summary
    imported = {row[0] for row in ledger.conn.execute("SELECT id FROM turns")}
    assert stray["id"] not in imported and below["id"] not in imported
    expected = src.count("SELECT count(*) FROM agent_turns") - 2
    assert len(imported) == expected
    # Their messages and calls are reported too, not written half-attached.
    assert one(ledger.path, "SELECT count(*) FROM tool_calls WHERE tool_name = 'grep'") == 0
    assert summary.count(f"its turn {stray['id']} was left out") == 4  # 3 messages + 1 call


def test_a_loop_of_parent_turns_is_left_out(src, ledger):
    session = src.session("loop-session")
    a = src.exchange(session, {"id": "placeholder"}, "a", "A", T0)
    b = src.exchange(session, a, "b", "B", T0 + 10_000)
    src.conn.execute("UPDATE agent_turns SET parent_turn_id = ? WHERE id = ?", (b["id"], a["id"]))
    summary = run_import("aix", src.path, left_out=LEFT_OUT)
    assert f"agent_turns id={a['id']}: its chain of parent turns loops" in summary
    assert one(ledger.path, "SELECT count(*) FROM turns") == 0
    # The session itself is kept, empty, with no head to point at.
    assert ledger.conn.execute(
        "SELECT root_turn_id, current_turn_id FROM sessions WHERE id = 'loop-session'"
    ).fetchone() == (None, None)


def test_invalid_query_ids_json_is_reported_and_messages_placed_by_sequence(src, ledger):
    turns = cursor_history(src)
    src.conn.execute(
        "UPDATE agent_turns SET query_message_ids = '[\"oops' WHERE id = ?", (turns["t3a"]["id"],)
    )
    summary = run_import("aix", src.path, left_out=LEFT_OUT)
    assert f"agent_turns id={turns['t3a']['id']} query_message_ids: not a JSON array" in summary
    assert ledger.conn.execute(
        "SELECT role, content FROM messages WHERE turn_id = ? ORDER BY sequence",
        (turns["t3a"]["id"],),
    ).fetchall() == [("user", "Now run the tests"), ("assistant", "All 12 tests pass.")]


def test_a_session_with_no_time_at_all_is_left_out_entirely(src, ledger):
    src.session("timeless", created_at=None)
    summary = run_import("aix", src.path, left_out=LEFT_OUT)
    assert "Sessions left out entirely: 1" in summary
    assert "agent_sessions id=timeless: no usable timestamp" in summary
    assert table_counts(ledger.path)["sessions"] == 0


def test_ids_of_other_types_and_bytes_that_are_not_utf8_do_not_stop_the_import(src, ledger):
    src.conn.execute(
        "INSERT INTO agent_sessions (id, source, created_at) VALUES (42, 'nexus', ?)", (T0,)
    )
    src.conn.execute(
        "INSERT INTO agent_messages (id, session_id, role, content, sequence, timestamp)"
        " VALUES (7, 42, 'user', CAST(X'6869FF21' AS TEXT), 0, ?),"
        " (8, '42', 'assistant', 'ok', 1, ?)",
        (T0, T0 + 1),
    )
    src.conn.execute(
        "INSERT INTO agent_turns (id, session_id, query_message_ids, response_message_id,"
        " timestamp) VALUES (9, 42, '[7]', 8, ?)",
        (T0 + 1,),
    )
    src.conn.execute(
        "INSERT INTO agent_messages (id, session_id, role, content, sequence, timestamp)"
        " VALUES (X'00', 42, 'user', 'a blob id', 2, ?)",
        (T0,),
    )
    summary = run_import("aix", src.path, left_out=LEFT_OUT)
    assert ledger.conn.execute("SELECT id, routing_key FROM sessions").fetchall() == [
        ("42", "imported:42")
    ]
    assert ledger.conn.execute(
        "SELECT id, turn_id, content FROM messages ORDER BY sequence"
    ).fetchall() == [("7", "9", "hi\ufffd!"), ("8", "9", "ok")]
    assert "agent_messages id=b'\\x00': it has no id" in summary


def test_a_session_without_an_id_is_reported_as_having_none(src, ledger):
    cursor_history(src)
    src.session(None)  # SQLite lets a TEXT primary key be NULL
    summary = run_import("aix", src.path, left_out=LEFT_OUT)
    assert "agent_sessions id=None: it has no id" in summary
    with_id = src.count("SELECT count(*) FROM agent_sessions WHERE id IS NOT NULL")
    assert table_counts(ledger.path)["sessions"] == with_id


def test_timestamps_in_seconds_or_iso_strings_become_milliseconds(src, ledger):
    session = src.session("seconds", created_at=T0 // 1000)
    query = src.message(session, "user", "hi", "2025-11-24T16:00:00.500Z")
    response = src.message(session, "assistant", "hello", T0 // 1000 + 5)
    src.turn(session, [query], response)
    run_import("aix", src.path)
    assert ledger.conn.execute(
        "SELECT created_at, updated_at FROM sessions WHERE id = 'seconds'"
    ).fetchone() == (T0, T0 + 5000)
    assert one(ledger.path, "SELECT created_at FROM messages WHERE id = ?", query["id"]) == (
        1_764_000_000_500
    )
