"""Live mode on the request list, in a real browser: new requests appear on top, and a row whose
time is text (odd data, sorted above every number) neither stops it nor comes back."""

import pytest
from builders import T0
from playwright.sync_api import expect

from ledgerfacts.timestamps import now_ms

pytestmark = pytest.mark.django_db(transaction=True, databases="__all__")


def test_live_mode_adds_new_requests_under_a_text_time(page, live_server, viewer, ledger, sign_in):
    ledger.request(id="R-text", started_at="2025-11-24T10:00:00")
    ledger.request(id="R-old", started_at=T0)
    sign_in("vera", next_url="/pipeline/requests/")
    page.check("#live-toggle")
    ledger.request(id="R-new", started_at=now_ms())
    expect(page.locator("#rows a[href$='/R-new/']")).to_have_count(1, timeout=15_000)
    page.wait_for_timeout(5_500)  # one more poll: nothing comes back twice
    expect(page.locator("#rows a[href$='/R-text/']")).to_have_count(1)
    expect(page.locator("#rows a[href$='/R-new/']")).to_have_count(1)
