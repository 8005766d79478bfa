"""Walking a turn tree in a real browser: click, keyboard, thread page and fork."""

import re

import pytest
from builders import T0
from django.urls import reverse
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


# -- A failed tool call, keyboard places, phones -------------------------------------------------


def test_a_failed_call_in_a_long_list_shows_its_error_when_the_turn_opens_from_the_tree(
    page, live_server, viewer, ledger, sign_in
):
    s = ledger.session(id="S1")
    root = ledger.turn(s, id="T-root", started_at=T0)
    busy = ledger.turn(s, root, id="T-busy", started_at=T0 + 1, status="failed")
    ledger.message(busy, 1, content="Move my dentist appointment")
    for i in range(7):  # more than INLINE_CALLS: bodies load when opened
        failed = i == 4
        ledger.tool_call(
            busy,
            i + 1,
            id=f"C{i}",
            status="failed" if failed else "completed",
            error="calendar API 503: try later" if failed else None,
            parameters='{"day": "tuesday"}',
        )
    head = ledger.turn(s, root, id="T-head", started_at=T0 + 2)
    ledger.set_head(s, root, head)
    sign_in("vera", next_url="/sessions/S1/")
    page.locator("#turn-T-busy").click()
    failed_call = page.locator("#panel #call-C4")
    expect(failed_call.locator("pre.error-text")).to_have_text("calendar API 503: try later")
    expect(failed_call.locator("pre.json").first).to_contain_text('"day": "tuesday"')
    # A closed call still loads its body when opened.
    page.locator("#panel #call-C1 summary").click()
    expect(page.locator("#panel #call-C1 pre.json").first).to_contain_text('"day": "tuesday"')


@pytest.fixture
def long_straight(ledger):
    """Forty side branches off the root (a tall tree), then a straight run of 20 turns."""
    s = ledger.session(id="S1", label="Long and straight")
    root = ledger.turn(s, id="T-root", started_at=T0)
    for i in range(40):
        ledger.turn(s, root, id=f"T-side-{i:02}", started_at=T0 + 1 + i)
    parent = root
    for i in range(1, 21):
        parent = ledger.turn(s, parent, id=f"T{i:02}", started_at=T0 + 100 + i)
        ledger.message(parent, 1, content=f"question number {i}")
    ledger.set_head(s, root, parent)
    return s


def test_the_session_opens_with_its_title_and_its_head_in_view(
    page, live_server, viewer, long_straight, sign_in
):
    sign_in("vera", next_url="/sessions/S1/")
    expect(page.locator("h1")).to_be_in_viewport()
    expect(page.locator("#turn-T20")).to_be_in_viewport()
    expect(page.locator("#turn-T20")).to_have_class(re.compile("cursor"))


def test_h_into_a_folded_stretch_keeps_the_place_through_a_reload(
    page, live_server, viewer, long_straight, sign_in
):
    sign_in("vera", next_url="/sessions/S1/")
    expect(page.locator("#turn-T18")).to_have_count(0)  # folded
    page.keyboard.press("h")  # the head's parent, T19, is in view
    expect(page.locator("#turn-T19")).to_have_class(re.compile("cursor"))
    page.keyboard.press("h")  # T18 is folded: its own address opens, the tree unfolds there
    expect(page).to_have_url(re.compile(r"/sessions/S1/turns/T18/$"))
    expect(page.locator("#turn-T18")).to_have_class(re.compile("cursor"))
    expect(page.locator("#panel")).to_contain_text("question number 18")
    page.reload()
    expect(page.locator("#turn-T18")).to_have_class(re.compile("cursor"))
    expect(page.locator("#turn-T18")).to_be_in_viewport()
    page.keyboard.press("h")
    expect(page.locator("#turn-T17")).to_have_class(re.compile("cursor"))
    page.keyboard.press("Enter")
    expect(page.locator("#panel")).to_contain_text("question number 17")
    expect(page).to_have_url(re.compile(r"/sessions/S1/turns/T17/$"))


