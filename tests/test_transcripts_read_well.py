"""Real transcripts read well (issue 27, item 4): a Codex MCP result holding JSON is shown as that
JSON, an unknown duration or token count is "—" and not zero, a Claude Code slash command is
shown (and labels its session) as the person typed it, and the thread's tokens are the ones its
cost is priced from."""

import json

import pytest
from builders import LEDGER_DB, T0, parse_fragment, parse_html
from importing import IMPORT_FIXTURES, json_objects, run_import

from ledgerfacts.commands import as_typed
from ledgerweb.text import show_json

pytestmark = LEDGER_DB

CLAUDE_SAMPLE = IMPORT_FIXTURES / "samples/claude-code/ba79134d-b6e9-4867-af0c-6941038c9e4b.jsonl"
CLAUDE_SESSION = CLAUDE_SAMPLE.stem
CODEX_SAMPLE = IMPORT_FIXTURES / "samples/codex/small.jsonl"


def panel(client, session_id: str, turn_id: str) -> str:
    url = f"/sessions/{session_id}/turns/{turn_id}/"
    return client.get(url, headers={"HX-Request": "true"}).content.decode()


# -- a Codex MCP result: a JSON string holding JSON ----------------------------------------------

ISSUE = {"number": 27, "title": "Fix the cart", "labels": ["bug", "shop"]}
# What Codex writes for an MCP call: the CallToolResult as JSON text in the output, its text
# content the server's JSON as text (github's MCP server answers so).
CALL_TOOL_RESULT = {"content": [{"type": "text", "text": json.dumps(ISSUE, indent=1)}],
                    "isError": False}  # fmt: skip


def codex_rollout(path, output) -> None:
    def line(seconds, kind, payload):
        stamp = f"2025-10-01T09:00:{seconds:02}.000Z"
        return json.dumps({"timestamp": stamp, "type": kind, "payload": payload})

    meta = {"id": "0199a1b2-0000-7000-8000-00000000mcp1", "timestamp": "2025-10-01T09:00:00Z",
            "cwd": "/home/ada/shop"}  # fmt: skip
    path.write_text("\n".join([
        line(0, "session_meta", meta),
        line(1, "response_item", {"type": "message", "role": "user",
                                  "content": [{"type": "input_text", "text": "What is #27?"}]}),
        line(2, "response_item", {"type": "function_call", "name": "github__get_issue",
                                  "arguments": '{"number": 27}', "call_id": "call_mcp"}),
        line(3, "response_item", {"type": "function_call_output", "call_id": "call_mcp",
                                  "output": output}),
        line(4, "response_item", {"type": "message", "role": "assistant",
                                  "content": [{"type": "output_text", "text": "The cart bug."}]}),
    ]) + "\n")  # fmt: skip


@pytest.mark.parametrize(
    "output",
    [json.dumps(CALL_TOOL_RESULT), json.dumps(json.dumps(CALL_TOOL_RESULT))],
    ids=["a CallToolResult as JSON text", "that text once more as a JSON string"],
)
def test_a_codex_mcp_result_holding_json_is_shown_as_that_json(
    viewer_client, ledger, tmp_path, output
):
    rollout = tmp_path / "rollout-2025-10-01T09-00-00-0199a1b2-0000-7000-8000-00000000mcp1.jsonl"
    codex_rollout(rollout, output)
    run_import("codex", rollout)
    session_id, turn_id = ledger.conn.execute("SELECT session_id, id FROM turns").fetchone()
    body = parse_fragment(panel(viewer_client, session_id, turn_id))
    block = next(
        div
        for div in body.iter("div")
        if div.get("class") == "json-block loadable" and "result" in "".join(div.itertext())
    )
    shown = block.find("pre").text
    assert '"title": "Fix the cart"' in shown and '\\"' not in shown and "\\n" not in shown
    assert json.loads(shown) == {"content": [{"type": "text", "text": ISSUE}], "isError": False}
    assert "holding JSON, shown decoded" in "".join(block.itertext())


