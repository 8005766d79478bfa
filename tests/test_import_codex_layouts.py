"""Every Codex CLI rollout layout, and Codex subagent threads and forks as linked sessions.

Fixtures (tests/fixtures/import/codex/) are reconstructed from the Codex CLI's writers:
- layouts/rollout-2025-04-18-….json: the TypeScript CLI's one JSON document {session, items};
- layouts/rollout-2025-08-20T…jsonl: the Rust CLI's flat layout until September 2025 (a first
  line {id, timestamp, instructions, git}, bare response items, {"record_type": "state"} lines);
- rollout-2025-10-01T…jsonl: the envelope layout {timestamp, type, payload};
- lineage/sessions/…: a parent thread, the subagent thread it spawned (session_meta source
  subagent.thread_spawn) and a fork of it (forked_from_id), in the envelope layout.
The expected values come from a plain reading of those files here, not from the importer.
"""

import json
import shutil
from datetime import datetime
from pathlib import Path

import pytest
from builders import LEDGER_DB
from importing import (
    IMPORT_FIXTURES,
    answered_call,
    json_objects,
    one,
    plain_reading,
    query,
    run_import,
)

CODEX = IMPORT_FIXTURES / "codex"
DOCUMENT = next((CODEX / "layouts").glob("rollout-*.json"))
FLAT = next((CODEX / "layouts").glob("rollout-*.jsonl"))
ENVELOPE = next(CODEX.glob("rollout-*.jsonl"))
LINEAGE = CODEX / "lineage" / "sessions"
CONTEXT = ("<environment_context>", "<user_instructions>")


# ----- a plain reading of a rollout, whatever its layout ----------------------------------------


def expected(path: Path) -> dict:
    items = plain_reading(path)["items"]
    messages = [i for i in items if i["type"] == "message"]
    texts = [(m["role"], m["content"][0]["text"]) for m in messages]
    outputs = {i["call_id"] for i in items if i["type"].endswith("_output")}
    calls = [i for i in items if "call_id" in i and not i["type"].endswith("_output")]
    # sorted: the older layouts give every record the same time, so only their turn tree orders them
    return {
        "prompts": sorted(t for r, t in texts if r == "user" and not t.startswith(CONTEXT)),
        "answers": sorted(t for r, t in texts if r == "assistant"),
        "calls": len(calls),
        "answered calls": sum(1 for c in calls if c["call_id"] in outputs),
    }


def imported(dest: Path, session_id: str) -> dict:
    def texts(role):
        return sorted(
            text
            for (text,) in query(
                dest,
                "SELECT m.content FROM messages m JOIN turns t ON t.id = m.turn_id"
                " WHERE t.session_id = ? AND m.role = ?"
                " AND t.id NOT IN (SELECT turn_id FROM compactions)",  # their summary
                session_id,
                role,
            )
        )

    calls = (
        "SELECT count(*) FROM tool_calls c JOIN turns t ON t.id = c.turn_id WHERE t.session_id = ?"
    )
    return {
        "prompts": texts("user"),
        "answers": texts("assistant"),
        "calls": one(dest, calls, session_id),
        "answered calls": one(dest, f"{calls} AND {answered_call('c')}", session_id),
    }


@pytest.mark.parametrize(
    "rollout", [DOCUMENT, FLAT, ENVELOPE], ids=["document", "flat", "envelope"]
)
def test_every_layout_is_imported_like_a_plain_reading_of_it(tmp_path, rollout):
    dest = tmp_path / "l.sqlite3"
    summary = run_import("codex", rollout, ledger=dest)
    meta = plain_reading(rollout)["meta"]
    assert "Refused" not in summary
    assert imported(dest, meta["id"]) == expected(rollout)
    assert one(dest, "SELECT count(*) FROM turns") == len(expected(rollout)["prompts"]) + sum(
        1 for line in json_objects(rollout) if line.get("type") == "compacted"
    )


@pytest.mark.parametrize("rollout", [DOCUMENT, FLAT], ids=["document", "flat"])
def test_an_older_layout_keeps_its_session_id_start_and_label(tmp_path, rollout):
    dest = tmp_path / "l.sqlite3"
    summary = run_import("codex", rollout, ledger=dest)
    meta = plain_reading(rollout)["meta"]
    (session_id, created_at, label), *others = query(
        dest, "SELECT id, created_at, label FROM sessions"
    )
    assert others == []
    assert session_id == meta["id"]
    start = datetime.fromisoformat(meta["timestamp"].replace("Z", "+00:00"))
    assert created_at == int(start.timestamp() * 1000)
    first_prompt = next(
        i["content"][0]["text"]
        for i in plain_reading(rollout)["items"]
        if i["type"] == "message"
        and i["role"] == "user"
        and not i["content"][0]["text"].startswith(CONTEXT)
    )
    assert label == first_prompt
    assert "Codex records of an older layout (no time of their own" in summary


def test_the_flat_layout_counts_its_state_lines_and_finds_its_folder(tmp_path):
    dest = tmp_path / "l.sqlite3"
    summary = run_import("codex", FLAT, ledger=dest)
    states = sum(1 for line in json_objects(FLAT) if line.get("record_type") == "state")
    assert f"Codex state lines (older layout: no conversation in them): {states}" in summary
    assert one(dest, "SELECT routing_key FROM sessions") == "shop:/home/ada/shop"


