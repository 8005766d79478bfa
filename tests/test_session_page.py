"""/sessions/<id>/: header, totals, related sessions, the turn tree, and bad data shown in place."""

import re

import pytest
from builders import LEDGER_DB, T0, parse_fragment, parse_html
from django.db import connections
from django.test.utils import CaptureQueriesContext
from django.urls import reverse

from ledgerweb.db import LEDGER, is_postgres_url

pytestmark = LEDGER_DB


@pytest.fixture
def forked(ledger):
    """The mockup's session: a failed side branch, a compaction, and the head on the main line."""
    s = ledger.session(id="S1", label="Mom - General")
    root = ledger.turn(s, id="T-root", started_at=T0)
    ledger.message(root, 1, content="Can you keep an eye on my inbox while I travel?")
    a = ledger.turn(s, root, id="T-a", started_at=T0 + 1)
    failed = ledger.turn(s, a, id="T-failed", status="failed", started_at=T0 + 2)
    ledger.message(failed, 1, content="Book the 7am instead and tell Dad")
    ledger.tool_call(failed, 1, status="failed", error="calendar API 503", result=None)
    compaction = ledger.turn(s, a, id="T-compact", started_at=T0 + 3, model="claude-haiku-4-5")
    ledger.conn.execute(
        "INSERT INTO compactions (turn_id, summary, summarized_turn_ids, kept_turn_ids,"
        " created_at) VALUES (?, ?, ?, ?, ?)",
        ("T-compact", "Summary of 21 turns: travel plans", '["T-root"]', '["T-a"]', T0),
    )
    head = ledger.turn(s, compaction, id="T-head", status="streaming", started_at=T0 + 4)
    ledger.message(head, 1, content="What's the 2FA code from Amazon?")
    ledger.tool_call(head, 1)
    ledger.set_head(s, root, head)
    return s


def detail(client, session_id="S1", query=""):
    return client.get(f"/sessions/{session_id}/?format=json{query}").json()


def test_the_header_totals_count_the_whole_tree(viewer_client, forked):
    totals = detail(viewer_client)["totals"]
    assert totals == {
        "turns": 5,
        "inherited": 0,
        "branches": 2,
        "tokens": 5 * 1337,
        "turns_with_tokens": 5,
        "tool_calls": 2,
        "failed_turns": 1,
        "compactions": 1,
        "unreadable_token_counts": 0,
    }


def test_the_tree_marks_root_head_leaves_failures_and_compactions(viewer_client, forked):
    page = viewer_client.get("/sessions/S1/").content.decode()
    parse_html(page)
    for mark in (
        "mark-root",
        "mark-head",
        "mark-leaf",
        "mark-failed",
        "mark-compaction",
        "mark-streaming",
    ):
        assert mark in page, mark
    assert "Summary of 21 turns: travel plans" in page
    turns = {t["id"]: t for t in detail(viewer_client)["turns"]}
    assert turns["T-failed"]["lane"] == 1 and turns["T-head"]["lane"] == 0
    assert turns["T-head"]["is_head"] and turns["T-failed"]["is_leaf"]


def test_the_heads_turn_is_open_in_the_panel_by_default(viewer_client, forked):
    page = viewer_client.get("/sessions/S1/").content.decode()
    assert "Turn <code>T-head</code>" in page
    assert "What&#x27;s the 2FA code from Amazon?" in page


def test_a_long_straight_session_folds_and_unfolds(viewer_client, ledger):
    s = ledger.session(id="S1")
    parent = root = ledger.turn(s, id="T0")
    for i in range(1, 40):
        parent = ledger.turn(s, parent, id=f"T{i}", started_at=T0 + i)
    ledger.set_head(s, root, parent)
    folded = viewer_client.get("/sessions/S1/").content.decode()
    assert "36 turns in a straight line" in folded
    assert folded.count('class="tree-row') == 5  # root, first of the stretch, fold, last, head
    unfolded = viewer_client.get("/sessions/S1/?unfold=all").content.decode()
    assert unfolded.count('class="tree-row') == 40


def test_rows_carry_their_keyboard_neighbours(viewer_client, forked):
    page = viewer_client.get("/sessions/S1/?unfold=all").content.decode()
    assert 'data-turn="T-failed" data-parent="T-a" data-child="" data-sibling="T-compact"' in page
    assert 'data-turn="T-a" data-parent="T-root" data-child="T-failed"' in page


