"""Requests as they arrive (issue 29, journey 6), in a real browser: the request list's "N new
requests" banner and the rows it follows, a processing request's page filling in stage by stage,
and the dashboard and the overview following within 10 s."""

import json
import re
import time

import pytest
from builders import T0
from playwright.sync_api import expect

from ledgerfacts.timestamps import now_ms

pytestmark = pytest.mark.django_db(transaction=True, databases="__all__")

BANNER = "#live-bar [data-live-news]"


def test_a_row_whose_time_is_text_is_neither_counted_nor_inserted_twice(
    page, live_server, viewer, ledger, sign_in
):
    ledger.request(id="R-text", started_at="2025-11-24T10:00:00")  # sorts above every number
    ledger.request(id="R-old", started_at=T0)
    sign_in("vera", next_url="/pipeline/requests/")
    ledger.request(id="R-new", started_at=now_ms())
    banner = page.locator(BANNER)
    expect(banner).to_have_text("1 new request — show", timeout=5_000)
    banner.click()
    expect(page.locator("#rows a[href$='/R-new/']")).to_have_count(1)
    page.wait_for_timeout(3_500)  # two more answers: nothing comes back, nothing is counted
    expect(banner).to_be_hidden()
    expect(page.locator("#rows a[href$='/R-text/']")).to_have_count(1)
    expect(page.locator("#rows a[href$='/R-new/']")).to_have_count(1)


def test_a_processing_row_moves_on_in_place(page, live_server, viewer, ledger, sign_in):
    ledger.request(id="R-done", started_at=T0)
    ledger.request(id="R-busy", started_at=T0 + 1, stage="runAgent", status="processing",
                   completed_at=None)  # fmt: skip
    sign_in("vera", next_url="/pipeline/requests/")
    row = page.locator('#rows tr[data-request="R-busy"]')
    expect(row).to_contain_text("processing")
    ledger.conn.execute(
        "UPDATE nexus_requests SET stage = 'finalize', status = 'failed',"
        " error_stage = 'deliverResponse', error_message = 'Discord 502' WHERE id = 'R-busy'"
    )
    expect(row).to_contain_text("failed", timeout=5_000)
    expect(row).to_contain_text("Discord 502")
    expect(page.locator("#rows tr")).to_have_count(2)  # moved on, in its place
    expect(page.locator(BANNER)).to_be_hidden()


STAGES = ("receiveEvent", "resolveIdentity", "resolveAccess", "executeTriggers",
          "assembleContext", "runAgent", "deliverResponse", "finalize")  # fmt: skip


def test_a_processing_request_fills_in_stage_by_stage_then_says_how_it_ended(
    page, live_server, viewer, ledger, sign_in
):
    ledger.request(id="R1", started_at=now_ms(), stage="receiveEvent", status="processing",
                   completed_at=None, stage_timings=json.dumps({"receiveEvent": 7}))  # fmt: skip
    sign_in("vera", next_url="/pipeline/requests/R1/")
    expect(page.locator(".request-head")).to_contain_text("still running at receiveEvent")
    timings = {"receiveEvent": 7}
    for n, stage in enumerate(STAGES[1:], start=1):
        timings[stage] = 100 + n
        ledger.conn.execute(
            "UPDATE nexus_requests SET stage = ?, stage_timings = ? WHERE id = 'R1'",
            (stage, json.dumps(timings)),
        )
        bar = page.locator("table.waterfall tr", has_text=stage)
        expect(bar).to_contain_text(str(100 + n), timeout=2_000)
        expect(page.locator(".request-head")).to_contain_text(f"still running at {stage}")
    ledger.conn.execute(
        "UPDATE nexus_requests SET status = 'completed', completed_at = ? WHERE id = 'R1'",
        (now_ms(),),
    )
    expect(page.locator("h1 .status")).to_have_text("completed", timeout=2_000)
    expect(page.locator(".request-head")).to_contain_text("total")
    expect(page.locator("#live-bar")).to_have_count(0)  # nothing more to follow


