"""/search/: every field searched, id jumps of every kind, filters, paging, hostile text and
queries the engine cannot read. The index is built by the page itself (small steps per view)."""

import hashlib
import json
import re
from urllib.parse import urljoin, urlsplit

import pytest
from builders import LEDGER_DB, T0, parse_html
from django.db import connections

from ledgerweb.db import LEDGER

pytestmark = LEDGER_DB
URL = "/search/"


@pytest.fixture(autouse=True)
def pages_index_everything(monkeypatch):
    """A page indexes for at most INDEX_BUDGET_S; on a busy test machine that may not reach a
    test's last rows. Tests of what is searchable let pages index everything."""
    monkeypatch.setattr("search.views.INDEX_BUDGET_S", 60)
    monkeypatch.setattr("search.views.INDEX_BUDGET_BYTES", 10**9)


def search(client, q, **params):
    response = client.get(URL, {"q": q, "format": "json", **params})
    assert response.status_code == 200
    return response.json()


def hits(data) -> list[dict]:
    return [hit for group in data["groups"] for hit in group["hits"]]


@pytest.fixture
def conversation(ledger):
    """A session with one turn that says, calls and fails things, and a failed request."""
    s = ledger.session(id="S1", label="Quarterly cleanup", routing_key="discord:ops:main")
    t = ledger.turn(s, id="T1", status="failed")
    ledger.set_head(s, t, t)
    ledger.message(t, 1, id="M1", role="user", content="Please prune the stale branches")
    ledger.message(t, 2, id="M2", role="assistant", content="I deleted the branch feature/login")
    ledger.tool_call(
        t, 1, id="C1", tool_name="run_terminal_command_v2",
        parameters=json.dumps({"cmd": "git branch -D feature/login", "cwd": "src/app/models.py"}),
        result=json.dumps({"stdout": "Deleted branch feature/login (was 3f2a1b)"}),
        error="fatal: remote rejected session_fork", status="failed",
    )  # fmt: skip
    ledger.request(
        id="R1", event_id="discord:msg/998877", status="failed", turn_id="T1",
        error_message="DeliveryTimeout waiting for gateway",
        error_stack="at sendDiscord (bot.js:42)",
        session_persona="atlas", event_source="discord",
    )  # fmt: skip
    ledger.conn.execute(
        "INSERT INTO compactions (turn_id, summary, summarized_turn_ids, kept_turn_ids,"
        " created_at) VALUES ('T1', 'Summary: the user asked about kumquats', '[]', '[]', ?)",
        (T0,),
    )
    return s


# -- Every field ----------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("q", "kind", "field"),
    [
        ("prune", "message", "user"),
        ('"deleted the"', "message", "assistant"),
        ("run_terminal_command_v2", "tool_call", "tool_name"),
        ("cwd", "tool_call", "parameters"),
        ("3f2a1b", "tool_call", "result"),
        ("rejected", "tool_call", "error"),
        ("kumquats", "compaction", "summary"),
        ("quarterly", "session", "label"),
        ("DeliveryTimeout", "request", "error_message"),
        ("sendDiscord", "request", "error_stack"),
        ('"msg 998877"', "request", "event_id"),
    ],
)
def test_each_field_is_searched(viewer_client, conversation, q, kind, field):
    found = hits(search(viewer_client, q))
    assert [(h["kind"], h["fields"]) for h in found] == [(kind, [field])]
    assert "<mark>" in found[0]["snippet"]


def test_results_are_grouped_by_session_with_status_time_and_a_highlighted_snippet(
    viewer_client, conversation
):
    page = parse_html(viewer_client.get(URL, {"q": "branch"}).content)
    group = page.find(".//section[@class='search-group']")
    assert group.find("h3/a").text == "Quarterly cleanup"
    items = group.findall(".//li")
    kinds = [li.find("div/a").text for li in items]
    assert sorted(kinds) == ["message", "tool call"]
    assert all(li.find(".//span[@class='status status-failed']") is not None for li in items)
    call = next(li for li in items if li.find("div/a").text == "tool call")
    statuses = [s.text for s in call.iterfind(".//span") if "status" in (s.get("class") or "")]
    assert statuses == ["failed", "failed"]  # the call's own, and its turn's
    marks = [m.text for li in items for m in li.iter("mark")]
    assert "branch" in [m.lower() for m in marks]


