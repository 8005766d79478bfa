"""The demo ledger generator (`ledger_demo`): the seeds' invariants and the product's needs.

One ledger is built per module (scale 0.2, seed 7, a fixed anchor time) and read with plain
sqlite3; no Django database is involved.
"""

import json
import re
import sqlite3
from collections import Counter

import pytest
from django.core.management import CommandError, call_command

from demo.build import build_demo_ledger
from demo.pipeline import STAGES
from demo.timeline import DAY, HISTORY, local_hour
from ledgerfacts.schema import ddl, index_statements
from ledgerfacts.ulid import decode_time, encode

NOW = 1_760_000_000_000
SCALE = "0.2"
ULID = re.compile(r"^[0-7][0-9A-HJKMNP-TV-Z]{25}$")


@pytest.fixture(scope="module")
def ledger_path(tmp_path_factory):
    path = tmp_path_factory.mktemp("demo") / "demo.sqlite3"
    call_command("ledger_demo", str(path), "--scale", SCALE, "--seed", "7", "--now", str(NOW),
                 verbosity=0)  # fmt: skip
    return path


@pytest.fixture(scope="module")
def db(ledger_path):
    conn = sqlite3.connect(f"file:{ledger_path}?mode=ro", uri=True)
    conn.row_factory = sqlite3.Row
    yield conn
    conn.close()


def rows(db, sql, *params):
    return db.execute(sql, params).fetchall()


def value(db, sql, *params):
    return db.execute(sql, params).fetchone()[0]


def ancestors(db, turn_id):
    """The turn ids from turn_id up to its root (turn_id included)."""
    parents = dict(rows(db, "SELECT id, parent_turn_id FROM turns"))
    chain = []
    while turn_id is not None:
        chain.append(turn_id)
        turn_id = parents[turn_id]
    return chain


# ----- turn trees --------------------------------------------------------------------------


def test_every_non_root_turn_has_its_parent(db):
    assert (
        value(
            db,
            """SELECT count(*) FROM turns t WHERE parent_turn_id IS NOT NULL
                        AND NOT EXISTS (SELECT 1 FROM turns p WHERE p.id = t.parent_turn_id)""",
        )
        == 0
    )


def test_parents_start_before_their_children(db):
    assert (
        value(
            db,
            """SELECT count(*) FROM turns t JOIN turns p ON p.id = t.parent_turn_id
                        WHERE p.started_at >= t.started_at""",
        )
        == 0
    )


def test_every_session_root_is_a_parentless_turn_and_the_only_one_of_its_session(db):
    for session in rows(db, "SELECT id, root_turn_id FROM sessions"):
        root = rows(db, "SELECT parent_turn_id FROM turns WHERE id = ?", session["root_turn_id"])
        assert root and root[0][0] is None
    assert (
        value(
            db,
            """SELECT max(n) FROM (SELECT count(*) n FROM turns
                        WHERE parent_turn_id IS NULL GROUP BY session_id)""",
        )
        == 1
    )


def test_session_heads_are_leaves_within_their_session(db):
    assert (
        value(
            db,
            """SELECT count(*) FROM sessions s JOIN turns c
                        ON c.parent_turn_id = s.current_turn_id AND c.session_id = s.id""",
        )
        == 0
    )
    assert (
        value(
            db,
            """SELECT count(*) FROM sessions s WHERE NOT EXISTS
                        (SELECT 1 FROM turns t WHERE t.id = s.current_turn_id)""",
        )
        == 0
    )


def test_a_session_head_is_its_newest_turn(db):
    mismatched = rows(
        db,
        """
        SELECT s.id FROM sessions s
        WHERE EXISTS (SELECT 1 FROM turns t WHERE t.session_id = s.id)
          AND s.current_turn_id != (SELECT id FROM turns t WHERE t.session_id = s.id
                                    ORDER BY started_at DESC LIMIT 1)""",
    )
    assert mismatched == []