def test_an_unknown_item_in_an_older_layout_is_counted_not_refused(tmp_path):
    lines = FLAT.read_text().splitlines()
    lines.insert(5, json.dumps({"type": "hologram", "id": "h1"}))
    copy = tmp_path / FLAT.name
    copy.write_text("\n".join(lines) + "\n")
    dest = tmp_path / "l.sqlite3"
    summary = run_import("codex", copy, ledger=dest)
    assert "codex:response_item:hologram: 1" in summary
    assert imported(dest, plain_reading(FLAT)["meta"]["id"]) == expected(FLAT)


def test_a_folder_of_every_layout_is_imported_whole(tmp_path):
    dest = tmp_path / "l.sqlite3"
    folder = tmp_path / "sessions"
    for rollout in (DOCUMENT, FLAT, ENVELOPE):
        shutil.copy(rollout, folder / rollout.name if folder.exists() else _mkdir(folder, rollout))
    run_import("codex", folder, ledger=dest)
    ids = {plain_reading(r)["meta"]["id"] for r in (DOCUMENT, FLAT, ENVELOPE)}
    assert {i for (i,) in query(dest, "SELECT id FROM sessions")} == ids


def _mkdir(folder: Path, rollout: Path) -> Path:
    folder.mkdir()
    return folder / rollout.name


# ----- subagent threads and forks ----------------------------------------------------------------


def lineage_files() -> dict[str, Path]:
    files = {}
    for path in sorted(LINEAGE.rglob("rollout-*.jsonl")):
        meta = plain_reading(path)["meta"]
        source = meta.get("source")
        if meta.get("forked_from_id"):
            files["fork"] = path
        elif isinstance(source, dict) and "subagent" in source:
            files["child"] = path
        else:
            files["parent"] = path
    return files


FILES = lineage_files()
PARENT = plain_reading(FILES["parent"])["meta"]["id"]
CHILD = plain_reading(FILES["child"])["meta"]["id"]
FORK = plain_reading(FILES["fork"])["meta"]["id"]


def spawning_call_id(dest: Path) -> str:
    """The ledger id of the parent's call whose spawn event names the child thread."""
    spawn = next(
        line["payload"]
        for line in json_objects(FILES["parent"])
        if line["payload"].get("type") == "collab_agent_spawn_end"
        and line["payload"]["new_thread_id"] == CHILD
    )
    call_line = next(
        line["payload"]
        for line in json_objects(FILES["parent"])
        if line["payload"].get("call_id") == spawn["call_id"]
        and line["payload"]["type"] == "function_call"
    )
    return one(
        dest,
        "SELECT c.id FROM tool_calls c JOIN turns t ON t.id = c.turn_id"
        " WHERE t.session_id = ? AND c.tool_name = ?",
        PARENT,
        call_line["name"],
    )


@pytest.mark.parametrize(
    "order",
    [("folder",), ("parent", "child"), ("child", "parent"), ("child",), ("fork", "child")],
)
def test_a_subagent_thread_is_linked_to_the_call_that_spawned_it(tmp_path, order):
    dest = tmp_path / "l.sqlite3"
    for what in order:
        run_import("codex", LINEAGE if what == "folder" else FILES[what], ledger=dest)
    if "parent" not in order and "folder" not in order:
        run_import("codex", FILES["parent"], ledger=dest)  # to know the call's ledger id
    routing_key = one(dest, "SELECT routing_key FROM sessions WHERE id = ?", CHILD)
    assert routing_key == f"subagent:{PARENT}:{spawning_call_id(dest)}"


def test_a_subagent_whose_parent_rollout_is_missing_is_linked_to_its_parent_session(tmp_path):
    alone = tmp_path / "sessions" / FILES["child"].name
    alone.parent.mkdir()
    shutil.copy(FILES["child"], alone)
    dest = tmp_path / "l.sqlite3"
    summary = run_import("codex", alone, ledger=dest)
    assert one(dest, "SELECT routing_key FROM sessions") == f"subagent:{PARENT}:unknown-call"
    assert "Codex subagent threads whose spawning call is in no rollout found" in summary


def test_a_fork_is_linked_to_its_origin(tmp_path):
    dest = tmp_path / "l.sqlite3"
    run_import("codex", LINEAGE, ledger=dest)
    assert one(dest, "SELECT routing_key FROM sessions WHERE id = ?", FORK) == (
        f"fork:{PARENT}:{FORK}"
    )
    prompts = expected(FILES["fork"])["prompts"]
    assert imported(dest, FORK)["prompts"] == prompts


@LEDGER_DB
def test_the_subagent_and_its_spawning_call_link_each_other_on_the_pages(viewer_client, ledger):
    run_import("codex", LINEAGE)
    child_page = viewer_client.get(f"/sessions/{CHILD}/")
    assert child_page.status_code == 200
    html = child_page.content.decode()
    assert "spawned by tool call" in html and "(not found)" not in html
    call_id = spawning_call_id(ledger.path)
    turn_id = one(ledger.path, "SELECT turn_id FROM tool_calls WHERE id = ?", call_id)
    href = f"/sessions/{PARENT}/turns/{turn_id}/#call-{call_id}"
    assert f'href="{href}"' in html
    turn_page = viewer_client.get(href.split("#")[0])
    assert turn_page.status_code == 200
    assert f'href="/sessions/{CHILD}/"' in turn_page.content.decode()
    fork_page = viewer_client.get(f"/sessions/{FORK}/")
    assert fork_page.status_code == 200
    assert f'href="/sessions/{PARENT}/"' in fork_page.content.decode()
