"""The dashboard's charts tell the truth on the odd data real ledgers hold: every row is counted
somewhere (and the chart says where odd values went), every element links to a list of exactly
the requests it counts, and no window, however absurd, makes a chart's work unbounded."""

import html
import json
from datetime import UTC, datetime
from decimal import Decimal
from urllib.parse import urlencode, urljoin

import pytest
from builders import LEDGER_DB, T0, parse_fragment, parse_html

from ledgerweb.costs import token_count
from ledgerweb.prices import parse_price_overrides
from pipeline.charts import CHARTS, MAX_BUCKETS, MAX_CATEGORIES, value_label

pytestmark = LEDGER_DB
H = 3_600_000
SINCE, UNTIL = T0, T0 + 4 * H
WINDOW = {"since": SINCE, "until": UNTIL}


HOOKS = {"hooks_matched": '["otp", "spam"]', "hooks_fired": '["otp", "spam"]'}
# Requests as other programs write them: REAL and text times, '' next to NULL (status and
# event_source are NOT NULL in the schema: '' is their odd value), flags of 2 and 'true',
# hooks_context naming (or not) the hook that handled, HTML and label look-alikes.
ODD_REQUESTS = (
    {"id": "frac", "started_at": T0 + H + 0.5, "agent_model": "sonnet", "agent_tokens_total": 700,
     "agent_tokens_prompt": 600, "agent_tokens_completion": 100},
    {"id": "text-time", "started_at": "2026-11-26 10:00"},  # never in a numeric window
    {"id": "empty-keys", "started_at": T0 + 10, "status": "", "event_source": "",
     "principal_id": "", "agent_model": "", "agent_tokens_total": 5, "delivery_channel": "",
     "delivery_success": 1},
    {"id": "null-keys", "started_at": T0 + 20, "principal_id": None, "agent_model": None,
     "agent_tokens_total": 9, "delivery_channel": None, "delivery_success": 0},
    {"id": "fail-empty-stage", "started_at": T0 + 30, "status": "failed", "error_stage": "",
     "error_message": "boom 1"},
    {"id": "fail-null-stage", "started_at": T0 + 40, "status": "failed", "error_stage": None},
    {"id": "fail-run", "started_at": T0 + 2 * H, "status": "failed", "error_stage": "runAgent",
     "error_message": "Rate limited: 429", "principal_id": "mom"},
    {"id": "two", "started_at": T0 + 50, "delivery_channel": "imessage", "delivery_success": 2,
     **HOOKS, "hooks_handled": 2, "hooks_context": '{"handled_by": "otp"}'},
    {"id": "text-true", "started_at": T0 + 60, "delivery_channel": "imessage",
     "delivery_success": "true", "hooks_matched": '["otp"]', "hooks_fired": '["otp"]',
     "hooks_handled": "true"},
    {"id": "shared", "started_at": T0 + 70, "delivery_channel": "imessage",
     "delivery_success": 1, **HOOKS, "hooks_handled": 1, "hooks_context": '{"reply": false}'},
    {"id": "none-fired", "started_at": T0 + 80, "hooks_matched": '["spam"]', "hooks_fired": "[]",
     "hooks_handled": 1},
    {"id": "html", "started_at": T0 + 3 * H, "principal_id": "<b>boss</b>",
     "event_source": " padded ", "status": "<script>", "agent_model": "(none)",
     "agent_tokens_total": 1},
    {"id": "real-tokens", "started_at": T0 + 90, "agent_model": "sonnet",
     "agent_tokens_total": 12.5, "agent_tokens_prompt": 400, "agent_tokens_completion": 12.5},
    {"id": "before", "started_at": T0 - 1},
    # Plain rows every backend holds: a PostgreSQL ledger holds what ledger_ship stores, without
    # the rows above whose REAL time, REAL count or flag of 2 or 'true' it cannot hold
    # (tests/pg_ledger.py), and still has a priced request and a hook credited by its context.
    {"id": "priced", "started_at": T0 + H + 100, "agent_model": "sonnet",
     "agent_tokens_total": 320, "agent_tokens_prompt": 300, "agent_tokens_completion": 20},
    {"id": "credited", "started_at": T0 + 100, **HOOKS, "hooks_handled": 1,
     "hooks_context": '{"handled_by": "spam"}'},
)  # fmt: skip


