"""From a stage's timings to its requests (journey 4.3): the stage-timings chart links each
percentile to the requests that took at least that long, the request list filters by a stage's
duration (at least, at most) and orders by it, slowest first, and every number agrees with the
rows' own stage_timings, read here in Python with nearest-rank percentiles, whether the hours
are read live or from their summaries."""

import json
import math
import random
from urllib.parse import urlencode, urljoin

import pytest
from builders import LEDGER_DB, T0, parse_fragment, parse_html
from test_pipeline_charts import chart_url as _chart_url
from test_pipeline_charts import figures

from pipeline import listing, rollups, timing_search

pytestmark = LEDGER_DB
H = 3_600_000
HOURS = 6
SINCE, UNTIL = T0, T0 + HOURS * H
WINDOW = {"since": SINCE, "until": UNTIL}
YEAR_MS = 365 * 86_400_000


def chart_url(**params) -> str:
    return _chart_url("stage-timings", **params).replace(
        urlencode({"since": T0, "until": T0 + 4 * H}), urlencode(WINDOW)
    )


@pytest.fixture
def timed(ledger):
    """Requests over six hours with runAgent and deliverResponse timings drawn at random (ties
    included), a few very slow ones, and the odd values a ledger holds: negative, text, too big,
    a JSON list, broken JSON, a fractional timing, an unknown stage."""
    rng = random.Random(7)
    for hour in range(HOURS):
        for i in range(25):
            timings = {"receiveEvent": rng.choice((3, 4, 5)), "runAgent": rng.randint(200, 5000),
                       "deliverResponse": rng.randint(20, 400)}  # fmt: skip
            status = rng.choice(("completed", "completed", "failed"))
            ledger.request(id=f"R{hour}-{i:02d}", started_at=T0 + hour * H + i * 1000,
                           status=status, stage_timings=json.dumps(timings))  # fmt: skip
    ledger.request(id="slowest", started_at=T0 + 2 * H + 999_000,
                   stage_timings='{"runAgent": 91000.5, "deliverResponse": 12}')  # fmt: skip
    ledger.request(id="tie-a", started_at=T0 + 3 * H + 999_000, stage_timings='{"runAgent": 40000}')
    ledger.request(id="tie-b", started_at=T0 + 3 * H + 999_001, stage_timings='{"runAgent": 40000}')
    ledger.request(id="busy", started_at=T0 + 4 * H + 999_000, status="processing",
                   stage="runAgent", stage_timings='{"runAgent": 7000}')  # fmt: skip
    odd = ('{"runAgent": -5}', '{"runAgent": "slow"}', '{"runAgent": 1e400}', "[1, 2]", "{oops",
           None, '{"runAgent": 31536000001}', '{"teleport": 12, "runAgent": 0.25}')  # fmt: skip
    for n, value in enumerate(odd):
        ledger.request(id=f"odd{n}", started_at=T0 + 5 * H + n, stage_timings=value)
    ledger.request(id="outside", started_at=UNTIL + 1, stage_timings='{"runAgent": 99999}')
    return ledger


def timings_of(ledger, stage: str) -> dict[str, float]:
    """Each request's `stage` timing in the window, read from its JSON in Python: a number from 0
    up to a year (what the chart counts)."""
    found = {}
    rows = ledger.conn.execute("SELECT id, started_at, stage_timings FROM nexus_requests")
    for request_id, started_at, raw in rows.fetchall():
        if not SINCE <= started_at < UNTIL:
            continue
        try:
            value = json.loads(raw or "")
        except ValueError:
            continue
        ms = value.get(stage) if isinstance(value, dict) else None
        if isinstance(ms, int | float) and not isinstance(ms, bool) and 0 <= ms < YEAR_MS:
            found[request_id] = float(ms)
    return found


def nearest_rank(values, q: float) -> float:
    ordered = sorted(values)
    return ordered[max(1, math.ceil(q * len(ordered))) - 1]


def listed(client, url: str) -> tuple[list[dict], dict]:
    """Every request the list shows at `url`, page after page, and its first page (JSON)."""
    url = urljoin("http://testserver/pipeline/", url) + "&format=json"
    first = page = client.get(url).json()
    assert not page["errors"], page["errors"]
    requests = page["requests"]
    while page["next"]:
        page = client.get(url + "&" + urlencode({"after": page["next"]})).json()
        requests += page["requests"]
    return requests, first


def list_url(**params) -> str:
    return "/pipeline/requests/?" + urlencode(WINDOW | params)