def test_identifiers_paths_phrases_and_prefixes_are_found(viewer_client, conversation):
    assert {h["id"] for h in hits(search(viewer_client, "session_fork"))} == {"C1"}
    assert {h["id"] for h in hits(search(viewer_client, "src/app/models.py"))} == {"C1"}
    assert {h["id"] for h in hits(search(viewer_client, '"deleted the branch"'))} == {"M2"}
    assert hits(search(viewer_client, '"the deleted branch"')) == []
    assert {h["id"] for h in hits(search(viewer_client, "stal*"))} == {"M1"}
    assert {h["id"] for h in hits(search(viewer_client, "prune OR kumquats"))} == {"M1", "T1"}
    assert {h["id"] for h in hits(search(viewer_client, "branch* -login"))} == {"M1"}


def test_a_phrase_is_checked_on_the_text_not_only_its_words(viewer_client, ledger):
    """The index keeps which rows hold a word, not where: rows with the words apart, or each
    word in another field, are candidates the page checks and leaves out."""
    t = ledger.turn(ledger.session(id="S1"), id="T1")
    ledger.message(t, 1, id="M1", content="the branch was deleted", created_at=T0)
    ledger.message(t, 2, id="M2", content="I deleted the branch", created_at=T0 + 1)
    ledger.tool_call(t, 1, id="C1", parameters='"deleted"', result='"the branch"')
    ledger.message(t, 3, id="M3", content="was it the branch?", created_at=T0 + 2)
    data = search(viewer_client, '"deleted the branch"')
    assert [h["id"] for h in hits(data)] == ["M2"]
    assert data["count_is_upper_bound"] and data["count"] == 3
    page = viewer_client.get(URL, {"q": '"deleted the branch"'}).content.decode()
    assert "Up to 3 matches" in page and "the phrase is checked" in page
    # Leaving out a phrase leaves out rows with the phrase, not rows with its words apart.
    left = {h["id"] for h in hits(search(viewer_client, 'branch -"branch was"'))}
    assert left == {"M2", "M3", "C1"}


@pytest.mark.parametrize(("cap", "value"), [("CHECK_CAP", 8), ("CHECK_BYTES", 80)])
def test_a_phrase_check_stops_at_its_cap_and_the_next_page_goes_on(
    viewer_client, ledger, monkeypatch, cap, value
):
    """Rows or bytes: 8 rows of 11 bytes pass both caps in the second batch of 4."""
    monkeypatch.setattr("search.results.CHECK_BATCH", 4)
    monkeypatch.setattr(f"search.results.{cap}", value)
    t = ledger.turn(ledger.session(id="S1"), id="T1")
    ledger.message(t, 0, id="OLD", content="exit code 1", created_at=T0)
    for i in range(1, 13):
        ledger.message(t, i, id=f"M{i}", content="code 1 exit", created_at=T0 + i)
    first = search(viewer_client, '"exit code 1"')
    assert hits(first) == [] and first["phrase_check_capped"] and first["next"]
    html = viewer_client.get(URL, {"q": '"exit code 1"'}).content.decode()
    assert "checked 8 rows" in html
    more = re.search(r'<a href="([^"]+)" hx-get=', html.split('id="more"')[1]).group(1)
    second = viewer_client.get(urljoin(URL, more.replace("&amp;", "&")) + "&format=json").json()
    assert [h["id"] for h in hits(second)] == ["OLD"] and second["next"] is None


# -- Following links -------------------------------------------------------------------------------


def test_every_hit_links_to_the_page_that_shows_it(viewer_client, conversation):
    page = parse_html(
        viewer_client.get(URL, {"q": "branch OR kumquats OR DeliveryTimeout"}).content
    )
    links = [a.get("href") for a in page.iterfind(".//li[@class]/div[@class='hit-head']/a")]
    assert links, "no hits"
    for href in links:
        target = urljoin("http://testserver" + URL, href)
        path, fragment = urlsplit(target).path, urlsplit(target).fragment
        landed = viewer_client.get(path)
        assert landed.status_code == 200, href
        if fragment:
            assert f'id="{fragment}"' in landed.content.decode(), href