def test_show_json_decodes_only_strings_that_hold_an_object_or_an_array():
    nested = json.dumps({"a": json.dumps({"b": json.dumps([1, 2])}), "n": "42", "t": "{not json"})
    shown = show_json(nested, decode_strings=True)
    assert json.loads(shown.text) == {"a": {"b": [1, 2]}, "n": "42", "t": "{not json"}
    assert shown.decoded == 2
    assert show_json(nested).decoded == 0  # only where asked (the request page shows as stored)
    text = show_json(json.dumps("plain\ntext"), decode_strings=True)
    assert text.is_string and text.text == "plain\ntext" and text.decoded == 0
    deep = json.dumps("[]")
    for _ in range(10):
        deep = json.dumps(deep)
    assert show_json(deep, decode_strings=True).decoded <= 5  # bounded, never an error


# -- unknown is "—", not zero -------------------------------------------------------------------


def test_codex_token_counts_of_zero_are_unknown_not_zero(viewer_client, ledger):
    """The real sample holds a token_count of zeros everywhere (no model call measured)."""
    zero_counts = [
        r for r in json_objects(CODEX_SAMPLE)
        if r.get("type") == "event_msg" and r["payload"].get("type") == "token_count"
        and (r["payload"].get("info") or {}).get("last_token_usage", {}).get("input_tokens") == 0
    ]  # fmt: skip
    assert zero_counts
    run_import("codex", CODEX_SAMPLE)
    conn = ledger.conn
    assert conn.execute("SELECT count(*) FROM turns WHERE total_tokens = 0").fetchone() == (0,)
    assert conn.execute("SELECT count(*) FROM turn_usage WHERE input_tokens = 0").fetchone() == (0,)
    (session_id,) = conn.execute("SELECT id FROM sessions").fetchone()
    unknown = dict(conn.execute("SELECT id, total_tokens IS NULL FROM turns").fetchall())
    page = viewer_client.get(f"/sessions/{session_id}/").content.decode()
    rows = {a.get("data-turn"): a for a in parse_html(page).iter("a") if a.get("data-turn")}
    for turn_id, row in rows.items():
        tokens = next(s for s in row.iter("span") if "tokens" in (s.get("title") or "")
                      or s.get("title") == "No token counts")  # fmt: skip
        assert tokens.text == ("—" if unknown[turn_id] else tokens.text) and tokens.text != "0"


def test_a_claude_code_synthetic_answer_has_no_token_counts(viewer_client, ledger, tmp_path):
    """Claude Code writes "No response requested." itself, as model <synthetic> with a usage of
    zeros: no model call was made, so the turn has no token counts (not 0 tokens, $0)."""
    lines = [
        {"type": "user", "uuid": "u1", "parentUuid": None, "sessionId": "syn",
         "timestamp": "2025-06-01T10:00:00.000Z", "cwd": "/home/ada/shop",
         "message": {"role": "user", "content": "thanks"}},
        {"type": "assistant", "uuid": "u2", "parentUuid": "u1", "sessionId": "syn",
         "timestamp": "2025-06-01T10:00:01.000Z",
         "message": {"id": "msg_1", "role": "assistant", "model": "<synthetic>",
                     "content": [{"type": "text", "text": "No response requested."}],
                     "usage": {"input_tokens": 0, "output_tokens": 0,
                               "cache_creation_input_tokens": 0, "cache_read_input_tokens": 0}}},
    ]  # fmt: skip
    path = tmp_path / "syn.jsonl"
    path.write_text("\n".join(map(json.dumps, lines)) + "\n")
    run_import("claude-code", path)
    row = ledger.conn.execute("SELECT prompt_tokens, completion_tokens, total_tokens FROM turns")
    assert row.fetchone() == (None, None, None)
    assert ledger.conn.execute("SELECT count(*) FROM turn_usage").fetchone() == (0,)
    shown = panel(viewer_client, "syn", "u1")
    assert "no token counts" in shown and "0 tokens" not in shown and "$0" not in shown