def test_turn_trees_branch_at_several_depths_and_sometimes_three_ways(db):
    children = rows(
        db,
        """SELECT parent_turn_id, count(*) n FROM turns
                           WHERE parent_turn_id IS NOT NULL GROUP BY session_id, parent_turn_id
                           HAVING n > 1""",
    )
    depths = {len(ancestors(db, row[0])) for row in children}
    assert len(depths) >= 5
    assert max(row[1] for row in children) >= 3


def test_a_failed_turn_is_retried_from_its_parent(db):
    retried = value(
        db,
        """SELECT count(*) FROM turns f JOIN turns r
                           ON r.parent_turn_id = f.parent_turn_id AND r.session_id = f.session_id
                           AND r.started_at > f.started_at WHERE f.status = 'failed'""",
    )
    assert retried > 0


def test_a_retry_re_sends_the_failed_turns_prompt(db):
    # Regenerations look like this in real agents: siblings asking the same (issue 16).
    same = value(
        db,
        """SELECT count(*) FROM turns f JOIN turns r
               ON r.parent_turn_id = f.parent_turn_id AND r.id != f.id
           JOIN messages mf ON mf.turn_id = f.id AND mf.role = 'user' AND mf.sequence = 1
           JOIN messages mr ON mr.turn_id = r.id AND mr.role = 'user' AND mr.sequence = 1
           WHERE f.status = 'failed' AND mf.content = mr.content""",
    )
    assert same > 10


def test_every_turn_status_appears(db):
    statuses = Counter(dict(rows(db, "SELECT status, count(*) FROM turns GROUP BY status")))
    assert set(statuses) == {"completed", "failed", "pending", "streaming"}
    assert statuses["completed"] > 0.85 * sum(statuses.values())


def test_running_turns_are_recent_heads_without_completed_at(db):
    running = rows(
        db,
        """SELECT t.*, (SELECT count(*) FROM sessions s
                                       WHERE s.current_turn_id = t.id) AS heads
                          FROM turns t WHERE status IN ('pending', 'streaming')""",
    )
    assert running
    for turn in running:
        assert turn["completed_at"] is None and turn["heads"] == 1
        assert NOW - turn["started_at"] < 5 * 60_000


def test_token_totals_add_up_and_prompts_grow_with_depth(db):
    assert (
        value(
            db,
            """SELECT count(*) FROM turns WHERE total_tokens IS NOT NULL
                        AND total_tokens != prompt_tokens + completion_tokens""",
        )
        == 0
    )
    head = value(
        db, "SELECT current_turn_id FROM sessions WHERE routing_key = 'cursor:ledgerweb:1'"
    )
    chain = ancestors(db, head)
    prompts = [value(db, "SELECT prompt_tokens FROM turns WHERE id = ?", t) for t in chain[-5:]]
    assert prompts[0] > prompts[-1]  # deeper turns (first in the chain) carry more context


def test_models_vary(db):
    models = {row[0] for row in rows(db, "SELECT DISTINCT model FROM turns")}
    assert {"claude-sonnet-4-20250514", "claude-haiku-4-5", "gpt-5", "gemini-2.5-pro"} <= models


def test_the_long_session_has_400_turns(db):
    n = value(
        db,
        """SELECT count(*) FROM turns t JOIN sessions s ON s.id = t.session_id
                     WHERE s.routing_key = 'cursor:ledgerweb:1'
                     AND t.model != 'claude-haiku-4-5'""",
    )
    assert n == 400


# ----- sessions ----------------------------------------------------------------------------