def test_older_matches_come_in_pages_by_keyset(viewer_client, ledger):
    s = ledger.session(id="S1")
    t = ledger.turn(s, id="T1")
    for i in range(60):
        ledger.message(t, i, id=f"M{i:03d}", content=f"needle number {i}", created_at=T0 + i)
    first = search(viewer_client, "needle")
    assert first["count"] == 60 and first["next"]
    second = search(viewer_client, "needle", before=first["next"])
    ids = [h["id"] for h in hits(first)] + [h["id"] for h in hits(second)]
    assert ids == [f"M{i:03d}" for i in reversed(range(60))]  # newest first, each once
    assert second["next"] is None
    html = viewer_client.get(URL, {"q": "needle"}, headers={"HX-Request": "true"}).content.decode()
    more = re.search(r'<a href="([^"]+)" hx-get="([^"]+)"', html.split('id="more"')[1])
    assert more.group(1) == more.group(2)
    fragment = viewer_client.get(
        urljoin(URL, more.group(1).replace("&amp;", "&")), headers={"HX-Request": "true"}
    ).content.decode()
    assert "needle number 9<" not in fragment and "<mark>needle</mark> number 0" in fragment


def test_the_next_pages_carry_the_first_pages_count_instead_of_counting_again(
    viewer_client, ledger, monkeypatch
):
    t = ledger.turn(ledger.session(id="S1"), id="T1")
    for i in range(60):
        ledger.message(t, i, id=f"M{i:03d}", content=f"needle number {i}", created_at=T0 + i)
    html = viewer_client.get(URL, {"q": "needle"}).content.decode()
    more = re.search(r'<a href="([^"]+)" hx-get=', html.split('id="more"')[1]).group(1)
    counted = []
    monkeypatch.setattr("search.engine.count", lambda *args: counted.append(args) or 0)
    second = viewer_client.get(urljoin(URL, more.replace("&amp;", "&"))).content.decode()
    assert counted == [] and "60 matches" in second and "M000" in second


# -- Id jumps --------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("q", "lands_on", "anchor"),
    [
        ("S1", "/sessions/S1/", ""),
        ("T1", "/sessions/S1/turns/T1/", ""),
        ("M2", "/sessions/S1/turns/T1/", "message-M2"),
        ("C1", "/sessions/S1/turns/T1/", "call-C1"),
        ("R1", "/pipeline/requests/R1/", ""),
        ("discord:msg/998877", "/pipeline/requests/R1/", ""),
        ("discord:ops:main", "/sessions/S1/", ""),
    ],
)
def test_a_pasted_id_lands_on_its_page(viewer_client, conversation, q, lands_on, anchor):
    response = viewer_client.get(URL, {"q": f"  {q} "})
    assert response.status_code == 302
    path, _, fragment = response["Location"].partition("#")
    assert (path, fragment) == (lands_on, anchor)
    landed = viewer_client.get(path)
    assert landed.status_code == 200
    if anchor:
        assert f'id="{anchor}"' in landed.content.decode()
    htmx = viewer_client.get(URL, {"q": q}, headers={"HX-Request": "true"})
    assert htmx["HX-Redirect"] == response["Location"]


def test_the_header_box_on_every_page_searches(viewer_client, conversation):
    for page_url in ("/", "/sessions/", "/pipeline/requests/", "/sessions/S1/"):
        page = parse_html(viewer_client.get(page_url).content)
        form = page.find(".//header//form[@role='search']")
        assert form.get("method") == "get"
        name = form.find("input").get("name")
        action = urljoin("http://testserver" + page_url, form.get("action"))
        jump = viewer_client.get(action, {name: "C1"})
        assert jump["Location"] == "/sessions/S1/turns/T1/#call-C1"
        found = viewer_client.get(action, {name: "kumquats"})
        assert b"<mark>kumquats</mark>" in found.content


def test_an_id_shared_by_several_rows_lists_them(viewer_client, ledger):
    ledger.request(id="R1", event_id="evt-1")
    ledger.request(id="R2", event_id="evt-1")
    data = search(viewer_client, "evt-1")
    assert {(j["kind"], j["id"], j["url"]) for j in data["ids"]} == {
        ("event id", "R1", "/pipeline/requests/R1/"),
        ("event id", "R2", "/pipeline/requests/R2/"),
    }
    page = viewer_client.get(URL, {"q": "evt-1"})
    assert page.status_code == 200 and b'href="/pipeline/requests/R2/"' in page.content


