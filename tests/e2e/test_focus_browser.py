# ruff: noqa: F811 (the `branched` fixture, imported from test_tree_focus, is each test's argument)
"""Hoist, collapse, bookmark and visited marks in the browser (issue 28), as a person uses them:
with the keyboard and htmx, by the buttons below the tree without JavaScript, and by touch on a
phone."""

import pytest
from contexts import NO_SCRIPT, PHONE, signed_in
from test_tree_focus import branched  # noqa: F401

from annotations.models import Annotation

pytestmark = pytest.mark.django_db(transaction=True, databases="__all__")


def turns(page) -> list[str]:
    return page.eval_on_selector_all(".tree-row[data-turn]", "rs => rs.map(r => r.dataset.turn)")


def test_keys_hoist_collapse_and_come_back_up(page, live_server, viewer, branched, sign_in):
    page.set_viewport_size({"width": 1280, "height": 900})
    sign_in("vera", next_url="/sessions/S1/")
    page.locator('.tree-row[data-turn="B"]').click()
    page.wait_for_selector('[data-panel-turn="B"]')
    page.keyboard.press("z")
    page.wait_for_selector(".hoist-bar")
    assert turns(page) == ["B", "B1", "B2"] and "hoist=B" in page.url
    page.keyboard.press("x")  # the cursor is on B, the hoisted root: collapse its answers
    page.wait_for_selector(".collapsed-branches")
    assert turns(page) == ["B"] and "collapse=B" in page.url
    page.keyboard.press("x")
    page.wait_for_selector('.tree-row[data-turn="B2"]')
    page.keyboard.press("Z")  # up a level: hoisted at the root, the whole tree's rows
    page.wait_for_function("() => location.search.includes('hoist=R')")
    page.locator(".hoist-whole").click()
    page.wait_for_function("() => !location.search.includes('hoist')")
    assert page.locator(".hoist-bar").count() == 0 and len(turns(page)) == 7


def test_b_bookmarks_the_row_with_a_note_and_m_finds_it(
    page, live_server, viewer, branched, sign_in
):
    page.set_viewport_size({"width": 1280, "height": 900})
    sign_in("vera", next_url="/sessions/S1/")
    page.locator('.tree-row[data-turn="B1"]').click()
    page.wait_for_selector('[data-panel-turn="B1"]')
    page.keyboard.press("b")
    page.keyboard.type("the better answer")
    page.keyboard.press("Enter")
    page.wait_for_selector('.tree-row[data-turn="B1"] .mark-bookmark')
    assert page.locator(".tree-map .map-bookmark").count() == 1
    assert Annotation.objects.get(turn_id="B1").bookmark_note == "the better answer"
    page.locator('.tree-row[data-turn="A2"]').click()
    page.wait_for_selector('[data-panel-turn="A2"]')  # its panel in: the cursor settled on A2
    page.keyboard.press("m")
    assert page.locator(".tree-row.cursor").get_attribute("data-turn") == "B1"
    page.reload()
    assert page.locator('.tree-row[data-turn="B1"] .mark-bookmark').get_attribute("title") == (
        "Your bookmark: the better answer"
    )
    page.locator("summary", has_text="1 bookmark of yours").click()
    page.locator(".bookmark-list a", has_text="all your bookmarks").click()
    page.wait_for_url("**/bookmarks/")
    assert "the better answer" in page.locator("table.bookmarks").inner_text()


def test_opened_rows_are_marked_visited(page, live_server, viewer, branched, sign_in):
    page.set_viewport_size({"width": 1280, "height": 900})
    sign_in("vera", next_url="/sessions/S1/")
    page.locator('.tree-row[data-turn="B2"]').click()
    page.wait_for_selector('.tree-row[data-turn="B2"].visited')
    page.reload()
    assert "visited" in page.locator('.tree-row[data-turn="B2"]').get_attribute("class")


def test_without_javascript_the_buttons_hoist_and_bookmark(browser, live_server, viewer, branched):
    context, page = signed_in(browser, live_server, "/sessions/S1/turns/B/", NO_SCRIPT)
    with page.expect_navigation():
        page.locator('[data-action="hoist"]').click()
    assert "hoist=B" in page.url and turns(page) == ["B", "B1", "B2"]
    with page.expect_navigation():
        page.locator('[data-action="collapse"]').click()
    assert "collapse=B" in page.url and turns(page) == ["B"]
    with page.expect_navigation():
        page.locator(".collapsed-branches").click()
    assert turns(page) == ["B", "B1", "B2"]
    page.fill(".bookmark-form [name=note]", "look here")
    with page.expect_navigation():
        page.locator("[data-bookmark-save]").click()
    assert "hoist=B" in page.url  # back where the form was
    assert page.locator('.tree-row[data-turn="B"] .mark-bookmark').count() == 1
    with page.expect_navigation():
        page.locator("[data-bookmark-remove]").click()
    assert page.locator(".mark-bookmark").count() == 0
    context.close()


def test_a_phone_hoists_and_bookmarks_by_touch(browser, live_server, viewer, branched):
    context, page = signed_in(browser, live_server, "/sessions/S1/", PHONE)
    page.locator('.tree-row[data-turn="B"]').tap()
    page.wait_for_selector('[data-panel-turn="B"]')
    hoist = page.locator('[data-action="hoist"]')
    hoist.scroll_into_view_if_needed()
    box = hoist.bounding_box()
    assert box["x"] >= 0 and box["x"] + box["width"] <= 390
    hoist.tap()
    page.wait_for_selector(".hoist-bar")
    assert turns(page) == ["B", "B1", "B2"]
    page.locator(".bookmark-form [name=note]").fill("phone note")
    page.locator("[data-bookmark-save]").tap()
    page.wait_for_selector(".mark-bookmark")
    assert page.evaluate("document.documentElement.scrollWidth") <= 390
    context.close()
