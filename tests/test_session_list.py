"""/sessions/: search, filters in the query string, keyset pages, capped counts, JSON twin."""

from urllib.parse import quote

import pytest
from builders import LEDGER_DB, T0, parse_fragment, parse_html
from django.db import connections
from django.urls import reverse

from ledgerweb.db import LEDGER
from sessions.listing import PAGE_SIZE

pytestmark = LEDGER_DB
DAY = 86_400_000


def rows_of(response) -> list[str]:
    """The list's rows as a person reads them: each row's text."""
    rows = parse_html(response.content).iterfind(".//tbody[@id='rows']/tr")
    return [" ".join("".join(tr.itertext()).split()) for tr in rows]


def listed(client, query="") -> list[str]:
    data = client.get(f"/sessions/?format=json&{query}").json()
    return [s["id"] for s in data["sessions"]]


@pytest.fixture
def sessions(ledger):
    mom = ledger.session(id="S-mom", label="Mom - General", updated_at=T0 + 5 * DAY)
    ledger.session(
        id="S-work",
        label="Alex - work",
        routing_key="gmail:alex@example.com:inbox",
        updated_at=T0 + 4 * DAY,
        created_at=T0 + 3 * DAY,
    )
    ledger.session(id="S-old", label="Old trip", status="archived", updated_at=T0 + 3 * DAY)
    ledger.session(
        id="S-code",
        persona="echo",
        label=None,
        routing_key="cursor:ledgerweb:1",
        updated_at=T0 + 2 * DAY,
        created_at=T0 + 4 * DAY,
    )
    ledger.session(id="S-fork", label="Retry", routing_key="fork:S-mom:S-fork", updated_at=T0 + DAY)
    ledger.session(
        id="S-sub",
        label="Find callers",
        routing_key="subagent:S-code:toolu_1",
        persona="echo",
        updated_at=T0,
    )
    return mom


def test_archived_sessions_are_hidden_unless_asked_for(viewer_client, sessions):
    assert "S-old" not in listed(viewer_client)
    assert listed(viewer_client, "status=archived") == ["S-old"]
    assert "S-old" in listed(viewer_client, "status=all")


def test_sessions_come_newest_activity_first_or_by_creation(viewer_client, sessions):
    assert listed(viewer_client) == ["S-mom", "S-work", "S-code", "S-fork", "S-sub"]
    assert listed(viewer_client, "sort=created")[:2] == ["S-code", "S-work"]


@pytest.mark.parametrize(
    ("query", "expected"),
    [
        ("q=mom", ["S-mom", "S-fork"]),  # the fork's routing key names S-mom
        ("q=S-wo", ["S-work"]),
        ("q=ledgerweb", ["S-code"]),
        ("persona=echo", ["S-code", "S-sub"]),
        ("channel=gmail", ["S-work"]),
        ("kind=fork", ["S-fork"]),
        ("kind=subagent", ["S-sub"]),
        ("kind=main", ["S-mom", "S-work", "S-code"]),
        ("since=2025-11-28&until=2025-11-29", ["S-mom", "S-work"]),
    ],
)
def test_each_filter_narrows_the_list(viewer_client, sessions, query, expected):
    assert listed(viewer_client, query) == expected


def test_a_bad_filter_value_is_explained_not_an_error(viewer_client, sessions):
    response = viewer_client.get("/sessions/?since=yesterday&kind=robot&sort=size")
    assert response.status_code == 200
    page = response.content.decode()
    assert "since=yesterday: not a date; give YYYY-MM-DD; this filter is not applied" in page
    assert "kind=robot: choose main, subagent or fork" in page
    assert "sort=size: choose activity, created or cost; sorted by last activity" in page


def test_rows_show_turns_branches_and_the_heads_question(viewer_client, ledger):
    s = ledger.session(id="S1")
    root = ledger.turn(s)
    left = ledger.turn(s, root)
    right = ledger.turn(s, root)
    ledger.message(right, 1, content="Book the 7am instead\nand tell Dad")
    ledger.set_head(s, root, right)
    row = viewer_client.get("/sessions/?format=json").json()["sessions"][0]
    assert (row["turns"], row["branches"], row["hint"]) == (3, 2, "Book the 7am instead")
    assert left  # a second leaf


