"""Ledger values of any length never make a page wider than its window."""

import pytest

pytestmark = pytest.mark.django_db(transaction=True, databases="__all__")

DESKTOP = {"width": 1280, "height": 900}
LONG = "<b>x</b> " + "a-very-long-value-" * 20


def page_width(page) -> tuple[int, int]:
    return page.evaluate("[document.documentElement.scrollWidth, window.innerWidth]")


def test_long_event_principal_and_stage_keep_the_request_list_on_screen(
    page, live_server, viewer, ledger, sign_in
):
    ledger.request(id="R1", event_source=LONG, event_type=LONG, principal_id=LONG, stage=LONG)
    page.set_viewport_size(DESKTOP)
    sign_in("vera", next_url="/pipeline/requests/")
    assert page.locator("table.requests tbody tr").count() == 1
    width, window = page_width(page)
    assert width <= window, f"the list is {width} px wide in a {window} px window"


def test_a_long_hint_persona_and_channel_keep_the_session_list_on_screen(
    page, live_server, viewer, ledger, sign_in
):
    no_spaces = "persona_without_spaces_" * 10
    s = ledger.session(id="S1", persona=no_spaces, routing_key=f"{no_spaces}:x:default")
    turn = ledger.turn(s, id="T1")
    ledger.message(turn, 1, content="a first line of the longest kind, " * 4)  # a 120-char hint
    ledger.set_head(s, turn, turn)
    page.set_viewport_size(DESKTOP)
    sign_in("vera", next_url="/sessions/")
    assert page.locator("table.sessions .hint").count() == 1
    width, window = page_width(page)
    assert width <= window, f"the list is {width} px wide in a {window} px window"


def test_a_session_label_without_spaces_wraps_on_a_phone(
    page, live_server, viewer, ledger, sign_in
):
    s = ledger.session(id="S1", label='href="javascript:alert(1)">click</a>' * 3)
    turn = ledger.turn(s, id="T1")
    ledger.set_head(s, turn, turn)
    page.set_viewport_size({"width": 390, "height": 844})
    sign_in("vera", next_url="/sessions/S1/")
    width, window = page_width(page)
    assert width <= window, f"the session page is {width} px wide in a {window} px window"