def test_snippets_read_as_text_not_as_json_escapes_or_markdown(viewer_client, ledger):
    """A tool result is JSON text: its "\\u2014" is a dash and its "\\n" a line break; a
    message is Markdown: its **, ## and [link](url) are not words a person reads."""
    t = ledger.turn(ledger.session(id="S1"), id="T1")
    ledger.message(
        t,
        1,
        id="M1",
        role="assistant",
        content="## Plan\n\nThe **kumquat** step \u2014 see [the docs](https://x.test/a)",
    )
    ledger.tool_call(
        t,
        1,
        id="C1",
        parameters="{}",
        result=json.dumps({"out": 'kumquat \u2014 done\nnext: "quoted" \U0001f600'}),
    )
    found = {h["id"]: h["snippet"] for h in hits(search(viewer_client, "kumquat"))}
    assert found["M1"] == "Plan The <mark>kumquat</mark> step \u2014 see the docs"
    assert "\\u2014" not in found["C1"] and "\\n" not in found["C1"]
    assert "<mark>kumquat</mark> \u2014 done next: &quot;quoted&quot; \U0001f600" in found["C1"]


@pytest.mark.parametrize("pasted", ["01m8d38k5hy0yk89zr480nqmbp", "01M8D38K5HY0YK89ZR480NQMBP"])
def test_an_id_pasted_in_another_case_finds_its_row(viewer_client, ledger, pasted):
    """ULIDs are written in capitals and read the same in any case; a uuid in small letters."""
    ledger.request(id="01M8D38K5HY0YK89ZR480NQMBP")
    ledger.session(id="fed8ce56-bc79-401f-a83e-af084253362f")
    assert viewer_client.get(URL, {"q": pasted})["Location"] == (
        "/pipeline/requests/01M8D38K5HY0YK89ZR480NQMBP/"
    )
    response = viewer_client.get(URL, {"q": "FED8CE56-BC79-401F-A83E-AF084253362F"})
    assert response["Location"] == "/sessions/fed8ce56-bc79-401f-a83e-af084253362f/"


def test_an_id_of_a_turn_and_of_its_message_opens_the_turn_at_that_message(viewer_client, ledger):
    """Imported transcripts name a turn after its prompt's message: the same id, one place."""
    t = ledger.turn(ledger.session(id="S1"), id="same-uuid")
    ledger.message(t, 1, id="same-uuid", content="Please prune the stale branches")
    response = viewer_client.get(URL, {"q": "same-uuid"})
    assert response.status_code == 302
    assert response["Location"] == "/sessions/S1/turns/same-uuid/#message-same-uuid"


def test_an_id_naming_rows_on_two_pages_lists_them_without_saying_nothing_matches(
    viewer_client, ledger
):
    ledger.session(id="twin")
    ledger.request(id="twin")
    page = viewer_client.get(URL, {"q": "twin"}).content.decode()
    assert "is an id" in page and 'href="/sessions/twin/"' in page
    assert "Nothing matches" not in page
    assert "No text in the ledger holds it." in page


def test_a_phrase_no_row_holds_says_nothing_matches_without_an_upper_bound(viewer_client, ledger):
    t = ledger.turn(ledger.session(id="S1"), id="T1")
    ledger.message(t, 1, id="M1", content="the branch was deleted")
    ledger.message(t, 2, id="M2", content="was the branch deleted?")
    data = search(viewer_client, '"deleted the branch"')
    assert data["count"] == 0 and not data["count_is_upper_bound"] and hits(data) == []
    page = viewer_client.get(URL, {"q": '"deleted the branch"'}).content.decode()
    assert "Nothing matches" in page and "Up to" not in page


# -- Filters and bad input -------------------------------------------------------------------------


def test_filters_narrow_the_results(viewer_client, conversation, ledger):
    other = ledger.session(id="S2", persona="mnemo", routing_key="imessage:+1555:default")
    t2 = ledger.turn(other, id="T2", started_at=T0 - 10 * 86_400_000)
    ledger.message(t2, 1, id="M9", content="an old branch", created_at=T0 - 10 * 86_400_000)
    every = {h["id"] for h in hits(search(viewer_client, "branch"))}
    assert every == {"M2", "C1", "M9"}
    assert {h["id"] for h in hits(search(viewer_client, "branch", kind="tools"))} == {"C1"}
    assert {h["id"] for h in hits(search(viewer_client, "branch", persona="mnemo"))} == {"M9"}
    assert {h["id"] for h in hits(search(viewer_client, "branch", channel="imessage"))} == {"M9"}
    assert {h["id"] for h in hits(search(viewer_client, "branch", status="failed"))} == {
        "M2", "C1",
    }  # fmt: skip
    assert {h["id"] for h in hits(search(viewer_client, "branch", until="2025-11-20"))} == {"M9"}
    assert {h["id"] for h in hits(search(viewer_client, "branch", since=str(T0)))} == every - {"M9"}


