"""Ledger values of any length never make a page wider than its window."""

import pytest

pytestmark = pytest.mark.django_db(transaction=True, databases="__all__")

DESKTOP = {"width": 1280, "height": 900}
PHONE = {"width": 390, "height": 844}
LONG = "<b>x</b> " + "a-very-long-value-" * 20


def open_as_viewer(page, sign_in, url: str, window: dict) -> None:
    page.set_viewport_size(window)
    sign_in("vera", next_url=url)


def assert_no_wider_than_the_window(page) -> None:
    width, window = page.evaluate("[document.documentElement.scrollWidth, window.innerWidth]")
    assert width <= window, f"{page.url} is {width} px wide in a {window} px window"


def test_long_event_principal_and_stage_keep_the_request_list_on_screen(
    page, live_server, viewer, ledger, sign_in
):
    ledger.request(id="R1", event_source=LONG, event_type=LONG, principal_id=LONG, stage=LONG)
    open_as_viewer(page, sign_in, "/pipeline/requests/", DESKTOP)
    assert page.locator("table.requests tbody tr").count() == 1
    assert_no_wider_than_the_window(page)


def test_a_long_hint_persona_and_channel_keep_the_session_list_on_screen(
    page, live_server, viewer, ledger, sign_in
):
    no_spaces = "persona_without_spaces_" * 10
    s = ledger.session(id="S1", persona=no_spaces, routing_key=f"{no_spaces}:x:default")
    turn = ledger.turn(s, id="T1")
    ledger.message(turn, 1, content="a first line of the longest kind, " * 4)  # a 120-char hint
    ledger.set_head(s, turn, turn)
    open_as_viewer(page, sign_in, "/sessions/", DESKTOP)
    assert page.locator("table.sessions .hint").count() == 1
    assert_no_wider_than_the_window(page)


def test_a_session_label_without_spaces_wraps_on_a_phone(
    page, live_server, viewer, ledger, sign_in
):
    s = ledger.session(id="S1", label='href="javascript:alert(1)">click</a>' * 3)
    turn = ledger.turn(s, id="T1")
    ledger.set_head(s, turn, turn)
    open_as_viewer(page, sign_in, "/sessions/S1/", PHONE)
    assert_no_wider_than_the_window(page)
