"""The dashboard's charts in a real browser: a bar of NULL values is a way into exactly those
requests, and on a phone nothing makes the page scroll sideways."""

import re
from urllib.parse import urlencode

import pytest
from builders import T0
from playwright.sync_api import expect

pytestmark = pytest.mark.django_db(transaction=True, databases="__all__")
H = 3_600_000
WINDOW = urlencode({"since": T0, "until": T0 + H})


@pytest.fixture
def failures_without_a_stage(ledger):
    ledger.request(id="RUN", started_at=T0 + 1, status="failed", error_stage="runAgent")
    for i in range(2):
        ledger.request(id=f"NULL{i}", started_at=T0 + 10 + i, status="failed", error_stage=None)
    ledger.request(id="EMPTY", started_at=T0 + 20, status="failed", error_stage="")
    for i in range(6):  # enough hooks for the hook table to be wide
        ledger.request(
            started_at=T0 + 30 + i,
            hooks_matched=f'["calendar-invite-parser-{i}"]',
            hooks_fired=f'["calendar-invite-parser-{i}"]',
            hooks_handled=1,
        )
    return ledger


def click_bar(page, bar) -> None:
    """Plotly listens on a layer above the bars: point at the bar, then press there, once the
    responsive layout has settled."""
    page.wait_for_load_state("networkidle")
    page.wait_for_timeout(300)
    box = bar.bounding_box()
    page.mouse.move(box["x"] + box["width"] / 2, box["y"] + box["height"] / 2)
    page.mouse.down()
    page.mouse.up()


def test_the_none_bar_lists_the_failures_without_an_error_stage(
    page, live_server, viewer, failures_without_a_stage, sign_in
):
    sign_in("vera", next_url=f"/pipeline/?{WINDOW}")
    bars = page.locator("#chart-failures .main-svg .point path")
    expect(bars).to_have_count(3)  # runAgent, (none), (empty)
    expect(page.locator("#chart-failures .xtick text")).to_have_text(
        ["runAgent", "(none)", "(empty)"]
    )
    click_bar(page, bars.nth(1))
    expect(page).to_have_url(re.compile(r"/pipeline/requests/\?.*error_stage__isnull=1"))
    expect(page.get_by_text("2 requests")).to_be_visible()
    expect(page.locator("table.requests tbody tr")).to_have_count(2)


def test_on_a_phone_the_dashboard_does_not_scroll_sideways(
    page, live_server, viewer, failures_without_a_stage, sign_in
):
    page.set_viewport_size({"width": 390, "height": 800})
    sign_in("vera", next_url=f"/pipeline/?{WINDOW}")
    expect(page.locator("#chart-hooks table")).to_be_visible()
    expect(page.locator("#chart-hooks .main-svg").first).to_be_visible()
    page.wait_for_load_state("networkidle")
    assert page.evaluate("document.documentElement.scrollWidth") <= 390


def test_on_a_phone_a_tap_on_a_chart_shows_no_toolbar_over_its_legend(
    page, live_server, viewer, failures_without_a_stage, sign_in
):
    sign_in("vera", next_url=f"/pipeline/?{WINDOW}")
    chart = page.locator("#chart-failures .main-svg").first
    expect(chart).to_be_visible()
    chart.hover()
    expect(page.locator("#chart-failures .modebar")).to_have_count(1)  # a desktop has it
    page.set_viewport_size({"width": 390, "height": 800})
    page.reload()
    expect(chart).to_be_visible()
    page.wait_for_load_state("networkidle")
    box = chart.bounding_box()
    page.mouse.click(box["x"] + box["width"] / 2, box["y"] + 10)
    expect(page.locator("#chart-failures .modebar")).to_have_count(0)