@pytest.mark.parametrize(
    ("params", "message"),
    [
        ({"kind": "spaceships"}, "Unknown kind"),
        ({"since": "last tuesday"}, "not a time"),
        ({"until": "9" * 5000}, "out of range"),
        ({"since": "²"}, "not a time"),
        ({"until": "2025-02-30"}, "until=2025-02-30"),
        ({"window": "3y"}, "Unknown time window"),
        ({"before": "12abc"}, "page link is damaged"),
        ({"before": "²"}, "page link is damaged"),  # isdigit() says yes, int() no
        ({"before": "9" * 19}, "page link is damaged"),  # past SQLite's integers
    ],
)
def test_a_bad_parameter_is_explained_inline(viewer_client, conversation, params, message):
    response = viewer_client.get(URL, {"q": "branch", **params})
    assert response.status_code == 200
    assert message in response.content.decode()
    assert b"<mark>branch</mark>" in response.content  # the rest of the query still works


@pytest.mark.parametrize(
    ("q", "message"),
    [
        ('"deleted the branch', "quotation mark is not closed"),
        ("*", "no letters or digits"),
        ("-heartbeat", "Add a word to look for"),
        ("OR branch", "OR needs a word on each side"),
        ('NEAR(a b) "x" AND ) ( ^', "no letters or digits"),
    ],
)
def test_a_query_the_engine_cannot_read_gets_a_clear_message(
    viewer_client, conversation, q, message
):
    response = viewer_client.get(URL, {"q": q})
    assert response.status_code == 200
    assert message in parse_html(response.content).find(".//p[@id='query-error']").text
    assert search(viewer_client, q)["query_error"]


# -- Hostile text ----------------------------------------------------------------------------------


def test_html_control_characters_and_invalid_utf8_are_indexed_and_escaped(viewer_client, ledger):
    s = ledger.session(id="S1")
    t = ledger.turn(s, id="T1")
    ledger.message(
        t, 1, id="M1", content='<script>alert("xss")</script> marmalade\x00\x07 <b>x</b>'
    )
    ledger.conn.execute(
        "INSERT INTO messages (id, turn_id, role, content, sequence, created_at)"
        " VALUES ('M2', 'T1', 'user', CAST(X'6D61726D616C61646520FFFE21' AS TEXT), 2, ?)",
        (T0,),
    )
    response = viewer_client.get(URL, {"q": "marmalade"})
    html = response.content.decode()
    assert response.status_code == 200
    assert "<script>alert" not in html and "&lt;script&gt;alert" in html
    assert html.count("<mark>marmalade</mark>") == 2
    parse_html(response.content)


def test_a_word_deep_inside_a_huge_tool_result_is_found(viewer_client, ledger):
    s = ledger.session(id="S1")
    t = ledger.turn(s, id="T1")
    huge = json.dumps({"log": "lorem ipsum " * 300_000 + "zanzibar at the very end"})  # 3.6 MB
    ledger.tool_call(t, 1, id="C1", result=huge)
    found = hits(search(viewer_client, "zanzibar"))
    assert [(h["id"], h["fields"]) for h in found] == [("C1", ["result"])]
    assert "<mark>zanzibar</mark> at the very end" in found[0]["snippet"]
    assert len(found[0]["snippet"]) < 1000


# -- Index freshness -------------------------------------------------------------------------------


def test_the_page_says_how_far_the_index_reaches(viewer_client, conversation, monkeypatch):
    monkeypatch.setattr("search.views.INDEX_BUDGET_S", 0)  # pages do not index
    data = search(viewer_client, "branch")
    assert data["index"]["not_yet_indexed"] == {
        "messages": 2,
        "tool calls": 1,
        "requests": 1,
        "sessions": 1,
        "compaction summaries": 1,
    }
    assert hits(data) == []
    status = parse_html(viewer_client.get(URL, {"q": "branch"}).content).find(
        ".//p[@id='index-status']"
    )
    text = " ".join("".join(status.itertext()).split())
    assert text.startswith("The index is still being built; 2 newer messages, 1 newer tool calls")
    assert text.endswith("not yet searchable.")
    monkeypatch.setattr("search.views.INDEX_BUDGET_S", 60)
    status = parse_html(viewer_client.get(URL, {"q": "branch"}).content).find(
        ".//p[@id='index-status']"
    )
    assert "".join(status.itertext()).startswith("Index up to date as of")