def test_the_tree_partial_for_htmx_is_a_fragment(viewer_client, forked):
    response = viewer_client.get(
        "/sessions/S1/?unfold=all", headers={"HX-Request": "true", "HX-Target": "tree"}
    )
    body = response.content.decode()
    assert "<html" not in body and "T-failed" in body
    parse_fragment(body)


def test_a_subagent_session_links_to_its_parent_and_spawning_tool_call(viewer_client, ledger):
    parent = ledger.session(id="P1", label="Refactor")
    turn = ledger.turn(parent, id="PT1")
    call = ledger.tool_call(turn, 1, id="toolu_9", tool_name="Task")
    ledger.session(id="C1", label="Find callers", routing_key=f"subagent:P1:{call['id']}")
    page = viewer_client.get("/sessions/C1/").content.decode()
    assert 'href="/sessions/P1/"' in page
    assert 'href="/sessions/P1/turns/PT1/#call-toolu_9"' in page
    parent_page = viewer_client.get("/sessions/P1/").content.decode()
    assert 'href="/sessions/C1/"' in parent_page  # listed as a child session


def test_a_fork_session_shows_the_inherited_thread_above_its_own_turns(viewer_client, ledger):
    origin = ledger.session(id="O1", label="Origin")
    root = ledger.turn(origin, id="OT1")
    fork_point = ledger.turn(origin, root, id="OT2")
    ledger.turn(origin, fork_point, id="OT3")
    fork = ledger.session(id="F1", label="Retry", routing_key="fork:O1:F1")
    own = ledger.turn(fork, fork_point, id="FT1")
    ledger.set_head(fork, root, own)
    data = detail(viewer_client, "F1")
    assert [t["id"] for t in data["turns"]] == ["OT1", "OT2", "FT1"]
    assert [t["inherited"] for t in data["turns"]] == [True, True, False]
    assert data["totals"]["turns"] == 1
    assert data["problems"] == []
    assert data["parent_session"]["id"] == "O1"
    pills = pill_texts(viewer_client, "F1")
    assert "2 inherited · 1 own" in pills and "1 own branch" in pills


def pill_texts(client, session_id: str) -> list[str]:
    page = parse_html(client.get(f"/sessions/{session_id}/").content)
    pills = next(ul for ul in page.iter("ul") if ul.get("class") == "pills")
    return [" ".join("".join(li.itertext()).split()) for li in pills.iter("li")]


def test_a_fresh_fork_shows_its_fork_point_as_head(viewer_client, ledger):
    origin = ledger.session(id="O1")
    root = ledger.turn(origin, id="OT1")
    point = ledger.turn(origin, root, id="OT2")
    ledger.turn(origin, point, id="OT3")
    fork = ledger.session(id="F1", routing_key="fork:O1:F1")
    ledger.set_head(fork, root, point)
    data = detail(viewer_client, "F1")
    assert [t["id"] for t in data["turns"]] == ["OT1", "OT2"]
    assert data["turns"][-1]["is_head"] and data["problems"] == []
    # Its tree shows two rows, none its own: the counts say so and add up.
    assert data["totals"]["turns"] + data["totals"]["inherited"] == len(data["turns"]) == 2
    pills = pill_texts(viewer_client, "F1")
    assert "2 inherited · 0 own" in pills and "0 own branches" in pills
    assert not any(p.startswith("0 turns") for p in pills)


# -- Bad data -------------------------------------------------------------------------------------


def problems_of(client, session_id="S1") -> list[str]:
    return [p["message"] for p in detail(client, session_id)["problems"]]


def test_a_cycle_is_shown_as_a_problem_and_the_page_renders(viewer_client, ledger):
    s = ledger.session(id="S1")
    ledger.turn(s, id="A", parent_turn_id="B")
    ledger.turn(s, id="B", parent_turn_id="A")
    response = viewer_client.get("/sessions/S1/")
    assert response.status_code == 200
    assert "loops back on itself" in response.content.decode()
    assert "parent chain loops back on itself (a cycle)" in problems_of(viewer_client)