def test_sessions_live_on_many_channels_with_routing_key_conventions(db):
    keys = [row[0] for row in rows(db, "SELECT routing_key FROM sessions")]
    patterns = {
        "imessage": r"^imessage:\+1555\d{7}:default$",
        "discord": r"^discord:guild-\d+:channel-\d+$",
        "gmail": r"^gmail:(thread-[0-9a-f]+|[^:]+@[^:]+:inbox)$",
        "cursor": r"^cursor:[\w-]+:\d+$",
        "fork": r"^fork:[0-9A-Z]{26}:[0-9A-Z]{26}$",
        "subagent": r"^subagent:[0-9A-Z]{26}:[0-9A-Z]{26}$",
    }
    for key in keys:
        channel = key.split(":")[0]
        assert re.match(patterns[channel], key), key
    assert {key.split(":")[0] for key in keys} == set(patterns)


def test_sessions_are_active_archived_or_deleted_and_some_have_no_label(db):
    statuses = dict(rows(db, "SELECT status, count(*) FROM sessions GROUP BY status"))
    assert set(statuses) == {"active", "archived", "deleted"}
    assert 0.08 < statuses["archived"] / sum(statuses.values()) < 0.25
    assert value(db, "SELECT count(*) FROM sessions WHERE label IS NULL") > 0


def test_archived_sessions_are_older_ones(db):
    oldest_active = value(db, "SELECT avg(updated_at) FROM sessions WHERE status = 'active'")
    assert (
        value(db, "SELECT avg(updated_at) FROM sessions WHERE status = 'archived'") < oldest_active
    )


def test_forks_follow_the_routing_key_convention_and_share_the_origin_root(db):
    forks = rows(db, "SELECT * FROM sessions WHERE routing_key LIKE 'fork:%'")
    assert len(forks) >= 2
    for fork in forks:
        _, origin_id, own_id = fork["routing_key"].split(":")
        assert own_id == fork["id"]
        origin = rows(db, "SELECT * FROM sessions WHERE id = ?", origin_id)[0]
        assert (fork["persona"], fork["root_turn_id"]) == (
            origin["persona"],
            origin["root_turn_id"],
        )
        assert fork["label"] and fork["status"] == "active"
        assert fork["root_turn_id"] in ancestors(db, fork["current_turn_id"])


def test_a_fresh_fork_points_at_a_turn_of_its_origin(db):
    fresh = rows(
        db,
        """SELECT s.routing_key, t.session_id FROM sessions s
                        JOIN turns t ON t.id = s.current_turn_id
                        WHERE s.routing_key LIKE 'fork:%' AND t.session_id != s.id""",
    )
    assert fresh
    for key, turn_session in fresh:
        assert key.split(":")[1] == turn_session


def test_fork_turns_continue_from_the_fork_point(db):
    firsts = rows(
        db,
        """SELECT t.session_id, p.session_id AS parent_session FROM turns t
                         JOIN sessions s ON s.id = t.session_id
                         JOIN turns p ON p.id = t.parent_turn_id
                         WHERE s.routing_key LIKE 'fork:%' AND p.session_id != t.session_id""",
    )
    assert firsts
    for fork_id, parent_session in firsts:
        key = value(db, "SELECT routing_key FROM sessions WHERE id = ?", fork_id)
        assert key.split(":")[1] == parent_session


def test_subagents_point_to_the_task_call_that_spawned_them(db):
    children = rows(db, "SELECT * FROM sessions WHERE routing_key LIKE 'subagent:%'")
    assert children
    for child in children:
        _, parent_id, call_id = child["routing_key"].split(":")
        call = rows(
            db,
            """SELECT c.*, t.session_id FROM tool_calls c
                           JOIN turns t ON t.id = c.turn_id WHERE c.id = ?""",
            call_id,
        )[0]
        assert call["tool_name"] == "Task" and call["session_id"] == parent_id
        parameters = json.loads(call["parameters"])
        assert set(parameters) == {"description", "prompt", "subagent_type"}
        assert child["label"] == parameters["description"]
        assert child["id"] in call["result"]
        assert (
            call["started_at"] <= child["created_at"] <= child["updated_at"] <= call["completed_at"]
        )
        assert value(db, "SELECT count(*) FROM turns WHERE session_id = ?", child["id"]) >= 2