def test_a_session_without_token_counts_says_so_not_0_tokens(viewer_client, ledger):
    s = ledger.session(id="S1")
    t = ledger.turn(s, id="T1", prompt_tokens=None, completion_tokens=None, total_tokens=None,
                    completed_at=None, status="streaming")  # fmt: skip
    ledger.set_head(s, t, t)
    page = viewer_client.get("/sessions/S1/").content.decode()
    assert "no token counts" in page and "0 tokens" not in page
    row = next(a for a in parse_html(page).iter("a") if a.get("data-turn") == "T1")
    unknown = [s for s in row.iter("span") if "unknown" in (s.get("class") or "")]
    assert [s.text for s in unknown] == ["—", "—"]  # its tokens, its duration
    thread = viewer_client.get("/sessions/S1/turns/T1/thread/").content.decode()
    facts = next(s for s in parse_html(thread).iter("span") if "facts" in (s.get("class") or ""))
    assert "· — ·" in facts.text and "?" not in facts.text


# -- Claude Code slash commands, as typed -------------------------------------------------------


@pytest.mark.parametrize(
    ("text", "typed"),
    [
        # Claude Code 1.0 (the real sample): the name without "/", the prompt in the message.
        ("<command-message>init is analyzing your codebase…</command-message>\n"
         "  <command-name>init</command-name>\n  <command-args></command-args>\n"
         "  <command-contents>{\"type\": \"text\"}</command-contents>", "/init"),
        # Later: the name with its "/", the arguments as typed (one line).
        ("<command-name>/orchestrator</command-name>\n"
         "<command-message>orchestrator</command-message>\n"
         "<command-args>plan the  release\nfor Friday</command-args>",
         "/orchestrator plan the release for Friday"),
        ("<local-command-stdout>Total cost: $0.12</local-command-stdout>", "Total cost: $0.12"),
        ("<command-message>review is running…</command-message>", "review is running…"),
        ("Why does <command-name>x</command-name> show up?", None),  # a prompt quoting a tag
        ("plain text", None),
        (None, None),
    ],
)  # fmt: skip
def test_a_slash_command_is_what_the_person_typed(text, typed):
    assert as_typed(text) == typed


def test_the_real_init_command_labels_and_shows_as_typed(viewer_client, ledger):
    run_import("claude-code", CLAUDE_SAMPLE)
    root = next(x["uuid"] for x in json_objects(CLAUDE_SAMPLE) if x.get("parentUuid") is None)
    page = viewer_client.get(f"/sessions/{CLAUDE_SESSION}/").content.decode()
    assert "command-message" not in page and "command-name" not in page
    row = next(a for a in parse_html(page).iter("a") if a.get("data-turn") == root)
    assert "/init" in "".join(row.itertext())
    shown = panel(viewer_client, CLAUDE_SESSION, root)
    assert '<p class="typed-command"' in shown and "<code>/init</code>" in shown
    # The raw text keeps what Claude Code recorded (the expanded prompt included).
    assert "&lt;command-contents&gt;" in shown
    listing = viewer_client.get("/sessions/").content.decode()
    assert "command-message" not in listing


def test_a_command_with_arguments_labels_its_session_with_them(ledger, tmp_path):
    prompt = ("<command-message>orchestrator is running…</command-message>\n"
              "<command-name>/orchestrator</command-name>\n"
              "<command-args>ship the checkout fix</command-args>")  # fmt: skip
    line = {"type": "user", "uuid": "u1", "parentUuid": None, "sessionId": "orch",
            "timestamp": "2025-06-01T10:00:00.000Z", "cwd": "/home/ada/shop",
            "message": {"role": "user", "content": prompt}}  # fmt: skip
    path = tmp_path / "orch.jsonl"
    path.write_text(json.dumps(line) + "\n")
    run_import("claude-code", path)
    label = ledger.conn.execute("SELECT label FROM sessions").fetchone()[0]
    assert label == "/orchestrator ship the checkout fix"