def test_a_tree_with_cycles_has_as_many_branches_on_its_page_as_in_the_list(viewer_client, ledger):
    """Drawing a cycle breaks it, which made a leaf the ledger does not have: the page said 3
    branches where the list said 2. A branch ends at a turn no turn of the session continues."""
    s = ledger.session(id="S1")
    root = ledger.turn(s, id="R", started_at=T0)
    ledger.turn(s, root, id="X", started_at=T0 + 1)  # a leaf
    ledger.turn(s, id="A", parent_turn_id="C", started_at=T0 + 2)  # A → B → C → A
    ledger.turn(s, id="B", parent_turn_id="A", started_at=T0 + 3)
    ledger.turn(s, id="C", parent_turn_id="B", started_at=T0 + 4)
    ledger.turn(s, id="D", parent_turn_id="E", started_at=T0 + 5)  # D ⇄ E, and E → F
    ledger.turn(s, id="E", parent_turn_id="D", started_at=T0 + 6)
    ledger.turn(s, id="F", parent_turn_id="E", started_at=T0 + 7)  # a leaf
    ledger.conn.execute("UPDATE sessions SET root_turn_id = 'R', current_turn_id = 'X'")
    listed = viewer_client.get("/sessions/?format=json").json()["sessions"]
    assert [row["branches"] for row in listed] == [2]
    assert detail(viewer_client)["totals"]["branches"] == 2
    page = viewer_client.get("/sessions/S1/").content.decode()
    assert "<li>2 branches (2 leaves)</li>" in page


def test_a_missing_parent_is_reported_on_the_turn(viewer_client, ledger):
    s = ledger.session(id="S1")
    ledger.turn(s, id="T1", parent_turn_id="nowhere")
    assert problems_of(viewer_client) == [
        "its parent turn nowhere does not exist",
        "the session has no head (current_turn_id is empty)",
    ]


def test_a_head_that_does_not_exist_is_reported(viewer_client, ledger):
    s = ledger.session(id="S1", current_turn_id="ghost")
    ledger.turn(s, id="T1")
    assert "the session head points to a turn that does not exist" in problems_of(viewer_client)


def test_a_head_that_is_not_a_leaf_is_reported(viewer_client, ledger):
    s = ledger.session(id="S1")
    root = ledger.turn(s, id="R1")
    ledger.turn(s, root, id="C1")
    ledger.set_head(s, root, root)
    assert "the session head is not a leaf: it has later turns" in problems_of(viewer_client)


def test_unknown_statuses_and_junk_numbers_are_shown_not_fatal(viewer_client, ledger):
    s = ledger.session(id="S1")
    t = ledger.turn(
        s, id="T1", status="exploded", total_tokens="lots", started_at="noon", completed_at=None
    )
    ledger.set_head(s, t, t)
    response = viewer_client.get("/sessions/S1/")
    assert response.status_code == 200
    assert "unknown turn status &#x27;exploded&#x27;" in response.content.decode()


def test_html_in_every_field_of_the_tree_is_escaped(viewer_client, ledger):
    evil = '<img src=x onerror="alert(1)">'
    s = ledger.session(id="S1", label=evil, persona=evil, routing_key=f"{evil}:x")
    t = ledger.turn(s, id="T1", model=evil)
    ledger.message(t, 1, content=evil)
    ledger.tool_call(t, 1, tool_name=evil, parameters=evil, result=evil, error=evil)
    ledger.set_head(s, t, t)
    page = viewer_client.get("/sessions/S1/").content.decode()
    assert "<img src=x" not in page
    parse_html(page)


def test_an_unknown_session_is_a_clear_404(viewer_client):
    response = viewer_client.get("/sessions/nope/")
    assert response.status_code == 404


def test_ids_with_slashes_and_percent_signs_round_trip_through_urls(viewer_client, ledger):
    s = ledger.session(id="imported/2024 50%")
    t = ledger.turn(s, id="turn/1")
    ledger.set_head(s, t, t)
    assert viewer_client.get("/sessions/").status_code == 200
    url = reverse("sessions:detail", args=["imported/2024 50%"])
    assert url == "/sessions/imported%252F2024%252050%2525/"
    page = viewer_client.get(url)
    assert page.status_code == 200
    assert f'href="{url}turns/turn%252F1/"' in page.content.decode()


