"""A long turn tree is shown a window of lines at a time: links to the lines before and after
(plain and htmx), a turn's address shows the window around it, a jump by id, lanes that carry on
across a window's edge, and a paged JSON twin. Windows are made small here (PAGE_ROWS); the huge
ledger's real sizes are in test_hostile_ledger.py."""

import re
from urllib.parse import urljoin

import pytest
from builders import LEDGER_DB, T0, parse_fragment, parse_html

from sessions import json_twins
from sessions import page as tree_page

pytestmark = LEDGER_DB

HTMX_TREE = {"HX-Request": "true", "HX-Target": "tree"}


@pytest.fixture
def small_pages(monkeypatch):
    monkeypatch.setattr(tree_page, "PAGE_ROWS", 7, raising=False)


@pytest.fixture
def comb(ledger):
    """A trunk K00…K14, each trunk turn with a two-turn side branch A<n> → B<n> (a lane of its
    own, so lines pass page boundaries); nothing folds. 45 rows; the head is K14."""
    s = ledger.session(id="S1")
    parent = None
    for n in range(15):
        trunk = ledger.turn(s, parent, id=f"K{n:02d}", started_at=T0 + 10 * n + 2)
        side = ledger.turn(s, trunk, id=f"A{n:02d}", started_at=T0 + 10 * n + 3)
        ledger.turn(s, side, id=f"B{n:02d}", started_at=T0 + 10 * n + 4)
        parent = trunk
    ledger.set_head(s, {"id": "K00"}, parent)
    return s


ROW = re.compile(r'<a class="tree-row[^"]*" id="turn-([^"]+)"')


def row_ids(html: str) -> list[str]:
    return ROW.findall(html)


def link(html: str, css_class: str) -> tuple[str, str]:
    """The href and hx-get of the pager link with this class."""
    match = re.search(rf'<a class="{css_class}"[^>]* href="([^"]*)" hx-get="([^"]*)"', html)
    assert match, f"no {css_class} link"
    return match[1].replace("&amp;", "&"), match[2].replace("&amp;", "&")


def test_a_long_tree_opens_around_the_head_with_a_link_to_earlier_turns(
    viewer_client, comb, small_pages
):
    html = viewer_client.get("/sessions/S1/").content.decode()
    parse_html(html)
    rows = row_ids(html)
    assert rows == ["B12", "K13", "A13", "B13", "K14", "A14", "B14"]  # the head near the end
    assert "lines 39–45 of 45" in html
    assert 'class="tree-later"' not in html and "the end of the tree" in html
    href, hx_get = link(html, "tree-earlier")
    assert href == hx_get == "?from=32"


def test_earlier_and_later_links_walk_every_row_once(viewer_client, comb, small_pages):
    url = "/sessions/S1/?from=1"
    html = viewer_client.get(url).content.decode()
    assert 'class="tree-earlier"' not in html
    seen = row_ids(html)
    while 'class="tree-later"' in html:
        href, _ = link(html, "tree-later")
        url = urljoin(url, href)
        html = viewer_client.get(url).content.decode()
        seen += row_ids(html)
    assert url.endswith("?from=43")
    assert len(seen) == 45 and len(set(seen)) == 45
    assert seen[:3] == ["K00", "A00", "B00"] and seen[-3:] == ["K14", "A14", "B14"]


def test_an_htmx_page_link_swaps_in_the_tree_alone(viewer_client, comb, small_pages):
    html = viewer_client.get("/sessions/S1/").content.decode()
    _, hx_get = link(html, "tree-earlier")
    response = viewer_client.get(urljoin("/sessions/S1/", hx_get), headers=HTMX_TREE)
    fragment = response.content.decode()
    parse_fragment(fragment, container="section")
    assert "<html" not in fragment and 'id="panel"' not in fragment
    assert "lines 32–38 of 45" in fragment and len(row_ids(fragment)) == 7
    # The same link from a turn's address keeps that turn's panel and pages its tree.
    turn_url = "/sessions/S1/turns/K14/"
    response = viewer_client.get(urljoin(turn_url, hx_get), headers=HTMX_TREE)
    assert "lines 32–38 of 45" in response.content.decode()
    whole = viewer_client.get(urljoin(turn_url, hx_get)).content.decode()
    assert "lines 32–38 of 45" in whole and "Turn <code>K14</code>" in whole


