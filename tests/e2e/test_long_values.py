"""Ledger values of any length never make a list wider than a desktop window."""

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