def test_h_l_and_bracket_on_a_folded_stretch_move_from_it(
    page, live_server, viewer, long_straight, ledger, sign_in
):
    """The folded line stands for its turns (T02 to T18): h goes to the turn above it, l into it
    (its first turn, unfolded), ] to the next branch beside the stretch's."""
    sign_in("vera", next_url="/sessions/S1/")
    for key, lands_on, in_view in (("h", "T01", True), ("]", "T-side-00", True),
                                   ("l", "T02", False)):  # fmt: skip
        page.goto(f"{live_server.url}/sessions/S1/")
        fold = page.locator(".tree-row.fold")
        expect(fold).to_contain_text("17 turns in a straight line")
        page.keyboard.press("k")  # T19
        page.keyboard.press("k")  # the folded stretch
        expect(fold).to_have_class(re.compile("cursor"))
        page.keyboard.press(key)
        if not in_view:  # its own address: the tree opens around it, unfolded
            expect(page).to_have_url(re.compile(rf"/sessions/S1/turns/{lands_on}/$"))
        expect(page.locator(f"#turn-{lands_on}")).to_have_class(re.compile("cursor"))
        expect(page.locator(".tree-row.cursor")).to_have_count(1)


def test_bracket_in_a_straight_stretch_goes_to_the_next_branch_beside_it(
    page, live_server, viewer, long_straight, sign_in
):
    sign_in("vera", next_url="/sessions/S1/")
    expect(page.locator("#turn-T20")).to_have_class(re.compile("cursor"))
    page.keyboard.press("]")  # T20 has no sibling: the branch beside T01, whose stretch it ends
    expect(page.locator("#turn-T-side-00")).to_have_class(re.compile("cursor"))
    expect(page.locator("#turn-T20")).not_to_have_class(re.compile("cursor"))


def test_f_says_what_it_counts_beside_the_failed_turns_pill(
    page, live_server, viewer, ledger, sign_in
):
    s = ledger.session(id="S1", label="Some failures")
    root = ledger.turn(s, id="T1", started_at=T0, status="failed")
    ok = ledger.turn(s, root, id="T2", started_at=T0 + 1)
    ledger.tool_call(ok, 1, status="failed", error="disk full")  # the turn went on and completed
    head = ledger.turn(s, ok, id="T3", started_at=T0 + 2, status="failed")
    ledger.set_head(s, root, head)
    sign_in("vera", next_url="/sessions/S1/")
    expect(page.get_by_role("link", name="2 failed turns →")).to_be_visible()
    page.keyboard.press("f")
    status = page.locator(".find-status")
    expect(status).to_have_text(
        "failure 1 of 3 (2 failed turns, 1 turn with a failed tool call) · f / F"
    )
    expect(page.locator("#panel [data-panel-turn]")).to_have_attribute("data-panel-turn", "T1")
    page.keyboard.press("f")
    expect(page.locator("#turn-T2")).to_have_class(re.compile("selected"))
    expect(page.locator("#panel")).to_contain_text("disk full")


def test_back_and_forward_through_opened_turns_keep_the_tree_fitted_without_a_csp_error(
    page, live_server, viewer, long_straight, sign_in
):
    """htmx keeps a copy of the page for the back button: the tree's fitted height, set from
    script, came back in it as a style attribute, which the CSP refused (a console error, seen
    on the next page too) and the tree lost its height. The page fixture fails on any CSP
    violation."""
    sign_in("vera", next_url="/sessions/S1/")
    tree = page.locator(".tree")
    fitted = tree.evaluate("t => t.style.maxHeight")
    assert fitted.endswith("px")
    for turn in ("T19", "T20", "T-root"):
        page.locator(f"#turn-{turn}").click()
        expect(page).to_have_url(re.compile(rf"/turns/{turn}/$"))
    for turn in ("T20", "T19"):
        page.go_back()
        expect(page).to_have_url(re.compile(rf"/turns/{turn}/$"))
        expect(page.locator(f"#turn-{turn}")).to_have_class(re.compile("selected"))
        assert tree.evaluate("t => t.style.maxHeight") == fitted
    page.go_forward()
    expect(page).to_have_url(re.compile(r"/turns/T20/$"))
    assert tree.evaluate("t => t.style.maxHeight") == fitted


