"""The map of the whole tree (issue 28): it marks what is worth finding, shows which rows are on
screen, and a click, a tap or its keys open that part of the tree, with and without JavaScript,
at 1280 and 390 px."""

import pytest
from builders import T0
from contexts import NO_SCRIPT, PHONE, signed_in

pytestmark = pytest.mark.django_db(transaction=True, databases="__all__")

TURNS = 1_600  # four windows of rows when unfolded (500 lines a window)
FAILED, COMPACTED = "T1450", "T0300"


@pytest.fixture
def long_tree(ledger):
    """A 1,600-turn thread with a side branch every 200 turns, a failed turn near the end, a
    compaction early on, the head at the end; a costly turn in the middle."""
    ledger.conn.execute("BEGIN")
    s = ledger.session(id="LONG")
    parent = root = None
    for n in range(TURNS):
        status = "failed" if f"T{n:04d}" == FAILED else "completed"
        tokens = 900_000 if n == 800 else 1_000
        parent = ledger.turn(s, parent, id=f"T{n:04d}", started_at=T0 + n * 10, status=status,
                             total_tokens=tokens, completed_at=T0 + n * 10 + 5)  # fmt: skip
        root = root or parent
        ledger.message(parent, 1, content=f"question number {n}")
        if n % 200 == 100:
            before = {"id": f"T{n - 1:04d}"}
            side = ledger.turn(s, before, id=f"B{n:04d}", started_at=T0 + n * 10 + 1)
            ledger.message(side, 1, content=f"a side question {n}")
    ledger.compaction({"id": COMPACTED}, "what happened so far")
    ledger.set_head(s, root, parent)
    ledger.conn.execute("COMMIT")


def open_tree(page, sign_in, width=1280, query="?unfold=all"):
    page.set_viewport_size({"width": width, "height": 900})
    sign_in("vera", next_url=f"/sessions/LONG/{query}")


def test_the_map_marks_failures_compactions_the_costliest_and_the_head(
    page, live_server, viewer, long_tree, sign_in
):
    open_tree(page, sign_in)
    tree_map = page.locator(".tree-map")
    assert tree_map.is_visible()
    assert tree_map.locator(".map-failed").count() == 1
    assert tree_map.locator(".map-compaction").count() == 1
    assert tree_map.locator(".map-costly").count() >= 1
    assert tree_map.locator(".map-head").count() == 1
    legend = page.locator(".map-legend").inner_text()
    assert "1 failed" in legend and "1 compaction" in legend and "0 forks" in legend
    assert "costliest" in legend  # a priced model: by cost (the 900,000-token turn first)
    # Every branch has its line: the main lane and the side branches' lane.
    assert tree_map.locator(".map-lane.lane-0").count() >= 1
    assert tree_map.locator(".map-lane.lane-1").count() >= 1


def test_clicking_the_map_on_this_pages_rows_scrolls_to_them(
    page, live_server, viewer, long_tree, sign_in
):
    open_tree(page, sign_in, query="?unfold=all&from=1")
    tree_map = page.locator(".tree-map")
    box = tree_map.bounding_box()
    page.mouse.click(box["x"] + box["width"] / 2, box["y"] + box["height"] * 0.25)  # line ~400
    cursor = page.locator(".tree-row.cursor")
    line = int(cursor.get_attribute("data-line"))
    assert 380 <= line <= 420  # of this window's 500
    assert cursor.is_visible() and cursor.bounding_box()["y"] < 900
    assert "from=1" in page.url  # the same window: nothing was loaded
    view = page.locator(".map-view")  # the part of the rows on screen, drawn on the map
    assert view.is_visible()
    assert abs(view.bounding_box()["y"] - (box["y"] + box["height"] * 0.25)) < box["height"] * 0.1


def test_clicking_the_map_beyond_this_page_opens_that_window(
    page, live_server, viewer, long_tree, sign_in
):
    open_tree(page, sign_in, query="?unfold=all&from=1")
    assert page.locator('.tree-row[data-line="1500"]').count() == 0
    box = page.locator(".tree-map").bounding_box()
    page.mouse.click(box["x"] + box["width"] / 2, box["y"] + box["height"] * 1450 / (TURNS + 8))
    page.wait_for_selector('.tree-row[data-line="1450"]')
    cursor = page.locator(".tree-row.cursor")
    assert abs(int(cursor.get_attribute("data-line")) - 1450) <= 3
    assert "unfold=all" in page.url and "from=" in page.url  # the address says where


def test_the_map_works_without_javascript(browser, live_server, viewer, long_tree):
    context, page = signed_in(browser, live_server, "/sessions/LONG/?unfold=all&from=1", NO_SCRIPT)
    page.wait_for_load_state()  # the tree's page, not the login form that was left
    links = page.locator(".tree-map a.map-link")
    assert links.count() > 10
    # A band of this page's rows scrolls the tree to its row.
    middle = links.nth(links.count() // 4)
    line = int(middle.get_attribute("data-line"))
    middle.click(force=True)
    assert "#turn-" in page.url
    row = page.locator(f'.tree-row[data-line="{line}"]')
    tree_box = page.locator(".tree").bounding_box()
    assert tree_box["y"] <= row.bounding_box()["y"] < tree_box["y"] + tree_box["height"]
    last = links.nth(links.count() - 1)
    line = int(last.get_attribute("data-line"))
    with page.expect_navigation():
        last.click(force=True)
    assert f"from={line}" in page.url and "unfold=all" in page.url
    assert page.locator(".tree-row").first.get_attribute("data-line") == str(line)
    context.close()


def test_a_phone_taps_the_map(browser, live_server, viewer, long_tree, sign_in):
    context, page = signed_in(browser, live_server, "/sessions/LONG/?unfold=all&from=1", PHONE)
    tree_map = page.locator(".tree-map")
    tree_map.scroll_into_view_if_needed()
    box = tree_map.bounding_box()
    # Above the rows, as wide as the tree, its first line on the left.
    rows = page.locator(".tree").bounding_box()
    assert box["y"] + box["height"] <= rows["y"] + 1 and box["height"] >= 30
    assert abs(box["width"] - rows["width"]) < 2 and box["x"] + box["width"] <= 390
    page.touchscreen.tap(box["x"] + box["width"] * 0.95, box["y"] + box["height"] / 2)
    page.wait_for_function("() => new URLSearchParams(location.search).get('from') !== '1'")
    page.wait_for_selector(".tree-row.cursor")
    assert int(page.locator(".tree-row.cursor").get_attribute("data-line")) > 1_400
    context.close()


def test_the_maps_keys_move_along_it_and_open_a_line(page, live_server, viewer, long_tree, sign_in):
    open_tree(page, sign_in, query="?unfold=all&from=1")
    page.keyboard.press("g")
    assert page.evaluate("document.activeElement.classList.contains('tree-map')")
    assert page.locator(".map-cursor").is_visible()
    page.keyboard.press("End")
    page.keyboard.press("Enter")
    page.wait_for_selector(f'.tree-row[data-line="{TURNS + 8}"]')  # the last line, a leaf
    assert page.locator(".tree-row.cursor").get_attribute("data-line") == str(TURNS + 8)
    assert "from=" in page.url
