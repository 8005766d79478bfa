"""The turn panel, the thread and fork point, the fork itself, the export and the comparison."""

import json
import re
from urllib.parse import urljoin

import pytest
from builders import LEDGER_DB, T0, body_of, parse_fragment, parse_html
from django.db import connections
from django.urls import reverse
from django.utils.html import escape

from ledgerweb.db import LEDGER
from ledgerweb.text import PREVIEW_CHARS
from sessions.models import Session
from sessions.turn_detail import OPEN_FAILED_CALLS

pytestmark = LEDGER_DB


@pytest.fixture
def convo(ledger):
    s = ledger.session(id="S1", label="Mom - General")
    root = ledger.turn(
        s, id="T1", started_at=T0, prompt_tokens=1000, completion_tokens=100, total_tokens=1100
    )
    ledger.message(root, 1, content="Can you watch my inbox?")
    ledger.message(root, 2, role="assistant", content="Sure — **watching** it.")
    mid = ledger.turn(
        s,
        root,
        id="T2",
        started_at=T0 + 10,
        prompt_tokens=2000,
        completion_tokens=200,
        total_tokens=2200,
    )
    ledger.message(mid, 1, content="What's the 2FA code from Amazon?")
    ledger.tool_call(
        mid,
        1,
        id="C1",
        parameters='{"action": "search"}',
        result='{"messages": [{"subject": "847291 is your code"}]}',
    )
    ledger.tool_call(mid, 2, id="C2", status="failed", result=None, error="gmail: 401 expired")
    # The answer, written once both calls (from T0 + 1,010) had their results.
    ledger.message(mid, 2, role="assistant", content="The code is 847291.", created_at=T0 + 4_000)
    alt = ledger.turn(s, root, id="T2b", started_at=T0 + 20, total_tokens=900)
    ledger.message(alt, 1, content="never mind")
    ledger.set_head(s, root, mid)
    ledger.request(id="R1", turn_id="T2")
    return s


def test_the_panel_shows_messages_tool_calls_and_links(viewer_client, convo):
    page = viewer_client.get("/sessions/S1/turns/T2/").content.decode()
    parse_html(page)
    assert "What&#x27;s the 2FA code from Amazon?" in page
    assert "&quot;subject&quot;: &quot;847291 is your code&quot;" in page  # pretty JSON, escaped
    assert "gmail: 401 expired" in page
    assert 'href="/sessions/S1/turns/T1/"' in page  # parent
    assert "R1" in page  # the pipeline request that ran it
    assert 'href="/sessions/S1/turns/T2/thread/"' in page


def test_the_panel_for_htmx_is_a_fragment_without_the_tree(viewer_client, convo):
    response = viewer_client.get("/sessions/S1/turns/T2/", headers={"HX-Request": "true"})
    body = response.content.decode()
    assert "<html" not in body and "Turn tree" not in body and "The code is 847291." in body
    parse_fragment(body)


def test_markdown_is_rendered_and_script_is_not(viewer_client, ledger):
    s = ledger.session(id="S1")
    t = ledger.turn(s, id="T1")
    ledger.message(
        t,
        1,
        role="assistant",
        content="**bold** [x](javascript:alert(1)) <script>alert(2)</script>\n\n```\ncode\n```",
    )
    ledger.set_head(s, t, t)
    page = viewer_client.get("/sessions/S1/turns/T1/").content.decode()
    assert "<strong>bold</strong>" in page
    assert "<pre><code>code" in page
    assert "javascript:alert" not in page.replace("[x](javascript:alert(1))", "")
    assert "<script>alert(2)" not in page


def test_a_message_stored_as_a_blob_or_a_number_is_shown_as_text(viewer_client, ledger):
    s = ledger.session(id="S1")
    t = ledger.turn(s, id="T1")
    ledger.message(t, 1, role="user", content=b"bytes \xff <b>here</b>")
    ledger.message(t, 2, role="assistant", content=42)
    ledger.set_head(s, t, t)
    for url in ("/sessions/S1/turns/T1/", "/sessions/S1/turns/T1/thread/"):
        page = viewer_client.get(url)
        assert page.status_code == 200, url
        body = page.content.decode()
        assert "bytes \ufffd" in body and "<b>here</b>" not in body, url


def test_a_json_string_result_is_shown_as_its_text(viewer_client, ledger):
    s = ledger.session(id="S1")
    t = ledger.turn(s, id="T1")
    ledger.tool_call(t, 1, parameters='{"q": 1}', result='"app.py:3\\ncli.py:8 <b>"')
    ledger.set_head(s, t, t)
    page = viewer_client.get("/sessions/S1/turns/T1/").content.decode()
    assert "app.py:3\ncli.py:8 &lt;b&gt;</pre>" in page  # real line break, no quotes, escaped
    assert "a JSON string, shown as text" in page


