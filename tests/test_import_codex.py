"""Codex rollouts: the ledger rows match a plain reading of the JSONL, and they render.

The expected numbers come from a simple pass over the records in this file (user prompts,
`compacted` records, calls answered by an output with the same call_id), not from the importer.
"""

import json
from pathlib import Path

import pytest
from builders import LEDGER_DB
from importing import (
    IMPORT_FIXTURES,
    LEFT_OUT,
    GrowingCopy,
    all_rows,
    answered_call,
    json_objects,
    one,
    query,
    run_import,
)

SAMPLES = IMPORT_FIXTURES / "samples/codex"  # ../shared/samples, copied unedited
FIXTURES = IMPORT_FIXTURES / "codex"
ROLLOUT = next(FIXTURES.glob("rollout-*.jsonl"))
SESSION = "0199a1b2-c3d4-7e5f-8a9b-0c1d2e3f4a5b"
CONTEXT = ("<environment_context>", "<user_instructions>")


def items(path: Path, kind: str) -> list[dict]:
    return [
        r["payload"]
        for r in json_objects(path)
        if r.get("type") == "response_item" and r["payload"].get("type") == kind
    ]


def expected(path: Path) -> dict:
    prompts = [
        m
        for m in items(path, "message")
        if m.get("role") == "user" and not m["content"][0].get("text", "").startswith(CONTEXT)
    ]
    open_calls, paired, failed = set(), 0, 0
    for record in json_objects(path):
        payload = record.get("payload")
        if record.get("type") != "response_item" or not isinstance(payload, dict):
            continue
        if payload.get("type") in ("function_call", "custom_tool_call", "tool_search_call"):
            open_calls.add(payload["call_id"])
        elif payload.get("call_id") in open_calls and payload["type"].endswith("_output"):
            open_calls.discard(payload["call_id"])
            paired += 1
            output = payload.get("output")
            failed += isinstance(output, dict) and output.get("success") is False
    return {
        "prompts": len(prompts),
        "compactions": sum(1 for r in json_objects(path) if r.get("type") == "compacted"),
        "paired": paired,
        "failed": failed,
    }


def ledger_counts(dest: Path) -> dict:
    return {
        "prompts": one(dest, "SELECT count(*) FROM messages WHERE role = 'user'"),
        "compactions": one(dest, "SELECT count(*) FROM compactions"),
        "paired": one(
            dest,
            f"SELECT count(*) FROM tool_calls WHERE {answered_call()}"
            " AND tool_name NOT IN ('web_search', 'image_generation')",  # those have no output
        ),
        "failed": one(  # calls whose output said so, not calls left without one
            dest, f"SELECT count(*) FROM tool_calls WHERE status = 'failed' AND {answered_call()}"
        ),
    }


@pytest.fixture
def imported_rollout(tmp_path) -> Path:
    """A ledger holding the fixture rollout."""
    ledger = tmp_path / "l.sqlite3"
    run_import("codex", ROLLOUT, ledger=ledger)
    return ledger


def test_the_fixture_matches_a_plain_reading_of_it(imported_rollout):
    want = expected(ROLLOUT)
    assert ledger_counts(imported_rollout) == want
    # one turn per prompt and per compaction, in a line
    assert (
        one(imported_rollout, "SELECT count(*) FROM turns") == want["prompts"] + want["compactions"]
    )
    assert one(imported_rollout, "SELECT count(*) FROM turns WHERE parent_turn_id IS NULL") == 1


def test_the_real_sample_matches_a_plain_reading_of_it(tmp_path):
    sample = SAMPLES / "small.jsonl"
    dest = tmp_path / "l.sqlite3"
    out = run_import("codex", sample, ledger=dest)
    want = expected(sample)
    assert ledger_counts(dest) == want
    assert want["prompts"] >= 1 and want["compactions"] >= 1 and want["paired"] >= 3
    names = [
        r["payload"]["thread_name"]
        for r in json_objects(sample)
        if r.get("type") == "event_msg" and r["payload"].get("type") == "thread_name_updated"
    ]
    label, routing_key = query(dest, "SELECT label, routing_key FROM sessions")[0]
    assert (label, routing_key) == (names[-1], "repo:/tmp/repo")  # the thread's name
    world_states = sum(1 for r in json_objects(sample) if r.get("type") == "world_state")
    assert f"codex:world_state: {world_states}" in out  # unknown: counted, skipped


def test_schema_drift_is_counted_and_skipped_not_fatal(tmp_path):
    sample = SAMPLES / "schema_drift.jsonl"
    dest = tmp_path / "l.sqlite3"
    out = run_import("codex", sample, ledger=dest)
    without_envelope = [r for r in json_objects(sample) if "payload" not in r]
    assert len(without_envelope) == 4
    assert "codex:function_call (no {timestamp, type, payload} envelope): 1" in out
    assert "codex:function_result (no {timestamp, type, payload} envelope): 1" in out
    assert "codex:(no type) (no {timestamp, type, payload} envelope): 2" in out
    assert "codex:world_state: 1" in out
    assert not dest.exists()  # nothing to write: no ledger left behind