def test_a_turn_deep_in_the_tree_opens_in_the_middle_of_its_window_selected(
    viewer_client, comb, small_pages
):
    html = viewer_client.get("/sessions/S1/turns/A03/").content.decode()
    assert row_ids(html) == ["A02", "B02", "K03", "A03", "B03", "K04", "A04"]
    assert re.search(r'<a class="tree-row selected visited" id="turn-A03"', html)
    assert "Turn <code>A03</code>" in html


def test_a_turn_can_be_jumped_to_by_its_id(viewer_client, comb, small_pages):
    html = viewer_client.get("/sessions/S1/").content.decode()
    assert 'name="turn"' in html and 'action="/sessions/S1/"' in html
    response = viewer_client.get("/sessions/S1/?turn=B02")
    assert response.status_code == 302 and response["Location"] == "/sessions/S1/turns/B02/"
    landed = viewer_client.get(response["Location"]).content.decode()
    assert re.search(r'<a class="tree-row selected visited" id="turn-B02"', landed)
    missing = viewer_client.get("/sessions/S1/?turn=nope").content.decode()
    assert "There is no turn &#x27;nope&#x27; in this session" in missing


def test_a_bad_line_number_says_so_and_shows_the_selected_turn(viewer_client, comb, small_pages):
    html = viewer_client.get("/sessions/S1/?from=abc").content.decode()
    assert "from=&#x27;abc&#x27; is not a positive whole number" in html
    assert "K14" in row_ids(html)
    past_the_end = viewer_client.get("/sessions/S1/?from=999").content.decode()
    assert "lines 45–45 of 45" in past_the_end


def lane_ends(row_svg: str) -> tuple[set[str], set[str]]:
    """The x of every line entering a row at its top and leaving it at its bottom."""
    height = re.search(r'height="(\d+)"', row_svg)[1]
    paths = re.findall(r'<path d="M([\d.]+),([\d.]+)(V[\d.]+|C[^"]*)"', row_svg)
    top = {x for x, y, _ in paths if y == "0"}
    bottom = {x for x, _, rest in paths if rest == f"V{height}"}
    return top, bottom


def test_lanes_carry_on_across_every_page_boundary(viewer_client, comb, small_pages):
    pages = [viewer_client.get(f"/sessions/S1/?from={n}").content.decode() for n in range(1, 46, 7)]
    svgs = [re.findall(r'<svg class="gutter".*?</svg>', html) for html in pages]
    assert len({re.search(r'width="(\d+)"', s[0])[1] for s in svgs}) == 1  # one width
    for before, after in zip(svgs, svgs[1:], strict=False):
        _, leaving = lane_ends(before[-1])
        entering, _ = lane_ends(after[0])
        assert leaving == entering
    # The boundaries fall inside side branches too: lines of two lanes cross some of them.
    assert any(len(lane_ends(s[0])[0]) == 2 for s in svgs[1:])


def test_unfolding_a_stretch_shows_the_page_that_holds_it(viewer_client, ledger, small_pages):
    s = ledger.session(id="S1")
    parent = root = ledger.turn(s, id="T00")
    for i in range(1, 60):
        parent = ledger.turn(s, parent, id=f"T{i:02d}", started_at=T0 + i)
    ledger.set_head(s, root, parent)
    folded = viewer_client.get("/sessions/S1/").content.decode()
    href = re.search(r'<a class="tree-row fold" href="([^"#]*)#turn-T02"', folded)[1]
    unfolded = viewer_client.get(urljoin("/sessions/S1/", href.replace("&amp;", "&")))
    rows = row_ids(unfolded.content.decode())
    assert "T02" in rows and "T59" not in rows  # not the head's page
    hx_get = re.search(r'<a class="tree-row fold" href="[^"]*" hx-get="([^"]*)"', folded)[1]
    swapped = viewer_client.get(urljoin("/sessions/S1/", hx_get.replace("&amp;", "&")),
                                headers=HTMX_TREE).content.decode()  # fmt: skip
    assert "<html" not in swapped and row_ids(swapped) == rows
    # "fold" from there keeps the same stretch in view.
    fold_href, _ = re.search(
        r'href="([^"]*)" hx-get="([^"]*)"[^>]*>fold straight', unfolded.content.decode()
    ).groups()
    refolded = viewer_client.get(urljoin("/sessions/S1/", fold_href.replace("&amp;", "&")))
    assert "T00" in row_ids(refolded.content.decode())