def test_compactions_summarise_and_keep_turns_of_their_own_branch(db):
    compactions = rows(
        db, "SELECT c.*, t.model AS turn_model FROM compactions c JOIN turns t ON t.id = c.turn_id"
    )
    assert len(compactions) >= 10
    for compaction in compactions:
        branch = set(ancestors(db, compaction["turn_id"])[1:])
        summarised = json.loads(compaction["summarized_turn_ids"])
        kept = json.loads(compaction["kept_turn_ids"])
        assert summarised and kept and set(summarised + kept) <= branch
        assert compaction["tokens_before"] > compaction["tokens_after"] > 0
        assert compaction["trigger_reason"] in ("context_limit", "manual")
        assert compaction["model"] == compaction["turn_model"] == "claude-haiku-4-5"
    assert {c["trigger_reason"] for c in compactions} == {"context_limit", "manual"}


def test_compaction_turns_hold_the_summary_in_their_messages(db):
    missing = value(
        db,
        """SELECT count(*) FROM compactions c WHERE NOT EXISTS (
                           SELECT 1 FROM messages m WHERE m.turn_id = c.turn_id
                           AND m.content = c.summary)""",
    )
    assert missing == 0


# ----- messages and tool calls ---------------------------------------------------------------


def test_message_sequences_are_unique_and_ordered_in_time(db):
    assert (
        value(
            db,
            """SELECT count(*) FROM (SELECT 1 FROM messages
                        GROUP BY turn_id, sequence HAVING count(*) > 1)""",
        )
        == 0
    )
    out_of_order = value(
        db,
        """SELECT count(*) FROM messages a JOIN messages b
                                ON a.turn_id = b.turn_id AND a.sequence < b.sequence
                                WHERE a.created_at >= b.created_at""",
    )
    assert out_of_order == 0


def test_turns_have_a_user_message_and_completed_ones_an_answer(db):
    assert (
        value(
            db,
            """SELECT count(*) FROM turns t WHERE NOT EXISTS (SELECT 1 FROM messages m
                        WHERE m.turn_id = t.id AND m.role IN ('user', 'system'))""",
        )
        == 0
    )
    assert (
        value(
            db,
            """SELECT count(*) FROM turns t WHERE status = 'completed' AND NOT EXISTS
                        (SELECT 1 FROM messages m WHERE m.turn_id = t.id
                         AND m.role = 'assistant')""",
        )
        == 0
    )
    assert value(db, "SELECT count(*) FROM messages WHERE role = 'system' AND sequence = 0") > 0


def test_some_answers_are_long_markdown(db):
    assert value(db, "SELECT max(length(content)) FROM messages") > 20_000
    for marker in ("\n## ", "\n- ", "|---", "```"):
        assert value(db, "SELECT count(*) FROM messages WHERE instr(content, ?)", marker) > 0


def test_tool_call_sequences_are_unique_within_a_turn(db):
    assert (
        value(
            db,
            """SELECT count(*) FROM (SELECT 1 FROM tool_calls
                        GROUP BY turn_id, sequence HAVING count(*) > 1)""",
        )
        == 0
    )
    assert value(db, "SELECT min(sequence) FROM tool_calls") == 1


def test_one_turn_has_exactly_600_tool_calls_and_others_hundreds(db):
    sizes = [row[0] for row in rows(db, "SELECT count(*) FROM tool_calls GROUP BY turn_id")]
    assert max(sizes) == 600
    assert any(120 <= n <= 250 for n in sizes)


def test_tool_calls_carry_json_and_failed_ones_an_error(db):
    for call in rows(db, "SELECT * FROM tool_calls WHERE status != 'pending'"):
        json.loads(call["parameters"])
        if call["status"] == "failed":
            assert call["error"] and call["result"] is None
        else:
            json.loads(call["result"])
    names = {row[0] for row in rows(db, "SELECT DISTINCT tool_name FROM tool_calls")}
    assert {
        "read_file",
        "run_terminal_command_v2",
        "gog",
        "imsg_send",
        "web_search",
        "Task",
    } <= names
    assert value(db, "SELECT count(*) FROM tool_calls WHERE status = 'failed'") > 0


