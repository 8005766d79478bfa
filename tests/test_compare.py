"""Compare two turns (issue 16): the common ancestor, both paths with their answers, the two
answers side by side with a word diff, totals per side, and a list to pick from."""

import html
import json
import re

import pytest
from branching import chat_ui_conversation
from builders import LEDGER_DB, T0, parse_html

pytestmark = LEDGER_DB


@pytest.fixture
def regenerated(ledger):
    """A prompt answered twice: the second answer changed two words and made a failed call."""
    s = ledger.session(id="S1")
    root = ledger.turn(s, id="T1", started_at=T0)
    ledger.message(root, 1, content="Hi")
    ledger.message(root, 2, role="assistant", content="Hello, how can I help?")
    first = ledger.turn(s, root, id="A1", started_at=T0 + 10, completed_at=T0 + 3010)
    ledger.message(first, 1, content="What is my little pony about?")
    ledger.message(
        first, 2, role="assistant", content="It follows six friends in Equestria and their magic."
    )
    second = ledger.turn(
        s, root, id="B1", started_at=T0 + 20, completed_at=T0 + 333_020, total_tokens=500
    )
    ledger.message(second, 1, content="What is my little pony about?")
    ledger.tool_call(second, 2, status="failed", error="timeout")
    ledger.message(
        second, 3, role="assistant", content="It follows five ponies in Equestria and their magic."
    )
    ledger.set_head(s, root, second)
    return s


def test_compare_shows_the_ancestor_both_answers_and_a_word_diff(viewer_client, regenerated):
    page = viewer_client.get("/sessions/S1/compare/?a=A1&b=B1").content.decode()
    parse_html(page)
    ancestor = re.search(r'<section class="card compare-ancestor">.*?</section>', page, re.S)[0]
    assert 'href="/sessions/S1/turns/T1/"' in ancestor and "Hello, how can I help?" in ancestor
    a, b = re.findall(r'<div class="compare-answer">(.*?)</div>', page, re.S)
    assert a == "It follows <del>six friends </del>in Equestria and their magic."
    assert b == "It follows <ins>five ponies </ins>in Equestria and their magic."


def test_each_side_has_its_totals(viewer_client, regenerated):
    page = viewer_client.get("/sessions/S1/compare/?a=A1&b=B1").content.decode()
    a, b = re.findall(r'<p class="compare-totals muted small">(.*?)</p>', page, re.S)
    assert "1 turn after the common ancestor · 1,337 tokens · 0 tool calls" in a
    assert "0 failed turns" in a and "3.0 s" in a
    assert "1 turn after the common ancestor · 500 tokens · 1 tool call (1 failed)" in b
    assert "5 min 33 s" in b
    data = viewer_client.get("/sessions/S1/compare/?a=A1&b=B1&format=json").json()
    assert data["b"]["totals"] == {
        "turns": 1,
        "tokens": 500,
        "unreadable_token_counts": 0,
        "failed_turns": 0,
        "duration_ms": 333_000,
        "tool_calls": 1,
        "failed_tool_calls": 1,
    }
    assert data["fork_point"]["id"] == "T1"


def test_a_turn_compared_with_itself_is_said_to_be_the_same_turn(viewer_client, regenerated):
    page = viewer_client.get("/sessions/S1/compare/?a=A1&b=A1").content.decode()
    parse_html(page)
    assert "A and B are the same turn, <code>A1</code>: choose another turn for B." in page
    assert "compare-side" not in page and "Common ancestor" not in page
    picks = re.findall(r'<li><a href="([^"]+)"><code>([^<]+)</code>', page)
    assert [turn_id for _, turn_id in picks] == ["B1", "T1"]  # A1 itself is not offered
    answer = viewer_client.get("/sessions/S1/compare/?a=A1&b=A1&format=json").json()
    assert answer["same_turn"] and answer["choose"] == "b"
    assert [c["id"] for c in answer["candidates"]] == ["B1", "T1"]


UNRELATED_A = (
    "The migration adds a nullable column to the sessions table, backfills it in batches of ten"
    " thousand rows, and only then makes it required, so the lock is never held for long."
)
UNRELATED_B = (
    "Paris in the spring is lovely: take the train from the airport to the city, walk along the"
    " river in the morning, and book the museum of the day before you go."
)


def test_unrelated_answers_are_said_to_differ_throughout_not_diffed(viewer_client, ledger):
    """Common words (the, and, in the) matched here and there made a diff of mostly noise."""
    s = ledger.session(id="S1")
    root = ledger.turn(s, id="T1", started_at=T0)
    for turn_id, answer in (("A1", UNRELATED_A), ("B1", UNRELATED_B)):
        turn = ledger.turn(s, root, id=turn_id, started_at=T0 + 10)
        ledger.message(turn, 1, content="Tell me something")
        ledger.message(turn, 2, role="assistant", content=answer)
    ledger.set_head(s, root, turn)
    page = viewer_client.get("/sessions/S1/compare/?a=A1&b=B1").content.decode()
    a, b = re.findall(r'<div class="compare-answer">(.*?)</div>', page, re.S)
    assert "<del>" not in a and "<ins>" not in b
    assert html.unescape(a) == UNRELATED_A and html.unescape(b) == UNRELATED_B
    assert "The two answers differ throughout" in page


@pytest.mark.parametrize("other", ["ghost", "X1"])
def test_an_unknown_or_foreign_turn_is_no_such_turn_in_this_session(
    viewer_client, regenerated, ledger, other
):
    elsewhere = ledger.session(id="S2")
    ledger.turn(elsewhere, id="X1")
    page = viewer_client.get(f"/sessions/S1/compare/?a=A1&b={other}").content.decode()
    parse_html(page)
    assert f"Turn B <code>{other}</code>: no such turn in this session" in page
    assert "different trees" not in page and "share no ancestor" not in page