def test_the_session_page_runs_as_many_queries_for_300_turns_as_for_8(viewer_client, ledger):
    # Both trees branch (every 7th turn goes back to the root): siblings' answers are one read.
    for session_id, size in (("SMALL", 8), ("BIG", 300)):
        s = ledger.session(id=session_id)
        parent = root = ledger.turn(s, id=f"{session_id}-0")
        for i in range(1, size):
            parent = ledger.turn(
                s, parent if i % 7 else root, id=f"{session_id}-{i}", started_at=T0 + i
            )
            ledger.message(parent, 1)
            ledger.tool_call(parent, 1)
        ledger.set_head(s, root, parent)
    counts = {}
    for session_id in ("SMALL", "BIG"):
        with CaptureQueriesContext(connections[LEDGER]) as queries:
            assert viewer_client.get(f"/sessions/{session_id}/").status_code == 200
        counts[session_id] = len(queries)
    # 20 reads (one the answers of turns with siblings, one the turns' billed usage, for costs,
    # one the answers of the window's other rows, for their hover, one the largest rowids a
    # tree brought up to date at the next commit starts from) + savepoint and release, and
    # 7 for the live bar's cursor and the open panel's state (live/: the ledger's tables and
    # their marks, the session's row and newest turns, the turn, its messages and its calls),
    # each bounded whatever the session's size
    assert counts["SMALL"] == counts["BIG"] <= 29


# -- The rows, built in Python (sessions/rows_html.py) ------------------------------------------


def tree_rows(page: str) -> dict:
    """The tree's rows by turn id, as a browser reads them (attributes unescaped)."""
    return {a.get("data-turn"): a for a in parse_html(page).iter("a") if a.get("data-turn")}


def test_hostile_turn_ids_and_values_round_trip_through_every_row_attribute(viewer_client, ledger):
    evil = '<img src=x onerror="alert(1)">'
    s = ledger.session(id="S1")
    root = ledger.turn(s, id=f"root {evil}", model=evil, total_tokens=evil)
    ledger.message(root, 1, content=evil)
    first = ledger.turn(s, root, id="a&b/1%", started_at=T0 + 1)
    second = ledger.turn(s, root, id='it\'s "two"', started_at=T0 + 2)
    ledger.set_head(s, root, second)
    page = viewer_client.get("/sessions/S1/").content.decode()
    assert "<img src=x" not in page
    rows = tree_rows(page)
    assert set(rows) == {root["id"], first["id"], second["id"]}
    row = rows[first["id"]]
    assert row.get("id") == f"turn-{first['id']}"
    assert (
        row.get("href") == row.get("hx-get") == reverse("sessions:turn", args=["S1", first["id"]])
    )
    assert row.get("data-parent") == root["id"] and row.get("data-sibling") == second["id"]
    assert rows[root["id"]].get("data-child") == first["id"]
    facts = "".join(rows[root["id"]].itertext())
    assert evil in facts  # the preview, shown as text
    model = next(span for span in rows[root["id"]].iter("span") if span.get("class") == "model")
    assert model.get("title") == evil
    tokens = [span.get("title") for span in rows[root["id"]].iter("span")]
    assert f"{evil} tokens" in tokens


def test_rows_that_share_a_model_or_a_shape_still_show_their_own_values(viewer_client, ledger):
    s = ledger.session(id="S1")
    parent = root = ledger.turn(s, id="T0", model="claude-haiku-4-5")
    for i, (model, total) in enumerate([("gpt-5", 900), ("gpt-5", 12_345), (None, None)], 1):
        parent = ledger.turn(s, parent, id=f"T{i}", model=model, total_tokens=total)
        for n in range(i):
            ledger.tool_call(parent, n + 1, status="failed" if n == 1 else "completed")
    ledger.set_head(s, root, parent)
    rows = tree_rows(viewer_client.get("/sessions/S1/").content.decode())

    def facts(turn_id):
        return [span.text for span in rows[turn_id].iter("span") if span.text][-5:]

    # Costs (≈: 1,250 prompt + 87 completion tokens): haiku-4-5 at $1 / $5 per million is
    # $0.001685, gpt-5 at $1.25 / $10 is $0.0024325; a turn without a model has no price.
    assert facts("T0") == ["haiku-4-5", "1.3k", "≈ $0.00169", "0 tools", "5.0 s"]
    assert facts("T1") == ["gpt-5", "900", "≈ $0.00243", "1 tool", "5.0 s"]
    assert facts("T2") == ["gpt-5", "12k", "≈ $0.00243", "2 tools", "5.0 s"]
    assert facts("T3") == ["—", "—", "no price", "3 tools", "5.0 s"]  # no tokens: "—", not "?"
    calls = [span for span in rows["T3"].iter("span") if "tools" in (span.text or "")]
    assert (
        calls[0].get("class") == "num calls bad"
        and calls[0].get("title") == "3 tool calls, 1 failed"
    )