def build_every_hour() -> None:
    rollups.plan(T0, UNTIL, budget_s=math.inf)
    rollups._plans = rollups.sqlite.WhileUnchanged(keep=64)  # the list plans afresh


@pytest.fixture(params=["live", "summarised"])
def hours(request, timed):
    if request.param == "summarised":
        build_every_hour()
    return request.param


def test_each_figure_of_a_stage_lists_exactly_the_requests_at_or_above_it(
    viewer_client, timed, hours
):
    data = viewer_client.get(chart_url(format="json")).json()
    stages = {s["stage"]: s for s in data["stages"]}
    for stage in ("runAgent", "deliverResponse"):
        truth = timings_of(timed, stage)
        shown = stages[stage]
        assert shown["count"] == len(truth)
        for key, q in (("p50", 0.5), ("p95", 0.95), ("p99", 0.99), ("max", 1.0)):
            figure = nearest_rank(truth.values(), q)
            assert shown[key] == figure, (stage, key)
            slower = {i for i, ms in truth.items() if ms >= figure}
            link = shown["links"][key]
            requests, first = listed(viewer_client, link["url"])
            assert {r["id"] for r in requests} == slower, (stage, key)
            assert link["requests"] == first["count"] == len(slower) == len(requests)
            durations = [r["stage_ms"] for r in requests]
            assert durations == sorted(durations, reverse=True)  # slowest first
            assert durations == [truth[r["id"]] for r in requests]
        quartiles = {i for i, ms in truth.items() if shown["p25"] <= ms <= shown["p75"]}
        requests, _ = listed(viewer_client, shown["links"]["quartiles"]["url"])
        assert {r["id"] for r in requests} == quartiles
        assert shown["links"]["quartiles"]["requests"] == len(quartiles)
    assert listed(viewer_client, stages["runAgent"]["links"]["max"]["url"])[0][0]["id"] == "slowest"


def test_the_chart_bars_and_the_table_carry_the_same_links(viewer_client, timed):
    page = viewer_client.get(chart_url()).content.decode()
    parse_fragment(page)
    data = viewer_client.get(chart_url(format="json")).json()
    percentiles, _ = figures(page)
    by_name = {trace["name"]: trace for trace in percentiles["data"]}
    for i, stage in enumerate(data["stages"]):
        for key in ("p50", "p95", "p99", "max"):
            url = stage["links"][key]["url"]
            assert by_name[key]["customdata"][i] == url  # a click on the bar or the marker
            assert f'href="{url.replace("&", "&amp;")}"' in page  # the table's figure
            assert f"({stage['links'][key]['requests']})" in page


def test_slowest_first_walks_every_request_once_in_order(viewer_client, timed, hours, monkeypatch):
    monkeypatch.setattr(listing, "PAGE_SIZE", 7)
    truth = timings_of(timed, "runAgent")
    requests, first = listed(viewer_client, list_url(timing="runAgent", order="slowest"))
    assert first["order"] == "slowest" and first["count"] == len(truth)
    assert [r["id"] for r in requests][:3] == ["slowest", "tie-b", "tie-a"]  # ties by id
    assert [r["stage_ms"] for r in requests] == sorted(truth.values(), reverse=True)
    assert sorted(r["id"] for r in requests) == sorted(truth)


def test_slowest_first_with_another_filter_still_finds_every_match(
    viewer_client, timed, hours, monkeypatch
):
    """Failures are a third of the rows: the slowest timings of the summaries are mostly not
    failures, so a page asks again with a lower bound until it is full."""
    monkeypatch.setattr(listing, "PAGE_SIZE", 5)
    failed = {row[0] for row in timed.conn.execute(
        "SELECT id FROM nexus_requests WHERE status = 'failed'").fetchall()}  # fmt: skip
    truth = {i: ms for i, ms in timings_of(timed, "runAgent").items() if i in failed}
    url = list_url(timing="runAgent", order="slowest", status="failed", timing_min=1000)
    requests, first = listed(viewer_client, url)
    expected = sorted((ms for ms in truth.values() if ms >= 1000), reverse=True)
    assert [r["stage_ms"] for r in requests] == expected
    assert first["count"] == len(expected)