# -- Find in a session -----------------------------------------------------------------------------


def test_the_session_find_box_without_javascript_searches_only_that_session(
    viewer_client, conversation, ledger
):
    other = ledger.session(id="S2", label="Elsewhere")
    ledger.message(ledger.turn(other, id="T9"), 1, id="M9", content="a branch elsewhere")
    page = parse_html(viewer_client.get("/sessions/S1/").content)
    form = page.find(".//form[@class='find-in-session']")
    fields = {i.get("name"): i.get("value") or "" for i in form.iter("input")}
    assert fields == {"session": "S1", "q": ""}
    response = viewer_client.get(form.get("action"), fields | {"q": "branch"})
    results = parse_html(response.content)
    assert {h.get("href") for h in results.iterfind(".//div[@class='hit-head']/a")} == {
        "/sessions/S1/turns/T1/#message-M2", "/sessions/S1/turns/T1/#call-C1",
    }  # fmt: skip
    everywhere = results.find(".//p[@class='notice']/a[2]")
    assert everywhere.text == "search everywhere"
    wider = viewer_client.get(URL + everywhere.get("href").replace("&amp;", "&"))
    assert b"/sessions/S2/turns/T9/#message-M9" in wider.content


def test_find_in_session_names_matching_turns_and_failures(viewer_client, ledger):
    s = ledger.session(id="S1")
    t1 = ledger.turn(s, id="T1", started_at=T0)
    ledger.message(t1, 1, content="kumquat")
    t2 = ledger.turn(s, t1, id="T2", started_at=T0 + 1, status="failed")
    t3 = ledger.turn(s, t2, id="T3", started_at=T0 + 2)
    ledger.tool_call(t3, 1, status="failed", error="kumquat exploded")
    ledger.turn(ledger.session(id="S2"), id="T4")
    ledger.set_head(s, t1, t3)
    form = parse_html(viewer_client.get("/sessions/S1/").content).find(
        ".//form[@class='find-in-session']"
    )
    url = form.get("data-find-url")
    assert viewer_client.get(url, {"q": "kumquat"}).json()["turn_ids"] == ["T1", "T3"]
    failures = viewer_client.get(url, {"failures": "1"}).json()
    assert failures["failures"] == ["T2", "T3"]
    assert failures["failure_kinds"] == ["turn", "tool call"]  # T3 completed, a call failed
    assert "not closed" in viewer_client.get(url, {"q": '"kumquat'}).json()["error"]
    turn_url = form.get("data-turn-url").replace("TURN-ID-PLACEHOLDER", "T3")
    assert viewer_client.get(turn_url, {"find": "kumquat"}).status_code == 200


def test_a_full_page_of_hits_costs_a_bounded_number_of_queries(
    viewer_client, ledger, django_assert_max_num_queries
):
    s = ledger.session(id="S1")
    for i in range(60):
        t = ledger.turn(s, id=f"T{i:03d}", started_at=T0 + i)
        ledger.message(t, 1, id=f"M{i:03d}", content=f"needle {i}", created_at=T0 + i)
        ledger.tool_call(t, 1, id=f"C{i:03d}", result=f'"needle {i}"')
    viewer_client.get(URL, {"q": "warm up"})  # the index is built by this first page
    # On PostgreSQL each of the four searches (count and page, each of rows of one document
    # and of rows over 64 KB) sets its time limit in a transaction of its own: in the test's
    # transaction, a savepoint and its release.
    time_limits = 8 if connections["default"].vendor == "postgresql" else 0
    # + 2: the labels the filter offers and people's notes (search/notes.py), one query each.
    with (
        django_assert_max_num_queries(14 + time_limits),
        django_assert_max_num_queries(25, connection=connections[LEDGER]),
    ):
        page = viewer_client.get(URL, {"q": "needle"})
    assert page.content.count(b"<mark>needle</mark>") == 50