def test_next_branch_wraps_round_the_siblings(viewer_client, ledger):
    s = ledger.session(id="S1")
    root = ledger.turn(s, id="R")
    for i, turn_id in enumerate(("A", "B", "C")):
        last = ledger.turn(s, root, id=turn_id, started_at=T0 + i)
    ledger.set_head(s, root, last)
    rows = tree_rows(viewer_client.get("/sessions/S1/").content.decode())
    assert [rows[t].get("data-sibling") for t in ("A", "B", "C")] == ["B", "C", "A"]
    assert rows["R"].get("data-sibling") == ""


def test_the_htmx_tree_partial_carries_the_rows_but_no_panel(viewer_client, forked):
    response = viewer_client.get(
        "/sessions/S1/", headers={"HX-Request": "true", "HX-Target": "tree"}
    )
    body = response.content.decode()
    assert body.count('class="tree-row') == 5
    assert "Turn <code>" not in body  # the panel stays as it is on the page


def test_a_turn_is_previewed_by_its_first_user_message_else_its_first_message(
    viewer_client, ledger
):
    s = ledger.session(id="S1")
    asked = ledger.turn(s, id="ASKED")
    ledger.message(asked, 1, role="system", content="You are a helpful agent.")
    ledger.message(asked, 3, role="user", content="second question")
    ledger.message(asked, 2, role="user", content="\n\n  the   real question\nmore")
    ledger.message(asked, 4, role="assistant", content="an answer")
    unasked = ledger.turn(s, asked, id="UNASKED", started_at=T0 + 1)
    ledger.message(unasked, 2, role="assistant", content="later")
    ledger.message(unasked, 1, role="tool", content="tool output first")
    silent = ledger.turn(s, unasked, id="SILENT", started_at=T0 + 2)
    ledger.set_head(s, asked, silent)
    previews = {t["id"]: t["preview"] for t in detail(viewer_client)["turns"]}
    # A preview is the words of every line (issue 28: a row has room for more than the first).
    assert previews == {
        "ASKED": "the real question more", "UNASKED": "tool output first", "SILENT": ""
    }  # fmt: skip
    assert "(no message)" in viewer_client.get("/sessions/S1/").content.decode()


def test_subagents_and_forks_are_listed_with_escaped_names_and_links(viewer_client, ledger):
    evil = '<img src=x onerror="alert(1)">'
    ledger.session(id="P1")
    ledger.session(id=f"kid/{evil}", label=evil, routing_key="subagent:P1:toolu_1", status=evil)
    ledger.session(id="F1", label="Retry", routing_key="fork:P1:F1")
    page = viewer_client.get("/sessions/P1/").content.decode()
    assert "<img src=x" not in page
    related = next(ul for ul in parse_html(page).iter("ul") if ul.get("class") == "related")
    kid, fork = related.findall("li")
    assert kid.text == "Subagent: " and fork.text == "Fork: "
    assert kid.find("a").get("href") == reverse("sessions:detail", args=[f"kid/{evil}"])
    assert kid.find("a").text == evil and kid.find("span").text == evil
    assert kid.find("span").get("class") == "status status-img-srcx-onerroralert1"
    assert fork.find("a").get("href") == "/sessions/F1/" and fork.find("a").text == "Retry"


@pytest.mark.django_db(transaction=True, databases="__all__")  # each request its own snapshot
def test_a_reloaded_session_shows_what_the_runtime_wrote_since(viewer_client, ledger):
    """A worker keeps a session's tree while the ledger is unchanged; any commit drops it."""
    s = ledger.session(id="S1")
    root = ledger.turn(s, id="T1")
    ledger.set_head(s, root, root)

    def load() -> tuple[str, list[str]]:
        with CaptureQueriesContext(connections[LEDGER]) as queries:
            page = viewer_client.get("/sessions/S1/").content.decode()
        return page, [q["sql"] for q in queries.captured_queries]

    def rows(page: str) -> list[str]:
        return re.findall(r'<a class="tree-row.*?</a>', page)

    def reads_turns(sql: list[str]) -> bool:
        # The tree's read of every turn (the live cursor's look at the newest 200 is not it).
        return any("FROM turns WHERE session_id" in q and "LIMIT" not in q for q in sql)

    first, sql = load()
    assert 'id="turn-T1"' in first and reads_turns(sql)
    kept, sql = load()
    assert not reads_turns(sql)  # the tree was not read again
    assert rows(kept) == rows(first)

    ledger.set_head(s, root, ledger.turn(s, root, id="T2"))  # the runtime answers again
    page, sql = load()
    assert reads_turns(sql)
    assert 'aria-current="true"' in page.split('id="turn-T2"')[1].split(">")[0]