def test_the_json_twin_is_paged_with_next_links(viewer_client, comb, monkeypatch):
    monkeypatch.setattr(json_twins, "JSON_PAGE_TURNS", 20, raising=False)
    data = viewer_client.get("/sessions/S1/?format=json").json()
    assert data["page"] == 1 and data["pages"] == 3 and data["previous"] is None
    seen = [t["id"] for t in data["turns"]]
    while data["next"]:
        data = viewer_client.get(data["next"]).json()
        assert len(data["turns"]) <= 20 and data["previous"]
        seen += [t["id"] for t in data["turns"]]
    assert len(seen) == 45 and len(set(seen)) == 45
    assert data["totals"]["turns"] == 45  # totals are the whole tree's on every page


# -- The thread page -----------------------------------------------------------------------------


@pytest.fixture
def long_thread(ledger, monkeypatch):
    """A 25-turn thread T00…T24, each with its question; the thread comes in pages of 10."""
    from sessions import views

    monkeypatch.setattr(views, "THREAD_PAGE_TURNS", 10)
    s = ledger.session(id="S1")
    parent = None
    for i in range(25):
        parent = ledger.turn(s, parent, id=f"T{i:02d}", started_at=T0 + i)
        ledger.message(parent, 1, content=f"question number {i:02d}")
    ledger.set_head(s, {"id": "T00"}, parent)
    return s


def questions(html: str) -> list[str]:
    return re.findall(r"question number (\d\d)", html)


def thread_link(html: str, rel: str) -> str:
    return re.search(rf'<a rel="{rel}" href="([^"]*)"', html)[1].replace("&amp;", "&")


def test_a_long_thread_comes_in_pages_walked_by_their_links(viewer_client, long_thread):
    url = "/sessions/S1/turns/T24/thread/"
    html = viewer_client.get(url).content.decode()
    parse_html(html)
    assert questions(html) == [f"{i:02d}" for i in range(15, 25)]  # the newest, by default
    assert "15 earlier turns of this thread are not shown" in html and "page 3 of 3" in html
    seen = questions(html)
    while 'rel="prev"' in html:
        url = urljoin(url, thread_link(html, "prev"))
        html = viewer_client.get(url).content.decode()
        parse_html(html)
        seen = questions(html) + seen
        # The totals are the whole thread's on every page.
        assert f"{25 * 1337:,} tokens billed along the whole thread" in html
    assert url.endswith("?page=1") and seen == [f"{i:02d}" for i in range(25)]
    assert "20 later turns, down to this turn, are on the next pages" in html
    later = viewer_client.get(urljoin(url, thread_link(html, "next"))).content.decode()
    assert questions(later) == [f"{i:02d}" for i in range(5, 15)]


def test_the_thread_json_twin_is_paged_like_the_page(viewer_client, long_thread):
    data = viewer_client.get("/sessions/S1/turns/T24/thread/?format=json").json()
    assert (data["page"], data["pages"], data["next"]) == (3, 3, None)
    assert data["cumulative_tokens"] == 25 * 1337  # over the whole thread
    steps = [s["turn"]["id"] for s in data["steps"]]
    while data["previous"]:
        data = viewer_client.get(data["previous"]).json()
        steps = [s["turn"]["id"] for s in data["steps"]] + steps
    assert steps == [f"T{i:02d}" for i in range(25)]


def test_paging_through_a_big_tree_reads_it_once(viewer_client, comb, small_pages, monkeypatch):
    from sessions import detail

    reads = []
    read_tree = detail._read_tree
    monkeypatch.setattr(
        detail, "_read_tree", lambda s, stale=None: reads.append(s.id) or read_tree(s, stale)
    )
    monkeypatch.setattr(detail, "TREE_KEPT_TURNS", 10)  # the comb's 45 turns make a big tree
    monkeypatch.setattr(detail, "BIG_TREE_KEPT_TURNS", 40)  # too big to keep: read each time
    for line in (1, 8):
        viewer_client.get(f"/sessions/S1/?from={line}")
    assert reads == ["S1"] * 2
    monkeypatch.setattr(detail, "BIG_TREE_KEPT_TURNS", 100)  # kept: read once for all pages
    for line in (1, 8, 15):
        viewer_client.get(f"/sessions/S1/?from={line}")
    assert reads == ["S1"] * 3


