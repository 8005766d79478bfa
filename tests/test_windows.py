"""A preset window ("last 24h") is the same instants on the dashboard and on the request list, and
both pages say which: a chart's count is the length of the list it leads to."""

import pytest
from builders import LEDGER_DB, T0, parse_html

from pipeline.charts import MAX_BUCKETS

pytestmark = LEDGER_DB
H = 3_600_000
NOW = T0 + 14 * H + 37 * 60_000 + 12_345  # 14:37:12 and a bit, so the hour's floor matters


@pytest.fixture
def frozen_now(monkeypatch):
    monkeypatch.setattr("pipeline.filters.now_ms", lambda: NOW)
    return NOW


@pytest.fixture
def edges(ledger, frozen_now):
    """Requests on either side of each end of the 24-hour window that ends at NOW."""
    start = NOW // H * H - 24 * H  # the window starts on the hour: 14:00 yesterday
    ledger.request(id="R-first", started_at=start)
    ledger.request(id="R-last", started_at=NOW - 1)
    ledger.request(id="R-too-early", started_at=start - 1)
    ledger.request(id="R-future", started_at=NOW + 60_000)  # a writer with a clock ahead
    return start


def _listed(client, query: str) -> list[str]:
    data = client.get(f"/pipeline/requests/?{query}&format=json").json()
    return sorted(r["id"] for r in data["requests"])


def _window_shown(page: bytes, where: str) -> list[tuple[str, str]]:
    """The times a page's window line shows: (datetime attribute, text)."""
    tree = parse_html(page)
    line = tree.find(where)
    return [(t.get("datetime"), t.text) for t in line.iterfind(".//time")]


@pytest.mark.parametrize("window", ["24h", "7d", "30d", "1h"])
def test_a_preset_window_counts_on_the_dashboard_what_the_list_shows(viewer_client, edges, window):
    chart = viewer_client.get(f"/pipeline/charts/throughput/?window={window}&format=json").json()
    counted = sum(b["total"] for b in chart["buckets"])
    listed = _listed(viewer_client, f"window={window}")
    assert counted == len(listed)
    assert "R-future" not in listed and "R-last" in listed


def test_the_24_hour_window_starts_on_the_hour_on_both_pages(viewer_client, edges):
    assert _listed(viewer_client, "window=24h") == ["R-first", "R-last"]
    chart = viewer_client.get("/pipeline/charts/throughput/?window=24h&format=json").json()
    assert chart["buckets"][0]["start"] == edges
    assert chart["buckets"][-1]["end"] == NOW


def test_both_pages_say_the_same_from_and_to(viewer_client, edges):
    dashboard = viewer_client.get("/pipeline/?window=24h").content
    listing = viewer_client.get("/pipeline/requests/?window=24h").content
    shown = _window_shown(dashboard, ".//div[@class='page-head']/p")
    assert shown == _window_shown(listing, ".//section[@id='results']//div[@class='card-head']/p")
    # In words, to the minute: the window starts on the hour (the site's time zone is UTC here).
    assert [text for _, text in shown] == ["2025-11-24 06:00 UTC", "2025-11-25 06:37 UTC"]
    data = viewer_client.get("/pipeline/requests/?window=24h&format=json").json()
    assert (data["since"], data["until"]) == (edges, NOW)


def test_the_list_window_leaves_out_times_in_the_future_and_text_times(
    viewer_client, ledger, frozen_now
):
    ledger.request(id="R-now", started_at=NOW - 1)
    ledger.request(id="R-future", started_at=NOW + 60_000)
    ledger.request(id="R-text", started_at="2025-11-25T10:00:00")  # ISO text: not a Unix time
    assert _listed(viewer_client, "window=24h") == ["R-now"]


def test_the_overview_counts_the_dashboards_last_24_hours_and_says_which(
    viewer_client, edges, monkeypatch
):
    """The overview's "last 24 hours" was now − 24 h, while the cost beside it summed the
    dashboard's whole hours: two windows on one card. One window now, shown as on the dashboard."""
    monkeypatch.setattr("overview.summary.now_ms", lambda: NOW)
    data = viewer_client.get("/?format=json").json()
    assert data["last_24h"]["requests"] == len(_listed(viewer_client, "window=24h")) == 2
    assert (data["last_24h_window"]["since"], data["last_24h_window"]["until"]) == (edges, NOW)
    overview = viewer_client.get("/").content
    dashboard = viewer_client.get("/pipeline/?window=24h").content
    shown = _window_shown(overview, ".//section[@class='grid']/div[@id='last-day']/p")
    assert shown == _window_shown(dashboard, ".//div[@class='page-head']/p")
    # Both of its figures follow to that window's pages: the requests, and the cost chart.
    links = [a.get("href") for a in parse_html(overview).iterfind(".//div[@id='last-day']//a")]
    assert "/pipeline/requests/?window=24h" in links


@pytest.mark.parametrize(
    ("window", "bucket"), [("1h", 60_000), ("24h", H), ("7d", 3 * H), ("30d", 12 * H)]
)
def test_each_preset_window_draws_the_buckets_docs_decisions_promises(
    viewer_client, frozen_now, window, bucket
):
    """A whole-hour start makes "30d" up to 59 minutes longer than 30 days: it drew 1-day
    buckets (61 of 12 hours were one too many)."""
    for slug in ("throughput", "tokens", "cost"):
        data = viewer_client.get(f"/pipeline/charts/{slug}/?window={window}&format=json").json()
        assert data["bucket_ms"] == bucket, slug
        starts = data.get("bucket_starts") or [b["start"] for b in data["buckets"]]
        assert len(starts) <= MAX_BUCKETS