def test_invalid_json_is_shown_raw_with_a_warning(viewer_client, ledger):
    s = ledger.session(id="S1")
    t = ledger.turn(s, id="T1")
    ledger.tool_call(t, 1, parameters="{'single': quotes}", result="[1, 2,")
    ledger.set_head(s, t, t)
    data = viewer_client.get("/sessions/S1/turns/T1/?format=json").json()
    call = data["tool_calls"][0]
    assert call["parameters"]["valid"] is False and call["result"]["valid"] is False
    assert call["parameters"]["text"] == "{'single': quotes}"
    page = viewer_client.get("/sessions/S1/turns/T1/").content.decode()
    assert page.count("not valid JSON") == 2


def test_huge_payloads_are_cut_and_load_in_full_on_demand(viewer_client, ledger):
    s = ledger.session(id="S1")
    t = ledger.turn(s, id="T1")
    big = json.dumps({"rows": ["x" * 100] * 100_000})  # about 10 MB
    ledger.tool_call(t, 1, id="C-big", result=big)
    ledger.message(t, 1, id="M-big", content="y" * (PREVIEW_CHARS + 10))
    ledger.set_head(s, t, t)
    data = viewer_client.get("/sessions/S1/turns/T1/?format=json").json()
    result = data["tool_calls"][0]["result"]
    assert result["truncated"] and len(result["text"]) == PREVIEW_CHARS
    assert result["total_chars"] == len(big)
    assert data["messages"][0]["truncated"]
    # "Load all" of 10 MB: as much as a page holds, and the whole value as a download.
    full = viewer_client.get("/sessions/S1/turns/T1/payload/result/C-big/").content.decode()
    assert f"Showing the first 1,000,000 of {len(big):,} characters" in full
    whole = viewer_client.get("/sessions/S1/turns/T1/payload/result/C-big/?download=1")
    assert b"".join(whole.streaming_content) == big.encode()
    message = viewer_client.get("/sessions/S1/turns/T1/payload/message/M-big/").content.decode()
    assert "y" * (PREVIEW_CHARS + 10) in message


def test_duplicate_sequence_numbers_are_reported(viewer_client, ledger):
    s = ledger.session(id="S1")
    t = ledger.turn(s, id="T1")
    ledger.message(t, 1)
    ledger.message(t, 1, role="assistant", content="same sequence")
    ledger.set_head(s, t, t)
    page = viewer_client.get("/sessions/S1/turns/T1/").content.decode()
    assert "message sequence numbers repeat: 1" in page


def test_a_task_tool_call_links_to_the_subagent_it_spawned(viewer_client, ledger):
    s = ledger.session(id="S1")
    t = ledger.turn(s, id="T1")
    ledger.tool_call(t, 1, id="toolu_7", tool_name="Task")
    ledger.session(id="CHILD", routing_key="subagent:S1:toolu_7")
    ledger.set_head(s, t, t)
    data = viewer_client.get("/sessions/S1/turns/T1/?format=json").json()
    assert data["tool_calls"][0]["child_session_id"] == "CHILD"
    assert 'href="/sessions/CHILD/"' in viewer_client.get("/sessions/S1/turns/T1/").content.decode()


def test_the_panel_with_600_tool_calls_runs_a_bounded_number_of_queries(
    viewer_client, ledger, django_assert_max_num_queries
):
    s = ledger.session(id="S1")
    t = ledger.turn(s, id="T1")
    for i in range(600):
        ledger.tool_call(t, i + 1)
    ledger.set_head(s, t, t)
    # 19 (one of them the turns' billed usage, for costs, one the answers of the tree's rows, for
    # their hover, one the largest rowids a tree brought up to date starts from), and the
    # ledger's data_version that a kept tree is checked against; and 7 for the live bar's cursor
    # and the open panel's state (live/), whatever the calls.
    with django_assert_max_num_queries(27, connection=connections[LEDGER]):
        response = viewer_client.get("/sessions/S1/turns/T1/")
    assert response.content.decode().count('id="call-') == 600


def test_a_long_list_of_tool_calls_loads_each_body_when_opened(viewer_client, ledger):
    s = ledger.session(id="S1")
    t = ledger.turn(s, id="T1")
    for i in range(8):
        ledger.tool_call(t, i + 1, id=f"C{i}", parameters=f'{{"n": {i}}}')
    ledger.set_head(s, t, t)
    page = viewer_client.get("/sessions/S1/turns/T1/").content.decode()
    # Closed calls carry no payload (their line has a few words of it, sessions/call_hints.py).
    assert "&quot;n&quot;: 3\n}" not in page and page.count('<pre class="json">') == 0
    assert 'hx-get="/sessions/S1/turns/T1/calls/C3/"' in page
    body = viewer_client.get(
        "/sessions/S1/turns/T1/calls/C3/", headers={"HX-Request": "true"}
    ).content.decode()
    parse_fragment(body)
    assert "&quot;n&quot;: 3" in body and "<html" not in body
    data = viewer_client.get("/sessions/S1/turns/T1/?format=json").json()
    assert data["tool_calls"][3]["parameters"]["text"] == '{\n  "n": 3\n}'
    assert viewer_client.get("/sessions/S1/turns/T1/calls/nope/").status_code == 404


