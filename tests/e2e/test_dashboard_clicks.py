"""Clicks on the dashboard land where they say (issue 27, items 6 and 10): a throughput bar under
the failure-rate line still opens its requests, the overview's cost link lands on the cost
chart, and each stage timing's figure opens the requests that took at least that long."""

import re
from urllib.parse import parse_qs, urlencode, urlsplit

import pytest
from builders import T0
from playwright.sync_api import expect

from ledgerfacts.timestamps import now_ms

pytestmark = pytest.mark.django_db(transaction=True, databases="__all__")
H = 3_600_000
MINUTE = 60_000
WINDOW = urlencode({"since": T0, "until": T0 + H})


def settle(page) -> None:
    """Plotly listens on a layer above the bars: act once the responsive layout has settled."""
    page.wait_for_load_state("networkidle")
    page.wait_for_timeout(300)


def listed_count(ledger, url: str) -> int:
    """The requests a throughput link selects, counted by SQL on the ledger."""
    query = {k: v[0] for k, v in parse_qs(urlsplit(url).query).items()}
    (n,) = ledger.conn.execute(
        "SELECT count(*) FROM nexus_requests WHERE started_at >= ? AND started_at < ?"
        " AND status = ?",
        (int(query["since"]), int(query["until"]), query["status"]),
    ).fetchone()
    return n


def test_a_click_on_a_throughput_bar_under_the_failure_rate_line_opens_its_requests(
    page, live_server, viewer, ledger, sign_in
):
    # Four one-minute buckets of forty requests; the failure rate's markers (10 %, 15 %, 5 %,
    # 2.5 % on an axis up to 20 %) sit inside the bars.
    for minute, failed in enumerate((4, 6, 2, 1)):
        for i in range(40):
            ledger.request(
                id=f"M{minute}-{i}",
                started_at=T0 + minute * MINUTE + i,
                status="failed" if i < failed else "completed",
                error_stage="runAgent" if i < failed else None,
                stage="runAgent" if i < failed else "finalize",
            )
    sign_in("vera", next_url=f"/pipeline/?{WINDOW}")
    markers = page.locator("#chart-throughput .scatterlayer .point")
    expect(markers).to_have_count(4)
    for n in range(4):
        settle(page)
        box = markers.nth(n).bounding_box()
        page.mouse.move(box["x"] + box["width"] / 2, box["y"] + box["height"] / 2)
        page.mouse.down()
        page.mouse.up()
        expect(page).to_have_url(re.compile(r"/pipeline/requests/\?.*status="))
        expected = listed_count(ledger, page.url)
        assert expected > 0
        rows = page.locator("table.requests tbody tr")
        expect(rows).to_have_count(expected)
        expect(page.get_by_text(f"{expected} request{'s' if expected > 1 else ''}")).to_be_visible()
        page.go_back()
        expect(markers).to_have_count(4)


def test_the_overviews_cost_link_lands_on_the_cost_chart(
    page, live_server, viewer, ledger, sign_in
):
    now = now_ms()
    for i in range(30):  # enough requests for every chart above the cost chart to draw
        ledger.request(id=f"G{i}", started_at=now - 3 * H + i * 60_000, agent_model="gpt-5",
                       agent_tokens_prompt=6_000, agent_tokens_completion=400,
                       agent_tokens_total=6_400, stage_timings='{"runAgent": 1200}',
                       status="failed" if i % 7 == 0 else "completed",
                       error_stage="runAgent" if i % 7 == 0 else None)  # fmt: skip
    sign_in("vera")
    page.locator(".cost a").first.click()
    expect(page).to_have_url(re.compile(r"/pipeline/\?window=24h#chart-cost$"))
    expect(page.locator("#chart-cost .main-svg").first).to_be_visible()
    settle(page)
    # The cost chart on screen once every card above it has drawn, not the page's head.
    expect(page.locator("#chart-cost h2")).to_be_in_viewport()
    expect(page.locator("#chart-cost .main-svg").first).to_be_in_viewport(ratio=0.9)


@pytest.fixture
def busy_window(ledger):
    """Requests a phone has trouble with: long principal ids, long error messages, many
    hooks, stage timings."""
    for i in range(60):
        failed = i % 5 == 0
        ledger.request(
            id=f"B{i:02d}",
            started_at=T0 + i * 50_000,
            principal_id=f"ent_{i % 9:02d}KH8DPRB1X4HJEEN3XYZ",
            status="failed" if failed else "completed",
            stage="runAgent" if failed else "finalize",
            error_stage="runAgent" if failed else None,
            error_message=f"Tool crashed: run_terminal_command_v2 killed by SIGKILL ({i} MB)"
            if failed
            else None,
            stage_timings=f'{{"receiveEvent": {i % 7 + 1}, "runAgent": {1000 + i * 37}}}',
            hooks_matched=f'["calendar-invite-parser-{i % 4}"]',
            hooks_fired=f'["calendar-invite-parser-{i % 4}"]',
            hooks_handled=1,
        )
    return ledger


