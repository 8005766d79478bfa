"""ledger_import chatgpt / claude-ai (issue 32): the chat exports people keep, every branch kept.

The fixtures are written from each export's public description: ChatGPT's conversations.json (a
`mapping` of nodes with parent and children, `current_node`, model slugs, a hidden system node,
a python tool call answered by a tool node, an image part) with a regenerated answer and an
edited prompt; Claude.ai's conversations.json with an edited prompt (a branch through
`parent_message_uuid`) and a tool_use / tool_result pair.
"""

import json

import pytest
from importing import IMPORT_FIXTURES, one, query, run_import

CHATGPT = IMPORT_FIXTURES / "chatgpt" / "conversations.json"
CLAUDE_AI = IMPORT_FIXTURES / "claude-ai"  # the unzipped export folder
TOKYO = "6650e1a2-1111-4000-8000-000000000001"
KYOTO = "c0a1b2c3-0000-4000-8000-0000000000aa"


def turns(ledger, session_id) -> dict[str, tuple]:
    """turn id -> (parent, its messages as (role, text))."""
    found = {}
    for turn_id, parent in query(
        ledger, "SELECT id, parent_turn_id FROM turns WHERE session_id = ?", session_id
    ):
        said = query(
            ledger,
            "SELECT role, content FROM messages WHERE turn_id = ? ORDER BY sequence",
            turn_id,
        )
        found[turn_id] = (parent, said)
    return found


def test_a_regenerated_chatgpt_answer_is_a_sibling_turn_asking_the_same(tmp_path):
    ledger = tmp_path / "ledger.sqlite3"
    run_import("chatgpt", CHATGPT, ledger=ledger)
    tree = turns(ledger, TOKYO)
    prompt = ("user", "Wie spät ist es in Tokio? 東京の時間は？")
    assert tree["u1"] == (None, [prompt, ("assistant", "Es ist 21 Uhr.")])
    assert tree["a1b"] == (None, [prompt, ("assistant", "In Tokio ist es 21:00 Uhr (JST).")])


def test_an_edited_chatgpt_prompt_is_a_second_branch_and_the_head_is_the_current_node(tmp_path):
    ledger = tmp_path / "ledger.sqlite3"
    run_import("chatgpt", CHATGPT, ledger=ledger)
    tree = turns(ledger, TOKYO)
    assert tree["u2"] == (
        "a1b",
        [("user", "And in Cairo?"), ("assistant", "19:00 in Cairo — القاهرة")],
    )
    assert tree["u2b"][0] == "a1b"
    assert tree["u2b"][1] == [
        ("user", "Compute 2**100 please"),
        ("assistant", "2**100 = 1267650600228229401496703205376"),
    ]
    assert query(
        ledger, "SELECT label, root_turn_id, current_turn_id, persona FROM sessions WHERE id = ?",
        TOKYO,
    ) == [("Time zones & big numbers", "u1", "u2b", "chatgpt")]  # fmt: skip
    assert one(ledger, "SELECT model FROM turns WHERE id = 'u2'") == "gpt-4o"


def test_a_chatgpt_tool_call_comes_with_its_result_and_hidden_nodes_are_counted(tmp_path):
    ledger = tmp_path / "ledger.sqlite3"
    summary = run_import("chatgpt", CHATGPT, ledger=ledger)
    assert query(
        ledger, "SELECT turn_id, tool_name, parameters, result, status FROM tool_calls"
    ) == [("u2b", "python", '"print(2**100)"', "1267650600228229401496703205376", "completed")]
    assert "chatgpt hidden messages (system prompts, inserted context): 1" in summary
    assert "ChatGPT images and files in messages: 1" in summary
    assert one(ledger, "SELECT count(*) FROM messages WHERE role = 'system'") == 0


def test_a_claude_ai_branch_is_kept_with_its_head_and_tool_call(tmp_path):
    ledger = tmp_path / "ledger.sqlite3"
    run_import("claude-ai", CLAUDE_AI, ledger=ledger)
    tree = turns(ledger, KYOTO)
    assert {turn: parent for turn, (parent, _) in tree.items()} == {
        "m1": None, "m3": "m1", "m5": "m1"}  # fmt: skip
    assert tree["m5"][1] == [
        ("user", "Add a day trip to Nara"),
        ("assistant", "Nara: the deer park is open all day. 奈良公園"),
    ]
    assert query(ledger, "SELECT label, current_turn_id FROM sessions") == [
        ("Plan a trip to Kyoto", "m5")]  # fmt: skip
    calls = query(ledger, "SELECT id, turn_id, tool_name, parameters, result FROM tool_calls")
    search = ("toolu_01", "m5", "web_search", '{"query": "Nara deer park hours"}', '"Open 24h"')
    assert calls == [search]


@pytest.mark.parametrize(("fmt", "path"), [("chatgpt", CHATGPT), ("claude-ai", CLAUDE_AI)])
def test_importing_a_chat_export_again_adds_nothing(fmt, path, tmp_path):
    ledger = tmp_path / "ledger.sqlite3"
    run_import(fmt, path, ledger=ledger)
    before = {t: query(ledger, f"SELECT * FROM {t} ORDER BY 1") for t in ("sessions", "turns")}
    summary = run_import(fmt, path, ledger=ledger)
    assert "sessions added: 0" in summary and "turns: 0 added" in summary
    assert {t: query(ledger, f"SELECT * FROM {t} ORDER BY 1") for t in before} == before


def test_the_other_apps_export_is_refused_with_a_hint_and_no_ledger_left(tmp_path):
    ledger = tmp_path / "new" / "ledger.sqlite3"
    summary = run_import("chatgpt", CLAUDE_AI / "conversations.json", ledger=ledger,
                         left_out="input\\(s\\) refused")  # fmt: skip
    assert "try 'claude-ai'" in summary
    assert not ledger.exists() and not ledger.parent.exists()


def test_a_broken_conversation_is_listed_and_the_others_come_in(tmp_path):
    conversations = json.loads(CHATGPT.read_text())
    conversations.insert(1, {"title": "no mapping here", "mapping": None, "id": "x"})
    broken = tmp_path / "conversations.json"
    broken.write_text(json.dumps(conversations))
    ledger = tmp_path / "ledger.sqlite3"
    summary = run_import("chatgpt", broken, ledger=ledger, left_out="malformed record")
    assert "conversations.json[2]: a conversation without an id or a mapping" in summary
    assert one(ledger, "SELECT count(*) FROM sessions") == 2


def test_an_empty_export_is_said_and_leaves_no_ledger(tmp_path):
    empty = tmp_path / "conversations.json"
    empty.write_text("  \n")
    ledger = tmp_path / "ledger.sqlite3"
    summary = run_import("claude-ai", empty, ledger=ledger)
    assert "Empty files (nothing to import): 1" in summary
    assert not ledger.exists()