def panel_calls(client, session_id="S1", turn_id="T1") -> dict:
    """The panel's tool calls by id, as a browser reads them (attributes unescaped)."""
    body = client.get(
        reverse("sessions:turn", args=[session_id, turn_id]), headers={"HX-Request": "true"}
    ).content.decode()
    items = parse_fragment(body).iter("li")
    return {
        li.get("id").removeprefix("call-"): li for li in items if li.get("id", "")[:5] == "call-"
    }


def test_a_long_list_opens_its_failed_calls_with_their_error_and_a_short_one_opens_all(
    viewer_client, ledger
):
    s = ledger.session(id="S1")
    long, short = ledger.turn(s, id="T1"), ledger.turn(s, id="T2")
    for i in range(8):
        failed = i in (2, 6)
        ledger.tool_call(
            long,
            i + 1,
            id=f"L{i}",
            parameters=f'{{"n": {i}}}',
            status="failed" if failed else "completed",
            error=f"error of L{i}" if failed else None,
        )
    for i in range(5):
        ledger.tool_call(short, i + 1, id=f"S{i}", parameters=f'{{"n": {i}}}')
    ledger.set_head(s, long, long)
    calls = panel_calls(viewer_client)
    assert list(calls) == [f"L{i}" for i in range(8)]
    opened = [i for i, li in calls.items() if li.find("details").get("open") is not None]
    assert opened == ["L2", "L6"]
    assert [li.get("class") for li in calls.values()].count("tool-call failed") == 2
    for call_id, li in calls.items():
        body = li.find("details/div")
        text = "".join(body.itertext())
        if call_id in opened:  # in the panel as it arrives: no event to wait for
            assert body.get("hx-get") is None
            assert f"error of {call_id}" in text and f'"n": {call_id[1]}' in text
        else:  # loaded when opened
            assert body.get("hx-get") == reverse("sessions:call", args=["S1", "T1", call_id])
            assert body.get("hx-trigger") == "toggle from:closest details once"
            assert body.find("a").get("href") == body.get("hx-get")
            assert '"n"' not in text
    short_calls = panel_calls(viewer_client, turn_id="T2")
    assert all(li.find("details").get("open") is not None for li in short_calls.values())
    assert "&quot;n&quot;: 4" in viewer_client.get("/sessions/S1/turns/T2/").content.decode()


def test_a_turn_with_many_failed_calls_opens_only_the_first_few(viewer_client, ledger):
    s = ledger.session(id="S1")
    t = ledger.turn(s, id="T1")
    for i in range(40):
        ledger.tool_call(t, i + 1, id=f"F{i:02}", status="failed", error=f"error {i}")
    ledger.set_head(s, t, t)
    calls = panel_calls(viewer_client)
    opened = [i for i, li in calls.items() if li.find("details").get("open") is not None]
    assert opened == [f"F{i:02}" for i in range(OPEN_FAILED_CALLS)]
    assert all(li.get("class") == "tool-call failed" for li in calls.values())
    data = viewer_client.get("/sessions/S1/turns/T1/?format=json").json()
    assert all(c["parameters"]["text"] for c in data["tool_calls"])  # the twin has them all


def test_hostile_values_in_a_long_list_of_calls_are_shown_as_text(viewer_client, ledger):
    evil = '<img src=x onerror="alert(1)">'
    s = ledger.session(id="S1")
    t = ledger.turn(s, id="T1")
    for i in range(7):
        ledger.tool_call(t, i + 1, id=f"C{i}")
    ledger.tool_call(
        t,
        evil,
        id=f"toolu/{evil}",
        tool_name=evil,
        status=evil,
        started_at=T0,
        completed_at=T0 + 1500,
    )
    ledger.session(id=f"child {evil}", routing_key=f"subagent:S1:toolu/{evil}")
    ledger.set_head(s, t, t)
    body = viewer_client.get("/sessions/S1/turns/T1/", headers={"HX-Request": "true"})
    assert "<img src=x" not in body.content.decode()
    li = panel_calls(viewer_client)[f"toolu/{evil}"]
    summary = li.find("details/summary")
    assert summary.find("code").text == evil
    status = summary.find("span")
    assert status.text == evil and status.get("class") == "status status-img-srcx-onerroralert1"
    assert summary.find("span[@class='muted small']").text == f"#{evil} · 1.5 s"
    subagent = summary.find("a")
    assert subagent.get("href") == reverse("sessions:detail", args=[f"child {evil}"])
    assert subagent.text == "subagent session ↗"
    assert li.find("details/div").get("hx-get") == reverse(
        "sessions:call", args=["S1", "T1", f"toolu/{evil}"]
    )


