"""A turn is shown and exported as it happened: text, call, result, text… in the ledger's time
order (sessions/timeline.py), on real imported transcripts and on odd ledger values."""

from dataclasses import dataclass

import pytest
from builders import LEDGER_DB, T0, parse_fragment, parse_html
from importing import IMPORT_FIXTURES, json_objects, run_import

from sessions.timeline import call_batches, in_order

pytestmark = LEDGER_DB

CLAUDE_SAMPLE = IMPORT_FIXTURES / "samples/claude-code/ba79134d-b6e9-4867-af0c-6941038c9e4b.jsonl"
CLAUDE_SESSION = "ba79134d-b6e9-4867-af0c-6941038c9e4b"
# The sample's /init turn: 5 texts and 16 tool calls, interleaved in time.
CLAUDE_TURN = "77bbcba8-0d9a-4a90-91e0-3dbc20125e6e"


# -- the rule ------------------------------------------------------------------------------------


@dataclass
class Item:
    id: str
    sequence: object = 0
    created_at: object = None
    started_at: object = None
    completed_at: object = None


def message(id, time, sequence=0):
    return Item(id, sequence, created_at=time)


def call(id, time, sequence=0, ended=None):
    return Item(id, sequence, started_at=time, completed_at=ended)


def ids(items) -> list[str]:
    return [i.id for i in items]


def test_messages_and_calls_are_merged_by_time_each_kind_keeping_its_order():
    messages = [message("prompt", 100), message("remark", 300), message("answer", 700)]
    calls = [call("read", 200), call("grep", 250), call("write", 500)]
    assert ids(in_order(messages, calls)) == [
        "prompt", "read", "grep", "remark", "write", "answer",
    ]  # fmt: skip
    # A kind's own order is never changed, even when its times disagree with it.
    assert ids(in_order([message("m1", 500), message("m2", 100)], [call("c1", 300)])) == [
        "c1", "m1", "m2",
    ]  # fmt: skip


def test_at_equal_times_the_message_comes_first():
    # A prompt before everything; a model's text before the calls of the same response.
    messages = [message("prompt", 100, 1), message("remark", 300, 2)]
    calls = [call("c1", 100, 1), call("c2", 300, 2)]
    assert ids(in_order(messages, calls)) == ["prompt", "c1", "remark", "c2"]


def test_an_unreadable_time_stays_after_the_item_before_it_in_its_own_list():
    messages = [message("prompt", 100), message("no time", None), message("answer", 900)]
    calls = [call("c1", 200), call("c2", "2025-11-24T10:00:00Z"), call("c3", 800)]
    assert ids(in_order(messages, calls, turn_start=100)) == [
        "prompt", "no time", "c1", "c2", "c3", "answer",
    ]  # fmt: skip
    # The first of a list without a time takes the turn's start; a REAL time is a time.
    calls = [call("c1", None), call("c2", 250.5)]
    assert ids(in_order([message("prompt", 100), message("text", 250.7)], calls, 100)) == [
        "prompt", "c1", "c2", "text",
    ]  # fmt: skip
    nan = float("nan")
    assert ids(in_order([message("m", nan)], [call("c", b"\x00")])) == ["m", "c"]


def test_calls_made_together_are_one_batch_and_a_call_after_a_result_starts_another():
    calls = [
        call("a", 100, ended=500),
        call("b", 200, ended=450),  # started before a's result: made with it
        call("c", 600, ended=700),  # after both results: the next response
        call("d", None, ended=None),  # nothing says a response came between
        call("e", 800, ended=900),
    ]
    assert [ids(b) for b in call_batches(calls)] == [["a", "b"], ["c", "d"], ["e"]]


# -- a real Claude Code turn ---------------------------------------------------------------------


