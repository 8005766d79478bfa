"""Walking a turn tree in a real browser: click, keyboard, thread page and fork."""

import re

import pytest
from builders import T0
from playwright.sync_api import expect

from sessions.models import Session

pytestmark = pytest.mark.django_db(transaction=True, databases="__all__")


@pytest.fixture
def branching(ledger):
    s = ledger.session(id="S1", label="Mom - General")
    root = ledger.turn(s, id="T-root", started_at=T0)
    ledger.message(root, 1, content="Keep an eye on my inbox")
    side = ledger.turn(s, root, id="T-side", started_at=T0 + 1, status="failed")
    ledger.message(side, 1, content="Book the 7am instead")
    main = ledger.turn(s, root, id="T-main", started_at=T0 + 2)
    ledger.message(main, 1, content="What's the 2FA code?")
    ledger.tool_call(main, 1, parameters='{"query": "from:amazon"}')
    ledger.set_head(s, root, main)
    return s


def test_clicking_a_turn_opens_its_panel_and_changes_the_address(
    page, live_server, viewer, branching, sign_in
):
    sign_in("vera", next_url="/sessions/S1/")
    expect(page.locator("#panel")).to_contain_text("What's the 2FA code?")
    page.locator("#turn-T-side").click()
    expect(page.locator("#panel")).to_contain_text("Book the 7am instead")
    expect(page).to_have_url(re.compile(r"/sessions/S1/turns/T-side/$"))
    expect(page.locator("#turn-T-side")).to_have_class(re.compile("selected"))
    # The address works as a full page too.
    page.reload()
    expect(page.locator("#panel")).to_contain_text("Book the 7am instead")


def test_the_keyboard_walks_the_tree(page, live_server, viewer, branching, sign_in):
    sign_in("vera", next_url="/sessions/S1/")
    page.keyboard.press("h")  # from the head to its parent, the root
    expect(page.locator("#turn-T-root")).to_have_class(re.compile("cursor"))
    page.keyboard.press("l")  # first child: the side branch
    expect(page.locator("#turn-T-side")).to_have_class(re.compile("cursor"))
    page.keyboard.press("]")  # next sibling branch
    expect(page.locator("#turn-T-main")).to_have_class(re.compile("cursor"))
    page.keyboard.press("k")
    page.keyboard.press("Enter")
    expect(page.locator("#panel")).to_contain_text("Book the 7am instead")


def test_an_operator_forks_from_the_thread_page(page, live_server, operator, branching, sign_in):
    sign_in("otto", next_url="/sessions/S1/turns/T-root/thread/")
    expect(page.locator("h1")).to_have_text("Thread & fork point")
    page.fill("#fork-label", "Try again from the start")
    page.get_by_role("button", name="Fork a new session here").click()
    expect(page.locator("h1")).to_contain_text("Try again from the start")
    fork = Session.objects.get(label="Try again from the start")
    assert fork.current_turn_id == "T-root" and fork.routing_key == f"fork:S1:{fork.id}"
    page.screenshot(path="/tmp/ledgerweb-fork.png")


def test_a_viewer_cannot_fork(page, live_server, viewer, branching, sign_in):
    sign_in("vera", next_url="/sessions/S1/turns/T-root/thread/")
    expect(page.get_by_role("button", name="Fork a new session here")).to_be_disabled()
    expect(page.get_by_text("Only operators can fork")).to_be_visible()


def test_session_filters_update_the_list_and_the_address(
    page, live_server, viewer, ledger, sign_in
):
    ledger.session(id="A1", label="Atlas chat", persona="atlas")
    ledger.session(id="E1", label="Echo work", persona="echo", routing_key="cursor:repo:1")
    sign_in("vera", next_url="/sessions/")
    page.select_option("#f-persona", "echo")
    expect(page).to_have_url(re.compile(r"persona=echo"))
    expect(page.locator("table.sessions")).to_contain_text("Echo work")
    expect(page.locator("table.sessions")).not_to_contain_text("Atlas chat")