def test_the_turn_json_twin_still_carries_every_payload_of_a_long_list(viewer_client, ledger):
    s = ledger.session(id="S1")
    t = ledger.turn(s, id="T1")
    for i in range(9):
        ledger.tool_call(t, i + 1, parameters=f'{{"n": {i}}}')
    ledger.set_head(s, t, t)
    data = viewer_client.get("/sessions/S1/turns/T1/?format=json").json()
    assert [c["parameters"]["text"] for c in data["tool_calls"]] == [
        f'{{\n  "n": {i}\n}}' for i in range(9)
    ]


# -- Thread and fork point ---------------------------------------------------------------------


def test_the_thread_lists_ancestors_with_cumulative_tokens(viewer_client, convo):
    data = viewer_client.get("/sessions/S1/turns/T2/thread/?format=json").json()
    assert [s["turn"]["id"] for s in data["steps"]] == ["T1", "T2"]
    assert [s["cumulative_tokens"] for s in data["steps"]] == [1100, 3300]
    assert data["context_tokens"] == 2200
    assert data["context_window"] == 200_000  # claude-sonnet-4-… from the settings table


def test_the_thread_gauge_shows_the_share_of_the_context_window(viewer_client, convo):
    page = viewer_client.get("/sessions/S1/turns/T2/thread/").content.decode()
    parse_html(page)
    assert '<meter min="0" max="200000"' in page and 'value="2200"' in page
    assert "1% of the 200,000-token window" in page


def test_a_compaction_on_the_path_shows_the_effective_context(viewer_client, ledger):
    s = ledger.session(id="S1")
    t1 = ledger.turn(s, id="T1")
    t2 = ledger.turn(s, t1, id="T2")
    t3 = ledger.turn(s, t2, id="T3")
    c = ledger.turn(s, t3, id="C", model="claude-haiku-4-5")
    ledger.conn.execute(
        "INSERT INTO compactions (turn_id, summary, summarized_turn_ids, kept_turn_ids,"
        " created_at) VALUES ('C', 'They planned a trip.', '[\"T1\", \"T2\"]', '[\"T3\"]', 0)"
    )
    after = ledger.turn(s, c, id="T4")
    ledger.set_head(s, t1, after)
    data = viewer_client.get("/sessions/S1/turns/T4/thread/?format=json").json()
    assert [(s["turn"]["id"], s["in_context"]) for s in data["steps"]] == [
        ("T1", False),
        ("T2", False),
        ("T3", True),
        ("C", True),
        ("T4", True),
    ]
    assert data["compaction"]["summary"] == "They planned a trip."


def test_a_thread_through_a_broken_chain_says_where_it_breaks(viewer_client, ledger):
    s = ledger.session(id="S1")
    ledger.turn(s, id="A", parent_turn_id="B")
    ledger.turn(s, id="B", parent_turn_id="A")
    ledger.turn(s, id="orphan", parent_turn_id="gone")
    cyc = viewer_client.get("/sessions/S1/turns/A/thread/?format=json").json()
    assert "loops back" in cyc["problems"][0]
    orphan = viewer_client.get("/sessions/S1/turns/orphan/thread/?format=json").json()
    assert "names a parent gone that does not exist" in orphan["problems"][0]


def test_a_viewer_sees_the_fork_button_disabled_with_the_reason(viewer_client, convo):
    page = viewer_client.get("/sessions/S1/turns/T2/thread/").content.decode()
    assert "Only operators can fork" in page
    assert "disabled" in page


def test_a_viewer_cannot_fork_even_by_posting(viewer_client, convo):
    response = viewer_client.post("/sessions/S1/turns/T1/fork/", {"label": "try"})
    assert response.status_code == 403
    assert Session.objects.count() == 1


@pytest.mark.django_db(transaction=True, databases="__all__")
def test_an_operator_forks_a_session_at_a_turn(client, operator, convo):
    client.force_login(operator)
    response = client.post("/sessions/S1/turns/T1/fork/", {"label": "Retry from the start"})
    fork = Session.objects.exclude(id="S1").get()
    assert response.status_code == 302 and response["Location"] == f"/sessions/{fork.id}/"
    assert fork.routing_key == f"fork:S1:{fork.id}"
    assert (fork.persona, fork.label, fork.status) == ("atlas", "Retry from the start", "active")
    assert (fork.root_turn_id, fork.current_turn_id) == ("T1", "T1")
    assert len(fork.id) == 26 and fork.created_at == fork.updated_at
    page = client.get(response["Location"]).content.decode()
    assert "Forked from" in page and "Retry from the start" in page


