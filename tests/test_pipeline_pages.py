"""The request list, the failed-request page and the dashboard charts on a small hand-made
ledger: every number is checked against what the rows say, and every chart bar's link lists
exactly the requests it counts."""

import html
import json
import re
from urllib.parse import urlencode, urljoin

import pytest
from builders import LEDGER_DB, T0, parse_fragment, parse_html
from django.db import connections
from django.urls import reverse

from ledgerweb.db import LEDGER
from pipeline.charts import CHARTS

pytestmark = LEDGER_DB
H = 3_600_000
WINDOW = {"since": T0, "until": T0 + 4 * H}
TIMINGS = {
    "receiveEvent": 10, "resolveIdentity": 5, "resolveAccess": 5, "executeTriggers": 20,
    "assembleContext": 60, "runAgent": 4000, "deliverResponse": 300, "finalize": 2,
}  # fmt: skip


def timings(upto: str, **overrides) -> str:
    names = list(TIMINGS)
    return json.dumps({n: TIMINGS[n] for n in names[: names.index(upto) + 1]} | overrides)


@pytest.fixture
def pipeline(ledger):
    s = ledger.session(id="S1", routing_key="imessage:+1555:default")
    turn = ledger.turn(s, id="T-ran")
    ledger.set_head(s, turn, turn)
    add = ledger.request
    add(
        id="R01",
        started_at=T0 + 1000,
        stage_timings=timings("finalize"),
        event_source="imessage",
        session_persona="atlas",
        principal_id="mom",
        hooks_matched='["2fa", "quiet"]',
        hooks_fired='["2fa"]',
        hooks_handled=0,
        agent_model="sonnet",
        agent_tokens_total=1000,
        delivery_channel="imessage",
        delivery_success=1,
        turn_id="T-ran",
        session_key="imessage:+1555:default",
    )
    add(
        id="R02",
        started_at=T0 + 2000,
        stage_timings=timings("finalize", runAgent=2000),
        event_source="imessage",
        principal_id="mom",
        hooks_matched='["2fa"]',
        hooks_fired='["2fa"]',
        hooks_handled=1,
        hooks_context='{"handled_by": "2fa"}',
        status="skipped",
        agent_model="sonnet",
        agent_tokens_total=500,
    )
    add(
        id="R03",
        started_at=T0 + H + 5,
        status="failed",
        stage="runAgent",
        error_stage="runAgent",
        error_message="Rate limited: 429 (retry after 31 s)",
        error_stack="Error\n  at run (a.ts:1)",
        stage_timings=timings("runAgent", runAgent=8000),
        event_source="gmail",
        principal_id="dad",
        hooks_matched='["quiet"]',
        hooks_fired="[]",
        turn_id="T-ran",
    )
    add(
        id="R04",
        started_at=T0 + H + 10,
        status="failed",
        stage="runAgent",
        error_stage="runAgent",
        error_message="Rate limited: 429 (retry after 7 s)",
        event_source="gmail",
        stage_timings=timings("runAgent", runAgent=6000),
        hooks_matched='["quiet", "quiet"]',
    )
    add(
        id="R05",
        started_at=T0 + 2 * H,
        status="failed",
        stage="deliverResponse",
        error_stage="deliverResponse",
        error_message="iMessage send failed: -1743",
        stage_timings=timings("deliverResponse"),
        delivery_channel="imessage",
        delivery_success=0,
        event_source="imessage",
        hooks_matched="not json",
        agent_model="opus",
        agent_tokens_total=3000,
    )
    add(
        id="R06",
        started_at=T0 + 3 * H,
        status="processing",
        stage="runAgent",
        stage_timings="[]",
        event_source="discord",
    )
    add(id="R-before", started_at=T0 - 1)  # outside the window
    add(id="R-after", started_at=T0 + 4 * H)  # the window's end is exclusive
    return ledger


def chart(client, slug, **params):
    return client.get(
        f"/pipeline/charts/{slug}/?" + urlencode(WINDOW | params | {"format": "json"})
    ).json()


def list_ids(client, url) -> list[str]:
    sep = "&" if "?" in url else "?"
    return sorted(r["id"] for r in client.get(url + sep + "format=json").json()["requests"])


