"""Claude Code transcripts: the ledger rows match a plain reading of the JSONL, and they render.

The expected numbers come from a simple pass over the JSON lines in this file (prompts, tool_use
ids answered by a tool_result, parents with several children, sidechain roots), not from the
importer's code.
"""

import json
import shutil
from pathlib import Path

import pytest
from builders import LEDGER_DB
from importing import (
    IMPORT_FIXTURES,
    LEFT_OUT,
    GrowingCopy,
    all_rows,
    json_objects,
    one,
    query,
    run_import,
)

SAMPLES = IMPORT_FIXTURES / "samples/claude-code"  # ../shared/samples, copied unedited
FIXTURES = IMPORT_FIXTURES / "claude-code"
SAMPLE_FILES = sorted(SAMPLES.glob("*.jsonl"))
assert SAMPLE_FILES, f"the real Claude Code samples are missing from {SAMPLES}"
FIXTURE_FILES = sorted(FIXTURES.glob("*.jsonl"))


# ----- an independent reading of a transcript --------------------------------------------------


def blocks(line: dict) -> list:
    content = line.get("message", {}).get("content")
    return [{"type": "text", "text": content}] if isinstance(content, str) else content or []


def is_prompt(line: dict) -> bool:
    if line.get("type") != "user" or line.get("isCompactSummary") or line.get("isMeta"):
        return False
    texts = [b.get("text", "") for b in blocks(line) if b.get("type") == "text"]
    return bool(texts) and not texts[0].startswith("[Request interrupted")


def expected(*paths: Path) -> dict:
    lines = [x for x in json_objects(*paths) if x.get("type") in ("user", "assistant", "system")]
    main = [x for x in lines if not x.get("isSidechain")]
    side = [x for x in lines if x.get("isSidechain")]
    uses = {b["id"] for x in lines for b in blocks(x) if b.get("type") == "tool_use"}
    results = {
        b["tool_use_id"]: bool(b.get("is_error"))
        for x in lines
        for b in blocks(x)
        if b.get("type") == "tool_result"
    }
    children: dict[str, int] = {}
    for x in main:
        if x.get("parentUuid"):
            children[x["parentUuid"]] = children.get(x["parentUuid"], 0) + 1
    boundaries = [x for x in main if x.get("subtype") == "compact_boundary"]
    return {
        "turns": sum(map(is_prompt, main)) + len(boundaries),
        "sidechain_turns": sum(map(is_prompt, side)),
        "paired": len(uses & results.keys()),
        "failed": sum(1 for i in uses & results.keys() if results[i]),
        "branch_points": sum(1 for n in children.values() if n > 1),
        "subagents": sum(1 for x in side if x.get("parentUuid") is None),
        "compactions": len(boundaries),
    }


# ----- helpers over the ledger -----------------------------------------------------------------


def ledger_counts(dest: Path, session_id: str) -> dict:
    calls = "FROM tool_calls WHERE turn_id IN (SELECT id FROM turns WHERE session_id = ?)"
    branch_points = (
        "SELECT count(*) FROM (SELECT parent_turn_id FROM turns WHERE session_id = ?"
        " AND parent_turn_id IS NOT NULL GROUP BY 1 HAVING count(*) > 1)"
    )
    compactions = (
        "SELECT count(*) FROM compactions"
        " WHERE turn_id IN (SELECT id FROM turns WHERE session_id = ?)"
    )
    return {
        "turns": one(dest, "SELECT count(*) FROM turns WHERE session_id = ?", session_id),
        "paired": one(dest, f"SELECT count(*) {calls} AND completed_at IS NOT NULL", session_id),
        "failed": one(dest, f"SELECT count(*) {calls} AND status = 'failed'", session_id),
        "branch_points": one(dest, branch_points, session_id),
        "compactions": one(dest, compactions, session_id),
    }


def session_of(path: Path) -> str:
    return next(x["sessionId"] for x in reversed(json_objects(path)) if "sessionId" in x)


# ----- counts against the input ----------------------------------------------------------------


@pytest.mark.parametrize("path", SAMPLE_FILES, ids=lambda p: p.name[:8])
def test_a_real_sample_matches_a_plain_reading_of_it(tmp_path, path):
    dest = tmp_path / "l.sqlite3"
    run_import("claude-code", path, ledger=dest)
    want = expected(path)
    got = ledger_counts(dest, session_of(path))
    assert got == {k: want[k] for k in got}
    assert want["turns"] > 1 and want["paired"] > 5  # the samples are real conversations