@pytest.fixture
def odd(ledger):
    for fields in ODD_REQUESTS:
        ledger.request(**fields)
    return ledger


def chart_url(slug: str, **params) -> str:
    return f"/pipeline/charts/{slug}/?" + urlencode(WINDOW | params)


def figures(page: str) -> list[dict]:
    parts = page.split('data-figure="')[1:]
    return [json.loads(html.unescape(part.split('"', 1)[0])) for part in parts]


def elements(figure: dict):
    """(trace name, category, value, url) of every bar of a figure."""
    for trace in figure["data"]:
        if trace["type"] != "bar":
            continue
        horizontal = trace.get("orientation") == "h"
        values, categories = (trace["x"], trace["y"]) if horizontal else (trace["y"], trace["x"])
        urls = trace.get("customdata") or [None] * len(values)
        yield from zip([trace["name"]] * len(values), categories, values, urls, strict=True)


def listed(client, page_url: str, href: str) -> dict:
    """Follow a link as a browser would (resolved against the page), as the list's JSON twin."""
    url = urljoin("http://testserver" + page_url, html.unescape(href))
    answer = client.get(url + "&format=json").json()
    assert not answer["errors"], (href, answer["errors"])
    return answer


def held(ledger, where: str = "1 = 1") -> set[str]:
    """The ids of the requests the ledger holds (matching `where`): on a PostgreSQL ledger, those
    of the fixture ledger_ship could store."""
    rows = ledger.conn.execute(f"SELECT id FROM nexus_requests WHERE {where}").fetchall()
    return {request_id for (request_id,) in rows}


def in_window(ledger) -> int:
    """The window's requests, counted by SQL on the ledger (a text time is in no window)."""
    (count,) = ledger.conn.execute(
        "SELECT count(*) FROM nexus_requests WHERE started_at >= ? AND started_at < ?",
        (SINCE, UNTIL),
    ).fetchone()
    return count


def tokens_of(ledger, ids) -> int:
    marks = ", ".join("?" for _ in ids)
    rows = ledger.conn.execute(
        f"SELECT agent_tokens_total FROM nexus_requests WHERE id IN ({marks})", list(ids)
    ).fetchall()
    return sum(token_count(t) for (t,) in rows)


def test_a_fractional_started_at_is_counted_by_every_chart(viewer_client, odd):
    for slug in CHARTS:
        response = viewer_client.get(chart_url(slug, format="json"))
        assert response.status_code == 200, slug
    buckets = viewer_client.get(chart_url("throughput", format="json")).json()["buckets"]
    # Every row of the window, "frac" included where the ledger holds it (SQLite: 12 + 2 plain).
    assert sum(b["total"] for b in buckets) == in_window(odd) > 0
    assert "frac" in held(odd) or odd.left_out  # PostgreSQL holds no REAL time: left out
    models = viewer_client.get(chart_url("tokens", format="json")).json()["models"]
    assert sum(models["sonnet"]) == tokens_of(odd, held(odd, "agent_model = 'sonnet'")) > 0


def test_huge_and_negative_token_counts_add_nothing_and_stop_no_chart(viewer_client, odd):
    sonnet = tokens_of(odd, held(odd, "agent_model = 'sonnet'"))
    assert sonnet > 0
    for n, tokens in enumerate((2**62, 2**62, -50)):  # two 2^62 overflow a plain SQL sum
        odd.request(id=f"huge{n}", started_at=T0 + H + 10 + n, agent_model="sonnet",
                    agent_tokens_total=tokens)  # fmt: skip
    for slug in CHARTS:
        assert viewer_client.get(chart_url(slug, format="json")).status_code == 200, slug
    models = viewer_client.get(chart_url("tokens", format="json")).json()["models"]
    assert sum(models["sonnet"]) == sonnet