# -- The request list -----------------------------------------------------------------------------


def test_the_list_is_newest_first_with_status_duration_and_error(viewer_client, pipeline):
    data = viewer_client.get("/pipeline/requests/?format=json").json()
    assert [r["id"] for r in data["requests"]][:3] == ["R-after", "R06", "R05"]
    r05 = next(r for r in data["requests"] if r["id"] == "R05")
    assert (r05["status"], r05["error_stage"], r05["error"]) == (
        "failed",
        "deliverResponse",
        "iMessage send failed: -1743",
    )


@pytest.mark.parametrize(
    ("query", "expected"),
    [
        ("status=failed", ["R03", "R04", "R05"]),
        ("error_stage=runAgent", ["R03", "R04"]),
        ("source=gmail", ["R03", "R04"]),
        ("principal=mom", ["R01", "R02"]),
        ("q=rate+limited", ["R03", "R04"]),
        ("hook=quiet", ["R01", "R03", "R04"]),
        ("hook=2fa&hook_state=handled", ["R02"]),
        ("channel=imessage&delivered=no", ["R05"]),
        ("model=sonnet", ["R01", "R02"]),
        (f"since={T0 + H}&until={T0 + 2 * H}", ["R03", "R04"]),
    ],
)
def test_each_filter_selects_the_right_requests(viewer_client, pipeline, query, expected):
    assert list_ids(viewer_client, f"/pipeline/requests/?{query}") == expected


def test_null_and_empty_values_are_selected_apart_from_any(viewer_client, ledger):
    ledger.request(id="R-null", event_source="", principal_id=None, agent_model=None)
    ledger.request(id="R-empty", event_source="", principal_id="", agent_model="")
    ledger.request(id="R-mail", event_source="gmail", principal_id="mom", agent_model="sonnet")
    assert list_ids(viewer_client, "/pipeline/requests/?principal__isnull=1") == ["R-null"]
    assert list_ids(viewer_client, "/pipeline/requests/?principal__exact=") == ["R-empty"]
    assert list_ids(viewer_client, "/pipeline/requests/?model__isnull=1") == ["R-null"]
    assert list_ids(viewer_client, "/pipeline/requests/?source__exact=") == ["R-empty", "R-null"]
    # An empty form field still means "any".
    assert len(list_ids(viewer_client, "/pipeline/requests/?source=&model=")) == 3


def test_the_json_and_older_links_keep_every_filter(viewer_client, ledger):
    for i in range(130):
        ledger.request(id=f"R{i:03d}", started_at=T0 + i, status="failed" if i % 2 else "completed")
    page = parse_html(viewer_client.get("/pipeline/requests/?status=failed").content)
    hrefs = {"".join(a.itertext()).strip(): a.get("href") for a in page.iter("a")}
    assert "??" not in "".join(h or "" for h in hrefs.values())
    as_json = viewer_client.get(hrefs["JSON"]).json()
    assert {r["status"] for r in as_json["requests"]} == {"failed"}
    older_url = urljoin("/pipeline/requests/", hrefs["Older requests ↓"])
    older = parse_html(viewer_client.get(older_url).content)
    rows = [tr.get("class") for tr in older.iter("tr") if tr.get("data-started")]
    assert len(rows) == 15 and set(rows) == {"status-row-failed"}


