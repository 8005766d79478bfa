"""The 50,000-turn session of the huge ledger (tests/hostile.py) in a real browser: it opens a page
at a time, and the keyboard walks on across a page's edge."""

import re

import pytest
from hostile import WIDE
from playwright.sync_api import expect
from test_hostile_ledger import huge, huge_ledger_file  # noqa: F401 (the huge ledger's fixtures)

pytestmark = [
    pytest.mark.django_db(transaction=True, databases="__all__"),
    pytest.mark.usefixtures("huge"),  # every test here reads the huge ledger
]


def cursor(page):
    return page.locator(".tree-row.cursor")


def test_j_and_k_walk_across_a_page_boundary(page, live_server, viewer, sign_in):
    sign_in("vera", next_url=f"/sessions/{WIDE}/")
    expect(page.locator(".tree-pager-top")).to_contain_text("lines 10,602–11,101 of 11,101")
    expect(page.locator(".tree-row.selected")).to_have_attribute("data-turn", "W49999")

    page.goto(f"{live_server.url}/sessions/{WIDE}/?from=10001")
    first_row = page.locator(".tree .tree-row").first.get_attribute("data-turn")
    page.keyboard.press("j")  # the cursor starts on the first row when none is selected here
    page.keyboard.press("k")
    expect(cursor(page)).to_have_attribute("data-turn", first_row)

    page.keyboard.press("k")  # past the top: the 500 lines before, the cursor on the last of them
    expect(page).to_have_url(re.compile(r"\?from=9501$"))
    expect(page.locator(".tree-pager-top")).to_contain_text("lines 9,501–10,000 of 11,101")
    expect(cursor(page)).to_have_count(1)
    last_row = page.locator(".tree .tree-row").last
    expect(last_row).to_have_class(re.compile(r"\bcursor\b"))

    page.keyboard.press("j")  # past the bottom: back to line 10,001
    expect(page).to_have_url(re.compile(r"\?from=10001$"))
    expect(cursor(page)).to_have_attribute("data-turn", first_row)

    page.keyboard.press("Enter")  # and the row opens as on any page
    expect(page.locator("#panel")).to_contain_text(f"Turn {first_row}")


def test_h_goes_to_a_parent_on_another_page(page, live_server, viewer, sign_in):
    sign_in("vera", next_url=f"/sessions/{WIDE}/?from=10001")
    first_row = page.locator(".tree .tree-row").first
    parent = first_row.get_attribute("data-parent")
    assert parent and page.locator(f"#turn-{parent}").count() == 0  # in the lines before
    page.keyboard.press("h")
    expect(page).to_have_url(re.compile(rf"/sessions/{WIDE}/turns/{parent}/$"))
    expect(page.locator(".tree-row.selected")).to_have_attribute("data-turn", parent)
    expect(page.locator("#panel")).to_contain_text(f"Turn {parent}")