def test_pages_follow_a_keyset_cursor_without_gaps_or_repeats(viewer_client, ledger):
    for i in range(PAGE_SIZE + 7):
        ledger.session(id=f"S{i:03d}", updated_at=T0 + (i // 3))  # ties on updated_at
    first = viewer_client.get("/sessions/?format=json").json()
    second = viewer_client.get(f"/sessions/?format=json&after={first['next']}").json()
    ids = [s["id"] for s in first["sessions"] + second["sessions"]]
    assert len(first["sessions"]) == PAGE_SIZE and second["next"] is None
    assert sorted(ids) == sorted(f"S{i:03d}" for i in range(PAGE_SIZE + 7))


def test_htmx_filtering_returns_only_the_results_fragment(viewer_client, sessions):
    response = viewer_client.get("/sessions/?persona=echo", headers={"HX-Request": "true"})
    body = response.content.decode()
    assert "<html" not in body and 'id="rows"' in body and "S-code" in body
    parse_fragment(body)


def test_html_and_json_list_the_same_sessions(viewer_client, sessions):
    html = viewer_client.get("/sessions/?persona=atlas").content.decode()
    for session_id in listed(viewer_client, "persona=atlas"):
        assert f"/sessions/{session_id}/" in html


def test_the_list_page_runs_a_bounded_number_of_queries(
    viewer_client, ledger, django_assert_max_num_queries
):
    for i in range(60):
        s = ledger.session(id=f"S{i}")
        t = ledger.turn(s)
        ledger.message(t, 1)
        ledger.set_head(s, t, t)
    # +2 for the costs: the ledger's tables (is turn_usage there?) and one grouped query; +2
    # for the ledger's version, which a worker keeps the page's ledger part and the filters'
    # choices under
    with django_assert_max_num_queries(12, connection=connections[LEDGER]):
        viewer_client.get("/sessions/")


def test_an_unchanged_ledger_is_not_read_again_for_the_same_list(
    viewer_client, ledger, django_assert_max_num_queries
):
    """Issue 33: a worker keeps the ledger's part of a list page while the ledger is unchanged
    (PRAGMA data_version); asking again reads only that version, and the page is the same."""
    for i in range(60):
        s = ledger.session(id=f"S{i}", persona="atlas" if i % 2 else "echo", updated_at=T0 + i)
        t = ledger.turn(s, model="gpt-5", prompt_tokens=1000)
        ledger.set_head(s, t, t)
    for query in ("format=json", "persona=echo&sort=cost&format=json", "status=all&kind=main"):
        first = viewer_client.get(f"/sessions/?{query}")
        # The version, for the page's part and for the filters' choices, in the request's read
        # transaction (here a savepoint and its release).
        with django_assert_max_num_queries(4, connection=connections[LEDGER]):
            again = viewer_client.get(f"/sessions/?{query}")
        if "json" in query:
            assert again.json() == first.json()
        else:
            assert rows_of(again) == rows_of(first) and len(rows_of(first)) == PAGE_SIZE + 1  # more


# transaction=True: each request reads the ledger afresh, as a worker does (inside the test's
# transaction the read connection would keep its first snapshot).
@pytest.mark.django_db(transaction=True, databases="__all__")
def test_a_commit_to_the_ledger_shows_on_the_next_request(viewer_client, ledger):
    """What a worker kept is dropped when anyone commits: a new turn, a new session, a status
    set by the runtime all show at once, however often the list was asked before."""
    s = ledger.session(id="S1", updated_at=T0)
    t = ledger.turn(s)
    ledger.set_head(s, t, t)
    for _ in range(2):
        listed = viewer_client.get("/sessions/?format=json").json()["sessions"]
        assert [r["turns"] for r in listed] == [1]
    ledger.turn(s)
    ledger.session(id="S2", updated_at=T0 + 1)
    listed = viewer_client.get("/sessions/?format=json").json()["sessions"]
    assert [(r["id"], r["turns"]) for r in listed] == [("S2", 0), ("S1", 2)]
    ledger.conn.execute("UPDATE sessions SET status = 'archived' WHERE id = 'S2'")
    page = viewer_client.get("/sessions/").content.decode()
    assert "/sessions/S2/" not in page and "/sessions/S1/" in page


def test_labels_with_markup_are_escaped(viewer_client, ledger):
    ledger.session(label="<script>alert(1)</script>", routing_key="<b>x</b>:y")
    page = viewer_client.get("/sessions/").content.decode()
    assert "<script>alert(1)" not in page and "&lt;script&gt;" in page
    parse_html(page)


def test_rows_show_each_session_escaped_and_link_to_it(viewer_client, ledger):
    """The rows, drawn by their Jinja2 template: every ledger value escaped, the links right."""
    evil = '<img src=x onerror=alert(1)>"'
    s = ledger.session(
        id="S/1 <x>", label=None, persona=evil, routing_key="subagent:S0:call-1", status="odd <b>"
    )
    root = ledger.turn(s)
    head = ledger.turn(s, root)
    ledger.message(head, 1, content=f"{evil} please")
    ledger.set_head(s, root, head)
    page = viewer_client.get("/sessions/?status=all").content.decode()
    tree = parse_html(page)
    (row,) = [tr for tr in tree.iter("tr") if tr.find("td/a") is not None]
    link = row.find("td/a")
    assert link.get("href") == reverse("sessions:detail", args=["S/1 <x>"])
    assert "".join(link.itertext()) == "subagent · subagent:S0:call-1"
    cells = ["".join(td.itertext()).strip() for td in row.findall("td")]
    hint = next(div for div in row.iter("div") if div.get("class") == "hint muted small")
    assert hint.text == f"“{evil} please”"  # the head's question, as text
    assert cells[1:6] == [evil, "—", "odd <b>", "2", "1"]  # its parent S0 is not in the ledger
    assert row.find("td/span").get("class") == "kind kind-subagent"
    assert "<img src=x" not in page
    assert viewer_client.get(link.get("href")).status_code == 200


def _status_options(page: bytes) -> list[tuple[str, str, bool]]:
    select = parse_html(page).find(".//select[@id='f-status']")
    return [(o.get("value"), o.text, o.get("selected") is not None) for o in select]


def test_no_two_status_options_list_the_same_sessions(viewer_client, ledger):
    for status in ("active", "archived", "deleted"):
        ledger.session(id=f"S-{status}", status=status)
    listed_by = {}
    for value, label, _ in _status_options(viewer_client.get("/sessions/").content):
        # Following the option as the form does: the option comes back selected.
        page = viewer_client.get("/sessions/", {"status": value}).content
        assert [o[0] for o in _status_options(page) if o[2]] == ([value] if value else [])
        listed_by[label] = tuple(listed(viewer_client, f"status={value}"))
    assert listed_by == {
        "not archived": ("S-active",),
        "archived": ("S-archived",),
        "deleted": ("S-deleted",),
        "all": ("S-deleted", "S-archived", "S-active"),
    }


def test_a_status_from_the_address_is_shown_selected(viewer_client, ledger):
    ledger.session(id="S-paused", status="paused")
    page = viewer_client.get("/sessions/?status=paused").content
    assert ("paused", "paused", True) in _status_options(page)
    assert listed(viewer_client, "status=paused") == ["S-paused"]


def test_a_value_the_list_offers_selects_exactly_the_sessions_holding_it(viewer_client, ledger):
    """Spaces and '' are part of a stored value: the persona select offers " sp ", and
    ?status=archived%20 names a status of its own. Only the search box's text is trimmed."""
    for n, value in enumerate(("sp", " sp ", "")):
        ledger.session(id=f"S-persona-{n}", persona=value, status="active")
    ledger.session(id="S-archived", status="archived", persona="x")
    ledger.session(id="S-archived-sp", status="archived ", persona="x", label="Trip")
    page = viewer_client.get("/sessions/?status=all").content
    select = parse_html(page).find(".//select[@id='f-persona']")
    offered = [o.get("value") for o in select][1:]  # after "any" (a persona of '' is not one)
    assert sorted(offered) == [" sp ", "sp", "x"]
    for n, value in enumerate(("sp", " sp ")):  # '' is "any" in a form: a person means that
        assert listed(viewer_client, f"status=all&persona={quote(value)}") == [f"S-persona-{n}"]
    assert listed(viewer_client, "status=archived%20") == ["S-archived-sp"]
    assert listed(viewer_client, "status=archived") == ["S-archived"]
    following = viewer_client.get("/sessions/?status=archived%20").content
    assert ("archived ", "archived ", True) in _status_options(following)
    assert listed(viewer_client, "status=all&q=%20Trip%20") == ["S-archived-sp"]  # typed: trimmed


@pytest.fixture
def family(ledger):
    """Chats on two channels, with forks and subagents, and routing keys that lead nowhere."""
    ledger.session(id="S-chat", routing_key="imessage:+1555:default")
    ledger.session(id="S-mail", routing_key="gmail:a@example.com:inbox")
    ledger.session(id="S-fork", routing_key="fork:S-chat:S-fork")
    ledger.session(id="S-sub-of-fork", routing_key="subagent:S-fork:toolu_1")
    ledger.session(id="S-fork-of-mail", routing_key="fork:S-mail:S-fork-of-mail")
    ledger.session(id="S-dangling", routing_key="fork:nowhere:S-dangling")
    ledger.session(id="S-loop-a", routing_key="fork:S-loop-b:S-loop-a")
    ledger.session(id="S-loop-b", routing_key="fork:S-loop-a:S-loop-b")
    return ledger


def test_the_channel_filter_keeps_the_forks_and_subagents_of_its_sessions(
    viewer_client, family, monkeypatch
):
    page = viewer_client.get("/sessions/").content
    options = parse_html(page).iterfind(".//select[@id='f-channel']/option")
    assert [o.get("value") for o in options] == ["", "gmail", "imessage"]
    # Choosing iMessage in the form: its chat, the chat's fork and the fork's subagent.
    chosen = viewer_client.get("/sessions/", {"channel": "imessage"}).content.decode()
    for session_id in ("S-chat", "S-fork", "S-sub-of-fork"):
        assert f'href="/sessions/{session_id}/"' in chosen
    assert "3 sessions" in chosen
    assert sorted(listed(viewer_client, "channel=imessage")) == [
        "S-chat",
        "S-fork",
        "S-sub-of-fork",
    ]
    assert sorted(listed(viewer_client, "channel=gmail")) == ["S-fork-of-mail", "S-mail"]
    # A common channel (past the count's cap) walks the newest sessions: the same ones.
    indexed = listed(viewer_client, "channel=imessage")
    monkeypatch.setattr("sessions.listing.COUNT_CAP", 2)
    assert listed(viewer_client, "channel=imessage") == indexed


def test_the_channel_filter_offers_a_channel_whose_name_extends_another(viewer_client, ledger):
    """'ab-x:1' sorts before 'ab:1' but its channel after 'ab': every channel is still found (on
    PostgreSQL the skip-scan once sorted by the channel, not the key, and lost 'ab-x')."""
    ledger.session(id="S-ab", routing_key="ab:1")
    ledger.session(id="S-abx", routing_key="ab-x:1")
    page = viewer_client.get("/sessions/").content
    options = parse_html(page).iterfind(".//select[@id='f-channel']/option")
    assert [o.get("value") for o in options] == ["", "ab-x", "ab"]
    assert listed(viewer_client, "channel=ab-x") == ["S-abx"]


def test_the_channel_filter_is_one_bounded_query_on_a_page(
    viewer_client, family, django_assert_max_num_queries
):
    for i in range(60):  # more forks than a page, each its own origin's
        family.session(id=f"S-fork-{i:02d}", routing_key=f"fork:S-chat:S-fork-{i:02d}")
    # +2 for the costs: the ledger's tables (is turn_usage there?) and one grouped query; +3
    # for the forks: the turns they inherit, what those cost, and their origins' channels; +2
    # for the ledger's versions (test_the_list_page_runs_a_bounded_number_of_queries)
    with django_assert_max_num_queries(15, connection=connections[LEDGER]):
        viewer_client.get("/sessions/?channel=imessage")


def test_a_forks_and_a_subagents_channel_is_the_one_the_channel_filter_keeps_them_under(
    viewer_client, family
):
    """The column said "fork" or "subagent", which the channel filter does not offer."""
    page = viewer_client.get("/sessions/?status=all").content.decode()
    channels = {}
    for row in parse_html(page).iterfind(".//table[@class='sessions']/tbody/tr"):
        link, channel = row.find("td[1]/a"), row.find("td[3]/code")
        channels[link.get("href").split("/")[2]] = channel.text
    assert channels == {
        "S-chat": "imessage", "S-fork": "imessage", "S-sub-of-fork": "imessage",
        "S-mail": "gmail", "S-fork-of-mail": "gmail",
        "S-dangling": "—", "S-loop-a": "—", "S-loop-b": "—",  # no origin to name one
    }  # fmt: skip
    offered = {
        o.get("value") for o in parse_html(page).iterfind(".//select[@id='f-channel']/option")
    }
    assert {c for c in channels.values() if c != "—"} <= offered
    rows = viewer_client.get("/sessions/?format=json&status=all").json()["sessions"]
    assert {r["id"]: r["channel"] for r in rows}["S-sub-of-fork"] == "imessage"


def test_a_fresh_fork_counts_the_turns_it_inherits_and_what_they_cost(viewer_client, ledger):
    """A fork made at the 20th turn holds no turn of its own yet: it said 0 turns, 0 branches
    and no cost, though its page shows the 20 turns it continues."""
    origin = ledger.session(id="S-origin", updated_at=T0)
    parent = root = None
    for i in range(20):
        parent = ledger.turn(origin, parent, id=f"T{i:02d}", started_at=T0 + i)
        root = root or parent
    ledger.set_head(origin, root, parent)
    fork = ledger.session(id="S-fork", routing_key="fork:S-origin:S-fork", updated_at=T0 + 1)
    ledger.set_head(fork, root, parent)
    rows = {r["id"]: r for r in viewer_client.get("/sessions/?format=json").json()["sessions"]}
    assert (rows["S-fork"]["turns"], rows["S-fork"]["inherited_turns"]) == (0, 20)
    assert rows["S-fork"]["branches"] == 1
    assert rows["S-fork"]["inherited_cost"] == rows["S-origin"]["cost"]  # the same 20 turns
    assert rows["S-origin"]["inherited_turns"] == 0
    page = viewer_client.get("/sessions/").content.decode()
    row = next(r for r in parse_html(page).iterfind(".//table[@class='sessions']/tbody/tr")
               if r.find("td[1]/a").get("href") == "/sessions/S-fork/")  # fmt: skip
    cells = [" ".join("".join(td.itertext()).split()) for td in row.findall("td")]
    assert cells[4] == "0 + 20 inherited" and cells[5] == "1"
    assert "inherited" in cells[6] and "$" in cells[6]


def test_a_subagent_of_a_session_whose_key_has_one_colon_is_listed_with_that_channel(
    viewer_client, ledger
):
    """routing_parent() of a key with one colon is a negative substring length, which
    PostgreSQL refuses: the page answered 500 on a central ledger of imported transcripts."""
    ledger.session(id="S-main", routing_key="ai-music:/Users/chip/dev/ai-music")
    ledger.session(id="S-sub", routing_key="subagent:S-main:toolu_1")
    rows = {
        r["id"]: r["channel"]
        for r in viewer_client.get("/sessions/?format=json").json()["sessions"]
    }
    assert rows == {"S-main": "ai-music", "S-sub": "ai-music"}
