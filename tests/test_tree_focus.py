"""Focus on a part of the tree and mark it (issue 28): hoisting a subtree (kept in the address),
collapsing branches, turns marked visited as a person opens them, and bookmarks with a note —
all a person's own, in ledgerweb's database, never the ledger."""

import hashlib
import re
from pathlib import Path

import pytest
from builders import LEDGER_DB, T0, parse_html
from django.conf import settings

from annotations.models import Annotation, Visit
from ledgerweb.db import is_postgres_url

pytestmark = LEDGER_DB


@pytest.fixture
def branched(ledger):
    """R → A → A1 → A2 (head), and R → B → B1, B → B2: two branch points. Drawn R, B, B1, B2,
    A, A1, A2 (the head's branch last)."""
    s = ledger.session(id="S1")
    turns = {}
    for n, (turn_id, parent) in enumerate(
        [("R", None), ("A", "R"), ("B", "R"), ("A1", "A"), ("A2", "A1"), ("B1", "B"), ("B2", "B")]
    ):
        turns[turn_id] = ledger.turn(s, turns.get(parent), id=turn_id, started_at=T0 + n)
        ledger.message(turns[turn_id], 1, content=f"prompt of {turn_id}")
    ledger.set_head(s, turns["R"], turns["A2"])
    return s


def row_ids(html: str) -> list[str]:
    return re.findall(r'data-turn="([^"]+)"', html)


def test_hoisting_shows_only_a_turns_descendants_with_ways_back_up(viewer_client, branched):
    html = viewer_client.get("/sessions/S1/?hoist=B").content.decode()
    parse_html(html)
    assert row_ids(html) == ["B", "B1", "B2"]
    assert "Hoisted at turn" in html
    assert 'class="hoist-up" href="/sessions/S1/?hoist=R"' in html  # up a level: its parent
    assert 'class="hoist-whole" href="/sessions/S1/?at=B"' in html  # the whole tree, there
    # Rows keep the hoist in their address: a reload (or a shared link) shows the same.
    assert 'href="/sessions/S1/turns/B1/?hoist=B"' in html
    page = viewer_client.get("/sessions/S1/turns/B1/?hoist=B").content.decode()
    assert row_ids(page) == ["B", "B1", "B2"] and "Turn <code>B1</code>" in page


def test_a_hoist_at_an_unknown_turn_says_so_and_shows_the_whole_tree(viewer_client, branched):
    html = viewer_client.get("/sessions/S1/?hoist=nope").content.decode()
    assert "There is no turn &#x27;nope&#x27; in this tree" in html
    assert set(row_ids(html)) == {"R", "A", "B", "A1", "A2", "B1", "B2"}


def test_the_hoisted_tree_answers_htmx_with_the_tree_alone(viewer_client, branched):
    part = viewer_client.get("/sessions/S1/?hoist=A", headers={"HX-Request": "true",
                                                                "HX-Target": "tree"})  # fmt: skip
    html = part.content.decode()
    assert "<html" not in html and row_ids(html) == ["A", "A1", "A2"]


def test_collapsing_a_branch_point_hides_its_turns_in_one_line_that_expands(
    viewer_client, branched
):
    html = viewer_client.get("/sessions/S1/?collapse=B").content.decode()
    parse_html(html)
    assert row_ids(html) == ["R", "B", "A", "A1", "A2"]  # B's two answers are one line
    assert "▸ 2 turns below, 2 branches — expand" in html
    assert 'class="tree-row fold collapsed-branches" href="?at=B#turn-B"' in html  # expanding
    both = viewer_client.get("/sessions/S1/?collapse=B&collapse=A").content.decode()
    assert row_ids(both) == ["R", "B", "A"]


def test_a_person_sees_the_turns_they_opened_marked_visited(viewer_client, viewer, branched):
    viewer_client.get("/sessions/S1/turns/B1/", headers={"HX-Request": "true"})  # the panel
    viewer_client.get("/sessions/S1/turns/A1/")  # the page
    assert set(Visit.objects.filter(user=viewer).values_list("turn_id", flat=True)) == {"B1", "A1"}
    html = viewer_client.get("/sessions/S1/").content.decode()
    visited = re.findall(r'class="tree-row[^"]* visited[^"]*" id="turn-([^"]+)"', html)
    assert sorted(visited) == ["A1", "B1"]
    viewer_client.get("/sessions/S1/turns/A1/?format=json")  # a script reading is no visit
    assert Visit.objects.filter(user=viewer, turn_id="A1").count() == 1


def test_visits_are_each_persons_own(client, viewer, operator, branched):
    client.force_login(viewer)
    client.get("/sessions/S1/turns/B2/")
    client.force_login(operator)
    html = client.get("/sessions/S1/").content.decode()
    assert " visited" not in html