@pytest.mark.parametrize("slug", [slug for slug in CHARTS if slug != "stage-timings"])
def test_every_chart_element_lists_exactly_the_requests_it_counts(
    viewer_client, odd, slug, settings
):
    """(Stage timings' bars are durations, not counts: tests/test_stage_durations.py follows
    them to the requests that took at least that long.)"""
    # "sonnet" priced as a model genai-prices knows, so that the cost chart draws bars.
    settings.MODEL_PRICES = parse_price_overrides({"sonnet": "claude-sonnet-4-5"}, "test")
    assert bars_list_what_they_count(viewer_client, odd, chart_url(slug)), slug


def bars_list_what_they_count(client, ledger, page_url: str) -> int:
    """Follow every bar of a chart (the card as the dashboard loads it, and bare) to the list it
    links to, and check the list holds what the bar counts; a bar of nothing links nowhere.
    Returns how many bars were followed."""
    slug = page_url.split("/charts/", 1)[1].split("/", 1)[0]
    checked = 0
    for headers in ({}, {"HX-Request": "true"}):
        page = client.get(page_url, headers=headers).content.decode()
        parse_fragment(page)
        for figure in figures(page):
            for name, category, value, url in elements(figure):
                if not value:
                    assert url is None, (slug, name, category, url)
                    continue
                assert url, (slug, name, category)  # every bar with requests is a way in
                answer = listed(client, page_url, url)
                if slug == "tokens":
                    ids = [r["id"] for r in answer["requests"]]
                    assert tokens_of(ledger, ids) == value, (name, category, url)
                elif slug == "cost":  # the bar sums the listed requests' costs
                    costs = [r["cost"]["usd"] for r in answer["requests"] if r["cost"]]
                    assert float(sum(map(Decimal, costs))) == value, (name, category, url)
                else:
                    assert answer["count"] == value, (slug, name, category, url)
                checked += 1
    return checked


def test_empty_and_null_values_are_labelled_and_selected_apart(viewer_client, odd):
    page = viewer_client.get(chart_url("sources")).content.decode()
    by_source, by_principal = figures(page)
    assert {"(empty)", '" padded "'} <= {c for _, c, n, _ in elements(by_source) if n}
    bars = {(name, c): url for name, c, n, url in elements(by_principal) if n}
    assert {"(empty)", "(none)", "<b>boss</b>"} <= {c for _, c in bars}
    empty = listed(viewer_client, "/pipeline/", bars[("(empty)", "(empty)")])  # status ''
    null = listed(viewer_client, "/pipeline/", bars[("completed", "(none)")])
    assert [r["id"] for r in empty["requests"]] == ["empty-keys"]
    completed_without_principal = {"credited", "frac", "none-fired", "null-keys", "priced",
                                   "real-tokens", "shared", "text-true", "two"}  # fmt: skip
    # Those the ledger holds: on PostgreSQL, "frac", "real-tokens", "text-true" and "two" are not.
    assert sorted(r["id"] for r in null["requests"]) == sorted(
        completed_without_principal & held(odd)
    )
    assert {"credited", "none-fired", "null-keys", "priced", "shared"} <= held(odd)
    tokens = viewer_client.get(chart_url("tokens", format="json")).json()["models"]
    assert {"(empty)", "(none)", '"(none)"'} <= set(tokens)  # a model named "(none)" is quoted