def test_a_broken_ledger_is_searched_without_errors_and_stays_inert(viewer_client, ledger):
    from hostile import PAYLOAD, build_broken_ledger
    from test_hostile_ledger import assert_inert

    build_broken_ledger(ledger)
    for q in ("alert", "evil", "onerror", "seconds", PAYLOAD, "S1", "T2", "C1", "R1", "\x07"):
        for params in ({"q": q}, {"q": q, "format": "json"}, {"q": q, "kind": "requests"}):
            response = viewer_client.get(URL, params)
            assert response.status_code in (200, 302), (q, response.status_code)
            assert_inert(response, f"{URL}?{params}")
    page = viewer_client.get(URL, {"q": "alert"})
    parse_html(page.content)
    assert page.content.count(b"<mark>alert</mark>") >= 3


def test_a_busy_index_does_not_stop_a_search(viewer_client, conversation, monkeypatch):
    from django.db import OperationalError

    from search import indexer

    viewer_client.get(URL, {"q": "warm up"})  # indexed

    def locked(*args, **kwargs):
        raise OperationalError("database is locked")

    monkeypatch.setattr(indexer, "step", locked)  # another worker holds the index too long
    response = viewer_client.get(URL, {"q": "kumquats"})
    assert response.status_code == 200
    assert b"<mark>kumquats</mark>" in response.content


def test_the_filter_form_swaps_only_the_results_when_htmx_asks(viewer_client, conversation):
    from builders import parse_fragment

    page = parse_html(viewer_client.get(URL, {"q": "branch"}).content)
    form = page.find(".//form[@id='search-filters']")
    assert (form.get("hx-get"), form.get("hx-target")) == (URL, "#results")
    fragment = viewer_client.get(
        form.get("hx-get"), {"q": "branch", "kind": "tools"}, headers={"HX-Request": "true"}
    )
    html = fragment.content.decode()
    assert "<html" not in html and 'id="search-filters"' not in html
    parse_fragment(html)
    assert html.count('class="hit ') == 1 and "#call-C1" in html


def test_a_search_that_runs_too_long_says_so(viewer_client, conversation, monkeypatch):
    viewer_client.get(URL, {"q": "warm up"})  # indexed
    monkeypatch.setattr("search.engine.QUERY_LIMIT_S", 0)
    monkeypatch.setattr("search.engine.PROGRESS_STEPS", 1)  # (a tiny index answers at once)
    # PostgreSQL's limit is at least 1 ms, which a tiny index beats: its search is made slow.
    slow = "r.body @@ %s::tsquery AND (SELECT true FROM pg_sleep(0.05))"
    monkeypatch.setattr("search.engine_postgres.MATCH_SQL", slow)
    response = viewer_client.get(URL, {"q": "branch"})
    assert response.status_code == 200
    assert "took too long" in parse_html(response.content).find(".//p[@id='query-error']").text


def test_a_huge_query_is_refused_with_a_message(viewer_client, conversation):
    response = viewer_client.get(URL, {"q": "branch " * 500})
    assert response.status_code == 200
    assert "longer than 1,000 characters" in response.content.decode()


def test_odd_values_are_found_and_answered_as_json(viewer_client, ledger):
    """A REAL time is indexed at its millisecond (not 0: a window would drop it), and a BLOB
    label answers the JSON twin as text, not a 500."""
    s = ledger.session(id="S9", label=b"blob label")
    t = ledger.turn(s, id="T9")
    ledger.set_head(s, t, t)
    ledger.message(t, 1, id="M9", content="a marmalade question", created_at=T0 + 0.5)
    data = search(viewer_client, "marmalade", since=str(T0 - 1000))
    assert [h["id"] for h in hits(data)] == ["M9"]  # indexed at 0 it fell outside the window
    assert [g["label"] for g in data["groups"]] == ["blob label"]


def test_a_huge_session_id_and_persona_are_indexed_and_filter_the_results(viewer_client, ledger):
    """Filter values are whatever the ledger holds: an id or persona of 10 kB is kept once and
    found by its filter (on PostgreSQL a B-tree entry stops at ~2.7 kB: the values are unique
    by a hash of their text)."""
    noise = "".join(hashlib.sha256(str(i).encode()).hexdigest() for i in range(160))
    huge_id, huge_persona = "S" + noise, "persona-" + noise  # 10 kB that do not compress
    s = ledger.session(id=huge_id, persona=huge_persona)
    t = ledger.turn(s, id="T7")
    ledger.set_head(s, t, t)
    ledger.message(t, 1, id="M7", content="a quince tart")
    other = ledger.session(id="S8")
    t8 = ledger.turn(other, id="T8")
    ledger.message(t8, 1, id="M8", content="another quince")
    assert {h["id"] for h in hits(search(viewer_client, "quince"))} == {"M7", "M8"}
    assert [h["id"] for h in hits(search(viewer_client, "quince", persona=huge_persona))] == ["M7"]
    assert [h["id"] for h in hits(search(viewer_client, "quince", session=huge_id))] == ["M7"]