@pytest.mark.django_db(transaction=True, databases="__all__")
def test_a_fork_below_another_root_takes_that_root(client, operator, ledger):
    """Real conversations have several roots (a regenerated first answer): a fork made below one
    that is not the session's root_turn_id took the origin's, which is not its ancestor, and its
    page said "the session root points to a turn that does not exist"."""
    s = ledger.session(id="S1")
    first = ledger.turn(s, id="R1", started_at=T0)
    again = ledger.turn(s, id="R2", started_at=T0 + 10)  # the first prompt answered again
    below = ledger.turn(s, again, id="C", started_at=T0 + 20)
    ledger.set_head(s, first, below)
    client.force_login(operator)
    response = client.post("/sessions/S1/turns/C/fork/", {"label": "From the second answer"})
    fork = Session.objects.exclude(id="S1").get()
    assert (fork.root_turn_id, fork.current_turn_id) == ("R2", "C")
    problems = client.get(response["Location"] + "?format=json").json()["problems"]
    assert problems == []


@pytest.mark.django_db(transaction=True, databases="__all__")
def test_a_fork_needs_a_label_and_an_existing_turn(client, operator, convo):
    client.force_login(operator)
    client.post("/sessions/S1/turns/T1/fork/", {"label": "  "})
    client.post("/sessions/S1/turns/ghost/fork/", {"label": "x"})
    assert Session.objects.count() == 1


@pytest.mark.django_db(transaction=True, databases="__all__")
def test_a_fork_posted_at_a_turn_whose_context_is_broken_is_refused_with_the_reason(
    client, operator, ledger
):
    s = ledger.session(id="S1")
    orphan = ledger.turn(s, id="orphan", parent_turn_id="gone")
    ledger.set_head(s, orphan, orphan)
    client.force_login(operator)
    # The button is disabled on the page; a form posted anyway (an old tab, a script) is refused.
    response = client.post("/sessions/S1/turns/orphan/fork/", {"label": "x"}, follow=True)
    assert Session.objects.count() == 1
    assert response.redirect_chain[-1][0] == "/sessions/S1/turns/orphan/thread/"
    page = response.content.decode()
    assert "cannot be rebuilt whole" in page and "nothing was forked" in page


def test_the_export_is_a_replayable_transcript(viewer_client, convo):
    data = json.loads(body_of(viewer_client.get("/sessions/S1/turns/T2/export.json")))
    assert data["turn_ids"] == ["T1", "T2"]
    roles = [m["role"] for m in data["messages"]]
    assert roles == ["user", "assistant", "user", "assistant", "tool", "tool", "assistant"]
    call_message = data["messages"][3]
    assert [c["function"]["name"] for c in call_message["tool_calls"]] == ["gog", "gog"]
    assert data["messages"][4]["tool_call_id"] == "C1"
    assert data["messages"][5]["content"] == "Error: gmail: 401 expired"
    assert data["messages"][6]["ledger"]["turn_id"] == "T2"


def test_compare_finds_the_fork_point_and_both_paths(viewer_client, convo):
    data = viewer_client.get("/sessions/S1/compare/?a=T2&b=T2b&format=json").json()
    assert data["fork_point"]["id"] == "T1"
    assert [t["id"] for t in data["a"]["first_turns"]] == ["T2"]
    assert [t["id"] for t in data["b"]["first_turns"]] == ["T2b"]
    page = viewer_client.get("/sessions/S1/compare/?a=T2&b=T2b").content.decode()
    parse_html(page)
    assert "They share 1 turn and part after" in page


@pytest.fixture
def compacted_thread(ledger):
    """80 turns in a line, then a compaction C that kept only the last of them (T079)."""
    s = ledger.session(id="S1")
    parent = ledger.turn(s, id="T000")
    for i in range(1, 80):
        parent = ledger.turn(s, parent, id=f"T{i:03d}", started_at=T0 + i)
        ledger.message(parent, 1, content=f"question {i}")
    compaction = ledger.turn(s, parent, id="C", started_at=T0 + 100)
    ledger.compaction(compaction, "A long chat.", kept=["T079"])
    ledger.set_head(s, compaction, compaction)


def test_a_thread_after_a_compaction_lists_only_the_latest_folded_turns(
    viewer_client, compacted_thread
):
    page = viewer_client.get("/sessions/S1/turns/C/thread/").content.decode()
    assert "79 turns folded into the compaction summary" in page
    assert "The last 50 of them" in page
    assert "question 29" in page and "question 28" not in page  # T029–T078 shown
    assert page.count('<li class="step') == 3  # the folded group, the kept turn, the compaction
    header = "".join(parse_html(page).find(".//header[@class='page-head']").itertext())
    assert "81 turns from the root to this turn" in header
    assert "remember the compaction's summary and 2 of them" in header  # T079 kept, and C