def test_the_signature_and_hook_tables_link_to_their_counts(viewer_client, odd):
    for slug in ("failures", "hooks"):
        page = viewer_client.get(chart_url(slug)).content.decode()
        rows = parse_fragment(page).findall(".//tbody/tr")
        assert rows, slug
        for row in rows:
            for cell in row.findall("td"):
                for link in cell.iter("a"):
                    # A count links to its requests; a signature to those of its row's count.
                    shown = cell if link.text else row.findall("td")[2]
                    answer = listed(viewer_client, chart_url(slug), link.get("href"))
                    assert answer["count"] == int("".join(shown.itertext())), link.get("href")


def test_odd_flags_are_counted_and_the_chart_says_where_they_went(viewer_client, odd):
    channels = viewer_client.get(chart_url("delivery", format="json")).json()["channels"]
    imessage = next(c for c in channels if c["channel"] == "imessage")
    assert (imessage["delivered"], imessage["unreadable"]) == (2, 1)  # 2 is true; 'true' is text
    assert sum(sum(c[k] for k in ("delivered", "failed", "unknown", "unreadable"))
               for c in channels) == 5  # fmt: skip
    page = viewer_client.get(chart_url("delivery")).content.decode()
    assert "1 responses have an unreadable delivery flag" in page
    tokens = viewer_client.get(chart_url("tokens")).content.decode()
    assert "1 requests have a token count that is not a whole number" in tokens
    hooks = viewer_client.get(chart_url("hooks")).content.decode()
    assert "1 requests have an unreadable hooks_handled flag" in hooks


# What each request of the fixture adds to a hook's (fired, handled, shared credit).
HOOK_CREDITS = {
    "two": {"otp": (1, 1, 0), "spam": (1, 0, 0)},  # handled (2), context names otp
    "text-true": {"otp": (1, 0, 0)},  # handled 'true': unreadable, no credit
    "shared": {"otp": (1, 0, 1), "spam": (1, 0, 1)},  # handled, context names none
    "credited": {"otp": (1, 0, 0), "spam": (1, 1, 0)},  # handled, context names spam
}


def test_the_hook_named_in_the_context_takes_the_credit_else_it_is_shared(viewer_client, odd):
    data = viewer_client.get(chart_url("hooks", format="json")).json()["hooks"]
    hooks = {h["hook"]: (h["fired"], h["handled"], h["shared"]) for h in data}
    expected = {}
    for request_id in held(odd) & set(HOOK_CREDITS):  # SQLite: otp (4, 1, 1), spam (3, 1, 1)
        for hook, credit in HOOK_CREDITS[request_id].items():
            before = expected.get(hook, (0, 0, 0))
            expected[hook] = tuple(a + b for a, b in zip(before, credit, strict=True))
    assert {"shared", "credited"} <= held(odd)
    assert hooks == expected
    page = viewer_client.get(chart_url("hooks")).content.decode()
    assert "shared credit" in page
    assert "1 handled requests fired no hook" in page  # "none-fired"


@pytest.mark.parametrize(
    "window",
    [
        {"since": 1, "until": 999_999_999_999_999},
        {"since": 1, "until": "9999-12-31"},
        {"since": T0 - 365 * 24 * H, "until": UNTIL},
    ],
)
def test_any_window_draws_a_bounded_number_of_buckets(viewer_client, odd, window):
    for slug in ("throughput", "tokens"):
        response = viewer_client.get(f"/pipeline/charts/{slug}/?" + urlencode(window))
        assert response.status_code == 200, slug
        assert len(response.content) < 100_000
        (figure,) = figures(response.content.decode())
        assert all(len(trace["x"]) <= MAX_BUCKETS for trace in figure["data"])
    data = viewer_client.get(
        "/pipeline/charts/throughput/?" + urlencode(window | {"format": "json"})
    ).json()
    # Every row with a numeric time, "before" too (SQLite: 13 + 2 plain).
    numeric_times = held(odd, "typeof(started_at) IN ('integer', 'real')")
    assert sum(b["total"] for b in data["buckets"]) + data["off_axis"] == len(numeric_times)


