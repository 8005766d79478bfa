"""`ledger_import agentos`: an Agent OS ledger (seeds/003) becomes Agents Ledger sessions.

Source ledgers are built with the seed's own DDL (tests/fixtures/import/agentos/schema.sql):
tasks with a subtask, calls announced by start and end messages (one end message fed back with
role "user", as agents that return tool results as user input do), a failed call, and a task
still running. Agent OS tasks and calls change after they are written; the tests import, let
the source move on, and import again.
"""

import json

import pytest
from builders import LEDGER_DB, T0
from django.core.management import CommandError
from importing import (
    IMPORT_FIXTURES,
    LEFT_OUT,
    SourceLedger,
    assert_a_second_import_adds_nothing,
    assert_sessions_render,
    query,
    run_import,
    table_counts,
)

from importers import agentos
from importers.bundle import ImportReport, WrongFormat
from ledgerfacts import schema

pytestmark = LEDGER_DB

SCHEMA = IMPORT_FIXTURES / "agentos" / "schema.sql"
PROMPT = "You are Bun Buddy, a helpful personal agent."


class AgentOsSource(SourceLedger):
    """An Agent OS ledger file, written the way its Ledger writes: INSERT OR REPLACE for tasks
    and calls, INSERT only for messages."""

    def task(self, id: str, **fields) -> dict:
        row = {
            "id": id,
            "parent_task_id": None,
            "completion_status": "success",
            "system_prompt": PROMPT,
            "created_at": T0,
            "updated_at": T0,
        } | fields
        return self.insert("tasks", verb="INSERT OR REPLACE", **row)

    def message(self, task: dict, role: str, content: str, at: int, **fields) -> dict:
        row = {
            "id": f"msg-{next(self._ids):04d}",
            "task_id": task["id"],
            "role": role,
            "content": content,
            "timestamp": at,
        } | fields
        return self.insert("messages", **row)

    def call(self, task: dict, ability: str, start: dict, end: dict | None = None, **fields):
        row = {
            "id": f"call-{next(self._ids):04d}",
            "task_id": task["id"],
            "ability_name": ability,
            "parameters": json.dumps({"query": "birthday"}),
            "status": "completed" if end else "in_progress",
            "details": json.dumps({"ok": True}),
            "created_at": start["timestamp"],
            "updated_at": end["timestamp"] if end else start["timestamp"],
            "start_message_id": start["id"],
            "end_message_id": end["id"] if end else None,
        } | fields
        return self.insert("calls", verb="INSERT OR REPLACE", **row)

    def call_between(self, task: dict, ability: str, at: int, end: tuple | None = None, **fields):
        """A call with its start message "Calling <ability>" at `at` and, when it has ended, its
        end message `end` = (role, content, at)."""
        start = self.message(task, "assistant", f"Calling {ability}", at)
        return self.call(task, ability, start, self.message(task, *end) if end else None, **fields)


def bun_buddy(src: AgentOsSource) -> dict:
    """A finished task with two exchanges, a failed call and a subtask spawned by a call; the
    subtask; and a task still running with a call in progress."""
    main = src.task("task-1", updated_at=T0 + 95_000)
    src.message(main, "user", "Remember that my sister's birthday is May 3", T0 + 1000)
    store = src.call_between(
        main,
        "mem:store",
        T0 + 2000,
        ("user", '{"stored": true}', T0 + 3000),  # a tool result, fed back as input
        parameters='{"fact": "birthday May 3"}',
    )
    src.message(main, "assistant", "Saved. I'll remind you on May 2.", T0 + 4000)

    src.message(main, "user", "What's on my calendar tomorrow?", T0 + 60_000)
    failed = src.call_between(
        main,
        "cal:query",
        T0 + 61_000,
        ("system", "cal:query failed", T0 + 62_000),
        status="failed",
        details=json.dumps({"error": "calendar API 503"}),
    )
    spawn = src.call_between(
        main,
        "task:spawn",
        T0 + 63_000,
        ("system", "task:spawn finished", T0 + 90_000),
        parameters=json.dumps({"prompt": "Look through email for tomorrow's events"}),
        details=json.dumps({"taskId": "task-2", "result": "Nothing tomorrow."}),
    )
    src.message(main, "assistant", "The calendar is down; your email shows nothing.", T0 + 91_000)

    sub = src.task(
        "task-2",
        parent_task_id="task-1",
        system_prompt="You search email.",
        created_at=T0 + 63_500,
        updated_at=T0 + 89_000,
    )
    src.message(sub, "user", "Look through email for tomorrow's events", T0 + 64_000)
    src.call_between(sub, "mail:search", T0 + 65_000, ("system", "mail:search done", T0 + 70_000))
    src.message(sub, "assistant", "Nothing tomorrow.", T0 + 88_000)

    running = src.task(
        "task-3", completion_status=None, created_at=T0 + 3_600_000, updated_at=T0 + 3_602_000
    )
    src.message(running, "user", "Summarise my unread email", T0 + 3_601_000)
    listing = src.call_between(
        running, "mail:list", T0 + 3_602_000, details=json.dumps({"cursor": 40})
    )
    return {"store": store, "failed": failed, "spawn": spawn, "listing": listing}


