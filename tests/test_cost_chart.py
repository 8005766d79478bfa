"""The cost chart on /pipeline/: USD by model over time, from the hourly rollups priced at each
hour's rates, whose bars click through to the requests they sum. Figures are worked out by hand
from the providers' rates (USD per million tokens)."""

import html
import json
from datetime import UTC, datetime
from decimal import Decimal
from urllib.parse import urlencode

import pytest
from builders import LEDGER_DB, parse_html

pytestmark = LEDGER_DB
H = 3_600_000


def ms(year, month, day, hour=0) -> int:
    return int(datetime(year, month, day, hour, tzinfo=UTC).timestamp() * 1000)


T = ms(2025, 11, 3, 10)  # a Monday, long settled: its hours can be stored
WINDOW = {"since": T, "until": T + 24 * H}  # hourly bars


@pytest.fixture
def spend(ledger):
    add = ledger.request
    # gpt-5: $1.25 / $10. Hour 1: 10,000 × 1.25 + 1,000 × 10 = 22,500 µ$; hour 2 the same.
    add(id="G1", started_at=T + 60_000, agent_model="gpt-5",
        agent_tokens_prompt=6_000, agent_tokens_completion=400)  # fmt: skip
    add(
        id="G2",
        started_at=T + 120_000,
        agent_model="gpt-5",
        agent_tokens_prompt=4_000.0,
        agent_tokens_completion=600,
    )  # a REAL count: still tokens
    add(id="G3", started_at=T + H + 5, agent_model="gpt-5",
        agent_tokens_prompt=10_000, agent_tokens_completion=1_000)  # fmt: skip
    # claude-sonnet-4: $3 / $15: 100,000 × 3 + 2,000 × 15 = 330,000 µ$.
    add(id="S1", started_at=T + 2 * H, agent_model="claude-sonnet-4-20250514",
        agent_tokens_prompt=100_000, agent_tokens_completion=2_000)  # fmt: skip
    # Junk counts are no tokens; a request without a price is counted apart.
    add(id="J1", started_at=T + 2 * H + 1, agent_model="gpt-5",
        agent_tokens_prompt="lots", agent_tokens_completion=-5)  # fmt: skip
    add(id="J2", started_at=T + 2 * H + 2, agent_model="gpt-5",
        agent_tokens_prompt=12.5, agent_tokens_completion=10**15)  # fmt: skip
    add(id="L1", started_at=T + 3 * H, agent_model="llama3:8b",
        agent_tokens_prompt=50_000, agent_tokens_completion=5_000)  # fmt: skip
    add(id="N1", started_at=T + 3 * H + 1, agent_model=None,
        agent_tokens_prompt=100, agent_tokens_completion=10)  # fmt: skip
    add(id="OUT", started_at=T + 24 * H, agent_model="gpt-5", agent_tokens_prompt=1_000_000)
    return ledger


def cost_chart(client, **params) -> dict:
    return client.get(
        "/pipeline/charts/cost/?" + urlencode(WINDOW | params | {"format": "json"})
    ).json()


def test_the_cost_chart_prices_each_model_by_hour_and_totals_the_window(viewer_client, spend):
    data = cost_chart(viewer_client)
    assert data["bucket_starts"] == [T + i * H for i in range(24)]
    bars = {
        model: {i: amount for i, amount in enumerate(amounts) if amount != "0"}
        for model, amounts in data["models"].items()
    }
    assert bars == {"claude-sonnet-4-20250514": {2: "0.33"}, "gpt-5": {0: "0.0225", 1: "0.0225"}}
    assert data["total"] == {
        "usd": "0.375",
        "estimated": True,
        "priced": 4,
        "unpriced": 2,
        "unpriced_models": ["(no model)", "llama3:8b"],
    }
    assert [(u["model"], u["requests"]) for u in data["unpriced"]] == [(None, 1), ("llama3:8b", 1)]


def figure_of(page: str) -> dict:
    attribute = page.split('data-figure="', 1)[1].split('"', 1)[0]
    return json.loads(html.unescape(attribute))


def test_every_cost_bar_links_to_requests_whose_costs_sum_to_it(viewer_client, spend):
    page = viewer_client.get("/pipeline/charts/cost/?" + urlencode(WINDOW)).content.decode()
    data = cost_chart(viewer_client)
    checked = 0
    for trace in figure_of(page)["data"]:
        amounts = data["models"][trace["name"]]
        for amount, url in zip(amounts, trace["customdata"], strict=True):
            if amount == "0":
                continue
            listed = viewer_client.get(url + "&format=json").json()["requests"]
            summed = sum(Decimal(r["cost"]["usd"]) for r in listed if r["cost"])
            assert summed == Decimal(amount), url
            # A person following the link sees the same requests with their costs.
            rows = parse_html(viewer_client.get(url).content).iter("tr")
            shown = [c.text for row in rows for c in row.iter("td") if "cost" in c.get("class", "")]
            assert len(shown) == sum(1 for r in listed if r["cost"])
            checked += 1
    assert checked == 3