def test_a_word_of_600_letters_is_found_by_itself(viewer_client, ledger):
    """PostgreSQL keeps a word by its first 500 characters (a lexeme stops at 2 kB): the query's
    word is cut the same way, so it still finds the row."""
    word = "".join(hashlib.sha256(str(i).encode()).hexdigest() for i in range(10))[:600]
    s = ledger.session(id="S6")
    t = ledger.turn(s, id="T6")
    ledger.set_head(s, t, t)
    ledger.message(t, 1, id="M6", content=f"token {word} end")
    assert [h["id"] for h in hits(search(viewer_client, word))] == ["M6"]


# -- Text in every script (one folding for index and query, on both engines) ----------------------


@pytest.fixture
def scripts(ledger):
    """Messages in many scripts; each test asks for words inside them."""
    t = ledger.turn(ledger.session(id="S1"), id="T1")
    texts = {
        "RU": "Переключить интерфейс на Русский язык",
        "UK": "мой ключ",
        "EL": "Η τιμή a₁ και μ₀ είναι σταθερή",
        "EL2": "ε₀ is the permittivity",
        "EL3": "ε0 written plainly",
        "KO": "한국어를 배우고 있어요",
        "JA": "デフォルトポート3000に修正しました",
        "JA2": "テストを追加してから更新する",
        "ZH": "我们已经更新了数据库的配置",
        "AR": "العَرَبِيَّة لغة جميلة",
        "HE": "שָׁלוֹם עוֹלָם",
        "TH": "ภาษาไทยเป็นภาษาที่สวยงาม",
        "EMOJI": "deploy done 🎉 celebrate",
        "LATIN": "the theory of everything",
        "FR": "Le café est très naïf",
        "FULL": "ＦＵＬＬ ｗｉｄｔｈ ｶﾀｶﾅ",
    }
    for i, (mid, text) in enumerate(texts.items()):
        ledger.message(t, i, id=mid, content=text, created_at=T0 + i)
    return texts


@pytest.mark.parametrize(
    ("q", "ids"),
    [
        ("русский", {"RU"}),
        ("РУССКИЙ ЯЗЫК", {"RU"}),
        ("мои", set()),  # й is a letter of its own, not и with a mark
        ("мой", {"UK"}),
        ("a₁", {"EL"}),
        ("a1", {"EL"}),
        ("μ₀", {"EL"}),
        ("ε₀", {"EL2", "EL3"}),
        ("τιμη", {"EL"}),  # accents folded, as for Latin
        ("한국어", {"KO"}),  # a word inside its eojeol (the particle 를 clings to it)
        ("한국어를", {"KO"}),
        ("デフォルトポート3000に修正", {"JA"}),
        ("ポート", {"JA"}),
        ("テフォルト", set()),  # voicing marks are kept: デ is not テ
        ("追加", {"JA2"}),
        ("更新", {"JA2", "ZH"}),
        ("数据库", {"ZH"}),
        ("库的配", {"ZH"}),
        ("新", {"JA2", "ZH"}),  # one character: the pairs it starts
        ("据数", set()),
        ("العربية", {"AR"}),  # vowel marks folded
        ("שלום", {"HE"}),  # points folded
        ("ภาษาไทย", {"TH"}),
        ("สวยงาม", {"TH"}),
        ("🎉", {"EMOJI"}),
        ("th", set()),  # no pairs of Latin letters: no false hits
        ("theor*", {"LATIN"}),
        ("cafe", {"FR"}),
        ("NAÏF", {"FR"}),
        ("full", {"FULL"}),
        ("カタカナ", {"FULL"}),
    ],
)
def test_words_in_every_script_are_found_by_one_folding(viewer_client, scripts, q, ids):
    found = {h["id"] for h in hits(search(viewer_client, q))}
    assert found == ids


def test_a_word_inside_a_japanese_sentence_is_marked_in_its_snippet(viewer_client, scripts):
    [hit] = hits(search(viewer_client, "追加"))
    assert "テストを<mark>追加</mark>してから" in hit["snippet"]
