"""A resumed Claude Code session (issue 27, item 5): a new transcript that starts by repeating an
earlier one's records becomes a fork of that session, with every tool call present (the
origin's in its inherited turns, its own in its own), and the summary says what happened.

The resumed transcripts are written here from the real sample (the samples README's advice:
small fixtures of one's own for what the samples lack): Claude Code's own way (the earlier
records copied verbatim, uuids and session id included), and a copy given new uuids and the new
session id (tool-call ids shared), as the issue's tester made.
"""

import json
import shutil
import uuid
from pathlib import Path

import pytest
from builders import LEDGER_DB
from importing import IMPORT_FIXTURES, json_objects, query, run_import

pytestmark = LEDGER_DB

SAMPLE = IMPORT_FIXTURES / "samples/claude-code/ba79134d-b6e9-4867-af0c-6941038c9e4b.jsonl"
ORIGIN = SAMPLE.stem
RESUMED = "7e3f0c1a-5b2d-4c8e-9f10-2a3b4c5d6e7f"
OWN_CALL = "toolu_resumed_tests"


def _stamp(ms: int) -> str:
    from datetime import UTC, datetime

    return datetime.fromtimestamp(ms / 1000, UTC).strftime("%Y-%m-%dT%H:%M:%S.%f")[:-3] + "Z"


def own_lines(parent: str, after_ms: int, cwd: str) -> list[dict]:
    """What the resumed session adds: a prompt, a Bash call, its result and an answer."""

    def line(n, kind, content, parent_uuid):
        return {"type": kind, "uuid": f"{RESUMED[:8]}-0000-4000-8000-00000000000{n}",
                "parentUuid": parent_uuid, "sessionId": RESUMED, "cwd": cwd,
                "timestamp": _stamp(after_ms + 60_000 + n * 1000), "isSidechain": False,
                "message": {"role": kind, "content": content,
                            **({"model": "claude-sonnet-4-20250514", "id": f"msg_own{n}",
                                "usage": {"input_tokens": 10, "output_tokens": 5}}
                               if kind == "assistant" else {})}}  # fmt: skip

    prompt = line(1, "user", "Now add a test for the player", parent)
    call = line(2, "assistant", [{"type": "tool_use", "id": OWN_CALL, "name": "Bash",
                                  "input": {"command": "pytest -q"}}], prompt["uuid"])  # fmt: skip
    result = line(3, "user", [{"type": "tool_result", "tool_use_id": OWN_CALL,
                               "content": "1 passed"}], call["uuid"])  # fmt: skip
    answer = line(4, "assistant", [{"type": "text", "text": "Added a test; it passes."}],
                  result["uuid"])  # fmt: skip
    return [prompt, call, result, answer]


def resumed_transcript(folder: Path, *, verbatim: bool) -> Path:
    """The sample resumed: its records repeated (verbatim, or with new uuids and the new session
    id), then a turn of its own below the sample's last record."""
    lines = [x for x in json_objects(SAMPLE) if x.get("type") != "summary"]
    if not verbatim:
        new = {x["uuid"]: str(uuid.uuid5(uuid.NAMESPACE_URL, x["uuid"])) for x in lines}
        lines = [
            x | {"uuid": new[x["uuid"]], "parentUuid": new.get(x["parentUuid"]),
                 "sessionId": RESUMED}
            for x in lines
        ]  # fmt: skip
    last = lines[-1]
    ms = int(__import__("datetime").datetime.fromisoformat(last["timestamp"]).timestamp() * 1000)
    lines += own_lines(last["uuid"], ms, last["cwd"])
    path = folder / f"{RESUMED}.jsonl"
    path.write_text("\n".join(json.dumps(x) for x in lines) + "\n")
    return path


def project(tmp_path: Path, *, verbatim: bool, with_origin: bool = True) -> tuple[Path, Path]:
    folder = tmp_path / "-Users-chip-dev-ai-music"
    folder.mkdir()
    if with_origin:
        shutil.copy(SAMPLE, folder / SAMPLE.name)
    return folder, resumed_transcript(folder, verbatim=verbatim)


def sample_calls() -> int:
    lines = json_objects(SAMPLE)
    return sum(
        1
        for x in lines
        if isinstance(x.get("message", {}).get("content"), list)
        for b in x["message"]["content"]
        if b.get("type") == "tool_use"
    )