def test_a_window_ending_past_the_year_9999_is_said_and_the_chart_still_draws(viewer_client, odd):
    odd.request(id="micro", started_at=1_795_676_400_000_000)  # µs, not ms: the year 58873
    query = urlencode({"since": 1, "until": 10**17, "format": "json"})
    response = viewer_client.get(f"/pipeline/charts/throughput/?{query}")
    assert response.status_code == 200
    assert "until" in response.json()["errors"]
    page = viewer_client.get(f"/pipeline/charts/throughput/?since=1&until={10**17}")
    assert page.status_code == 200 and figures(page.content.decode())


def test_many_distinct_values_are_drawn_up_to_a_bound_and_the_rest_is_said(viewer_client, ledger):
    for i in range(MAX_CATEGORIES + 15):
        ledger.request(
            started_at=T0 + i,
            event_source=f"source-{i:02d}",
            status=f"status-{i:02d}",
            stage_timings=json.dumps({f"made-up-{i:02d}": i}),
            hooks_matched=json.dumps([f"hook-{i:02d}"]),
            delivery_channel=f"channel-{i:02d}",
            agent_model=f"model-{i:02d}",
            agent_tokens_total=10,
            agent_tokens_prompt=10,
        )
        ledger.request(started_at=T0 + H + i, status="failed", error_stage=f"stage-{i:02d}")
    for slug in CHARTS:
        page = viewer_client.get(chart_url(slug)).content.decode()
        for figure in figures(page):
            assert len(figure["data"]) <= MAX_CATEGORIES + 2, slug  # + other + failure rate
            for trace in figure["data"]:
                horizontal = trace.get("orientation") == "h"
                over_time = figure["layout"]["xaxis"].get("type") == "date"  # x: buckets
                if not over_time:
                    assert len(trace["y"] if horizontal else trace["x"]) <= MAX_CATEGORIES, slug
        assert "are not drawn" in page or slug in ("throughput", "tokens"), slug
    throughput = viewer_client.get(chart_url("throughput")).content.decode()
    (figure,) = figures(throughput)
    assert len(figure["data"]) <= MAX_CATEGORIES + 2  # + "other statuses" + the failure rate
    assert "other statuses" in {t["name"] for t in figure["data"]}


def test_the_dashboard_has_a_json_twin_with_every_chart(viewer_client, odd):
    page = viewer_client.get("/pipeline/?" + urlencode(WINDOW)).content.decode()
    parse_html(page)
    twin_link = page.split('of this window →</a> · <a href="', 1)[1].split('"', 1)[0]
    twin = viewer_client.get(urljoin("http://testserver/pipeline/", html.unescape(twin_link)))
    assert twin["Content-Type"] == "application/json"
    data = twin.json()
    assert (data["since"], data["until"]) == (SINCE, UNTIL)
    assert set(data["charts"]) == set(CHARTS)
    throughput = viewer_client.get(chart_url("throughput", format="json")).json()
    throughput.pop("errors")  # the dashboard's twin says them once, at its top
    assert data["charts"]["throughput"]["data"] == throughput


def test_chart_axes_count_in_whole_numbers_and_rates_in_round_percents(viewer_client, odd):
    (figure,) = figures(viewer_client.get(chart_url("throughput")).content.decode())
    requests, rate = figure["layout"]["yaxis"], figure["layout"]["yaxis2"]
    assert requests["tickformat"] == ",d"
    assert rate["range"][0] == 0 and rate["range"][1] in (0.5, 1.0) and rate["tickformat"] == ".0%"
    (figure,) = figures(viewer_client.get(chart_url("failures")).content.decode())
    assert figure["layout"]["yaxis"]["dtick"] == 1  # one failure a stage: no "0.2 failures"
    for figure in figures(viewer_client.get(chart_url("stage-timings")).content.decode()):
        assert figure["layout"]["yaxis"]["ticksuffix"] == " ms"