PHONE = {"width": 390, "height": 844}


def assert_no_sideways_scroll(page):
    width, inner = page.evaluate("[document.documentElement.scrollWidth, window.innerWidth]")
    assert width <= inner, f"{page.url}: {width} px wide in a {inner} px window"


def open_on_a_phone(page, sign_in, url: str) -> None:
    page.set_viewport_size(PHONE)
    sign_in("vera", next_url=url)
    assert_no_sideways_scroll(page)


def test_on_a_phone_tapping_a_turn_brings_its_panel_into_view(
    page, live_server, viewer, long_straight, sign_in
):
    open_on_a_phone(page, sign_in, "/sessions/S1/")
    # A turn near the top of the tree: the panel is far below it.
    page.locator("#turn-T-side-00").click()
    expect(page.locator("#panel h2")).to_contain_text("T-side-00")
    expect(page.locator("#panel .panel-head")).to_be_in_viewport()
    expect(page).to_have_url(re.compile(r"/sessions/S1/turns/T-side-00/$"))


def test_on_a_phone_the_lists_fit_and_show_the_error(page, live_server, viewer, ledger, sign_in):
    ledger.session(id="S1", label="A session with a rather long label to wrap on a phone")
    ledger.request(
        id="R1",
        status="failed",
        stage="runAgent",
        error_stage="runAgent",
        error_message="Anthropic API error 529: overloaded_error while calling the model",
        principal_id="ent_KHM60QV5BYD5KASA",
    )
    sign_in("vera", next_url="/")
    for width in (PHONE["width"], 800):  # a phone, and a tablet's one-column layout
        page.set_viewport_size({"width": width, "height": PHONE["height"]})
        page.goto(f"{live_server.url}/pipeline/requests/")
        error = page.get_by_text("Anthropic API error 529")
        expect(error).to_be_visible()
        box = error.bounding_box()
        assert box["x"] >= 0 and box["x"] + box["width"] <= width
        assert_no_sideways_scroll(page)
        page.goto(f"{live_server.url}/sessions/")
        expect(page.locator("table.sessions")).to_contain_text("rather long label")
        assert_no_sideways_scroll(page)


@pytest.mark.parametrize("odd_id", ["..", "a/b ü?#"])
def test_h_into_a_folded_stretch_opens_a_turn_with_an_odd_id(
    page, live_server, viewer, ledger, sign_in, odd_id
):
    s = ledger.session(id="S1")
    parent = root = ledger.turn(s, id="T-root", started_at=T0)
    for i in range(1, 21):
        turn_id = odd_id if i == 18 else f"T{i:02}"
        parent = ledger.turn(s, parent, id=turn_id, started_at=T0 + i)
        ledger.message(parent, 1, content=f"question number {i}")
    ledger.set_head(s, root, parent)
    sign_in("vera", next_url="/sessions/S1/")
    page.keyboard.press("h")
    page.keyboard.press("h")  # into the fold: the odd id's own address
    expect(page.locator("#panel")).to_contain_text("question number 18")
    expect(page.locator(f'[data-turn="{odd_id}"]')).to_have_class(re.compile("cursor"))
    assert page.url == live_server.url + reverse("sessions:turn", args=["S1", odd_id])


def test_on_a_phone_the_fork_card_stays_above_the_thread(
    page, live_server, viewer, long_straight, sign_in
):
    open_on_a_phone(page, sign_in, "/sessions/S1/turns/T20/thread/")
    page.locator("li.step.current").scroll_into_view_if_needed()
    expect(page.locator("li.step.current")).to_contain_text("question number 20")
    expect(page.locator(".fork-card")).not_to_be_in_viewport()  # it used to cover the thread