def test_a_subagent_says_whose_it_is_and_which_call_spawned_it_in_one_sentence(
    viewer_client, ledger
):
    parent = ledger.session(id="P1", label="Refactor")
    call = ledger.tool_call(ledger.turn(parent, id="PT1"), 1, id="toolu_9", tool_name="Task")
    ledger.session(id="C1", label="Find callers", routing_key=f"subagent:P1:{call['id']}")
    tree = parse_html(viewer_client.get("/sessions/C1/").content)
    (line,) = [li for li in tree.iter("li") if "Subagent of" in "".join(li.itertext())]
    text = " ".join("".join(line.itertext()).split())
    assert text == "Subagent of Refactor, spawned by tool call Task toolu_9"


def test_an_unreadable_token_count_adds_nothing_anywhere_and_is_said(viewer_client, ledger):
    """The header added 2^62 and -5 (4,611,686,018,442,929,874 tokens) that the charts leave
    out: one rule for a token count, a whole number from 0 up to 10^12, on every page, and each
    page that sums counts says how many it could not read."""
    s = ledger.session(id="S1")
    root = ledger.turn(s, id="T1", total_tokens=1_000)
    parent, junk = root, [2**62, -5]
    if not is_postgres_url(ledger.path):  # a BIGINT column holds neither
        junk += [12.5, "lots"]
    for n, tokens in enumerate(junk):
        parent = ledger.turn(s, parent, id=f"J{n}", total_tokens=tokens, started_at=T0 + n + 1)
    head = ledger.turn(s, parent, id="T-head", total_tokens=300, prompt_tokens=-5,
                       completion_tokens=87, started_at=T0 + 10)  # fmt: skip
    other = ledger.turn(s, root, id="T-other", total_tokens=200, started_at=T0 + 11)
    ledger.set_head(s, root, head)
    totals = detail(viewer_client)["totals"]
    n = len(junk)
    assert (totals["tokens"], totals["unreadable_token_counts"]) == (1_500, n)
    page = text_of(viewer_client.get("/sessions/S1/"))
    assert f"1,500 tokens ({n} unreadable token counts not added)" in page
    panel = text_of(viewer_client.get("/sessions/S1/turns/J0/", headers={"HX-Request": "true"}))
    assert "= 4,611,686,018,427,387,904 tokens (unreadable counts not added)" in panel
    thread = viewer_client.get("/sessions/S1/turns/T-head/thread/?format=json").json()
    assert thread["cumulative_tokens"] == 1_300
    assert thread["unreadable_token_counts"] == n
    assert thread["context_tokens"] == 300  # its prompt count is junk: its total is the context
    thread_page = text_of(viewer_client.get("/sessions/S1/turns/T-head/thread/"))
    # The thread's sentence counts what its cost is priced from (issue 27, item 4): each turn's
    # prompt and completion (1,250 + 87, the builders'), T-head's prompt (-5) unreadable.
    billed = (n + 1) * (1_250 + 87) + 87
    spent = f"{billed:,} tokens billed along the whole thread (input and output) (1 unreadable"
    assert spent in thread_page
    sides = text_of(viewer_client.get(f"/sessions/S1/compare/?a={head['id']}&b={other['id']}"))
    assert f"300 tokens ({n} unreadable token counts not added)" in sides and "200 tokens" in sides
    data = viewer_client.get("/sessions/S1/compare/?a=T-head&b=T-other&format=json").json()
    assert data["a"]["totals"]["tokens"] == 300
    assert data["a"]["totals"]["unreadable_token_counts"] == n


def text_of(response) -> str:
    """A page's text as a person reads it: tags dropped, spaces collapsed."""
    return " ".join(re.sub(r"<[^>]+>", " ", response.content.decode()).split())