def test_the_dashboard_says_once_how_many_hours_are_not_summarised(viewer_client, odd, monkeypatch):
    from pipeline import rollups

    monkeypatch.setattr(rollups, "BUILD_BUDGET_S", 0)  # nothing gets built
    query = urlencode({"since": T0 - 48 * H, "until": UNTIL})
    page = viewer_client.get(f"/pipeline/?{query}").content.decode()
    assert page.count("Summarising: 0 of ") == 1
    assert "`" not in page.split("Summarising:", 1)[1].split("</p>", 1)[0]
    for slug in CHARTS:  # every hour fits in the charts' live part: none says it left one out
        card = viewer_client.get(f"/pipeline/charts/{slug}/?{query}").content.decode()
        assert "Summarising" not in card


def test_the_list_an_unreadable_flag_leads_to_says_what_it_selects(viewer_client, odd):
    page_url = chart_url("delivery")
    (figure,) = figures(viewer_client.get(page_url).content.decode())
    bars = {(name, c): url for name, c, n, url in elements(figure) if n}
    unreadable = bars[("unreadable flag", "imessage")]
    landing = viewer_client.get(urljoin("http://testserver" + page_url, unreadable))
    assert "1 request" in landing.content.decode()
    assert "with an unreadable delivery flag" in landing.content.decode()


def test_the_list_a_bar_leads_to_says_what_it_selects(viewer_client, odd):
    (figure,) = figures(viewer_client.get(chart_url("hooks")).content.decode())
    shared = {(name, c): url for name, c, n, url in elements(figure) if n}[("shared", "spam")]
    landing = viewer_client.get(shared, headers={"HX-Request": "true"}).content.decode()
    assert "<html" not in landing and "shares the credit" in landing


def test_a_stage_timing_too_big_for_a_float_is_left_out_and_the_charts_still_draw(
    viewer_client, ledger
):
    # 1e400 ms is valid JSON; PostgreSQL refused to make it a DOUBLE PRECISION and every chart of
    # the window answered 500 (they share the hour's rollup).
    ledger.request(started_at=T0 + 10, stage_timings='{"receiveEvent": 3, "runAgent": 1e400}')
    ledger.request(started_at=T0 + 20, stage_timings='{"receiveEvent": 5, "runAgent": 2500}')
    for slug in CHARTS:
        assert viewer_client.get(chart_url(slug, format="json")).status_code == 200, slug
    data = viewer_client.get(chart_url("stage-timings", format="json")).json()
    stages = {s["stage"]: (s["min"], s["max"]) for s in data["stages"]}
    assert stages == {"receiveEvent": (3, 5), "runAgent": (2500, 2500)}


def test_hooks_named_empty_or_with_spaces_list_exactly_their_requests(viewer_client, ledger):
    """A hook named "" or " sp " is a hook of its own: its bars' links select that name as
    stored, neither every request (the filter dropped) nor those of "sp" (the name stripped)."""
    for n, hook in enumerate(("", " sp ", "sp")):
        named = json.dumps([hook])
        for i in range(n + 1):  # 1, 2 and 3 requests: a wrong list shows another count
            handler = json.dumps({"handled_by": hook})
            ledger.request(started_at=T0 + 10 * n + i, hooks_matched=named, hooks_fired=named,
                           hooks_handled=1, hooks_context=handler)  # fmt: skip
        ledger.request(started_at=T0 + 10 * n + 5, hooks_matched=named)
    ledger.request(started_at=T0 + 100)  # no hook: what a dropped filter would add
    assert bars_list_what_they_count(viewer_client, ledger, chart_url("hooks")) == 2 * 3 * 3
    data = viewer_client.get(chart_url("hooks", format="json")).json()["hooks"]
    assert {h["hook"]: (h["matched"], h["handled"]) for h in data} == {
        "": (2, 1),
        " sp ": (3, 2),
        "sp": (4, 3),
    }
    for h in data:
        for state, url in h["urls"].items():
            answer = listed(viewer_client, chart_url("hooks"), url)
            assert answer["count"] == h[state], (h["hook"], state, url)
    # The list says which hook it selects, as the chart names it.
    for h in data:
        page = viewer_client.get(h["urls"]["matched"]).content.decode()
        assert f"where hook <code>{html.escape(value_label(h['hook']))}</code>" in page
    assert {value_label(h["hook"]) for h in data} == {"(empty)", '" sp "', "sp"}
    table = parse_fragment(viewer_client.get(chart_url("hooks")).content)
    assert {"".join(code.itertext()) for code in table.iter("code")} == {"(empty)", '" sp "', "sp"}