def test_a_long_thread_page_shows_the_turns_nearest_the_fork_point(viewer_client, ledger):
    from sessions.views import THREAD_PAGE_TURNS

    s = ledger.session(id="S1")
    parent = None
    for i in range(THREAD_PAGE_TURNS + 5):
        parent = ledger.turn(s, parent, id=f"T{i:04d}", started_at=T0 + i)
        ledger.message(parent, 1, content=f"question number {i:04d}")
    ledger.set_head(s, {"id": "T0000"}, parent)
    head = parent["id"]
    page = viewer_client.get(f"/sessions/S1/turns/{head}/thread/").content.decode()
    assert "5 earlier turns of this thread are not shown" in page
    assert "question number 0004" not in page and "question number 0005" in page
    total = (THREAD_PAGE_TURNS + 5) * 1337
    assert f"{total:,} tokens billed along the whole thread" in page  # hidden turns counted
    # The old "show all" address is bounded now: it opens the first page, from the root.
    first = viewer_client.get(f"/sessions/S1/turns/{head}/thread/?all=1", follow=True)
    assert first.redirect_chain[-1][0].endswith(f"/sessions/S1/turns/{head}/thread/?page=1")
    first = first.content.decode()
    assert "question number 0000" in first and "question number 0005" not in first
    assert "earlier turn" not in first and "200 later turns" in first


def test_the_thread_shows_every_folded_turn_on_request(viewer_client, compacted_thread):
    page = viewer_client.get("/sessions/S1/turns/C/thread/").content.decode()
    link = re.search(r'The last 50 of them: <a href="([^"]+)">show all 79</a>', page)[1]
    whole = viewer_client.get("/sessions/S1/turns/C/thread/" + link.replace("&amp;", "&"))
    whole = whole.content.decode()
    parse_html(whole)
    assert "question 1 <" in whole and "question 78" in whole and "show all" not in whole
    assert "From here the model sees this summary, the 1 turn it kept" in whole


def test_a_thread_whose_context_cannot_be_rebuilt_says_why_it_cannot_be_forked(
    client, operator, ledger
):
    s = ledger.session(id="S1")
    orphan = ledger.turn(s, {"id": "gone"}, id="T1")
    whole = ledger.turn(s, id="T2")
    ledger.set_head(s, whole, orphan)
    client.force_login(operator)
    page = client.get("/sessions/S1/turns/T1/thread/").content.decode()
    assert "context cannot be rebuilt whole" in page
    button = r'<button type="submit" class="primary"\s+disabled aria-describedby="fork-broken"'
    assert re.search(button, page)
    fine = client.get("/sessions/S1/turns/T2/thread/").content.decode()
    assert "cannot be rebuilt" not in fine and "disabled" not in fine


def test_every_call_links_to_its_own_page_which_says_where_it_belongs(viewer_client, ledger):
    s = ledger.session(id="S1")
    t = ledger.turn(s, id="T1")
    ledger.tool_call(t, 1, id="C1", tool_name="grep", parameters='{"q": "needle"}')
    ledger.set_head(s, t, t)
    call_url = reverse("sessions:call", args=["S1", "T1", "C1"])
    panel = panel_calls(viewer_client)
    assert panel["C1"].find("details/summary/a[@class='small call-link']").get("href") == call_url
    # Followed as a link (a new tab, a URL someone shared): a whole page, not a bare fragment.
    page = viewer_client.get(call_url).content.decode()
    assert "<html" in page and "&quot;q&quot;: &quot;needle&quot;" in page
    assert f'href="{reverse("sessions:turn", args=["S1", "T1"])}#call-C1"' in page
    assert 'href="/sessions/S1/"' in page and "grep" in page


def test_load_all_followed_without_htmx_is_a_page_with_the_whole_payload(viewer_client, ledger):
    s = ledger.session(id="S1")
    t = ledger.turn(s, id="T1")
    ledger.tool_call(t, 1, id="C1", result='{"big": "' + "x" * 50_000 + '"}')
    ledger.set_head(s, t, t)
    url = reverse("sessions:payload", args=["S1", "T1", "result", "C1"])
    page = viewer_client.get(url).content.decode()
    assert "<html" in page and "x" * 50_000 in page and 'href="/sessions/S1/turns/T1/"' in page
    part = viewer_client.get(url, headers={"HX-Request": "true"}).content.decode()
    assert "<html" not in part and "x" * 50_000 in part


@pytest.fixture
def small_load_all(monkeypatch):
    """ "Load all" capped at 1,000 characters and downloads read 300 at a time, so a few KB
    behave like the 50 MB tool result that made a 50 MB page."""
    monkeypatch.setattr("ledgerweb.downloads.PAGE_CHARS", 1_000)
    monkeypatch.setattr("ledgerweb.downloads.PIECE_BYTES", 300)