@pytest.mark.parametrize("name", ["rewind", "compaction", "malformed"])
def test_a_fixture_matches_a_plain_reading_of_it(tmp_path, name):
    path = FIXTURES / f"{name}.jsonl"
    dest = tmp_path / "l.sqlite3"
    run_import("claude-code", path, ledger=dest, left_out=LEFT_OUT if name == "malformed" else None)
    got = ledger_counts(dest, session_of(path))
    want = expected(path)
    assert got == {k: want[k] for k in got}


def test_a_rewind_becomes_a_branch_and_the_latest_branch_is_the_head(tmp_path):
    dest = tmp_path / "l.sqlite3"
    run_import("claude-code", FIXTURES / "rewind.jsonl", ledger=dest)
    first = "a0000000-0000-4000-8000-000000000001"
    children = query(dest, "SELECT id FROM turns WHERE parent_turn_id = ? ORDER BY id", first)
    assert children == [
        ("a0000000-0000-4000-8000-000000000005",),  # the prompt that was rewound
        ("a0000000-0000-4000-8000-000000000008",),  # its rewrite
    ]
    label, head = query(dest, "SELECT label, current_turn_id FROM sessions")[0]
    assert head == "a0000000-0000-4000-8000-000000000008"
    assert label == "Fix the checkout total"  # the summary whose leaf is in this file


def test_tool_results_belong_to_the_turn_of_the_call_with_their_error(tmp_path):
    dest = tmp_path / "l.sqlite3"
    run_import("claude-code", FIXTURES / "rewind.jsonl", ledger=dest)
    rows = query(
        dest,
        "SELECT id, turn_id, status, result, error FROM tool_calls ORDER BY started_at",
    )
    read, rejected, edit = rows
    assert read[1] == "a0000000-0000-4000-8000-000000000001"
    assert json.loads(read[3]) == "def total(items): return sum(i.price for i in items)"
    assert rejected[2:] == ("failed", None, "The user doesn't want to proceed with this tool use.")
    assert edit[2] == "completed" and json.loads(edit[3]) == "Edited cart.py"
    # the user lines carrying results are not turns of their own
    assert one(dest, "SELECT count(*) FROM turns") == 3


def test_usage_gives_the_prompt_of_the_last_call_and_counts_each_response_once(tmp_path):
    dest = tmp_path / "l.sqlite3"
    run_import("claude-code", FIXTURES / "rewind.jsonl", ledger=dest)
    # turn 1: two responses (msg_r1, msg_r2); the last had 300 + 1000 cached prompt tokens
    assert query(
        dest,
        "SELECT prompt_tokens, completion_tokens, total_tokens, model FROM turns WHERE id = ?",
        "a0000000-0000-4000-8000-000000000001",
    ) == [(1300, 20 + 40, 1360, "claude-sonnet-4-20250514")]


def test_sidechains_under_task_calls_become_subagent_sessions(tmp_path):
    path = FIXTURES / "subagent.jsonl"
    dest = tmp_path / "l.sqlite3"
    run_import("claude-code", path, ledger=dest)
    want = expected(path, *sorted((FIXTURES / "subagent" / "subagents").glob("*.jsonl")))
    parent = session_of(path)
    children = query(
        dest, "SELECT id, label, routing_key FROM sessions WHERE routing_key LIKE 'subagent:%'"
        " ORDER BY routing_key",
    )  # fmt: skip
    assert len(children) == want["subagents"] == 2
    assert [c[2] for c in children] == [
        f"subagent:{parent}:toolu_task1",  # sidechain in the file, found by its prompt
        f"subagent:{parent}:toolu_task2",  # subagents/agent-a1b2c3d.jsonl, found by its agentId
    ]
    assert [c[1] for c in children] == ["Find config readers", "Find callers"]
    child_turns = one(
        dest, "SELECT count(*) FROM turns WHERE session_id IN (SELECT id FROM sessions"
        " WHERE routing_key LIKE 'subagent:%')",
    )  # fmt: skip
    assert child_turns == want["sidechain_turns"]
    assert one(dest, "SELECT count(*) FROM turns WHERE session_id = ?", parent) == want["turns"]
    assert (
        one(dest, "SELECT count(*) FROM tool_calls WHERE completed_at IS NOT NULL")
        == (want["paired"])
    )