def test_a_wide_tree_gets_fewer_rows_a_page_to_stay_within_the_byte_budget(
    viewer_client, ledger, monkeypatch
):
    """N000 → N001 → … each with a leaf L<n> started after it: every level holds its lane open
    until its leaf, so the deepest rows pass 120 lines each."""
    monkeypatch.setattr(tree_page, "PAGE_BYTES", 100_000)
    s = ledger.session(id="S1")
    parent = None
    for n in range(120):
        node = ledger.turn(s, parent, id=f"N{n:03d}", started_at=T0 + n)
        if parent:
            ledger.turn(s, parent, id=f"L{n:03d}", started_at=T0 + 1_000 + n)
        parent = node
    ledger.set_head(s, {"id": "N000"}, {"id": "L001"})
    assert viewer_client.get("/sessions/S1/?format=json").json()["lanes"] > 100
    url, html, lines = "/sessions/S1/?from=1", "", 0
    while url:
        html = viewer_client.get(url).content.decode()
        rows = re.findall(r'<a class="tree-row.*?</a>', html, flags=re.S)
        assert sum(len(row) for row in rows) < 100_000, url
        lines += len(rows)
        url = urljoin(url, link(html, "tree-later")[0]) if 'class="tree-later"' in html else ""
    assert lines == 239


def test_first_and_last_page_links_land_on_those_pages(viewer_client, comb, small_pages):
    html = viewer_client.get("/sessions/S1/?from=20").content.decode()
    for text, expected in (("the root", "lines 1–7 of 45"), ("the end", "lines 39–45 of 45")):
        href, hx_get = re.search(rf'href="([^"]*)" hx-get="([^"]*)"[^>]*>{text}<', html).groups()
        assert href == hx_get
        url = urljoin("/sessions/S1/?from=20", href.replace("&amp;", "&"))
        assert expected in viewer_client.get(url).content.decode()
        assert expected in viewer_client.get(url, headers=HTMX_TREE).content.decode()


def test_a_problem_links_to_its_turn_on_whichever_page_it_is(viewer_client, ledger, small_pages):
    s = ledger.session(id="S1")
    ledger.turn(s, id="ORPHAN", parent_turn_id="gone", started_at=T0 - 1)  # drawn first
    parent = root = ledger.turn(s, id="R", started_at=T0)
    for n in range(20):
        parent = ledger.turn(s, parent, id=f"X{n:02d}", started_at=T0 + n + 1)
    ledger.set_head(s, root, parent)
    html = viewer_client.get("/sessions/S1/?unfold=all").content.decode()
    assert "ORPHAN" not in row_ids(html)  # the head's page, not the orphan's
    href = re.search(r'<li><a href="([^"]*)"><code>ORPHAN</code></a>: its parent turn', html)[1]
    landed = viewer_client.get(href).content.decode()
    assert re.search(r'<a class="tree-row selected visited" id="turn-ORPHAN"', landed)


def test_a_huge_model_name_does_not_repeat_whole_on_every_row(viewer_client, ledger):
    s = ledger.session(id="S1")
    parent = root = ledger.turn(s, id="T00", model="m" * 100_000)
    for i in range(1, 20):
        parent = ledger.turn(s, parent, id=f"T{i:02d}", model="m" * 100_000, status="failed")
    ledger.set_head(s, root, parent)
    html = viewer_client.get("/sessions/S1/").content.decode()
    assert len(row_ids(html)) == 20
    assert len(html) < 500_000  # 20 rows, not 20 copies of 100 KB
    assert 'title="' + "m" * 200 + '…"' in html


def test_the_tree_card_counts_turns_and_a_rows_tooltip_counts_its_calls(viewer_client, ledger):
    """The card said "24 rows" over a tree showing 6 lines (a folded stretch is one line); a
    turn's tooltip said "1 tool calls"."""
    s = ledger.session(id="S1")
    parent = root = ledger.turn(s, id="T00", started_at=T0)
    for i in range(1, 24):
        parent = ledger.turn(s, parent, id=f"T{i:02d}", started_at=T0 + i)
    ledger.tool_call(parent, 1)
    ledger.set_head(s, root, parent)
    page = viewer_client.get("/sessions/S1/").content.decode()
    head = parse_html(page).find(".//section[@id='tree']//div[@class='card-head']")
    assert "24 turns ·" in " ".join("".join(head.itertext()).split())
    assert page.count('class="tree-row fold"') == 1  # fewer lines than turns
    assert 'title="1 tool call"' in page and "1 tool calls" not in page