# ----- nexus requests ------------------------------------------------------------------------


def test_request_stage_is_consistent_with_status(db):
    for status, stage, error_stage in rows(
        db, "SELECT status, stage, error_stage FROM nexus_requests"
    ):
        assert stage in STAGES
        if status in ("completed", "skipped"):
            assert stage == "finalize" and error_stage is None
        elif status == "failed":
            assert stage == error_stage
        else:
            assert status == "processing" and stage != "finalize"


def test_every_status_and_every_stage_as_error_stage_appear(db):
    statuses = Counter(dict(rows(db, "SELECT status, count(*) FROM nexus_requests GROUP BY 1")))
    assert set(statuses) == {"completed", "failed", "skipped", "processing"}
    assert statuses["completed"] == max(statuses.values())
    error_stages = {row[0] for row in rows(db, "SELECT DISTINCT error_stage FROM nexus_requests")}
    assert error_stages - {None} == set(STAGES)


def test_failed_requests_explain_themselves_with_a_stack(db):
    for request in rows(db, "SELECT * FROM nexus_requests WHERE status = 'failed'"):
        assert request["error_message"] and request["error_stack"].count("\n") >= 2


def test_requests_that_ran_an_agent_match_their_turn(db):
    linked = rows(
        db,
        """SELECT r.*, t.status AS turn_status, t.model, t.prompt_tokens,
                         t.completion_tokens, t.total_tokens, s.routing_key, s.persona
                         FROM nexus_requests r JOIN turns t ON t.id = r.turn_id
                         JOIN sessions s ON s.id = t.session_id""",
    )
    assert len(linked) == value(db, "SELECT count(*) FROM nexus_requests WHERE turn_id IS NOT NULL")
    for r in linked:
        assert (r["session_key"], r["session_persona"]) == (r["routing_key"], r["persona"])
        assert (
            r["agent_model"],
            r["agent_tokens_prompt"],
            r["agent_tokens_completion"],
            r["agent_tokens_total"],
        ) == (r["model"], r["prompt_tokens"], r["completion_tokens"], r["total_tokens"])
        if r["error_stage"] == "runAgent":
            assert r["turn_status"] == "failed"
        tools = json.loads(r["agent_tool_calls"])
        assert len(tools) == value(
            db, "SELECT count(*) FROM tool_calls WHERE turn_id = ?", r["turn_id"]
        )


def test_every_failed_run_agent_request_links_a_failed_turn(db):
    assert (
        value(
            db,
            """SELECT count(*) FROM nexus_requests WHERE error_stage = 'runAgent'
                        AND turn_id IS NULL""",
        )
        == 0
    )


def test_stage_timings_cover_the_stages_reached_and_add_up(db):
    for r in rows(db, "SELECT * FROM nexus_requests"):
        timings = json.loads(r["stage_timings"])
        order = [STAGES.index(stage) for stage in timings]
        assert order == sorted(order) and all(ms > 0 for ms in timings.values())
        if r["status"] == "processing":
            assert r["completed_at"] is None and r["stage"] not in timings
        else:
            assert r["stage"] in timings
            assert r["completed_at"] == r["started_at"] + sum(timings.values())