def test_a_responses_chart_links_no_bar_of_nothing(viewer_client, ledger):
    """The delivery chart's "(none)" channel has a bar of 0 "no flag" beside its delivered ones:
    its link listed every request that is not a response."""
    ledger.request(started_at=T0 + 1, delivery_channel=None, delivery_success=1)
    ledger.request(started_at=T0 + 2, delivery_channel="imessage")  # a response without a flag
    for i in range(3):
        ledger.request(started_at=T0 + 10 + i)  # not responses
    assert bars_list_what_they_count(viewer_client, ledger, chart_url("delivery")) == 2 * 2


def test_an_error_whose_first_line_is_empty_is_known_by_its_first_line_of_text(
    viewer_client, ledger
):
    """Its signature was "": its link listed every failure of the stage, and the request page
    said "100+ similar failures" (the twin: signature null) where 4 share its first words."""
    first_blank = ["\nTimeout after 5 s", "\n\nTimeout after 70 s", "  \n\tTimeout after 9 s",
                   "\r\nTimeout after 1 s\nat run (a.ts:1)"]  # fmt: skip
    others = ["\nDisk full", "Timeout", "Rate limited: 429"]
    for n, message in enumerate(first_blank + others):
        ledger.request(id=f"F{n}", started_at=T0 + n, status="failed", error_stage="runAgent",
                       error_message=message)  # fmt: skip
    data = viewer_client.get("/pipeline/requests/F0/?format=json").json()
    assert data["signature"] == "Timeout after <n> s"
    assert data["similar_failures"] == {"count": 4, "capped": False}
    query = {"status": "failed", "signature": data["signature"], "error_stage": "runAgent"}
    similar = listed(viewer_client, "/pipeline/requests/", "?" + urlencode(query))
    assert sorted(r["id"] for r in similar["requests"]) == ["F0", "F1", "F2", "F3"]
    signatures = viewer_client.get(chart_url("failures", format="json")).json()["signatures"]
    assert {s["signature"]: s["count"] for s in signatures} == {
        "Timeout after <n> s": 4,
        "Disk full": 1,
        "Timeout": 1,
        "Rate limited: <n>": 1,
    }
    for row in signatures:
        assert listed(viewer_client, chart_url("failures"), row["url"])["count"] == row["count"]


def test_a_request_dated_at_the_end_of_time_is_listed_by_the_bucket_that_counts_it(
    viewer_client, ledger
):
    """The axis stops at 9999-01-01, but the last bucket it draws reaches past it: a request of
    9999-12-28 was counted there while the bucket's link stopped at the axis (listing 0) and
    `off_axis` said 0. A bucket's link covers what the bucket counts, wherever the axis ends."""
    end_of_time = int(datetime(9999, 12, 28, tzinfo=UTC).timestamp() * 1000)
    ledger.request(id="far", started_at=end_of_time)
    ledger.request(id="now", started_at=T0 + 10)
    window = {"since": T0, "until": "9999-12-31"}
    query = urlencode(window)
    for slug in ("throughput", "tokens"):
        checked = bars_list_what_they_count(
            viewer_client, ledger, f"/pipeline/charts/{slug}/?{query}"
        )
        assert checked or slug == "tokens"
    data = viewer_client.get(f"/pipeline/charts/throughput/?{query}&format=json").json()
    counted = {(b["start"], b["end"]): b["total"] for b in data["buckets"] if b["total"]}
    assert sum(counted.values()) + data["off_axis"] == 2
    for (start, end), total in counted.items():
        answer = listed(viewer_client, "/pipeline/", "/pipeline/requests/?" + urlencode(
            {"since": start, "until": end}))  # fmt: skip
        assert answer["count"] == total
    # A window of days around the axis's end: the request's bucket starts past it, not drawn.
    days = "/pipeline/charts/throughput/?" + urlencode(
        {"since": "9998-12-01", "until": "9999-12-31"}
    )
    data = viewer_client.get(days + "&format=json").json()
    assert (sum(b["total"] for b in data["buckets"]), data["off_axis"]) == (0, 1)
    note = viewer_client.get(days).content.decode()
    assert "1 requests of the window are dated where the time axis cannot reach" in note