def test_calls_are_matched_to_their_outputs_by_call_id(imported_rollout):
    calls = query(
        imported_rollout,
        "SELECT tool_name, status, parameters, result, error FROM tool_calls ORDER BY started_at",
    )
    pytest_call, patch, push = calls
    assert pytest_call[:2] == ("shell", "completed")
    assert json.loads(pytest_call[2])["command"] == ["pytest", "-q"]
    assert json.loads(pytest_call[3])["output"] == "1 failed, 41 passed"
    assert patch[:2] == ("apply_patch", "completed") and "*** Begin Patch" in json.loads(patch[2])
    assert json.loads(push[2])["command"] == ["git", "push"]
    assert (push[1], push[3], push[4]) == ("failed", None, "sandbox denied network access")


def test_turns_carry_the_model_and_tokens_of_their_token_counts(imported_rollout):
    first = query(
        imported_rollout,
        "SELECT model, prompt_tokens, completion_tokens, status FROM turns ORDER BY started_at",
    )[0]
    # two token_counts: the last prompt was 13000 tokens; 230 output tokens in all
    assert first == ("gpt-5-codex", 13000, 230, "completed")


def test_context_messages_go_with_the_next_prompt_as_system_messages(imported_rollout):
    first_turn = query(
        imported_rollout,
        "SELECT role, substr(content, 1, 21) FROM messages WHERE turn_id ="
        " (SELECT id FROM turns ORDER BY started_at LIMIT 1) ORDER BY sequence",
    )
    assert first_turn[:2] == [
        ("system", "<environment_context>"),
        ("user", "Run the tests and fix"),
    ]


def test_a_compaction_folds_the_turns_before_it(imported_rollout):
    turn_id, summary, folded = query(
        imported_rollout, "SELECT turn_id, summary, summarized_turn_ids FROM compactions"
    )[0]
    before = [t for (t,) in query(imported_rollout, "SELECT id FROM turns ORDER BY started_at")]
    assert summary.startswith("Summary: fixed cart.total()")
    assert json.loads(folded) == before[: before.index(turn_id)]
    assert one(imported_rollout, "SELECT current_turn_id FROM sessions") == before[-1]


def test_importing_again_adds_nothing(tmp_path):
    dest = tmp_path / "l.sqlite3"
    run_import("codex", FIXTURES, ledger=dest, left_out=LEFT_OUT)
    before = all_rows(dest)
    out = run_import("codex", FIXTURES, ledger=dest, left_out=LEFT_OUT)
    assert all_rows(dest) == before
    assert "turns: 0 added" in out


def test_a_grown_rollout_adds_only_its_new_part(tmp_path):
    """Import the rollout cut right after a call (Codex still running), let it grow, import
    again: the ledger then equals a fresh import of the whole rollout."""
    lines = ROLLOUT.read_text().splitlines(keepends=True)
    cut = next(i for i, line in enumerate(lines) if "call_T2a" in line) + 1
    growing = GrowingCopy(ROLLOUT, cut, tmp_path)
    dest = tmp_path / "grown.sqlite3"
    run_import("codex", growing.path, ledger=dest)
    assert query(dest, "SELECT status FROM tool_calls WHERE completed_at IS NULL") == [("pending",)]
    assert query(dest, "SELECT status FROM turns ORDER BY started_at DESC LIMIT 1") == [
        ("streaming",)
    ]
    half = one(dest, "SELECT count(*) FROM turns")

    growing.grow()
    out = run_import("codex", growing.path, ledger=dest)

    fresh = tmp_path / "fresh.sqlite3"
    run_import("codex", ROLLOUT, ledger=fresh)
    assert all_rows(dest) == all_rows(fresh)
    whole = one(fresh, "SELECT count(*) FROM turns")
    assert f"turns: {whole - half} added, {half} already there, 1 brought up to date" in out


def test_malformed_records_are_reported_with_file_and_line(tmp_path):
    out = run_import(
        "codex", FIXTURES / "malformed.jsonl", ledger=tmp_path / "l.sqlite3", left_out=LEFT_OUT
    )
    assert "malformed.jsonl:2: not JSON" in out
    assert "malformed.jsonl:4: a JSON str, not an object" in out
    assert "codex:response_item:hologram: 1" in out
    assert one(tmp_path / "l.sqlite3", "SELECT count(*) FROM turns") == 1


@LEDGER_DB
def test_an_imported_rollout_renders_with_its_compaction(viewer_client, ledger):
    run_import("codex", ROLLOUT)
    page = viewer_client.get(f"/sessions/{SESSION}/")
    assert page.status_code == 200
    html = page.content.decode()
    assert "mark-compaction" in html and "Run the tests and fix the failing one" in html
    totals = viewer_client.get(f"/sessions/{SESSION}/?format=json").json()["totals"]
    assert (totals["turns"], totals["tool_calls"], totals["compactions"]) == (4, 3, 1)