def test_load_all_of_a_huge_result_shows_a_capped_part_and_downloads_the_rest(
    viewer_client, ledger, small_load_all
):
    s = ledger.session(id="S1")
    t = ledger.turn(s, id="T1")
    whole = json.dumps({"lines": [f"ligne {i} é✓" for i in range(500)]}, ensure_ascii=False)
    ledger.tool_call(t, 1, id="C1", result=whole)
    ledger.set_head(s, t, t)
    url = reverse("sessions:payload", args=["S1", "T1", "result", "C1"])
    # A new tab (a whole page), and "Load all" in the turn's panel (a fragment).
    for headers, parse in (({}, parse_html), ({"HX-Request": "true"}, parse_fragment)):
        page = viewer_client.get(url, headers=headers).content.decode()
        assert f"Showing the first 1,000 of {len(whole):,} characters" in page
        assert escape(whole[:1_000]) in page and escape(whole[:1_001]) not in page
        download = parse(page).find(".//a[@download]")
        assert download.text == "Download the whole result"
    # The link is absolute: swapped into the turn's panel, it still names this payload.
    assert download.get("href") == url + "?download=1"
    got = viewer_client.get(download.get("href"))
    assert got["Content-Disposition"] == 'attachment; filename="result-C1.json"'
    assert b"".join(got.streaming_content) == whole.encode()


def test_a_long_message_downloads_as_text_and_a_short_one_offers_no_download(
    viewer_client, ledger, small_load_all
):
    s = ledger.session(id="S1")
    t = ledger.turn(s, id="T1")
    ledger.message(t, 1, id="M1", content="<b>x</b>" * 400)
    ledger.message(t, 2, id="M2", content="short <b>reply</b>")
    ledger.set_head(s, t, t)
    long_url = reverse("sessions:payload", args=["S1", "T1", "message", "M1"])
    got = viewer_client.get(long_url + "?download=1")
    assert got["Content-Type"] == "text/plain; charset=utf-8"
    assert b"".join(got.streaming_content) == b"<b>x</b>" * 400
    short = viewer_client.get(reverse("sessions:payload", args=["S1", "T1", "message", "M2"]))
    assert "short &lt;b&gt;reply&lt;/b&gt;" in short.content.decode()
    assert "Download the whole" not in short.content.decode()
    bad = viewer_client.get(long_url + "?download=yes")
    assert bad.status_code == 400 and "download" in bad.content.decode()


def test_a_result_stored_as_a_blob_downloads_byte_for_byte(viewer_client, ledger, small_load_all):
    s = ledger.session(id="S1")
    t = ledger.turn(s, id="T1")
    raw = ("données " * 200).encode() + b"\xff\xfe"
    ledger.tool_call(t, 1, id="C1", result=raw)
    ledger.set_head(s, t, t)
    url = reverse("sessions:payload", args=["S1", "T1", "result", "C1"])
    page = viewer_client.get(url).content.decode()
    assert "données" in page and "Download the whole result" in page
    assert b"".join(viewer_client.get(url + "?download=1").streaming_content) == raw


# -- export.json and downloads of rows with hostile ids (issue 25, item 3) ---------------------

ODD_IDS = {
    "nul": "id\x00with a NUL",
    "header": "x\"; filename*=UTF-8''evil.html; x=\"",
    "newline": "two\nlines",
}


@pytest.fixture
def odd_ids(ledger):
    """One session whose session, turn, message and call ids hold a NUL, a quote-and-filename
    header and a line break (turn T-<kind>, message M-<kind>, call C-<kind>)."""
    s = ledger.session(id=f"S {ODD_IDS['nul']}")
    parent = None
    for kind, odd in ODD_IDS.items():
        parent = ledger.turn(s, parent, id=f"T-{odd}", started_at=T0 + len(kind))
        ledger.message(parent, 1, id=f"M-{odd}", content=f"said in {kind}")
        ledger.tool_call(parent, 1, id=f"C-{odd}", result=json.dumps(f"result of {kind}"))
    ledger.set_head(s, {"id": f"T-{ODD_IDS['nul']}"}, parent)
    return s


def turn_url(session_id: str, turn_id: str, rest: str = "") -> str:
    return reverse("sessions:turn", args=[session_id, turn_id]) + rest


def test_ids_holding_a_nul_a_header_or_a_line_break_answer_the_twin_and_the_export(
    viewer_client, odd_ids
):
    for kind, odd in ODD_IDS.items():
        url = turn_url(odd_ids["id"], f"T-{odd}")
        twin = viewer_client.get(url + "?format=json")
        assert twin.status_code == 200, kind
        data = twin.json()
        assert [m["id"] for m in data["messages"]] == [f"M-{odd}"]
        assert data["tool_calls"][0]["result"]["text"] == f"result of {kind}"
    head = turn_url(odd_ids["id"], f"T-{ODD_IDS['newline']}", "export.json")
    export = json.loads(body_of(viewer_client.get(head)))
    assert [m["ledger"].get("message_id") for m in export["messages"] if m["role"] == "user"] == [
        f"M-{odd}" for odd in ODD_IDS.values()
    ]
    assert [m["content"] for m in export["messages"] if m["role"] == "tool"] == [
        json.dumps(f"result of {kind}") for kind in ODD_IDS
    ]