def test_a_label_stored_with_command_tags_is_shown_as_typed(viewer_client, ledger):
    s = ledger.session(id="S1", label="<command-name>/orchestrator</command-name>"
                       "<command-args>go</command-args>")  # fmt: skip
    t = ledger.turn(s, id="T1")
    ledger.set_head(s, t, t)
    for url in ("/sessions/", "/sessions/S1/"):
        page = viewer_client.get(url).content.decode()
        assert "/orchestrator go" in page and "command-name" not in page, url


# -- the thread's tokens are the cost's ----------------------------------------------------------


def test_the_threads_tokens_are_the_ones_its_cost_is_priced_from(viewer_client, ledger):
    s = ledger.session(id="S1")
    billed = ledger.turn(s, id="T1", prompt_tokens=9_000, completion_tokens=100, total_tokens=9_100)
    ledger.usage(billed, calls=3, input=25_000, cache_read=20_000, output=300)
    estimated = ledger.turn(s, billed, id="T2", started_at=T0 + 10, prompt_tokens=1_000,
                            completion_tokens=50, total_tokens=1_050)  # fmt: skip
    ledger.set_head(s, billed, estimated)
    data = viewer_client.get("/sessions/S1/turns/T2/thread/?format=json").json()
    # Billed input and output of T1 (all three calls), the estimate's tokens of T2.
    assert data["spent_tokens"] == 25_000 + 300 + 1_000 + 50
    assert data["cumulative_tokens"] == 9_100 + 1_050  # the turns' totals, as before
    page = viewer_client.get("/sessions/S1/turns/T2/thread/").content.decode()
    assert "26,350 tokens billed along the whole thread (input and output)" in page


# -- a call's closed line says what it was about ------------------------------------------------


@pytest.mark.parametrize(
    ("parameters", "hint"),
    [
        ('{"pattern": "**/*.toml", "path": "/srv"}', "**/*.toml"),
        ('{"command": ["bash", "-lc", "sed -n 1,40p cart.py"], "workdir": "/home/ada"}',
         "bash -lc sed -n 1,40p cart.py"),
        ('{"todos": [{"content": "Write the player", "status": "pending"}]}',
         '{"todos": [{"content": "Write the player", "status": "pending"}]}'),
        ('{"a": 1, "note": "first text value"}', "first text value"),
        ("{}", ""), ("null", ""), (None, ""), ("", ""),
        ('{"command": "' + "x" * 500, '{"command": "' + "x" * 76 + "…"),  # a cut head
        ('{"query": "line one\\n\\n  line two"}', "line one line two"),
    ],
)  # fmt: skip
def test_a_calls_hint_is_what_it_was_given_in_a_few_words(parameters, hint):
    from sessions.call_hints import call_hint

    assert call_hint(parameters) == hint


def test_the_real_claude_code_calls_say_what_they_were_about(viewer_client, ledger):
    run_import("claude-code", CLAUDE_SAMPLE)
    turn = "77bbcba8-0d9a-4a90-91e0-3dbc20125e6e"
    patterns = [
        b["input"]["pattern"]
        for x in json_objects(CLAUDE_SAMPLE)
        if x.get("type") == "assistant" and isinstance(x["message"]["content"], list)
        for b in x["message"]["content"]
        if b.get("type") == "tool_use" and b["name"] == "Glob"
    ]
    body = parse_fragment(panel(viewer_client, CLAUDE_SESSION, turn))
    hints = [s.text for s in body.iter("span") if s.get("class") == "call-hint"]
    assert [h for h in hints if h in patterns][:5] == patterns[:5]
    assert len(hints) == 16  # every call of the turn, closed or open