def test_a_compaction_is_a_turn_that_folds_the_turns_before_it(tmp_path):
    dest = tmp_path / "l.sqlite3"
    run_import("claude-code", FIXTURES / "compaction.jsonl", ledger=dest)
    boundary = "c0000000-0000-4000-8000-000000000005"
    (turn_parent,) = query(dest, "SELECT parent_turn_id FROM turns WHERE id = ?", boundary)[0]
    assert turn_parent == "c0000000-0000-4000-8000-000000000003"  # its logicalParentUuid's turn
    summary, folded, before, trigger = query(
        dest, "SELECT summary, summarized_turn_ids, tokens_before, trigger_reason FROM compactions"
    )[0]
    assert summary.startswith("This session is being continued")
    assert json.loads(folded) == [
        "c0000000-0000-4000-8000-000000000001",
        "c0000000-0000-4000-8000-000000000003",
    ]
    assert (before, trigger) == (155210, "auto")
    after = query(dest, "SELECT parent_turn_id FROM turns WHERE id LIKE '%07'")[0][0]
    assert after == boundary


def test_malformed_lines_are_reported_with_file_and_line_and_skipped(tmp_path):
    out = run_import(
        "claude-code",
        FIXTURES / "malformed.jsonl",
        ledger=tmp_path / "l.sqlite3",
        left_out=LEFT_OUT,
    )
    assert "Skipped 2 malformed record(s):" in out
    assert "malformed.jsonl:2: not JSON" in out
    assert "malformed.jsonl:4: a JSON list, not an object" in out
    assert "claude-code:telemetry: 1" in out  # unknown type: counted, not fatal
    assert "Claude Code file-history-snapshot lines: 1" in out


# ----- idempotence and growth -------------------------------------------------------------------


def test_importing_again_adds_nothing(tmp_path):
    dest = tmp_path / "l.sqlite3"
    run_import("claude-code", FIXTURES, ledger=dest, left_out=LEFT_OUT)
    before = all_rows(dest)
    run_import("claude-code", FIXTURES, ledger=dest, left_out=LEFT_OUT)
    assert all_rows(dest) == before