@pytest.fixture
def src(tmp_path) -> AgentOsSource:
    source = AgentOsSource(tmp_path / "ledger.sqlite", SCHEMA)
    yield source
    source.conn.close()


def turns_of(ledger, session_id: str) -> list[tuple]:
    return query(
        ledger.path,
        "SELECT id, parent_turn_id, status FROM turns WHERE session_id = ? ORDER BY started_at",
        session_id,
    )


def messages_of(ledger, turn_id: str) -> list[tuple]:
    return query(
        ledger.path,
        "SELECT role, content, sequence FROM messages WHERE turn_id = ? ORDER BY sequence",
        turn_id,
    )


# Queries of the source: user messages that are not a call's start or end message. In these
# fixtures each exchange has exactly one, so they count the turns independently.
QUERIES_PER_TASK = """
    SELECT task_id, count(*) FROM messages WHERE role = 'user' AND id NOT IN (
        SELECT start_message_id FROM calls
        UNION SELECT end_message_id FROM calls WHERE end_message_id IS NOT NULL)
    GROUP BY task_id"""


# -- a faithful import ---------------------------------------------------------------------------


def test_every_task_message_and_call_arrives(src, ledger):
    bun_buddy(src)
    run_import("agentos", src.path)
    with_prompt = src.count("SELECT count(*) FROM tasks WHERE system_prompt != ''")
    assert table_counts(ledger.path) == {
        "sessions": src.count("SELECT count(*) FROM tasks"),
        "turns": sum(n for _, n in src.conn.execute(QUERIES_PER_TASK)),
        "messages": src.count("SELECT count(*) FROM messages") + with_prompt,
        "tool_calls": src.count("SELECT count(*) FROM calls"),
    }
    for task_id, queries in src.conn.execute(QUERIES_PER_TASK):
        assert len(turns_of(ledger, task_id)) == queries


def test_exchanges_become_a_chain_of_turns_and_call_messages_stay_in_theirs(src, ledger):
    bun_buddy(src)
    run_import("agentos", src.path)
    (first, _, done1), (second, parent, done2) = turns_of(ledger, "task-1")
    assert (parent, done1, done2) == (first, "completed", "completed")
    # The tool result fed back as a "user" message does not start an exchange of its own.
    assert messages_of(ledger, first) == [
        ("system", PROMPT, 1),
        ("user", "Remember that my sister's birthday is May 3", 2),
        ("assistant", "Calling mem:store", 3),
        ("user", '{"stored": true}', 4),
        ("assistant", "Saved. I'll remind you on May 2.", 5),
    ]
    assert len(messages_of(ledger, second)) == 6
    root, head, label = query(
        ledger.path, "SELECT root_turn_id, current_turn_id, label FROM sessions WHERE id = 'task-1'"
    )[0]
    assert (root, head) == (first, second)
    assert label == "Remember that my sister's birthday is May 3"


def test_calls_are_timed_by_their_start_and_end_messages(src, ledger):
    calls = bun_buddy(src)
    run_import("agentos", src.path)
    rows = {
        r[0]: r[1:]
        for r in query(
            ledger.path,
            "SELECT c.id, c.tool_name, c.status, c.error, c.started_at, c.completed_at,"
            " c.sequence, c.parameters FROM tool_calls c",
        )
    }
    assert rows[calls["store"]["id"]] == (
        "mem:store",
        "completed",
        None,
        T0 + 2000,
        T0 + 3000,
        1,
        '{"fact": "birthday May 3"}',
    )
    assert rows[calls["failed"]["id"]][:6] == (
        "cal:query",
        "failed",
        "calendar API 503",
        T0 + 61_000,
        T0 + 62_000,
        1,
    )
    assert rows[calls["spawn"]["id"]][5] == 2  # second call of the same exchange
    failed = src.count("SELECT count(*) FROM calls WHERE status = 'failed'")
    assert query(ledger.path, "SELECT count(*) FROM tool_calls WHERE status = 'failed'") == [
        (failed,)
    ]