def transcript_order(path, first_uuid) -> list[tuple[str, str]]:
    """(kind, id) of a turn's texts and tool calls in the order the JSONL has them: a line's
    text is a message named after the line, each tool_use a call named by its id; the turn runs
    from its first line to the next prompt. Read plainly, not by the importer."""
    lines = [x for x in json_objects(path) if x.get("type") in ("user", "assistant")]
    start = next(n for n, x in enumerate(lines) if x["uuid"] == first_uuid)
    order = []
    for n, line in enumerate(lines[start:]):
        content = line["message"]["content"]
        blocks = [{"type": "text", "text": content}] if isinstance(content, str) else content
        if n and line["type"] == "user" and any(b["type"] == "text" for b in blocks):
            break  # the next prompt
        for block in blocks:
            if block["type"] == "text" and ("message", line["uuid"]) not in order:
                order.append(("message", line["uuid"]))
            elif block["type"] == "tool_use":
                order.append(("tool_call", block["id"]))
    return order


@pytest.fixture
def claude_turn(ledger):
    run_import("claude-code", CLAUDE_SAMPLE)
    return f"/sessions/{CLAUDE_SESSION}/turns/{CLAUDE_TURN}/"


def test_a_real_claude_code_turn_shows_its_texts_and_calls_in_the_transcripts_order(
    viewer_client, claude_turn
):
    want = transcript_order(CLAUDE_SAMPLE, CLAUDE_TURN)
    kinds = [kind for kind, _ in want]
    assert kinds.count("message") == 5 and kinds.count("tool_call") == 16
    assert kinds[:3] == ["message", "message", "tool_call"]  # interleaved, not grouped
    twin = viewer_client.get(claude_turn + "?format=json").json()
    assert [(i["kind"], i["id"]) for i in twin["timeline"]] == want
    panel = viewer_client.get(claude_turn, headers={"HX-Request": "true"}).content.decode()
    timeline = parse_fragment(panel).find(".//ol[@class='turn-timeline']")
    shown = [
        ("message", li.get("id").removeprefix("message-"))
        if li.get("id").startswith("message-")
        else ("tool_call", li.get("id").removeprefix("call-"))
        for li in timeline.findall("li")
    ]
    assert shown == want
    assert "5 messages · 16 tool calls, in the order they happened" in panel


def exported(client, url: str) -> dict:
    import json

    response = client.get(url)
    assert response.status_code == 200
    return json.loads(b"".join(response.streaming_content))


def test_a_real_claude_code_turn_is_exported_as_it_happened(viewer_client, claude_turn):
    data = exported(viewer_client, claude_turn + "export.json")
    turn = [m for m in data["messages"] if m["ledger"]["turn_id"] == CLAUDE_TURN]
    # Each text is a message; calls made together are one assistant message, their results
    # follow it; the next text comes after the results.
    flat = []
    for m in turn:
        if m.get("tool_calls"):
            flat += [("tool_call", c["id"]) for c in m["tool_calls"]]
        elif m["role"] != "tool":
            flat.append(("message", m["ledger"]["message_id"]))
    assert flat == transcript_order(CLAUDE_SAMPLE, CLAUDE_TURN)
    shape = [
        "tool_calls" if m.get("tool_calls") else m["role"] for m in turn
    ]  # the transcript: prompt, a remark, 5 parallel calls, their results, a remark, 8 calls…
    assert shape[:10] == ["user", "assistant", "tool_calls", *["tool"] * 5, "assistant",
                          "tool_calls"]  # fmt: skip
    for n, m in enumerate(turn):
        if m.get("tool_calls"):
            results = [r["tool_call_id"] for r in turn[n + 1 : n + 1 + len(m["tool_calls"])]]
            assert results == [c["id"] for c in m["tool_calls"]]


# -- odd ledgers ---------------------------------------------------------------------------------


def test_a_turn_with_odd_times_is_shown_in_the_rules_order(viewer_client, ledger):
    s = ledger.session(id="S1")
    t = ledger.turn(s, id="T1", started_at=T0)
    ledger.message(t, 1, id="prompt", created_at=T0)
    ledger.tool_call(t, 1, id="c-real", started_at=T0 + 10.5, completed_at=T0 + 20)
    ledger.message(t, 2, id="no-time", role="assistant", created_at="soon")
    ledger.tool_call(t, 2, id="c-blank", started_at="", completed_at=None)
    ledger.message(t, 3, id="answer", role="assistant", created_at=T0 + 50)
    ledger.set_head(s, t, t)
    twin = viewer_client.get("/sessions/S1/turns/T1/?format=json").json()
    # "no-time" stays after the prompt; "c-blank" after "c-real" (T0 + 10.5, a REAL time).
    assert [i["id"] for i in twin["timeline"]] == [
        "prompt", "no-time", "c-real", "c-blank", "answer",
    ]  # fmt: skip
    data = exported(viewer_client, "/sessions/S1/turns/T1/export.json")
    # The two calls are one batch: nothing says a result came before the second was made.
    assert [m.get("tool_call_id") or m["ledger"].get("message_id") for m in data["messages"]] == [
        "prompt", "no-time", None, "c-real", "c-blank", "answer",
    ]  # fmt: skip