def saved_name(response) -> str:
    """The file name a browser saves a download under: the header must be one plain
    filename="…" with nothing a parser could read as another parameter."""
    disposition = response["Content-Disposition"]
    found = re.fullmatch(r'attachment; filename="([A-Za-z0-9_.-]+)"', disposition)
    assert found, disposition
    return found.group(1)


def test_a_download_named_after_a_hostile_id_is_saved_under_a_safe_name(viewer_client, odd_ids):
    header_id = ODD_IDS["header"]
    turn = f"T-{header_id}"
    export = viewer_client.get(turn_url(odd_ids["id"], turn, "export.json?download=1"))
    assert export.status_code == 200
    assert saved_name(export) == "thread-T-x_filename_UTF-8_evil_html_x.json"
    for kind, odd in ODD_IDS.items():
        payload = ["result", f"C-{odd}"]
        url = reverse("sessions:payload", args=[odd_ids["id"], f"T-{odd}", *payload])
        download = viewer_client.get(url + "?download=1")
        assert download.status_code == 200, kind
        assert saved_name(download).endswith(".json") and "evil.html" not in saved_name(download)
        assert body_of(download) == json.dumps(f"result of {kind}").encode()


def test_the_export_of_a_turn_holding_a_huge_result_is_streamed_in_bounded_memory(
    viewer_client, ledger
):
    import tracemalloc

    s = ledger.session(id="S1")
    t = ledger.turn(s, id="T1")
    result = json.dumps({"rows": ["é" * 100] * 120_000}, ensure_ascii=False)  # 12 M characters
    ledger.message(t, 1, id="M1", content="dump it")
    ledger.tool_call(t, 1, id="C1", result=result)
    ledger.message(t, 2, id="M2", role="assistant", content="z" * 3_000_000, created_at=T0 + 9000)
    ledger.set_head(s, t, t)
    response = viewer_client.get("/sessions/S1/turns/T1/export.json")
    assert response.streaming
    tracemalloc.start()
    chunks = []
    for chunk in response.streaming_content:
        chunks.append(len(chunk))
        kept = chunk if len(chunks) == 1 else b""  # as a client writing it out keeps nothing
        del kept
    _, peak = tracemalloc.get_traced_memory()
    tracemalloc.stop()
    # The result alone is 24 MB of UTF-8; a worker holding the answer held it twice and more.
    assert sum(chunks) > 24_000_000
    assert peak < 12_000_000, f"streaming held {peak:,} bytes at once"
    data = json.loads(body_of(viewer_client.get("/sessions/S1/turns/T1/export.json")))
    assert [m.get("content") for m in data["messages"] if m["role"] == "tool"] == [result]
    assert data["messages"][-1]["content"] == "z" * 3_000_000


def test_an_orphans_panel_names_its_missing_parent_without_a_link_that_404s(viewer_client, ledger):
    s = ledger.session(id="S1")
    root = ledger.turn(s, id="T1")
    ledger.turn(s, id="orphan", parent_turn_id="gone")
    ledger.turn(s, root, id="T2")
    ledger.set_head(s, root, root)
    for headers in ({}, {"HX-Request": "true"}):  # the whole page, and the panel beside the tree
        page = viewer_client.get("/sessions/S1/turns/orphan/", headers=headers).content.decode()
        assert "not in the ledger (an orphan turn)" in page
        assert "/turns/gone/" not in page
    page = viewer_client.get("/sessions/S1/turns/T2/").content.decode()
    assert 'href="/sessions/S1/turns/T1/"' in page and "orphan turn" not in page


def test_a_tool_call_page_has_a_json_twin_with_its_payloads(viewer_client, convo):
    page = viewer_client.get("/sessions/S1/turns/T2/calls/C2/")
    twin_link = parse_html(page.content).find(".//header[@class='page-head']//a")
    assert twin_link.text == "JSON"
    twin = viewer_client.get(urljoin("http://testserver/sessions/S1/turns/T2/calls/C2/",
                                     twin_link.get("href"))).json()  # fmt: skip
    turn = viewer_client.get("/sessions/S1/turns/T2/?format=json").json()
    assert twin == {"session_id": "S1", "turn_id": "T2"} | turn["tool_calls"][1]
    assert (twin["id"], twin["status"], twin["error"]) == ("C2", "failed", "gmail: 401 expired")


def test_a_pending_turn_without_a_total_says_so_instead_of_a_dash(viewer_client, ledger):
    s = ledger.session(id="S1")
    panel_url = "/sessions/S1/turns/P1/"
    ledger.turn(s, id="P1", status="pending", completed_at=None, total_tokens=None)
    ledger.turn(s, id="C1", total_tokens=1337)
    panel = viewer_client.get(panel_url, HTTP_HX_REQUEST="true").content.decode()
    assert "1,250 context + 87 output" in panel
    assert "no total recorded" in panel and "= — tokens" not in panel
    done = viewer_client.get("/sessions/S1/turns/C1/", HTTP_HX_REQUEST="true").content.decode()
    assert "= 1,337 tokens" in done and "no total recorded" not in done