def assert_a_fork_with_every_call(client, ledger_path) -> None:
    sessions = dict(query(ledger_path, "SELECT id, routing_key FROM sessions"))
    assert sessions[RESUMED] == f"fork:{ORIGIN}:{RESUMED}"
    assert not sessions[ORIGIN].startswith("fork:")
    origin_head = query(ledger_path, "SELECT current_turn_id FROM sessions WHERE id = ?", ORIGIN)
    own = query(ledger_path, "SELECT id, parent_turn_id FROM turns WHERE session_id = ?", RESUMED)
    assert [parent for _, parent in own] == [origin_head[0][0]]  # below where it was resumed
    calls = dict(
        query(
            ledger_path,
            "SELECT t.session_id, count(*) FROM tool_calls c JOIN turns t ON t.id = c.turn_id"
            " GROUP BY t.session_id",
        )
    )
    assert calls == {ORIGIN: sample_calls(), RESUMED: 1}
    # The fork's tree holds every call: the origin's in its inherited turns, its own in its own.
    tree = client.get(f"/sessions/{RESUMED}/?format=json").json()
    assert sum(t["tool_calls"] for t in tree["turns"]) == sample_calls() + 1
    assert tree["totals"]["turns"] == 1 and tree["totals"]["inherited"] == 6
    own_turn = own[0][0]
    panel = client.get(f"/sessions/{RESUMED}/turns/{own_turn}/?format=json").json()
    assert [c["id"] for c in panel["tool_calls"]] == [OWN_CALL]


@pytest.mark.parametrize("verbatim", [True, False], ids=["verbatim copy", "copy with new uuids"])
@pytest.mark.parametrize("order", ["folder", "origin first", "resumed first", "resumed alone"])
def test_a_resumed_transcript_is_a_fork_of_its_origin_with_every_tool_call(
    viewer_client, ledger, tmp_path, verbatim, order
):
    folder, resumed = project(tmp_path, verbatim=verbatim)
    origin = folder / SAMPLE.name
    inputs = {"folder": [folder], "origin first": [origin, resumed],
              "resumed first": [resumed, origin], "resumed alone": [resumed]}[order]  # fmt: skip
    summaries = [run_import("claude-code", path) for path in inputs]
    summary = "\n".join(summaries)
    assert_a_fork_with_every_call(viewer_client, ledger.path)
    assert f"continues session {ORIGIN}" in summary and "a fork of it at turn" in summary
    assert "with 1 turn of its own" in summary
    if order in ("folder", "resumed first", "resumed alone"):  # the origin came in with it
        assert f"tool_calls: {sample_calls() + 1} added, 0 already there" in summaries[0]
    # Again: everything is there already, nothing collides (a collision fails the import).
    again = run_import("claude-code", folder)
    assert "sessions: 0 added, 2 already there" in again
    assert f"tool_calls: 0 added, {sample_calls() + 1} already there" in again


def test_a_resumed_transcript_whose_origin_file_is_gone_brings_the_origin_from_its_copy(
    viewer_client, ledger, tmp_path
):
    """Claude Code deletes old transcripts: the records a resumed one repeats verbatim carry
    the origin's session id, and are all there is of it."""
    _, resumed = project(tmp_path, verbatim=True, with_origin=False)
    summary = run_import("claude-code", resumed)
    assert_a_fork_with_every_call(viewer_client, ledger.path)
    assert f"its first 76 records (session {ORIGIN})" in summary or "76 records" in summary
    assert "sessions: 2 added" in summary


def test_a_resumed_transcript_after_its_origin_was_imported_and_deleted(
    viewer_client, ledger, tmp_path
):
    folder, resumed = project(tmp_path, verbatim=True)
    run_import("claude-code", folder / SAMPLE.name)
    (folder / SAMPLE.name).unlink()
    summary = run_import("claude-code", resumed)
    assert_a_fork_with_every_call(viewer_client, ledger.path)
    assert "sessions: 1 added, 1 already there" in summary  # the origin, from the copy
    assert f"tool_calls: 1 added, {sample_calls()} already there" in summary


def test_two_transcripts_that_part_after_a_shared_start_the_later_is_the_fork(ledger, tmp_path):
    """Two transcripts sharing their first records and going on apart (a session resumed from
    an earlier point, both then continued): the one that went on later is the fork, at the
    turn where they parted; the other stays a session of its own, whole."""
    folder = tmp_path / "project"
    folder.mkdir()
    shutil.copy(SAMPLE, folder / SAMPLE.name)
    lines = [x for x in json_objects(SAMPLE) if x.get("type") != "summary"][:2]
    ms = int(__import__("datetime").datetime.fromisoformat(lines[-1]["timestamp"]).timestamp())
    later = own_lines(lines[-1]["uuid"], ms * 1000 + 3_600_000, lines[-1]["cwd"])
    (folder / f"{RESUMED}.jsonl").write_text("\n".join(json.dumps(x) for x in lines + later))
    run_import("claude-code", folder)
    kinds = dict(query(ledger.path, "SELECT id, routing_key FROM sessions"))
    assert kinds[ORIGIN].startswith("ai-music") and kinds[RESUMED] == f"fork:{ORIGIN}:{RESUMED}"
    root = query(ledger.path, "SELECT root_turn_id FROM sessions WHERE id = ?", ORIGIN)[0][0]
    own = query(ledger.path, "SELECT parent_turn_id FROM turns WHERE session_id = ?", RESUMED)
    assert own == [(root,)]  # parted in the first turn
    assert query(ledger.path, "SELECT count(*) FROM turns WHERE session_id = ?", ORIGIN) == [(6,)]