# -- importers record times that keep a transcript's order ---------------------------------------

CODEX_SAMPLE = IMPORT_FIXTURES / "samples/codex/small.jsonl"
CODEX_FLAT = next((IMPORT_FIXTURES / "codex/layouts").glob("rollout-*.jsonl"))
CODEX_DOCUMENT = next((IMPORT_FIXTURES / "codex/layouts").glob("rollout-*.json"))
CODEX_CALLS = {"function_call", "custom_tool_call", "local_shell_call", "tool_search_call",
               "web_search_call", "image_generation_call"}  # fmt: skip
CONTEXT = ("<environment_context>", "<user_instructions>", "# AGENTS.md", "<permissions")


def rollout_order(items: list[dict]) -> list[list[tuple[str, str]]]:
    """Each turn of a Codex rollout as (kind, text or tool) in the rollout's order, from its
    response items read plainly: a user prompt starts a turn; what follows a compaction until
    the next prompt is left out (a turn of its own, with no prompt)."""
    turns: list[list[tuple[str, str]]] = []
    current = None
    for item in items:
        kind = item.get("type")
        if kind == "compacted":
            current = None
        elif kind == "message" and item.get("role") in ("user", "assistant"):
            text = "\n\n".join(b["text"] for b in item["content"] if "text" in b)
            if item["role"] == "user" and text.startswith(CONTEXT):
                continue
            if item["role"] == "user":
                current = []
                turns.append(current)
            if current is not None:
                current.append(("message", text))
        elif kind in CODEX_CALLS and current is not None:
            current.append(("tool_call", item.get("name") or kind.removesuffix("_call")))
    return turns


def shown_order(client, session_id: str) -> list[list[tuple[str, str]]]:
    """Each turn of a session (root to head) as its panel's twin orders it: (kind, text/tool);
    the context Codex gives the model (system messages) left out."""
    tree = client.get(f"/sessions/{session_id}/?format=json").json()
    turns = []
    for turn in tree["turns"]:
        data = client.get(f"/sessions/{session_id}/turns/{turn['id']}/?format=json").json()
        names = {m["id"]: ("message", m["content"], m["role"]) for m in data["messages"]}
        names |= {c["id"]: ("tool_call", c["tool_name"], "") for c in data["tool_calls"]}
        order = [names[i["id"]] for i in data["timeline"]]
        if any(role == "user" for _, _, role in order):
            turns.append([(kind, what) for kind, what, role in order if role != "system"])
    return turns


def codex_items(path) -> list[dict]:
    if path.suffix == ".json":
        import json

        return json.loads(path.read_text())["items"]
    objects = json_objects(path)
    enveloped = [
        o["payload"] if o["type"] == "response_item" else {"type": "compacted"}
        for o in objects
        if o.get("type") in ("response_item", "compacted")
    ]
    return enveloped or objects


@pytest.mark.parametrize("rollout", [CODEX_SAMPLE, CODEX_FLAT, CODEX_DOCUMENT],
                         ids=["real sample", "flat layout", "document layout"])  # fmt: skip
def test_codex_turns_whose_records_share_a_time_keep_the_rollouts_order(
    viewer_client, ledger, rollout
):
    """The real sample writes a turn's prompt, 4 calls and answer in one second; the older
    layouts have no time per record at all (each takes the session's start)."""
    run_import("codex", rollout)
    (session_id,) = ledger.conn.execute("SELECT id FROM sessions").fetchone()
    want = rollout_order(codex_items(rollout))
    assert any(
        [k for k, _ in turn] not in (sorted(k for k, _ in turn), sorted(k for k, _ in turn)[::-1])
        for turn in want
    ), "a turn whose messages and calls interleave"
    assert shown_order(viewer_client, session_id) == want


