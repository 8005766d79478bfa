"""Siblings told apart in the turn tree (issue 16): regenerations show their answers, branch
points say how many alternatives follow, fork points say how many forks were made there."""

import sqlite3

import pytest
from branching import chat_ui_conversation
from builders import LEDGER_DB, parse_html, use_ledger

from demo.build import build_demo_ledger

pytestmark = LEDGER_DB


def tree_rows(page: str) -> dict[str, dict]:
    """Each turn row of the tree: its visible text, its preview and its alternative badge."""
    rows = {}
    for row in parse_html(page).iter("a"):
        turn_id = row.get("data-turn")
        if not turn_id:
            continue
        spans = {s.get("class"): "".join(s.itertext()) for s in row.iter("span")}
        preview = next(v for k, v in spans.items() if k and k.startswith("preview"))
        alt = next(((k, v) for k, v in spans.items() if k and k.startswith("alt")), (None, ""))
        rows[turn_id] = {"text": "".join(row.itertext()), "preview": preview, "alt": alt}
    return rows


@pytest.mark.parametrize("seed", range(6))
def test_sibling_rows_of_regenerated_answers_read_differently(viewer_client, ledger, seed):
    convo = chat_ui_conversation(ledger, seed)
    page = viewer_client.get(f"/sessions/{convo.session['id']}/?unfold=all").content.decode()
    rows = tree_rows(page)
    groups = convo.siblings()
    assert any(len({convo.prompts[t] for t in g}) < len(g) for g in groups)  # shared prompts
    for group in groups:
        previews = [rows[turn_id]["preview"] for turn_id in group]
        assert len(set(previews)) == len(group), previews
        badges = sorted(rows[turn_id]["alt"][1] for turn_id in group)
        assert badges == sorted(f"{n}/{len(group)}" for n in range(1, len(group) + 1))


def test_a_regeneration_shows_the_first_words_of_its_answer(viewer_client, ledger):
    convo = chat_ui_conversation(ledger, seed=3)
    rows = tree_rows(viewer_client.get(f"/sessions/{convo.session['id']}/").content.decode())
    shared = next(g for g in convo.siblings() if len({convo.prompts[t] for t in g}) == 1)
    for turn_id in shared:
        preview = rows[turn_id]["preview"]
        answer = convo.answers[turn_id]
        # the answer's words, or the tool call made instead of answering (its query holds them)
        assert preview.startswith("↳ ") and answer.split(" (")[0] in preview, preview


def test_a_branch_point_counts_its_answers_and_marks_the_heads(viewer_client, ledger):
    s = ledger.session(id="S1")
    root = ledger.turn(s, id="T1")
    ledger.message(root, 1, content="Hi")
    answers = []
    for n in range(3):
        turn = ledger.turn(s, root, id=f"T2{n}", started_at=1_764_000_000_000 + n)
        ledger.message(turn, 1, content="What is my little pony about?")
        ledger.message(turn, 2, role="assistant", content=f"Answer number {n}")
        answers.append(turn)
    ledger.set_head(s, root, answers[1])
    page = viewer_client.get("/sessions/S1/").content.decode()
    rows = tree_rows(page)
    assert "3 answers" in rows["T1"]["text"]
    assert [rows[f"T2{n}"]["preview"] for n in range(3)] == [
        "↳ Answer number 0",
        "↳ Answer number 1",
        "↳ Answer number 2",
    ]
    # The head's branch is drawn last (straight down), and highlighted.
    assert rows["T21"]["alt"] == ("alt on-head-path", "3/3")
    assert [rows["T20"]["alt"], rows["T22"]["alt"]] == [("alt", "1/3"), ("alt", "2/3")]
    assert 'title="What is my little pony about?\n↳ Answer number 0"' in page


def test_siblings_with_different_prompts_keep_their_prompts(viewer_client, ledger):
    s = ledger.session(id="S1")
    root = ledger.turn(s, id="T1")
    for n, prompt in enumerate(("Plan a trip", "Plan a short trip (edited)")):
        turn = ledger.turn(s, root, id=f"T2{n}")
        ledger.message(turn, 1, content=prompt)
        ledger.message(turn, 2, role="assistant", content="Sure.")
    ledger.set_head(s, root, turn)
    rows = tree_rows(viewer_client.get("/sessions/S1/").content.decode())
    assert [rows["T20"]["preview"], rows["T21"]["preview"]] == [
        "Plan a trip",
        "Plan a short trip (edited)",
    ]
    assert "2 branches" in rows["T1"]["text"]