def test_json_twin_keys_are_whole_values_not_the_labels_drawn(viewer_client, ledger, settings):
    """A chart cuts a long name to 32 characters for its axis; its JSON twin used the cut
    label as a key (`<img src=x onerror=alert("lw-xs…`): a script could not find the value."""
    model = '<img src=x onerror=alert("lw-xss-a-model-name-well-past-32-characters")>'
    status = "a status written by a runtime that is longer than a label"
    settings.MODEL_PRICES = parse_price_overrides({model: "claude-sonnet-4-5"}, "test")
    for n, (who, what) in enumerate(((model, status), (model + " ", "completed"))):
        ledger.request(started_at=T0 + n, agent_model=who, status=what, agent_tokens_total=10,
                       agent_tokens_prompt=1_000, agent_tokens_completion=100)  # fmt: skip
    tokens = viewer_client.get(chart_url("tokens", format="json")).json()["models"]
    assert set(tokens) == {model, json.dumps(model + " ")}  # spaces at its end: quoted
    cost = viewer_client.get(chart_url("cost", format="json")).json()["models"]
    assert set(cost) == set(tokens)
    buckets = viewer_client.get(chart_url("throughput", format="json")).json()["buckets"]
    assert {status, "completed"} <= set().union(*buckets)
    # The figures still draw short, distinct names.
    (figure,) = figures(viewer_client.get(chart_url("tokens")).content.decode())
    names = [trace["name"] for trace in figure["data"]]
    assert len(set(names)) == 2 and all(len(name) <= 36 for name in names)


def test_similar_failures_are_of_the_stage_as_stored_null_and_spaces_included(
    viewer_client, ledger
):
    """The request page wrote its failure's stage into the link as typed text: " runAgent "
    was read as "runAgent", and a stage of NULL or '' was no filter at all (every stage)."""
    failures = {
        "padded": (" runAgent ", "Timeout after 5 s"),
        "plain": ("runAgent", "Timeout after 7 s"),
        "null-1": (None, "Disk full at 3"),
        "null-2": (None, "Disk full at 4"),
        "empty": ("", "Disk full at 6"),
        "staged": ("runAgent", "Disk full at 5"),
    }
    for n, (request_id, (stage, message)) in enumerate(failures.items()):
        ledger.request(id=request_id, started_at=T0 + n, status="failed", error_stage=stage,
                       error_message=message)  # fmt: skip
    expected = {"padded": ["padded"], "null-1": ["null-1", "null-2"], "empty": ["empty"]}
    for request_id, ids in expected.items():
        data = viewer_client.get(f"/pipeline/requests/{request_id}/?format=json").json()
        assert data["similar_failures"]["count"] == len(ids), request_id
        line = viewer_client.get(f"/pipeline/requests/{request_id}/similar/").content.decode()
        href = html.unescape(line.split('<a href="', 1)[1].split('"', 1)[0])
        answer = listed(viewer_client, f"/pipeline/requests/{request_id}/", href)
        assert sorted(r["id"] for r in answer["requests"]) == ids, request_id