def ledger_digest(ledger) -> str:
    """The ledger's bytes (a file), or on PostgreSQL every row of its tables, as text."""
    if not is_postgres_url(settings.LEDGER_DB):
        return hashlib.sha256(Path(settings.LEDGER_DB).read_bytes()).hexdigest()
    rows = [
        ledger.conn.execute(f"SELECT * FROM {table} ORDER BY 1").fetchall()
        for table in ("sessions", "turns", "messages", "tool_calls", "nexus_requests")
    ]
    return hashlib.sha256(repr(rows).encode()).hexdigest()


def test_a_bookmark_with_a_note_is_kept_shown_and_listed_never_in_the_ledger(
    viewer_client, viewer, branched, ledger
):
    before = ledger_digest(ledger)
    response = viewer_client.post(
        "/sessions/S1/turns/B1/bookmark/",
        {"note": "  the better   answer  ", "next": "/sessions/S1/?hoist=B"},
    )
    assert response.status_code == 302 and response["Location"] == "/sessions/S1/?hoist=B"
    mark = Annotation.objects.get(user=viewer, session_id="S1", turn_id="B1")
    assert mark.bookmarked and mark.bookmark_note == "the better answer"
    assert ledger_digest(ledger) == before  # ledgerweb's database, not the ledger
    html = viewer_client.get("/sessions/S1/").content.decode()
    assert 'title="Your bookmark: the better answer">★</span>' in html
    assert 'class="map-mark map-bookmark"' in html
    assert "★ 1 bookmark of yours in this session" in html
    twin = viewer_client.get("/sessions/S1/?format=json").json()
    assert [(b["turn_id"], b["note"]) for b in twin["bookmarks"]] == [("B1", "the better answer")]
    assert twin["map"]["counts"]["bookmark"] == 1
    turn_twin = viewer_client.get("/sessions/S1/turns/B1/?format=json").json()
    assert turn_twin["bookmark"]["note"] == "the better answer"
    listing = viewer_client.get("/bookmarks/").content.decode()
    parse_html(listing)
    assert "the better answer" in listing and 'href="/sessions/S1/turns/B1/"' in listing
    assert viewer_client.get("/bookmarks/?format=json").json()["bookmarks"][0]["prompt"] == (
        "prompt of B1"
    )


def test_removing_a_bookmark_and_other_peoples_bookmarks(client, viewer, operator, branched):
    client.force_login(operator)
    client.post("/sessions/S1/turns/A/bookmark/", {"note": "mine"})
    client.force_login(viewer)
    assert "mark-bookmark" not in client.get("/sessions/S1/").content.decode()  # not the viewer's
    assert client.get("/bookmarks/?format=json").json()["bookmarks"] == []
    client.post("/sessions/S1/turns/A/bookmark/", {"note": "x"})
    client.post("/sessions/S1/turns/A/bookmark/", {"remove": "1"})
    assert not Annotation.objects.get(user=viewer, turn_id="A").bookmarked
    assert Annotation.objects.get(user=operator, turn_id="A").bookmark_note == "mine"


def test_bookmarking_with_htmx_answers_the_tree_showing_the_star(viewer_client, branched):
    part = viewer_client.post(
        "/sessions/S1/turns/B2/bookmark/",
        {"note": "check", "next": "/sessions/S1/?collapse=A"},
        headers={"HX-Request": "true", "HX-Target": "tree"},
    ).content.decode()
    assert "<html" not in part
    assert row_ids(part) == ["R", "B", "B1", "B2", "A"]  # as the address it came from shows it
    assert 'title="Your bookmark: check">★' in part


def test_bookmarks_refuse_a_turn_of_another_session_and_a_foreign_next(viewer_client, ledger,
                                                                       branched):  # fmt: skip
    other = ledger.session(id="S2")
    ledger.turn(other, id="X1")
    assert viewer_client.post("/sessions/S1/turns/X1/bookmark/", {}).status_code == 404
    assert viewer_client.get("/sessions/S1/turns/A/bookmark/").status_code == 405
    away = viewer_client.post("/sessions/S1/turns/A/bookmark/", {"next": "https://evil.example/"})
    assert away["Location"] == "/sessions/S1/turns/A/"


def test_a_long_note_is_cut_and_odd_text_is_escaped(viewer_client, branched):
    note = "<script>alert(1)</script> Ωμέγα 한국어 日本語 עברית 🙂 " + "x" * 500
    viewer_client.post("/sessions/S1/turns/A/bookmark/", {"note": note})
    html = viewer_client.get("/sessions/S1/").content.decode()
    assert "<script>alert(1)" not in html
    assert "&lt;script&gt;alert(1)&lt;/script&gt; Ωμέγα 한국어 日本語 עברית 🙂" in html
    assert len(Annotation.objects.get(turn_id="A").bookmark_note) == 200