def test_a_subtask_is_a_subagent_session_of_the_call_that_names_it(src, ledger, viewer_client):
    calls = bun_buddy(src)
    run_import("agentos", src.path)
    ((routing_key, persona, label),) = query(
        ledger.path, "SELECT routing_key, persona, label FROM sessions WHERE id = 'task-2'"
    )
    assert routing_key == f"subagent:task-1:{calls['spawn']['id']}"
    assert (persona, label) == ("agentos", "Look through email for tomorrow's events")
    child = viewer_client.get("/sessions/task-2/?format=json").json()
    assert child["parent_session"]["id"] == "task-1"
    assert child["spawning_tool_call"]["id"] == calls["spawn"]["id"]


def test_a_subtask_no_call_names_is_tied_to_the_one_call_running_when_it_began(src, ledger):
    main = src.task("T")
    src.message(main, "user", "Plan my week", T0 + 1000)
    src.call_between(main, "cal:list", T0 + 2000, ("system", "listed", T0 + 3000))
    delegate = src.call_between(main, "agent:delegate", T0 + 4000, ("system", "done", T0 + 9000))
    src.task("T.1", parent_task_id="T", created_at=T0 + 5000)
    run_import("agentos", src.path)
    assert query(ledger.path, "SELECT routing_key FROM sessions WHERE id = 'T.1'") == [
        (f"subagent:T:{delegate['id']}",)
    ]


def test_a_running_task_is_imported_as_unfinished(src, ledger):
    calls = bun_buddy(src)
    summary = run_import("agentos", src.path)
    ((turn_id, _, status),) = turns_of(ledger, "task-3")
    assert status == "streaming"
    assert query(
        ledger.path,
        "SELECT status, result, completed_at FROM tool_calls WHERE id = ?",
        calls["listing"]["id"],
    ) == [("pending", None, None)]
    assert "  calls.details (recovery info of unfinished calls): 1\n" in summary
    assert query(ledger.path, "SELECT completed_at FROM turns WHERE id = ?", turn_id) == [(None,)]


def test_a_failed_task_fails_its_last_turn(src, ledger):
    task = src.task("broken", completion_status="error")
    src.message(task, "user", "Book a table", T0 + 1000)
    src.message(task, "assistant", "I could not reach the restaurant.", T0 + 2000)
    run_import("agentos", src.path)
    assert [status for _, _, status in turns_of(ledger, "broken")] == ["failed"]


def test_a_task_without_messages_keeps_its_system_prompt_in_a_pending_turn(src, ledger):
    src.task("fresh", completion_status=None)
    run_import("agentos", src.path)
    ((turn_id, parent, status),) = turns_of(ledger, "fresh")
    assert (parent, status) == (None, "pending")
    assert messages_of(ledger, turn_id) == [("system", PROMPT, 1)]


def test_imported_sessions_render(src, viewer_client):
    bun_buddy(src)
    run_import("agentos", src.path)
    assert_sessions_render(viewer_client, ("task-1", "task-2", "task-3"))


def test_a_call_with_invalid_json_parameters_is_kept_as_written(src, ledger, viewer_client):
    task = src.task("raw")
    src.message(task, "user", "Search", T0 + 1000)
    start = src.message(task, "assistant", "Calling web:search", T0 + 2000)
    call = src.call(task, "web:search", start, start, parameters="{query: unquoted")
    run_import("agentos", src.path)
    ((turn_id, _, _),) = turns_of(ledger, "raw")
    assert query(ledger.path, "SELECT parameters FROM tool_calls WHERE id = ?", call["id"]) == [
        ("{query: unquoted",)
    ]
    page = viewer_client.get(f"/sessions/raw/turns/{turn_id}/").content.decode()
    assert "not valid JSON" in page and "{query: unquoted" in page


# -- idempotent, incremental, and the source's mutability ---------------------------------------


def test_a_second_import_adds_nothing(src, ledger):
    bun_buddy(src)
    assert_a_second_import_adds_nothing("agentos", src.path, ledger.path)