def test_roots_of_one_session_are_alternatives_of_one_another(viewer_client, ledger):
    s = ledger.session(id="S1")
    for n in range(2):
        turn = ledger.turn(s, id=f"R{n}", started_at=1_764_000_000_000 + n)
        ledger.message(turn, 1, content="Hello there")
        ledger.message(turn, 2, role="assistant", content=f"Greeting {n}")
    ledger.set_head(s, turn, turn)
    rows = tree_rows(viewer_client.get("/sessions/S1/").content.decode())
    assert rows["R0"]["alt"][1] == "1/2" and rows["R1"]["alt"][1] == "2/2"
    assert rows["R0"]["preview"] == "↳ Greeting 0"


def test_the_tree_reads_answers_in_one_query_whatever_the_siblings(
    viewer_client, ledger, django_assert_max_num_queries
):
    convos = [chat_ui_conversation(ledger, seed) for seed in (1, 2)]
    sizes = []
    for convo in convos:
        url = f"/sessions/{convo.session['id']}/"
        viewer_client.get(url)  # warm the caches
        from django.db import connections

        with django_assert_max_num_queries(40, connection=connections["ledger"]) as captured:
            viewer_client.get(url + "?unfold=all")
        sizes.append(len(captured))
    assert sizes[0] == sizes[1]


@pytest.fixture(scope="module")
def demo_path(tmp_path_factory):
    path = tmp_path_factory.mktemp("demo") / "demo.sqlite3"
    build_demo_ledger(path, seed=1, scale=0.5, now_ms=1_764_000_000_000)
    return path


# transaction=True: the ledger file is swapped for the demo's, outside any test transaction.
@pytest.mark.django_db(transaction=True, databases="__all__")
def test_demo_siblings_that_share_a_prompt_read_differently(demo_path, viewer_client):
    use_ledger(demo_path)
    conn = sqlite3.connect(f"file:{demo_path}?mode=ro", uri=True)
    pairs = conn.execute(
        """SELECT t.session_id, t.parent_turn_id, group_concat(t.id) FROM turns t
           JOIN messages m ON m.turn_id = t.id AND m.role = 'user' AND m.sequence = (
               SELECT min(sequence) FROM messages WHERE turn_id = t.id AND role = 'user')
           WHERE t.parent_turn_id IS NOT NULL
           GROUP BY t.parent_turn_id, m.content HAVING count(*) > 1"""
    ).fetchall()
    conn.close()
    assert pairs, "the demo ledger has retries of one prompt"
    for session_id, _, ids in pairs[:5]:
        rows = tree_rows(viewer_client.get(f"/sessions/{session_id}/?unfold=all").content.decode())
        previews = [rows[i]["preview"] for i in ids.split(",")]
        assert len(set(previews)) == len(previews), previews


def test_odd_answers_are_shown_as_text(viewer_client, ledger):
    s = ledger.session(id="S1")
    root = ledger.turn(s, id="T1")
    odd = ("<script>alert(1)</script>", b"\x00\xff", 42, None)
    for n, answer in enumerate(odd):
        turn = ledger.turn(s, root, id=f"T2{n}")
        ledger.message(turn, 1, content="Same prompt")
        if answer is not None:
            ledger.message(turn, 2, role="assistant", content=answer)
        else:  # no answer at all, only a call with a numeric name and binary parameters
            ledger.tool_call(turn, 2, tool_name=7, parameters=b"\x01<b>")
    ledger.set_head(s, root, turn)
    response = viewer_client.get("/sessions/S1/")
    assert response.status_code == 200
    page = response.content.decode()
    parse_html(page)
    assert "<script>alert(1)" not in page and "↳ &lt;script&gt;alert(1)&lt;/script&gt;" in page
    compare = viewer_client.get("/sessions/S1/compare/?a=T20&b=T23")
    assert compare.status_code == 200 and "&lt;script&gt;" in compare.content.decode()
    assert viewer_client.get("/sessions/S1/compare/?a=T21&b=T22").status_code == 200


def test_the_json_twin_tells_alternatives_apart_too(viewer_client, ledger):
    convo = chat_ui_conversation(ledger, seed=5)
    data = viewer_client.get(f"/sessions/{convo.session['id']}/?format=json").json()
    turns = {t["id"]: t for t in data["turns"]}
    for group in convo.siblings():
        places = sorted(turns[t]["alternative"]["position"] for t in group)
        assert places == list(range(1, len(group) + 1))
        assert {turns[t]["alternative"]["count"] for t in group} == {len(group)}
    lone = next(t for t in convo.turns if not any(t["id"] in g for g in convo.siblings()))
    assert turns[lone["id"]]["alternative"] is None and turns[lone["id"]]["forks_here"] == []
