"""Imported sessions are named one way in every format: the same label from the same text, and a
breadcrumb that names the project, not the format twice."""

import json
import re

import pytest
from builders import LEDGER_DB
from importing import IMPORT_FIXTURES, one, run_import
from test_import_agentos import SCHEMA as AGENTOS_SCHEMA
from test_import_agentos import AgentOsSource, bun_buddy
from test_import_aix import MAIN, AixSource, cursor_history
from test_import_aix import SCHEMA as AIX_SCHEMA

CLAUDE = IMPORT_FIXTURES / "claude-code" / "compaction.jsonl"
CODEX = next((IMPORT_FIXTURES / "codex").glob("rollout-*.jsonl"))
LONG = (
    "  Refactor the checkout so that totals, taxes and discounts are all computed in one place\n"
    "and then tested"
)
# Read off the text as a person would: its first line, cut to 80 characters with an ellipsis.
LONG_LABEL = "Refactor the checkout so that totals, taxes and discounts are all computed in o…"


def with_first_prompt(source, folder, replace) -> object:
    """A copy of a JSONL transcript whose first prompt says LONG instead."""
    lines = source.read_text().splitlines()
    for n, line in enumerate(lines):
        data = json.loads(line)
        if replace(data):
            lines[n] = json.dumps(data)
            break
    copy = folder / source.name
    copy.write_text("\n".join(lines) + "\n")
    return copy


def claude_prompt(data: dict) -> bool:
    message = data.get("message")
    if data.get("type") != "user" or not isinstance(message.get("content"), str):
        return False
    message["content"] = LONG
    return True


def codex_prompt(data: dict) -> bool:
    payload = data.get("payload", {})
    text = payload.get("content", [{}])[0].get("text", "")
    if payload.get("role") != "user" or text.startswith("<"):
        return False
    payload["content"][0]["text"] = LONG
    return True


def import_claude(tmp_path):
    dest = tmp_path / "l.sqlite3"
    run_import("claude-code", with_first_prompt(CLAUDE, tmp_path, claude_prompt), ledger=dest)
    return one(dest, "SELECT label FROM sessions")


def import_codex(tmp_path):
    dest = tmp_path / "l.sqlite3"
    run_import("codex", with_first_prompt(CODEX, tmp_path, codex_prompt), ledger=dest)
    return one(dest, "SELECT label FROM sessions")


def import_aix(tmp_path):
    src = AixSource(tmp_path / "aix.sqlite3", AIX_SCHEMA)
    cursor_history(src)
    src.conn.execute("UPDATE agent_sessions SET task_description = ? WHERE id = ?", (LONG, MAIN))
    dest = tmp_path / "l.sqlite3"
    run_import("aix", src.path, ledger=dest)
    return one(dest, "SELECT label FROM sessions WHERE id = ?", MAIN)


def import_agentos(tmp_path):
    src = AgentOsSource(tmp_path / "ledger.sqlite", AGENTOS_SCHEMA)
    bun_buddy(src)
    first = src.conn.execute(
        "SELECT id FROM messages WHERE task_id = 'task-1' AND role = 'user' ORDER BY timestamp"
    ).fetchone()[0]
    src.conn.execute("UPDATE messages SET content = ? WHERE id = ?", (LONG, first))
    dest = tmp_path / "l.sqlite3"
    run_import("agentos", src.path, ledger=dest)
    return one(dest, "SELECT label FROM sessions WHERE id = 'task-1'")


@pytest.mark.parametrize("import_one", [import_claude, import_codex, import_aix, import_agentos])
def test_the_same_first_prompt_gives_the_same_label_in_every_format(tmp_path, import_one):
    assert import_one(tmp_path) == LONG_LABEL


@LEDGER_DB
def test_the_breadcrumb_of_an_imported_session_names_its_project(viewer_client, ledger):
    run_import("claude-code", IMPORT_FIXTURES / "claude-code" / "rewind.jsonl")
    session_id, cwd = next(
        (d["sessionId"], d["cwd"])
        for d in map(json.loads, (IMPORT_FIXTURES / "claude-code" / "rewind.jsonl").open())
        if "cwd" in d
    )
    page = viewer_client.get(f"/sessions/{session_id}/").content.decode()
    crumbs = re.search(r'<nav class="crumbs".*?</nav>', page, re.S).group(0)
    names = re.findall(r">([^<]+)</a>", crumbs)
    project = cwd.rstrip("/").rsplit("/", 1)[-1]
    assert names == ["Sessions", "claude-code", project]
    channel_href = re.findall(r'href="([^"]+)"', crumbs)[-1].replace("&amp;", "&")
    listing = viewer_client.get(channel_href)
    assert listing.status_code == 200
    assert f"/sessions/{session_id}/" in listing.content.decode()