def test_a_task_that_moved_on_adds_its_new_rows_and_finishes_its_old_ones(src, ledger):
    calls = bun_buddy(src)
    run_import("agentos", src.path)
    before = table_counts(ledger.path)
    ((first_turn, _, _),) = turns_of(ledger, "task-3")

    # The call ends, the assistant answers, the user asks again: the task is still running.
    running = {"id": "task-3"}
    end = src.message(running, "system", "mail:list done", T0 + 3_610_000)
    src.call(
        running,
        "mail:list",
        {"id": calls["listing"]["start_message_id"], "timestamp": T0 + 3_602_000},
        end,
        id=calls["listing"]["id"],
        details=json.dumps({"unread": 3}),
    )
    src.message(running, "assistant", "You have 3 unread emails.", T0 + 3_611_000)
    src.message(running, "user", "Archive them", T0 + 3_620_000)
    src.task("task-3", completion_status=None, created_at=T0 + 3_600_000, updated_at=T0 + 3_620_000)

    summary = run_import("agentos", src.path)
    assert table_counts(ledger.path) == before | {
        "turns": before["turns"] + 1,
        "messages": before["messages"] + 3,
    }
    assert "tool_calls: 0 added" in summary and "1 brought up to date" in summary
    assert query(
        ledger.path,
        "SELECT status, result, completed_at FROM tool_calls WHERE id = ?",
        calls["listing"]["id"],
    ) == [("completed", '{"unread": 3}', T0 + 3_610_000)]
    (old, _, old_status), (new, parent, new_status) = turns_of(ledger, "task-3")
    assert (old, old_status) == (first_turn, "completed")
    assert (parent, new_status) == (first_turn, "pending")
    assert query(
        ledger.path, "SELECT current_turn_id, updated_at FROM sessions WHERE id = 'task-3'"
    ) == [(new, T0 + 3_620_000)]


# -- bad input -----------------------------------------------------------------------------------


def test_other_files_are_refused_naming_the_format(tmp_path, ledger):
    agents = tmp_path / "agents.sqlite3"
    schema.create_ledger(agents)
    text = tmp_path / "notes.txt"
    text.write_text("not a database\n" * 200)
    for path, why in [(agents, "no tasks table"), (text, "is not a SQLite database")]:
        with pytest.raises(WrongFormat, match=f"^not an Agent OS ledger: .*{why}"):
            list(agentos.read([path], ImportReport()))
    with pytest.raises(CommandError, match="not agentos"):
        run_import("agentos", text)
    assert table_counts(ledger.path)["sessions"] == 0


def test_a_source_lacking_a_needed_column_is_refused(src):
    src.conn.execute("ALTER TABLE tasks DROP COLUMN system_prompt")
    with pytest.raises(WrongFormat, match="^not an Agent OS ledger: tasks has no system_prompt"):
        list(agentos.read([src.path], ImportReport()))


def test_malformed_and_dangling_rows_are_reported_and_the_rest_imported(src, ledger):
    bun_buddy(src)
    task = {"id": "task-1"}
    junk_time = src.message(task, "assistant", "when was this?", "last tuesday")
    orphan = src.message({"id": "task-404"}, "user", "anyone?", T0)
    ghost_start = src.call(task, "mem:recall", {"id": "msg-gone", "timestamp": T0})
    start = src.message(task, "assistant", "Calling mem:recall", T0 + 92_000)
    half = src.call(task, "mem:recall", start, {"id": "msg-never", "timestamp": T0 + 93_000})
    summary = run_import("agentos", src.path, left_out=LEFT_OUT)

    assert f"messages id={junk_time['id']}: its timestamp 'last tuesday' is not a time" in summary
    assert f"messages id={orphan['id']}: its task 'task-404' does not exist" in summary
    assert (
        f"calls id={ghost_start['id']}: its start message msg-gone does not exist in its task"
        in summary
    )
    assert f"calls id={half['id']} end_message_id: message msg-never does not exist" in summary
    imported = {row[0] for row in query(ledger.path, "SELECT id FROM tool_calls")}
    assert half["id"] in imported and ghost_start["id"] not in imported
    assert query(ledger.path, "SELECT completed_at FROM tool_calls WHERE id = ?", half["id"]) == [
        (T0 + 93_000,)
    ]  # its updated_at
    all_messages = src.count("SELECT count(*) FROM messages")
    prompts = src.count("SELECT count(*) FROM tasks")
    assert table_counts(ledger.path)["messages"] == all_messages - 2 + prompts


def test_a_task_with_no_time_at_all_is_left_out_entirely(src, ledger):
    src.task("timeless", created_at="someday", updated_at="someday")
    summary = run_import("agentos", src.path, left_out=LEFT_OUT)
    assert "Sessions left out entirely: 1" in summary
    assert "tasks id=timeless: no usable timestamp" in summary
    assert table_counts(ledger.path)["sessions"] == 0