def test_the_agent_runs_in_seconds_and_other_stages_in_milliseconds(db):
    agent = [
        json.loads(row[0])["runAgent"]
        for row in rows(
            db,
            """SELECT stage_timings
             FROM nexus_requests WHERE status = 'completed' AND turn_id IS NOT NULL""",
        )
    ]
    assert 1_000 < sorted(agent)[len(agent) // 2] < 40_000
    identity = [
        json.loads(row[0])["resolveIdentity"]
        for row in rows(
            db,
            """SELECT stage_timings
                FROM nexus_requests WHERE status = 'completed'""",
        )
    ]
    assert sorted(identity)[len(identity) // 2] < 200


def test_snapshots_only_on_finalized_requests_younger_than_a_week(db):
    assert (
        value(
            db,
            """SELECT count(*) FROM nexus_requests WHERE request_snapshot IS NOT NULL
                        AND (status = 'processing' OR started_at < ?)""",
            NOW - 7 * DAY,
        )
        == 0
    )
    assert (
        value(
            db,
            """SELECT count(*) FROM nexus_requests WHERE request_snapshot IS NULL
                        AND status != 'processing' AND started_at >= ?""",
            NOW - 7 * DAY,
        )
        == 0
    )
    snapshot = json.loads(
        value(
            db,
            "SELECT request_snapshot FROM nexus_requests "
            "WHERE request_snapshot IS NOT NULL LIMIT 1",
        )
    )
    assert {"id", "stage", "status", "stage_timings"} <= set(snapshot)


def test_processing_requests_are_recent(db):
    assert value(db, "SELECT min(started_at) FROM nexus_requests WHERE status = 'processing'") > (
        NOW - 10 * 60_000
    )


def test_hooks_fired_are_matched_hooks_and_handled_requests_are_skipped(db):
    for matched, fired, handled, status in rows(
        db,
        """SELECT hooks_matched, hooks_fired,
            hooks_handled, status FROM nexus_requests WHERE hooks_matched IS NOT NULL""",
    ):
        assert set(json.loads(fired)) <= set(json.loads(matched))
        if handled:
            assert status == "skipped"
    assert (
        value(
            db,
            """SELECT count(*) FROM nexus_requests
                        WHERE json_array_length(hooks_fired) < json_array_length(hooks_matched)""",
        )
        > 0
    )
    events = {row[0] for row in rows(db, "SELECT DISTINCT event_type FROM nexus_requests")}
    assert {"message", "email", "timer", "webhook"} <= events


def test_denied_requests_are_skipped_after_access(db):
    denied = rows(
        db, "SELECT status, stage_timings FROM nexus_requests WHERE access_decision = 'deny'"
    )
    assert denied
    for status, timings in denied:
        assert status == "skipped" and "executeTriggers" not in json.loads(timings)


def test_delivery_fields_are_filled_when_delivery_was_reached(db):
    assert (
        value(
            db,
            """SELECT count(*) FROM nexus_requests WHERE status = 'completed'
                        AND turn_id IS NOT NULL AND (delivery_success != 1
                        OR json_array_length(delivery_message_ids) = 0)""",
        )
        == 0
    )
    assert (
        value(
            db,
            """SELECT count(*) FROM nexus_requests WHERE error_stage = 'deliverResponse'
                        AND (delivery_success != 0 OR delivery_error IS NULL)""",
        )
        == 0
    )


def test_requests_are_busier_in_the_daytime(db):
    hours = Counter(local_hour(row[0]) for row in rows(db, "SELECT started_at FROM nexus_requests"))
    assert sum(hours[h] for h in range(10, 16)) > 5 * sum(hours[h] for h in range(1, 7))


# ----- time and ids -------------------------------------------------------------------------


@pytest.mark.parametrize("table, column", [
    ("sessions", "created_at"), ("sessions", "updated_at"), ("turns", "started_at"),
    ("turns", "completed_at"), ("messages", "created_at"), ("tool_calls", "started_at"),
    ("compactions", "created_at"), ("nexus_requests", "started_at"),
    ("nexus_requests", "completed_at"),
])  # fmt: skip
def test_everything_happens_in_milliseconds_within_the_30_days_before_now(db, table, column):
    low, high = db.execute(f"SELECT min({column}), max({column}) FROM {table}").fetchone()
    assert low >= NOW - HISTORY and high <= NOW


def test_ids_are_ulids_of_their_timestamps(db):
    for turn_id, started in rows(db, "SELECT id, started_at FROM turns"):
        assert ULID.match(turn_id) and decode_time(turn_id) == started
    for request_id, started in rows(db, "SELECT id, started_at FROM nexus_requests LIMIT 500"):
        assert ULID.match(request_id) and decode_time(request_id) == started


def test_ulid_encoding_covers_the_full_range():
    assert encode(0) == "0" * 26
    assert encode((1 << 128) - 1) == "7" + "Z" * 25
    assert decode_time(encode((1_760_000_000_000 << 80) | 12345)) == 1_760_000_000_000


# ----- the build itself ---------------------------------------------------------------------


def test_the_ledger_is_in_wal_mode_with_every_index_of_the_ddl(db, ledger_path):
    assert value(db, "PRAGMA journal_mode") == "wal"
    names = {row[0] for row in rows(db, "SELECT name FROM sqlite_master WHERE type = 'index'")}
    expected = {re.search(r"CREATE INDEX (\w+)", s).group(1) for s in index_statements(ddl())}
    assert expected <= names
    assert not ledger_path.with_name(ledger_path.name + ".tmp").exists()


def dump(path):
    with sqlite3.connect(path) as conn:
        tables = [row[0] for row in conn.execute("SELECT name FROM sqlite_master "
                                                 "WHERE type = 'table' ORDER BY name")]  # fmt: skip
        return {t: conn.execute(f"SELECT * FROM {t} ORDER BY rowid").fetchall() for t in tables}


def test_the_same_seed_and_anchor_time_give_identical_rows(tmp_path):
    first, second, other = tmp_path / "a.sqlite3", tmp_path / "b.sqlite3", tmp_path / "c.sqlite3"
    build_demo_ledger(first, seed=3, scale=0.05, now_ms=NOW)
    build_demo_ledger(second, seed=3, scale=0.05, now_ms=NOW)
    build_demo_ledger(other, seed=4, scale=0.05, now_ms=NOW)
    assert dump(first) == dump(second)
    assert dump(first)["turns"] != dump(other)["turns"]


def test_an_existing_file_is_refused_without_replace(tmp_path):
    path = tmp_path / "ledger.sqlite3"
    path.write_text("precious")
    with pytest.raises(CommandError, match="--replace"):
        call_command("ledger_demo", str(path), "--scale", "0.05", verbosity=0)
    assert path.read_text() == "precious"


def test_replace_overwrites_an_existing_ledger(tmp_path, capsys):
    path = tmp_path / "ledger.sqlite3"
    path.write_text("old")
    call_command("ledger_demo", str(path), "--scale", "0.05", "--replace", "--now", str(NOW),
                 verbosity=0)  # fmt: skip
    with sqlite3.connect(path) as conn:
        assert conn.execute("SELECT count(*) FROM turns").fetchone()[0] > 0
    assert "nexus_requests" in capsys.readouterr().out


def test_a_failed_build_leaves_nothing_behind(tmp_path, monkeypatch):
    path = tmp_path / "ledger.sqlite3"

    def explode(*args, **kwargs):
        raise RuntimeError("interrupted")

    monkeypatch.setattr("demo.build.write_extra_requests", explode)
    with pytest.raises(RuntimeError):
        build_demo_ledger(path, scale=0.05, now_ms=NOW)
    assert list(tmp_path.iterdir()) == []


def test_request_counts_follow_the_scale(db):
    # About 6,000 requests at scale 1, so about 1,200 at scale 0.2.
    assert 900 < value(db, "SELECT count(*) FROM nexus_requests") < 1_800


def test_the_demo_writes_its_tables_with_the_schemas_columns():
    """The demo's column lists come from the DDL, as the importers' writer does: a column
    renamed, added or reordered in ledgerweb/sql/ cannot leave the demo on an older schema."""
    from demo.sink import COLUMNS
    from ledgerfacts.schema import expected_columns

    schema = expected_columns()
    assert {table: [c.name for c in schema[table]] for table in COLUMNS} == {
        table: list(columns) for table, columns in COLUMNS.items()
    }