def test_compare_with_lists_leaves_and_branch_points_to_pick(viewer_client, regenerated):
    page = viewer_client.get("/sessions/S1/compare/?a=A1").content.decode()
    parse_html(page)
    picks = re.findall(r'<li><a href="([^"]+)"><code>([^<]+)</code>', page)
    assert [turn_id for _, turn_id in picks] == ["B1", "T1"]  # the head's branch first
    href = picks[0][0].replace("&amp;", "&")
    assert href == "?a=A1&b=B1"
    followed = viewer_client.get("/sessions/S1/compare/" + href).content.decode()
    assert "It follows <ins>five ponies </ins>" in followed


def test_the_panels_compare_with_button_opens_the_pick_list(viewer_client, regenerated):
    panel = viewer_client.get("/sessions/S1/turns/A1/", HTTP_HX_REQUEST="true").content.decode()
    href = re.search(r'href="([^"]+)">Compare with…', panel)[1].replace("&amp;", "&")
    page = viewer_client.get(href).content.decode()
    assert "Compare <code>A1</code> with…" in page and "<code>B1</code>" in page


def test_compare_on_a_chat_ui_tree_finds_the_right_ancestor(viewer_client, ledger):
    convo = chat_ui_conversation(ledger, seed=4)
    sid = convo.session["id"]
    parents = {t["id"]: t["parent_turn_id"] for t in convo.turns}
    for group in convo.siblings():
        a, b = group[0], group[-1]
        data = viewer_client.get(f"/sessions/{sid}/compare/?a={a}&b={b}&format=json").json()
        expected = parents[a]
        assert (data["fork_point"] or {}).get("id") == expected
        page = viewer_client.get(f"/sessions/{sid}/compare/?a={a}&b={b}").content.decode()
        shown = re.sub(r"</?(del|ins)>", "", page)
        for turn_id in (a, b):  # both answers (or the tool call made instead) are on the page
            assert html.escape(convo.answers[turn_id]) in shown


def test_a_deep_branch_shows_its_ends_and_counts_the_middle(viewer_client, ledger):
    s = ledger.session(id="S1")
    root = parent = ledger.turn(s, id="T0")
    for i in range(1, 300):
        parent = ledger.turn(s, parent, id=f"T{i}", started_at=T0 + i)
    other = ledger.turn(s, root, id="B1")
    ledger.set_head(s, root, parent)
    page = viewer_client.get(f"/sessions/S1/compare/?a={parent['id']}&b=B1").content.decode()
    parse_html(page)
    assert "··· 249 turns in between" in page
    assert page.count('<li><a href="/sessions/S1/turns/T') == 50
    assert "299 turns after the common ancestor" in page and other


@pytest.mark.parametrize("query", ["", "?a=A1"])
def test_the_pick_list_has_a_json_twin_that_answers_what_it_shows(
    viewer_client, regenerated, query
):
    """Without two turns the page advertised a twin (its Link header) that answered 400."""
    page = viewer_client.get("/sessions/S1/compare/" + query)
    twin_url = page["Link"].split(">")[0].lstrip("<")
    twin = viewer_client.get(twin_url)
    assert twin.status_code == 200
    data = twin.json()
    assert data["a"] == ("A1" if query else None) and data["choose"] == ("b" if query else "a")
    shown = re.findall(r"<li><a href=\"[^\"]+\"><code>([^<]+)</code>", page.content.decode())
    assert [c["id"] for c in data["candidates"]] == shown
    first = data["candidates"][0]
    followed = viewer_client.get(first["url"] + "&format=json")
    assert followed.status_code == 200
    if query:  # both turns chosen: the comparison itself
        assert followed.json()["a"]["turn_id"] == "A1"


def test_the_compare_twin_says_where_it_cut_a_prompt_and_gives_costs_as_every_twin(
    viewer_client, ledger, settings
):
    """The twin cut `response.prompt` at 2,000 characters without saying so, and gave costs
    in shapes of its own: `"amount": "0"` for an unpriced side, `amount` where others say
    `usd`."""
    s = ledger.session(id="S1")
    root = ledger.turn(s, id="T1", model="gpt-5")
    a = ledger.turn(s, root, id="A", model="gpt-5", prompt_tokens=10_000, completion_tokens=1_000)
    ledger.message(a, 1, content="ü" * 2_500)  # a prompt longer than the twin gives
    b = ledger.turn(s, root, id="B", model="llama3:8b")
    ledger.message(b, 1, content="short")
    ledger.set_head(s, root, b)
    data = viewer_client.get("/sessions/S1/compare/?a=A&b=B&format=json").json()
    prompt_a, prompt_b = data["a"]["response"], data["b"]["response"]
    assert (len(prompt_a["prompt"]), prompt_a["prompt_chars"], prompt_a["prompt_cut"]) == (
        2_000,
        2_500,
        True,
    )
    assert (prompt_b["prompt"], prompt_b["prompt_chars"], prompt_b["prompt_cut"]) == (
        "short",
        5,
        False,
    )
    # Costs as the session and thread twins give them (CostSum.as_json, cost_json).
    session = viewer_client.get("/sessions/S1/?format=json").json()
    assert set(data["a"]["cost"]) == set(session["cost"])
    assert data["a"]["cost"]["usd"] == "0.0225" and data["b"]["cost"]["usd"] is None
    (turn_a,) = data["a"]["first_turns"]
    by_id = {t["id"]: t for t in session["turns"]}
    assert turn_a["cost"] == by_id["A"]["cost"] and "amount" not in json.dumps(data)
    assert data["cost"] == {"a": data["a"]["cost"], "b": data["b"]["cost"]}