def test_a_grown_transcript_adds_only_its_new_part(tmp_path):
    """Import half a real session (cut after a tool call, before its result), let it grow to the
    whole file, import again: the ledger then holds exactly what a fresh import of the whole file
    gives, and the second run added only the difference."""
    sample = max(SAMPLE_FILES, key=lambda p: p.stat().st_size)
    lines = sample.read_text().splitlines(keepends=True)
    cut = next(
        i for i in range(len(lines) // 2, len(lines))
        if any(b.get("type") == "tool_use" for b in blocks(json.loads(lines[i])))
    ) + 1  # fmt: skip
    growing = GrowingCopy(sample, cut, tmp_path)
    dest = tmp_path / "grown.sqlite3"
    run_import("claude-code", growing.path, ledger=dest)
    half = {t: len(rows) for t, rows in all_rows(dest).items()}
    assert query(dest, "SELECT status FROM tool_calls WHERE completed_at IS NULL") == [("pending",)]

    growing.grow()
    out = run_import("claude-code", growing.path, ledger=dest)

    fresh = tmp_path / "fresh.sqlite3"
    run_import("claude-code", sample, ledger=fresh)
    assert all_rows(dest) == all_rows(fresh)
    whole = {t: len(rows) for t, rows in all_rows(fresh).items()}
    assert f"turns: {whole['turns'] - half['turns']} added, {half['turns']} already there" in out
    assert f"tool_calls: {whole['tool_calls'] - half['tool_calls']} added" in out


def test_a_folder_is_read_like_claude_projects(tmp_path):
    projects = tmp_path / "projects" / "-home-ada-shop"
    shutil.copytree(FIXTURES, projects, ignore=shutil.ignore_patterns("*.txt"))
    dest = tmp_path / "l.sqlite3"
    run_import("claude-code", tmp_path / "projects", ledger=dest, left_out=LEFT_OUT)
    # four transcripts and two subagents; the subagent file is not a session of its own
    assert one(dest, "SELECT count(*) FROM sessions") == 6


# ----- what the browser shows ------------------------------------------------------------------


@LEDGER_DB
def test_an_imported_session_with_subagents_renders_its_tree_and_links(viewer_client, ledger):
    run_import("claude-code", FIXTURES, left_out=LEFT_OUT)
    parent = session_of(FIXTURES / "subagent.jsonl")
    child = ledger.conn.execute(
        "SELECT id FROM sessions WHERE routing_key = ?", (f"subagent:{parent}:toolu_task2",)
    ).fetchone()[0]
    page = viewer_client.get(f"/sessions/{parent}/")
    assert page.status_code == 200
    html = page.content.decode()
    assert 'data-turn="b0000000-0000-4000-8000-000000000001"' in html
    assert f'href="/sessions/{child}/"' in html  # the subagent is listed under its parent
    child_page = viewer_client.get(f"/sessions/{child}/")
    assert child_page.status_code == 200
    assert f'href="/sessions/{parent}/turns/b0000000-0000-4000-8000-000000000001/' in (
        child_page.content.decode()
    )


@LEDGER_DB
def test_an_imported_rewind_and_compaction_render_as_a_tree(viewer_client, ledger):
    run_import("claude-code", FIXTURES, left_out=LEFT_OUT)
    rewind = viewer_client.get(f"/sessions/{session_of(FIXTURES / 'rewind.jsonl')}/?format=json")
    assert rewind.status_code == 200
    totals = rewind.json()["totals"]
    assert (totals["turns"], totals["branches"], totals["failed_turns"]) == (3, 2, 0)
    compacted = viewer_client.get(f"/sessions/{session_of(FIXTURES / 'compaction.jsonl')}/")
    assert compacted.status_code == 200
    assert "mark-compaction" in compacted.content.decode()


# ----- labels from the right session ------------------------------------------------------------


def first_prompt_text(path: Path) -> str:
    line = next(x for x in json_objects(path) if is_prompt(x))
    return next(b["text"] for b in blocks(line) if b.get("type") == "text")


def test_a_summary_of_another_session_does_not_label_the_file_it_is_in(tmp_path):
    """The real sample starts with the summary of a leaf it does not hold."""
    sample = SAMPLES / "fed8ce56-bc79-401f-a83e-af084253362f.jsonl"
    leaves = {x["leafUuid"] for x in json_objects(sample) if x.get("type") == "summary"}
    assert leaves and not leaves & {x.get("uuid") for x in json_objects(sample)}
    dest = tmp_path / "l.sqlite3"
    run_import("claude-code", sample, ledger=dest)
    assert one(dest, "SELECT label FROM sessions") == first_prompt_text(sample)


def sessions_with_a_summary_in_the_other_file(folder: Path) -> tuple[Path, Path, str]:
    """Two transcripts of one project: `writer` starts with the summary of `owner`'s leaf."""
    folder.mkdir()
    owner = folder / "compaction.jsonl"
    shutil.copy(FIXTURES / "compaction.jsonl", owner)
    leaf = [x["uuid"] for x in json_objects(owner) if "uuid" in x][-1]
    summary = "Release notes for 2.0, written and checked"
    writer = folder / "rewind.jsonl"
    head = json.dumps({"type": "summary", "summary": summary, "leafUuid": leaf})
    writer.write_text(head + "\n" + (FIXTURES / "rewind.jsonl").read_text())
    return owner, writer, summary


@pytest.mark.parametrize(
    "order", [("folder",), ("owner",), ("owner", "writer"), ("writer", "owner")]
)
def test_a_summary_labels_the_session_that_owns_its_leaf_in_any_import_order(tmp_path, order):
    owner, writer, summary = sessions_with_a_summary_in_the_other_file(tmp_path / "project")
    dest = tmp_path / "l.sqlite3"
    for what in order:
        run_import("claude-code", {"folder": owner.parent, "owner": owner, "writer": writer}[what],
                   ledger=dest)  # fmt: skip
    labels = dict(query(dest, "SELECT id, label FROM sessions"))
    owner_id = next(x["sessionId"] for x in json_objects(owner) if "sessionId" in x)
    writer_id = next(x["sessionId"] for x in json_objects(writer) if "sessionId" in x)
    assert labels[owner_id] == summary
    if writer_id in labels:  # its own summary, not the one it holds for the other session
        assert labels[writer_id] == "Fix the checkout total"


@LEDGER_DB
def test_the_turn_panel_says_its_prompt_tokens_are_the_context_of_the_last_call(
    viewer_client, ledger
):
    """Claude Code writes one usage per API response; the turn's prompt tokens are the last
    response's input with its cache reads and writes (the context then), as the panel says."""
    sample = SAMPLE_FILES[0]
    run_import("claude-code", sample)
    session_id = next(x["sessionId"] for x in json_objects(sample) if "sessionId" in x)
    turn_id, prompt = query(
        ledger.path,
        "SELECT id, prompt_tokens FROM turns WHERE session_id = ? AND prompt_tokens > 0"
        " ORDER BY started_at LIMIT 1",
        session_id,
    )[0]
    panel = viewer_client.get(
        f"/sessions/{session_id}/turns/{turn_id}/", headers={"HX-Request": "true"}
    ).content.decode()
    assert f"{prompt:,} context + " in panel
    assert "not the input billed over all its calls" in panel