@pytest.mark.drops_connection
def test_a_dropped_connection_counts_each_new_request_once(
    page, live_server, viewer, ledger, sign_in
):
    ledger.request(id="R0", started_at=T0)
    sign_in("vera", next_url="/pipeline/requests/")
    expect(page.locator("#live-bar")).to_contain_text("Following live")
    page.context.set_offline(True)
    expect(page.locator("#live-bar")).to_contain_text("Connection lost", timeout=5_000)
    for n in range(1, 4):
        ledger.request(id=f"R{n}", started_at=T0 + n)
    time.sleep(1)
    page.context.set_offline(False)
    banner = page.locator(BANNER)
    expect(banner).to_have_text("3 new requests — show", timeout=35_000)
    ledger.request(id="R4", started_at=T0 + 4)
    expect(banner).to_have_text("4 new requests — show", timeout=5_000)
    banner.click()
    ids = page.locator("#rows tr[data-request]")
    expect(ids).to_have_count(5)
    assert [ids.nth(i).get_attribute("data-request") for i in range(5)] == [
        "R4",
        "R3",
        "R2",
        "R1",
        "R0",
    ]


def _chart_total(page, slug: str) -> int:
    """Every bar of a chart, summed, as its figure says (the figure the script draws)."""
    return page.evaluate(
        """(slug) => {
          const chart = document.querySelector('#chart-' + slug + ' [data-figure]');
          if (!chart) return -1;
          return JSON.parse(chart.dataset.figure).data
            .filter(t => t.type === 'bar')
            .reduce((n, t) => n + (t.y || []).reduce((a, b) => a + (b || 0), 0), 0);
        }""",
        slug,
    )


def test_the_dashboard_and_the_overview_follow_within_ten_seconds(
    page, live_server, viewer, ledger, sign_in
):
    start = now_ms() - 60_000
    for n in range(3):
        ledger.request(id=f"R{n}", started_at=start + n, completed_at=start + n + 500)
    sign_in("vera", next_url="/pipeline/?window=24h")
    expect(page.locator("#chart-throughput [data-figure]")).to_have_count(1, timeout=10_000)
    assert _chart_total(page, "throughput") == 3
    expect(page.locator("#chart-failures")).to_contain_text("Nothing to draw")
    ledger.request(id="R3", started_at=now_ms(), completed_at=now_ms() + 500)
    ledger.request(id="R4", started_at=now_ms(), completed_at=now_ms() + 500, status="failed",
                   error_stage="runAgent")  # fmt: skip
    page.wait_for_function(
        "() => { const c = document.querySelector('#chart-throughput [data-figure]');"
        " return c && JSON.parse(c.dataset.figure).data.filter(t => t.type === 'bar')"
        ".reduce((n, t) => n + t.y.reduce((a, b) => a + (b || 0), 0), 0) === 5; }",
        timeout=10_000,
    )
    # Every chart follows, not only those drawn over time: the failure is on its chart too.
    expect(page.locator("#chart-failures [data-figure]")).to_have_count(1, timeout=10_000)
    assert _chart_total(page, "failures") == 1

    page.goto(f"{live_server.url}/")
    requests_today = page.locator("#last-day dd a").first
    expect(requests_today).to_have_text("5")
    ledger.request(id="R5", started_at=now_ms(), completed_at=now_ms() + 500)
    expect(requests_today).to_have_text("6", timeout=10_000)
    expect(page.locator("#live-bar")).to_contain_text("updated")


def test_the_old_auto_refresh_address_opens_the_live_dashboard(
    page, live_server, viewer, ledger, sign_in
):
    sign_in("vera", next_url="/pipeline/?refresh=1")
    expect(page.locator("#live-bar")).to_contain_text("Following live")
    expect(page).to_have_url(re.compile(r"refresh=1"))