def test_on_a_phone_the_dashboards_tables_and_plots_have_room(
    page, live_server, viewer, busy_window, sign_in
):
    page.set_viewport_size({"width": 390, "height": 844})
    sign_in("vera", next_url=f"/pipeline/?{WINDOW}")
    expect(page.locator("#chart-stage-timings table")).to_be_visible()
    expect(page.locator("#chart-hooks table")).to_be_visible()
    settle(page)
    assert page.evaluate("document.documentElement.scrollWidth") <= 390
    # A table row wraps its figures under its first cell: an error's words run the card's width.
    error = page.locator("#chart-failures table.signatures td code").first
    assert error.bounding_box()["width"] > 250
    figure = page.locator("#chart-stage-timings table td[data-label=p95] a").first
    expect(figure).to_be_visible()
    # Each plot keeps room for its bars, and no axis title runs past its chart's edge.
    for chart in page.locator(".chart .main-svg:first-child").all():
        svg = chart.bounding_box()
        plot = chart.locator(".nsewdrag").first.bounding_box()
        assert plot["height"] >= 150, (chart, plot)
        for title in chart.locator(".g-xtitle text, .g-ytitle text, .g-y2title text").all():
            box = title.bounding_box()
            assert svg["y"] <= box["y"] and box["y"] + box["height"] <= svg["y"] + svg["height"]
            assert svg["x"] <= box["x"] and box["x"] + box["width"] <= svg["x"] + svg["width"]


def test_a_failure_rate_of_100_percent_is_drawn_whole_at_the_top_of_the_plot(
    page, live_server, viewer, ledger, sign_in
):
    for i in range(3):  # one minute of failures only, then one of successes
        ledger.request(id=f"F{i}", started_at=T0 + i, status="failed", error_stage="runAgent")
        ledger.request(id=f"OK{i}", started_at=T0 + MINUTE + i)
    sign_in("vera", next_url=f"/pipeline/?{WINDOW}")
    markers = page.locator("#chart-throughput .scatterlayer .point")
    expect(markers).to_have_count(2)
    settle(page)
    top = markers.first.bounding_box()
    plot = page.locator("#chart-throughput .nsewdrag").first.bounding_box()
    assert abs(top["y"] + top["height"] / 2 - plot["y"]) < 2  # 100 % is the plot's top edge
    # Drawn whole: no clip path cuts the marker at the plot's edge.
    clipped = markers.first.evaluate("m => !!m.closest('[clip-path]')")
    assert not clipped


def test_a_click_on_a_stages_p95_bar_lists_the_requests_at_or_above_it(
    page, live_server, viewer, ledger, sign_in
):
    for i in range(40):
        timings = f'{{"receiveEvent": 3, "runAgent": {100 * (i + 1)}}}'
        ledger.request(id=f"R{i:02d}", started_at=T0 + i * 1000, stage_timings=timings)
    sign_in("vera", next_url=f"/pipeline/?{WINDOW}")
    card = page.locator("#chart-stage-timings")
    bars = card.locator(".main-svg").first.locator(".barlayer .trace").nth(1).locator(".point path")
    expect(bars).to_have_count(2)  # receiveEvent, runAgent
    settle(page)
    bars.nth(1).scroll_into_view_if_needed()
    settle(page)
    # A bar on a log axis starts far below the plot (its base is 0): press the middle of the
    # part drawn inside the plot.
    box = bars.nth(1).bounding_box()
    plot = card.locator(".main-svg").first.locator(".nsewdrag").first.bounding_box()
    top, bottom = (
        max(box["y"], plot["y"]),
        min(box["y"] + box["height"], plot["y"] + plot["height"]),
    )
    page.mouse.move(box["x"] + box["width"] / 2, (top + bottom) / 2)
    page.mouse.down()
    page.mouse.up()
    # p95 of 100, 200, … 4,000 ms by nearest rank: the 38th, 3,800 ms; three at or above it.
    expect(page).to_have_url(re.compile(r"/pipeline/requests/\?.*timing=runAgent.*timing_min=3800"))
    expect(page.get_by_text("3 requests whose runAgent took at least 3,800 ms")).to_be_visible()
    expect(page.locator("table.requests td.stage-ms")).to_have_text(
        ["4,000 ms", "3,900 ms", "3,800 ms"]
    )
