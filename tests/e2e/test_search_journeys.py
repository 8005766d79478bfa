"""Search in a real browser: the header box, a hit followed to its turn, find in a session."""

import re

import pytest
from builders import T0
from playwright.sync_api import expect

from sessions.turn_detail import INLINE_CALLS

pytestmark = pytest.mark.django_db(transaction=True, databases="__all__")


@pytest.fixture
def story(ledger):
    s = ledger.session(id="S1", label="Cleanup")
    root = ledger.turn(s, id="T1", started_at=T0)
    ledger.message(root, 1, content="Please prune the stale kumquat branches")
    failed = ledger.turn(s, root, id="T2", started_at=T0 + 1, status="failed")
    ledger.message(failed, 1, content="something unrelated")
    head = ledger.turn(s, failed, id="T3", started_at=T0 + 2)
    ledger.message(head, 1, content="the kumquat branch is gone")
    # A long list of calls, which start closed; the last one is what an id jump opens.
    for i in range(INLINE_CALLS + 2):
        ledger.tool_call(head, i, id=f"C{i}", result=f'{{"line": "output {i}"}}')
    ledger.set_head(s, root, head)
    return s


def test_a_tool_call_id_in_the_header_box_opens_that_call(
    page, live_server, viewer, story, sign_in
):
    sign_in("vera")
    last = f"C{INLINE_CALLS + 1}"
    page.get_by_role("searchbox", name="Search the ledger or paste an id").fill(last)
    page.keyboard.press("Enter")
    expect(page).to_have_url(re.compile(rf"/sessions/S1/turns/T3/#call-{last}$"))
    call = page.locator(f"#call-{last} details")
    expect(call).to_have_attribute("open", "")
    expect(call).to_contain_text(f"output {INLINE_CALLS + 1}")
    expect(page.locator("#call-C0 details")).not_to_have_attribute("open", "")


def test_a_search_hit_leads_to_its_turn(page, live_server, viewer, story, sign_in):
    sign_in("vera")
    page.get_by_role("searchbox", name="Search the ledger or paste an id").fill("kumquat")
    page.keyboard.press("Enter")
    expect(page.locator(".hit")).to_have_count(2)
    expect(page.locator(".hit mark").first).to_have_text("kumquat")
    page.locator(".hit a").first.click()  # newest first: the head's message
    expect(page).to_have_url(re.compile(r"/sessions/S1/turns/T3/#message-"))
    expect(page.locator("#panel")).to_contain_text("the kumquat branch is gone")


def test_find_in_a_session_marks_and_walks_matches_and_failures(
    page, live_server, viewer, story, sign_in
):
    sign_in("vera", next_url="/sessions/S1/")
    page.get_by_role("searchbox", name="Find in this session").fill("kumquat")
    page.keyboard.press("Enter")
    expect(page.locator(".tree-row.find-hit")).to_have_count(2)
    expect(page.locator("#turn-T1")).to_have_class(re.compile("selected"))  # the first match
    expect(page.locator("#panel")).to_contain_text("stale kumquat")
    expect(page.locator(".find-status")).to_have_text("match 1 of 2 · n / N")
    page.keyboard.press("n")
    expect(page.locator("#turn-T3")).to_have_class(re.compile("selected"))
    page.keyboard.press("N")
    expect(page.locator("#turn-T1")).to_have_class(re.compile("selected"))
    page.keyboard.press("f")
    expect(page.locator("#turn-T2")).to_have_class(re.compile("selected"))
    expect(page.locator(".find-status")).to_have_text("failure 1 of 1 (1 failed turn) · f / F")
