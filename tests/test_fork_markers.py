"""Forks are visible from both sides (issue 16): the origin's tree says "forked 2× here" at the
fork point and its panel links to the forks; a fork links back to the turn it was made at and
counts its inherited and own turns."""

import re

import pytest
from builders import LEDGER_DB, parse_html

pytestmark = LEDGER_DB


@pytest.fixture
def forked(ledger):
    origin = ledger.session(id="O1", label="Origin")
    t1 = ledger.turn(origin, id="T1")
    t2 = ledger.turn(origin, t1, id="T2")
    t3 = ledger.turn(origin, t2, id="T3")
    ledger.set_head(origin, t1, t3)
    fresh = ledger.session(id="F1", label="Fresh fork", routing_key="fork:O1:F1")
    ledger.set_head(fresh, t1, t2)  # a fork made at T2, nothing added yet
    grown = ledger.session(id="F2", label="Grown fork", routing_key="fork:O1:F2", created_at=1)
    own = ledger.turn(grown, t2, id="G1")  # the runtime went on in the fork
    ledger.set_head(grown, t1, own)
    return origin


def row_of(page: str, turn_id: str) -> str:
    match = re.search(rf'<a class="tree-row[^"]*" id="turn-{turn_id}".*?</a>', page, re.S)
    assert match, turn_id
    return match.group(0)


def test_the_origins_tree_says_where_forks_were_made(viewer_client, forked):
    page = viewer_client.get("/sessions/O1/").content.decode()
    parse_html(page)
    assert "forked 2× here" in row_of(page, "T2")
    assert "forked" not in row_of(page, "T1") and "forked" not in row_of(page, "T3")


@pytest.mark.parametrize("htmx", [False, True])
def test_the_fork_points_panel_links_to_each_fork_and_back(viewer_client, forked, htmx):
    headers = {"HTTP_HX_REQUEST": "true", "HTTP_HX_TARGET": "panel"} if htmx else {}
    panel = viewer_client.get("/sessions/O1/turns/T2/", **headers).content.decode()
    forks_line = re.search(r'<p class="forks-here">.*?</p>', panel, re.S).group(0)
    assert "forked 2× here" in forks_line
    links = re.findall(r'href="([^"]+)">([^<]+)</a>', forks_line)
    assert links == [("/sessions/F2/", "Grown fork"), ("/sessions/F1/", "Fresh fork")]
    for href, _ in links:
        fork_page = viewer_client.get(href).content.decode()
        parse_html(fork_page)
        back = re.search(r'Forked from <a[^>]*>Origin</a>\s*at turn <a href="([^"]+)">', fork_page)
        assert back and back.group(1) == "/sessions/O1/turns/T2/"
        origin_turn = viewer_client.get(back.group(1)).content.decode()
        assert "forked 2× here" in origin_turn


def test_a_fork_counts_its_inherited_and_own_turns(viewer_client, forked):
    fresh = viewer_client.get("/sessions/F1/").content.decode()
    assert "2 inherited · 0 own" in fresh
    grown = viewer_client.get("/sessions/F2/").content.decode()
    assert "2 inherited · 1 own" in grown
    assert "mark-inherited" in row_of(grown, "T1") and "mark-inherited" not in row_of(grown, "G1")


def test_the_origins_header_says_where_each_fork_was_made(viewer_client, forked):
    page = viewer_client.get("/sessions/O1/").content.decode()
    made = re.findall(r'Fork: <a href="([^"]+)">[^<]+</a>.*?made at turn <a href="([^"]+)">', page)
    assert made == [
        ("/sessions/F2/", "/sessions/O1/turns/T2/"),
        ("/sessions/F1/", "/sessions/O1/turns/T2/"),
    ]
    assert viewer_client.get(made[0][1]).status_code == 200


def test_a_forks_tree_marks_the_turn_it_left_its_origin_from(viewer_client, forked):
    grown = viewer_client.get("/sessions/F2/").content.decode()
    assert "mark-fork-point" in row_of(grown, "T2")
    assert "mark-fork-point" not in row_of(grown, "T1") + row_of(grown, "G1")


def test_the_turn_twin_lists_the_forks_made_at_the_turn_as_its_panel_does(viewer_client, forked):
    twin = viewer_client.get("/sessions/O1/turns/T2/?format=json").json()
    assert twin["forks_here"] == ["F2", "F1"]  # as the panel lists them
    assert viewer_client.get("/sessions/O1/turns/T3/?format=json").json()["forks_here"] == []