def test_list_pages_chain_without_repeats(viewer_client, ledger):
    for i in range(60):
        ledger.request(id=f"R{i:02d}", started_at=T0 + i // 4)
    first = viewer_client.get("/pipeline/requests/?format=json").json()
    second = viewer_client.get(f"/pipeline/requests/?format=json&after={first['next']}").json()
    ids = [r["id"] for r in first["requests"] + second["requests"]]
    assert len(ids) == len(set(ids)) == 60


def test_the_list_runs_a_bounded_number_of_queries(
    viewer_client, pipeline, django_assert_max_num_queries
):
    # 4, and 2 for the live bar's cursor (the ledger's tables and their marks).
    with django_assert_max_num_queries(6, connection=connections[LEDGER]):
        viewer_client.get("/pipeline/requests/?status=failed")


def test_the_list_twin_answers_a_page_holding_a_request_without_an_id(
    viewer_client, ledger, django_assert_max_num_queries
):
    """Every field the twin gives is read with the page: a row without an id cannot be loaded
    again by its key (that answered 500, "Cannot retrieve deferred field 'event_id'"), and the
    others cost one query each."""
    ledger.request(id=None, started_at=T0 + 1, event_id="ev-no-id")
    for i in range(5):
        ledger.request(id=f"R{i}", started_at=T0 + 10 + i, event_id=f"ev-{i}")
    with django_assert_max_num_queries(4, connection=connections[LEDGER]):
        response = viewer_client.get("/pipeline/requests/?format=json")
    assert response.status_code == 200
    rows = response.json()["requests"]
    assert [(r["id"], r["event_id"]) for r in rows][-2:] == [("R0", "ev-0"), (None, "ev-no-id")]
    assert viewer_client.get("/pipeline/requests/").status_code == 200


# -- The request page ------------------------------------------------------------------------------


def test_a_failed_request_shows_the_failure_first(viewer_client, pipeline):
    page = viewer_client.get("/pipeline/requests/R03/").content.decode()
    parse_html(page)
    assert page.index("runAgent failed:") < page.index("Stage waterfall")
    assert "Rate limited: 429 (retry after 31 s)" in page
    assert "at run (a.ts:1)" in page
    assert 'class="bar-failed"' in page and 'class="bar-not-reached"' in page
    assert 'href="/sessions/S1/turns/T-ran/"' in page  # one click to the turn that ran


def test_similar_failures_count_what_their_link_lists(viewer_client, pipeline):
    data = viewer_client.get("/pipeline/requests/R03/?format=json").json()
    assert data["signature"] == "Rate limited: <n> (retry after <n> s)"
    assert data["similar_failures"] == {"count": 2, "capped": False}
    # The page loads the count after itself (it can take a second on a big ledger).
    page = viewer_client.get("/pipeline/requests/R03/").content.decode()
    assert 'hx-get="/pipeline/requests/R03/similar/"' in page and "2 similar" not in page
    fragment = viewer_client.get("/pipeline/requests/R03/similar/").content.decode()
    parse_fragment(fragment)
    assert "hx-get" not in fragment  # loaded once, not again
    link = fragment.split('">2 similar failures')[0].rsplit('href="', 1)[1].replace("&amp;", "&")
    assert list_ids(viewer_client, link) == ["R03", "R04"]


def test_previous_and_next_failures_and_related_requests(viewer_client, pipeline):
    data = viewer_client.get("/pipeline/requests/R04/?format=json").json()
    assert (data["previous_failure"], data["next_failure"]) == ("R03", "R05")
    assert viewer_client.get("/pipeline/requests/R01/?format=json").json()["same_principal"] == [
        "R02"
    ]


def test_hooks_that_matched_but_did_not_fire_are_named(viewer_client, pipeline):
    data = viewer_client.get("/pipeline/requests/R01/?format=json").json()
    assert data["hooks_matched_not_fired"] == ["quiet"]
    assert (
        "quiet matched, did not fire"
        in viewer_client.get("/pipeline/requests/R01/").content.decode()
    )


@pytest.mark.parametrize(
    ("fields", "problem"),
    [
        ({"stage_timings": "{bad"}, "stage_timings is not valid JSON"),
        ({"stage_timings": '{"runAgent": "x"}'}, "runAgent: 'x' is not a number"),
        ({"hooks_matched": "[oops"}, "hooks_matched is not valid JSON"),
        ({"hooks_fired": '{"a": 1}'}, "hooks_fired is a JSON dict, not an array"),
        ({"status": "weird"}, "unknown status 'weird'"),
        ({"turn_id": "ghost"}, "turn_id ghost does not exist in this ledger"),
        ({"status": "failed", "stage": "runAgent", "error_stage": "runAgent"},
         "error_stage is runAgent but there is no error_message"),
    ],
)  # fmt: skip
def test_bad_rows_render_with_the_problem_stated(viewer_client, ledger, fields, problem):
    ledger.request(id="BAD", **fields)
    response = viewer_client.get("/pipeline/requests/BAD/")
    assert response.status_code == 200
    assert problem in response.content.decode().replace("&#x27;", "'")


def test_html_in_every_field_is_escaped(viewer_client, ledger):
    evil = "<script>alert(1)</script>"
    ledger.request(
        id="X",
        status="failed",
        stage="runAgent",
        error_stage="runAgent",
        error_message=evil,
        error_stack=evil,
        principal_id=evil,
        event_source=evil,
        hooks_matched=json.dumps([evil]),
        request_snapshot=json.dumps({evil: evil}),
    )
    page = viewer_client.get("/pipeline/requests/X/").content.decode()
    assert "<script>alert(1)" not in page
    parse_html(page)


def test_a_retention_pruned_snapshot_is_said_plainly(viewer_client, pipeline):
    assert (
        "retention drops it after 7 days"
        in viewer_client.get("/pipeline/requests/R01/").content.decode()
    )


def test_an_unknown_request_is_a_404(viewer_client, pipeline):
    assert viewer_client.get("/pipeline/requests/nope/").status_code == 404


def test_the_request_page_runs_a_bounded_number_of_queries(
    viewer_client, pipeline, django_assert_max_num_queries
):
    with django_assert_max_num_queries(12, connection=connections[LEDGER]):
        viewer_client.get("/pipeline/requests/R03/")


# -- The dashboard's charts ---------------------------------------------------------------------


def test_the_dashboard_loads_every_chart_as_a_partial(viewer_client, pipeline):
    page = viewer_client.get("/pipeline/?" + urlencode(WINDOW)).content.decode()
    parse_html(page)
    for slug in (
        "throughput",
        "failures",
        "stage-timings",
        "hooks",
        "sources",
        "tokens",
        "delivery",
    ):
        assert f"/pipeline/charts/{slug}/" in page
        body = viewer_client.get(f"/pipeline/charts/{slug}/?" + urlencode(WINDOW)).content.decode()
        parse_fragment(body)
        assert "data-figure=" in body


def test_throughput_counts_each_bucket_by_status(viewer_client, pipeline):
    data = chart(viewer_client, "throughput")
    buckets = data["buckets"]
    assert sum(b["total"] for b in buckets) == 6  # R01–R06: the window's ends are respected
    first_hour = [b for b in buckets if T0 <= b["start"] < T0 + H]
    assert sum(b.get("completed", 0) for b in first_hour) == 1
    assert sum(b.get("skipped", 0) for b in first_hour) == 1
    assert sum(b.get("failed", 0) for b in buckets) == 3


def test_every_throughput_segment_links_to_exactly_its_requests(viewer_client, pipeline):
    page = viewer_client.get("/pipeline/charts/throughput/?" + urlencode(WINDOW)).content.decode()
    attribute = page.split('data-figure="', 1)[1].split('"', 1)[0]
    figure = json.loads(html.unescape(attribute))
    checked = 0
    for trace in figure["data"]:
        for count, url in zip(trace.get("y", []), trace.get("customdata", []), strict=False):
            if url and count:
                assert len(list_ids(viewer_client, url)) == count, url
                checked += 1
    assert checked >= 4


def test_failures_by_stage_and_signature(viewer_client, pipeline):
    data = chart(viewer_client, "failures")
    assert [(s["error_stage"], s["count"]) for s in data["by_stage"]] == [
        ("runAgent", 2),
        ("deliverResponse", 1),
    ]
    top = data["signatures"][0]
    assert (top["signature"], top["count"], top["last_seen"]) == (
        "Rate limited: <n> (retry after <n> s)",
        2,
        T0 + H + 10,
    )
    assert list_ids(viewer_client, top["url"]) == ["R03", "R04"]


def test_stage_timing_percentiles_are_exact(viewer_client, pipeline):
    stages = {s["stage"]: s for s in chart(viewer_client, "stage-timings")["stages"]}
    run = stages["runAgent"]  # 4000, 2000, 8000, 6000, 4000 (R05)
    assert (run["count"], run["p50"], run["p95"], run["max"], run["min"]) == (
        5,
        4000,
        8000,
        8000,
        2000,
    )
    assert stages["finalize"]["count"] == 2
    assert list(stages)[:2] == ["receiveEvent", "resolveIdentity"]  # pipeline order


def test_hook_effectiveness_counts_rows_once_and_skips_bad_json(viewer_client, pipeline):
    hooks = {h["hook"]: h for h in chart(viewer_client, "hooks")["hooks"]}
    assert {k: (h["matched"], h["fired"], h["handled"]) for k, h in hooks.items()} == {
        "quiet": (3, 0, 0),  # R04 names it twice: still one request
        "2fa": (2, 2, 1),
    }
    for h in hooks.values():
        for state in ("matched", "fired", "handled"):
            assert len(list_ids(viewer_client, h["urls"][state])) == h[state]


def test_sources_principals_tokens_and_delivery(viewer_client, pipeline):
    sources = chart(viewer_client, "sources")
    by_source = {s["event_source"]: s for s in sources["event_source"]}
    assert by_source["gmail"]["by_status"] == {"failed": 2}
    assert by_source["imessage"]["total"] == 3
    principals = {p["principal_id"]: p["total"] for p in sources["principal_id"]}
    assert principals == {None: 3, "mom": 2, "dad": 1}  # NULL principals are requests too
    models = chart(viewer_client, "tokens")["models"]
    assert {m: sum(v) for m, v in models.items()} == {"sonnet": 1500, "opus": 3000}
    channels = chart(viewer_client, "delivery")["channels"]
    assert channels == [
        {"channel": "imessage", "delivered": 1, "failed": 1, "unknown": 0, "unreadable": 0,
         "success_rate": 0.5}
    ]  # fmt: skip


def test_the_source_filter_narrows_every_chart(viewer_client, pipeline):
    data = chart(viewer_client, "throughput", source="gmail")
    assert sum(b["total"] for b in data["buckets"]) == 2


def test_an_empty_window_draws_empty_charts(viewer_client, pipeline):
    for slug in (
        "throughput",
        "failures",
        "stage-timings",
        "hooks",
        "sources",
        "tokens",
        "delivery",
    ):
        response = viewer_client.get(f"/pipeline/charts/{slug}/?since=1&until=2")
        assert response.status_code == 200, slug


def test_the_dashboards_request_link_lists_the_requests_of_its_window(viewer_client, pipeline):
    dashboard = "/pipeline/?" + urlencode(WINDOW | {"source": "gmail"})
    tree = parse_html(viewer_client.get(dashboard).content)
    (link,) = [a for a in tree.iter("a") if "requests of this window" in (a.text or "")]
    url = urljoin(dashboard, link.get("href"))
    assert list_ids(viewer_client, url) == ["R03", "R04"]  # not R-before, R-after, nor imessage


def test_an_unknown_chart_is_a_404(viewer_client):
    assert viewer_client.get("/pipeline/charts/horoscope/").status_code == 404


def test_the_dashboard_allows_inline_styles_for_plotly_but_scripts_stay_strict(viewer_client):
    policy = viewer_client.get("/pipeline/")["Content-Security-Policy"]
    assert "style-src 'self' 'unsafe-inline'" in policy
    assert "script-src 'self' 'nonce-" in policy and "unsafe-eval" not in policy


def test_a_common_filter_walks_the_newest_rows_and_finds_the_same_ones(
    viewer_client, pipeline, monkeypatch
):
    indexed = list_ids(viewer_client, "/pipeline/requests/?status=failed")
    monkeypatch.setattr("pipeline.listing.COUNT_CAP", 2)  # three failures: now "common"
    data = viewer_client.get("/pipeline/requests/?status=failed&format=json").json()
    assert data["count_capped"] is True
    assert sorted(r["id"] for r in data["requests"]) == indexed


def test_a_chart_that_takes_too_long_says_so_in_its_card(
    viewer_client, pipeline, settings, monkeypatch
):
    from dataclasses import replace

    from ledgerweb import sqlite
    from pipeline import charts

    def endless(f):
        sqlite.rows(
            "WITH RECURSIVE n(x) AS (SELECT 1 UNION ALL SELECT x + 1 FROM n)"
            " SELECT count(*) FROM n",
            [],
        )

    settings.LEDGER_QUERY_TIMEOUT_MS = 50
    slow = replace(charts.CHARTS["hooks"], build=endless)
    monkeypatch.setitem(charts.CHARTS, "hooks", slow)
    response = viewer_client.get(
        "/pipeline/charts/hooks/?" + urlencode(WINDOW), headers={"HX-Request": "true"}
    )
    assert response.status_code == 503
    body = response.content.decode()
    assert "took longer than 0.05 s" in body and "<html" not in body
    assert "Hook effectiveness" in body  # the card keeps its title


def test_list_rows_show_each_request_escaped_and_link_to_it(viewer_client, ledger):
    """The rows, drawn by the list template's loop: every ledger value escaped, the links right."""
    evil = '<img src=x onerror=alert(1)>"'
    ledger.request(
        id="R/1 <x>",
        status="failed",
        event_source=evil,
        principal_id=None,
        stage="runAgent",
        error_stage="runAgent",
        error_message=f"{evil} timed out\nsecond line of the stack",
    )
    ledger.request(id="R2", status="weird <b>", started_at="yesterday", completed_at=None)
    page = viewer_client.get("/pipeline/requests/").content.decode()
    tree = parse_html(page)
    rows = {
        tr.find("td/a").get("href"): tr for tr in tree.iter("tr") if tr.find("td/a") is not None
    }
    failed = rows[reverse("pipeline:request", args=["R/1 <x>"])]
    cells = ["".join(td.itertext()).strip() for td in failed.findall("td")]
    assert cells[0] == "failed" and failed.get("class") == "status-row-failed"
    assert cells[2] == f"{evil} · message"  # shown as text, not markup
    assert cells[3:6] == ["—", "runAgent", "1.5 s"]
    assert cells[6] == ""  # no agent tokens: no cost
    assert cells[7] == f"runAgent: {evil} timed out"  # the first line only
    if "R2" in ledger.left_out:  # a PostgreSQL ledger holds no text time: ledger_ship leaves R2 out
        assert reverse("pipeline:request", args=["R2"]) not in rows
    else:
        weird = rows[reverse("pipeline:request", args=["R2"])]
        assert weird.get("class") == "status-row-weird-b"
        assert "(not a time)" in "".join(weird.itertext())  # a text started_at, said so
    assert "<img src=x" not in page
    assert viewer_client.get(reverse("pipeline:request", args=["R/1 <x>"])).status_code == 200


def test_the_dashboard_follows_the_ledger_and_its_old_auto_refresh_address_still_opens(
    viewer_client, pipeline
):
    """The 30-second auto-refresh gave way to live updates (live/): refresh=1, its address,
    opens the same dashboard, which follows the ledger while its window reaches now."""
    for url in ("/pipeline/?" + urlencode(WINDOW), "/pipeline/?refresh=1"):
        page = viewer_client.get(url).content.decode()
        assert "Auto-refresh" not in page and "every 30s" not in page
        assert ('data-live-kind="pipeline"' in page) == ("since" not in url), url
    page = viewer_client.get("/pipeline/?window=7d").content.decode()
    assert 'data-live-kind="pipeline"' in page
    # Every chart follows (static/js/live.js asks for each card that names its chart again, all
    # at the grid's address at once), no more often than every 5 s: the charts are heavier than
    # a poll and the dashboard promises 10 s.
    followed = re.findall(
        r'<section class="card chart-card" id="chart-([a-z-]+)" data-chart="\1"\s+hx-get=', page
    )
    assert sorted(followed) == sorted(CHARTS)
    assert 'data-charts-url="/pipeline/charts/?' in page
    assert 'data-live-redraw-every="5000"' in page


def test_a_chart_with_nothing_to_count_says_so_instead_of_drawing_bare_axes(
    viewer_client, pipeline
):
    def card(slug: str, since: int, until: int) -> str:
        url = f"/pipeline/charts/{slug}/?" + urlencode({"since": since, "until": until})
        return viewer_client.get(url).content.decode()

    for slug in CHARTS:
        body = card(slug, T0 - 10 * H, T0 - 9 * H)  # an hour before any request
        assert "Nothing to draw in this window." in body and "data-figure" not in body, slug
    # R01 alone: one completed request, no failure to draw.
    assert "Nothing to draw" in card("failures", T0, T0 + 1500)
    assert "data-figure" in card("throughput", T0, T0 + 1500)