def test_the_older_codex_layouts_have_no_known_durations(viewer_client, ledger):
    run_import("codex", CODEX_FLAT)
    (unknown_turns,) = ledger.conn.execute(
        "SELECT count(*) FROM turns WHERE status = 'completed' AND completed_at IS NULL"
    ).fetchone()
    (timed_calls,) = ledger.conn.execute(
        "SELECT count(*) FROM tool_calls WHERE completed_at IS NOT NULL"
    ).fetchone()
    assert unknown_turns == 2 and timed_calls == 0
    # Their rows and panels say "—" or nothing, never "0 ms".
    (session_id,) = ledger.conn.execute("SELECT id FROM sessions").fetchone()
    page = viewer_client.get(f"/sessions/{session_id}/").content.decode()
    durations = [
        span.text for span in parse_html(page).iter("span")
        if span.get("title") == "Not finished, or when it ended is not known"
    ]  # fmt: skip
    assert durations == ["—", "—"] and "0 ms" not in page
    for (turn_id,) in ledger.conn.execute("SELECT id FROM turns").fetchall():
        shown = viewer_client.get(f"/sessions/{session_id}/turns/{turn_id}/").content.decode()
        assert " ms" not in shown.split('class="turn-timeline"')[1]


def claude_line(n: int, kind: str, ms: int, content, parent: int | None) -> str:
    import json

    return json.dumps({
        "type": kind, "uuid": f"u{n}", "parentUuid": parent and f"u{parent}",
        "sessionId": "same-ms", "timestamp": f"2025-06-01T10:00:{ms // 1000:02}.{ms % 1000:03}Z",
        "cwd": "/home/ada/shop",
        "message": {"role": kind, "content": content, "model": "claude-sonnet-4-20250514"},
    })  # fmt: skip


def tool_use(call_id):
    return {"type": "tool_use", "id": call_id, "name": "Bash", "input": {"command": "ls"}}


def tool_result(call_id):
    return [{"type": "tool_result", "tool_use_id": call_id, "content": "ok"}]


def test_claude_code_text_written_in_the_millisecond_of_a_call_before_it_stays_after_it(
    viewer_client, ledger, tmp_path
):
    transcript = tmp_path / "same-ms.jsonl"
    lines = [
        claude_line(1, "user", 0, "Tidy the shop", None),
        claude_line(2, "assistant", 1000, [tool_use("A")], 1),
        claude_line(3, "user", 1500, tool_result("A"), 2),
        claude_line(4, "assistant", 2000, [tool_use("B")], 3),
        claude_line(5, "assistant", 2000, [{"type": "text", "text": "B is running"}], 4),
        claude_line(6, "user", 2500, tool_result("B"), 5),
        # One line, a call before its text: the text comes after the call.
        claude_line(7, "assistant", 3000, [tool_use("C"), {"type": "text", "text": "after C"}], 6),
        claude_line(8, "user", 3500, tool_result("C"), 7),
    ]
    transcript.write_text("\n".join(lines) + "\n")
    summary = run_import("claude-code", transcript)
    assert "times moved by a millisecond or so to keep the transcript's order" in summary
    twin = viewer_client.get("/sessions/same-ms/turns/u1/?format=json").json()
    assert [i["id"] for i in twin["timeline"]] == ["u1", "A", "B", "u5", "C", "u7"]


def test_a_transcript_imported_before_its_times_were_ordered_imports_again_cleanly(
    ledger, tmp_path
):
    """Importers now move a message or call by a millisecond to keep a transcript's order: a
    ledger holding the times an earlier version wrote is not a collision on the next import
    (which would fail every cron run), and its rows are left as they are."""
    run_import("claude-code", CLAUDE_SAMPLE)
    ledger.conn.execute("UPDATE messages SET created_at = created_at - 1")
    ledger.conn.execute("UPDATE tool_calls SET started_at = started_at + 1")
    summary = run_import("claude-code", CLAUDE_SAMPLE)  # fails (exits 1) on a collision
    assert "collision" not in summary.lower() and "0 added" in summary