def test_the_unpriced_models_link_to_their_requests(viewer_client, spend):
    data = cost_chart(viewer_client)
    urls = {u["model"]: u["url"] for u in data["unpriced"]}
    assert "model__isnull=1" in urls[None]
    ids = {
        model: [r["id"] for r in viewer_client.get(url + "&format=json").json()["requests"]]
        for model, url in urls.items()
    }
    assert ids == {"llama3:8b": ["L1"], None: ["N1"]}
    card = viewer_client.get("/pipeline/charts/cost/?" + urlencode(WINDOW)).content.decode()
    assert "2 requests of 2 models without a known price are not counted" in card
    assert "Total for the window: ≈ $0.375." in card


def test_a_long_prompt_pays_the_long_context_rate_in_its_bar_too(viewer_client, ledger):
    # claude-sonnet-4-5: $3 / $15, and $6 / $22.50 for a call of more than 200,000 input tokens.
    # 250,000 × 6 + 1,000 × 22.5 = $1.5225; 1,000 × 3 + 1,000 × 15 = $0.018. Priced as one sum
    # (an average of 125,500 tokens) the hour would wrongly say $0.783.
    for request_id, prompt in (("LONG", 250_000), ("SHORT", 1_000)):
        ledger.request(id=request_id, started_at=T + 60_000, agent_model="claude-sonnet-4-5",
                       agent_tokens_prompt=prompt, agent_tokens_completion=1_000)  # fmt: skip
    data = cost_chart(viewer_client)
    assert data["models"]["claude-sonnet-4-5"][0] == "1.5405"
    assert data["total"]["usd"] == "1.5405"


def test_a_price_change_between_two_days_shows_in_the_bars(viewer_client, ledger):
    # xAI's grok-4.20 went from $2 / $6 to $1.25 / $2.50 on 2026-04-30 (UTC).
    for day, request_id in ((29, "OLD"), (30, "NEW")):
        ledger.request(id=request_id, started_at=ms(2026, 4, day, 10), agent_model="grok-4.20",
                       agent_tokens_prompt=100_000, agent_tokens_completion=100_000)  # fmt: skip
    data = viewer_client.get(
        "/pipeline/charts/cost/?"
        + urlencode({"since": ms(2026, 4, 29), "until": ms(2026, 5, 1), "format": "json"})
    ).json()
    bars = [Decimal(a) for a in data["models"]["grok-4.20"] if a != "0"]
    assert bars == [Decimal("0.8"), Decimal("0.375")]


def test_the_request_page_shows_what_its_agent_run_cost(viewer_client, spend):
    page = viewer_client.get("/pipeline/requests/S1/").content.decode()
    assert ">≈ $0.33</span>" in page
    assert viewer_client.get("/pipeline/requests/S1/?format=json").json()["cost"]["usd"] == "0.33"
    assert ">no price</span>" in viewer_client.get("/pipeline/requests/L1/").content.decode()


def test_the_overview_says_what_the_last_day_and_month_cost(viewer_client, ledger):
    from ledgerfacts.timestamps import now_ms

    now = now_ms()
    # gpt-5 at $1.25 / $10: 10,000 + 1,000 tokens is $0.0225; 100,000 + 0 is $0.125.
    ledger.request(id="TODAY", started_at=now - 2 * H, agent_model="gpt-5",
                   agent_tokens_prompt=10_000, agent_tokens_completion=1_000)  # fmt: skip
    ledger.request(id="WEEKS", started_at=now - 20 * 24 * H, agent_model="gpt-5",
                   agent_tokens_prompt=100_000, agent_tokens_completion=0)  # fmt: skip
    ledger.request(id="LOCAL", started_at=now - 3 * H, agent_model="llama3:8b",
                   agent_tokens_prompt=100, agent_tokens_completion=0)  # fmt: skip
    data = viewer_client.get("/?format=json").json()["cost"]
    assert (data["24h"]["usd"], data["30d"]["usd"]) == ("0.0225", "0.1475")
    assert data["24h"]["unpriced_models"] == ["llama3:8b"]
    page = parse_html(viewer_client.get("/").content)
    links = {a.text: a.get("href") for a in page.iter("a") if "chart-cost" in a.get("href", "")}
    assert links == {
        "≈ $0.0225": "/pipeline/?window=24h#chart-cost",
        "≈ $0.148": "/pipeline/?window=30d#chart-cost",
    }
    for href in links.values():  # the dashboard it leads to has the cost chart, in that window
        dashboard = viewer_client.get(href.split("#")[0]).content.decode()
        assert 'id="chart-cost"' in dashboard and "/pipeline/charts/cost/?window=" in dashboard