def test_a_range_lists_the_requests_within_it_both_ends_included(viewer_client, timed, hours):
    truth = timings_of(timed, "runAgent")
    low, high = sorted(truth.values())[10], sorted(truth.values())[60]
    requests, first = listed(
        viewer_client, list_url(timing="runAgent", timing_min=low, timing_max=high)
    )
    within = {i for i, ms in truth.items() if low <= ms <= high}
    assert {r["id"] for r in requests} == within and first["count"] == len(within)
    started = [r["started_at"] for r in requests]
    assert started == sorted(started, reverse=True)  # newest first unless asked
    assert first["not_searched"] is None


def test_a_stage_without_bounds_lists_every_request_with_its_timing(viewer_client, timed):
    requests, _ = listed(viewer_client, list_url(timing="teleport"))
    assert [r["id"] for r in requests] == ["odd7"]  # an unknown stage is a stage too


def test_the_duration_filter_stays_in_the_form_the_json_link_and_the_next_page(
    viewer_client, timed, monkeypatch
):
    monkeypatch.setattr(listing, "PAGE_SIZE", 5)
    url = list_url(timing="runAgent", timing_min=1000, order="slowest")
    page = viewer_client.get(url).content.decode()
    tree = parse_html(page)
    assert tree.find(".//select[@id='f-timing']/option[@selected]").text == "runAgent"
    assert tree.find(".//input[@id='f-timing-min']").get("value") == "1000"
    assert tree.find(".//select[@id='f-order']/option[@selected]").get("value") == "slowest"
    assert "whose <code>runAgent</code> took at least 1,000 ms, slowest first" in page
    older = urljoin("/pipeline/requests/", tree.find(".//tr[@class='more']//a").get("href"))
    assert "timing=runAgent" in older and "timing_min=1000" in older and "order=slowest" in older
    (json_link,) = [a.get("href") for a in tree.iter("a") if a.text == "JSON"]
    assert "timing=runAgent" in json_link and "order=slowest" in json_link
    # The next page, as htmx asks for it: rows only, the stage's column included.
    rows = viewer_client.get(older, headers={"HX-Request": "true"}).content.decode()
    assert "<html" not in rows and rows.count('class="num stage-ms"') == 5


@pytest.mark.parametrize(
    ("query", "named"),
    [
        ({"timing_min": "100"}, "timing_min=100: give the stage it is about"),
        ({"order": "slowest"}, "order=slowest: sorts by a stage's duration"),
        ({"timing": "runAgent", "timing_min": "abc"}, "timing_min=abc: not a number of"),
        ({"timing": "runAgent", "timing_min": "-3"}, "timing_min=-3: not a number of"),
        ({"timing": "runAgent", "timing_min": "9", "timing_max": "3"}, "timing_max=3: less than"),
        ({"order": "fastest"}, "order=fastest: choose newest or slowest"),
    ],
)
def test_a_bad_duration_parameter_is_named_and_not_applied(viewer_client, timed, query, named):
    page = viewer_client.get(list_url(**query, format="json")).json()
    assert any(message.startswith(named) for message in page["errors"].values()), page["errors"]
    assert viewer_client.get(list_url(**query)).status_code == 200


def test_a_summarised_window_reads_only_the_hours_holding_such_a_timing(timed):
    """The slowest request of six hours is looked for in its hour alone."""
    build_every_hour()
    search = timing_search.search("runAgent", 90_000, None, SINCE, UNTIL)
    condition, params = search.condition()
    hours = params[-1]  # a JSON array on SQLite, a list (an array) on PostgreSQL
    assert (json.loads(hours) if isinstance(hours, str) else hours) == [T0 + 2 * H]
    every = timing_search.search("runAgent", None, None, SINCE, UNTIL)
    assert every.slowest_from(None, 3) == 40000  # the third slowest, in the summaries
    # Below a page ending at 40,000 (its two ties may have been shown): the next slowest the
    # summaries hold (a request still processing, "busy", is read live, not summarised).
    settled = {i: ms for i, ms in timings_of(timed, "runAgent").items() if i != "busy"}
    assert every.slowest_from(40000, 1) == max(v for v in settled.values() if v < 40000)


def test_hours_past_the_live_bound_are_said_and_left_out(viewer_client, timed, monkeypatch):
    monkeypatch.setattr(timing_search, "LIVE_ROWS", 60)  # the newest hours only
    requests, first = listed(viewer_client, list_url(timing="runAgent"))
    assert "hours not searched yet for the stage's duration" in first["not_searched"]
    assert 0 < first["count"] == len(requests) < len(timings_of(timed, "runAgent"))
    page = viewer_client.get(list_url(timing="runAgent")).content.decode()
    assert "not searched yet for the stage" in page
