"""Debugging a failed request in a real browser: dashboard → failures bar → list → request →
the turn that ran."""

import re
from urllib.parse import urlencode

import pytest
from builders import T0
from playwright.sync_api import expect

pytestmark = pytest.mark.django_db(transaction=True, databases="__all__")
H = 3_600_000


@pytest.fixture
def failing(ledger):
    s = ledger.session(id="S1", label="Dad")
    turn = ledger.turn(s, id="T-fail", status="failed")
    ledger.message(turn, 1, content="Book the 7am flight")
    ledger.tool_call(
        turn,
        1,
        id="C-fail",
        tool_name="book_flight",
        status="failed",
        error="airline API 503",
        result=None,
    )
    ledger.set_head(s, turn, turn)
    for i in range(3):
        ledger.request(
            id=f"F{i}",
            started_at=T0 + i * 1000,
            status="failed",
            stage="runAgent",
            error_stage="runAgent",
            error_message=f"Tool crashed after {i + 3} s",
            error_stack="ToolCrashError\n  at runAgent (agent.ts:71:9)",
            stage_timings='{"receiveEvent": 5, "runAgent": 9000}',
            turn_id="T-fail",
        )
    ledger.request(
        id="F-other",
        started_at=T0 + 5000,
        status="failed",
        stage="resolveAccess",
        error_stage="resolveAccess",
        error_message="policy file missing",
    )
    for i in range(5):
        ledger.request(id=f"OK{i}", started_at=T0 + 6000 + i)
    return ledger


def test_from_the_failures_bar_to_the_failing_tool_call(
    page, live_server, viewer, failing, sign_in
):
    window = urlencode({"since": T0, "until": T0 + H})
    sign_in("vera", next_url=f"/pipeline/?{window}")
    bars = page.locator("#chart-failures .main-svg .point path")
    expect(bars).to_have_count(2)  # resolveAccess and runAgent
    expect(page.locator("#chart-throughput .main-svg").first).to_be_visible()
    # Plotly orders the x axis as given: pipeline order, so runAgent is the second bar.
    # Plotly listens on a layer above the bars: point at the bar, then click there, once the
    # responsive layout has settled.
    page.wait_for_load_state("networkidle")
    page.wait_for_timeout(300)
    box = bars.nth(1).bounding_box()
    page.mouse.move(box["x"] + box["width"] / 2, box["y"] + box["height"] / 2)
    page.mouse.down()
    page.mouse.up()
    expect(page).to_have_url(re.compile(r"/pipeline/requests/\?.*error_stage=runAgent"))
    expect(page.locator("table.requests tbody tr")).to_have_count(3)
    expect(page.get_by_text("3 requests")).to_be_visible()

    page.locator("table.requests tbody tr a").first.click()
    expect(page.locator(".failure")).to_contain_text("runAgent failed")
    expect(page.locator(".waterfall .bar-failed")).to_contain_text("runAgent")
    expect(page.locator("#stack")).to_contain_text("at runAgent (agent.ts:71:9)")
    expect(page.get_by_text("3 similar failures")).to_be_visible()

    page.get_by_role("link", name=re.compile("T-fail")).click()
    expect(page.locator("#panel")).to_contain_text("airline API 503")
    expect(page.locator("#call-C-fail")).to_contain_text("book_flight")


def test_new_requests_come_as_a_banner_that_inserts_them_and_keeps_the_filters(
    page, live_server, viewer, ledger, sign_in
):
    ledger.request(
        id="OLD-FAIL",
        started_at=T0,
        status="failed",
        stage="runAgent",
        error_stage="runAgent",
        error_message="old",
    )
    ledger.request(id="OLD-OK", started_at=T0 + 1)
    sign_in("vera", next_url="/pipeline/requests/?status=failed")
    rows = page.locator("table.requests tbody tr")
    expect(rows).to_have_count(1)
    # The runtime writes while we watch: one new failure and one new success.
    ledger.request(
        id="NEW-FAIL",
        started_at=T0 + 10_000,
        status="failed",
        stage="runAgent",
        error_stage="runAgent",
        error_message="new",
    )
    ledger.request(id="NEW-OK", started_at=T0 + 10_001)
    banner = page.locator("#live-bar [data-live-news]")
    expect(banner).to_have_text("1 new request — show", timeout=5_000)
    expect(rows).to_have_count(1)  # nothing moves under the reader until asked
    banner.click()
    expect(rows).to_have_count(2)
    expect(rows.first).to_contain_text("new")
    expect(banner).to_be_hidden()
    expect(page).to_have_url(re.compile(r"status=failed"))
