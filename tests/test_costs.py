"""Costs next to token counts on the session pages, exact where the ledger knows what a turn
billed (turn_usage), ≈ otherwise, and never $0 for a model without a price. Figures are worked
out by hand from the providers' rates (USD per million tokens) on the turn's date."""

import html
import re
from datetime import UTC, datetime
from urllib.parse import urljoin

import pytest
from builders import LEDGER_DB, T0, parse_html

pytestmark = LEDGER_DB

SONNET = "claude-sonnet-4-20250514"  # $3 input, $15 output, $0.30 cache read, $3.75 cache write


def ms(year, month, day) -> int:
    return int(datetime(year, month, day, 12, tzinfo=UTC).timestamp() * 1000)


@pytest.fixture
def costly(ledger):
    """A session with an exactly known turn, an estimated one and two without a price."""
    s = ledger.session(id="S1")
    exact = ledger.turn(s, id="EXACT", model=SONNET)
    # 6,010 plain input × $3 + 100,000 cache reads × $0.30 + 10,000 cache writes × $3.75
    # + 2,000 output × $15 = $0.11553
    ledger.usage(
        exact, calls=3, input=116_010, cache_read=100_000, cache_write=10_000, output=2_000
    )
    estimated = ledger.turn(s, exact, id="ESTIMATED", model=SONNET)  # ≈ 1,250 × 3 + 87 × 15
    local = ledger.turn(s, estimated, id="LOCAL", model="llama3:8b")
    nameless = ledger.turn(s, local, id="NAMELESS", model=None)
    ledger.set_head(s, exact, nameless)
    return s


def test_the_turn_panel_shows_the_exact_cost_and_the_billed_input(viewer_client, costly):
    for headers in ({}, {"HTTP_HX_REQUEST": "true"}):
        response = viewer_client.get("/sessions/S1/turns/EXACT/", **headers)
        assert response.status_code == 200
        html = response.content.decode()
        assert ">$0.116</span>" in html
        assert "billed input 116,010 over 3 calls (100,000 cache read, 10,000 cache write)" in html
    data = viewer_client.get("/sessions/S1/turns/EXACT/?format=json").json()["turn"]
    assert data["cost"] == {"usd": "0.11553", "estimated": False, "priced": True, "model": SONNET}
    assert data["billed"]["cache_read"] == 100_000


def test_a_turn_without_billed_usage_shows_an_estimate(viewer_client, costly):
    html = viewer_client.get("/sessions/S1/turns/ESTIMATED/").content.decode()
    assert ">≈ $0.00506</span>" in html and "billed input" not in html
    data = viewer_client.get("/sessions/S1/turns/ESTIMATED/?format=json").json()["turn"]
    assert data["cost"]["usd"] == "0.005055" and data["cost"]["estimated"] is True


def test_a_model_without_a_price_says_so_instead_of_zero(viewer_client, costly):
    html = viewer_client.get("/sessions/S1/turns/LOCAL/").content.decode()
    assert ">no price</span>" in html and "$0<" not in html
    assert "No known price for llama3:8b" in html


def test_the_session_header_sums_priced_turns_and_counts_the_others(viewer_client, costly):
    page = parse_html(viewer_client.get("/sessions/S1/").content)
    pill = page.find(".//*[@class='pills']/*[@class='cost']")
    # $0.11553 + $0.005055 = $0.120585, an estimate since one turn is ≈.
    assert " ".join(pill.itertext()).split() == ["≈", "$0.121", "+", "2", "unpriced", "turns"]
    assert "2 turns of 2 unpriced models ((no model), llama3:8b) not counted" in pill.get("title")
    data = viewer_client.get("/sessions/S1/?format=json").json()
    assert data["cost"] == {
        "usd": "0.120585",
        "estimated": True,
        "priced": 2,
        "unpriced": 2,
        "unpriced_models": ["(no model)", "llama3:8b"],
    }
    costs = {t["id"]: t["cost"] and t["cost"]["usd"] for t in data["turns"]}
    assert costs == {"EXACT": "0.11553", "ESTIMATED": "0.005055", "LOCAL": None, "NAMELESS": None}


def test_each_turn_is_priced_at_its_own_dates_rates(viewer_client, ledger):
    # xAI's grok-4.20 went from $2 / $6 to $1.25 / $2.50 on 2026-04-30.
    s = ledger.session(id="S1")
    old = ledger.turn(s, id="OLD", model="grok-4.20", started_at=ms(2026, 4, 29),
                      prompt_tokens=100_000, completion_tokens=100_000)  # fmt: skip
    new = ledger.turn(s, old, id="NEW", model="grok-4.20", started_at=ms(2026, 4, 30),
                      prompt_tokens=100_000, completion_tokens=100_000)  # fmt: skip
    ledger.set_head(s, old, new)
    turns = viewer_client.get("/sessions/S1/?format=json").json()["turns"]
    assert {t["id"]: t["cost"]["usd"] for t in turns} == {"OLD": "0.8", "NEW": "0.375"}


def test_pages_work_on_a_ledger_without_the_turn_usage_table(viewer_client, ledger, costly):
    ledger.conn.execute("DROP TABLE turn_usage")
    html = viewer_client.get("/sessions/S1/turns/EXACT/").content.decode()
    # Only the ledger's own columns are left: 1,250 prompt + 87 completion tokens, ≈.
    assert ">≈ $0.00506</span>" in html and "billed input" not in html
    assert viewer_client.get("/sessions/S1/").status_code == 200
    for url in ("/sessions/", "/sessions/?sort=cost"):
        assert viewer_client.get(url).status_code == 200, url


def test_the_thread_says_what_it_cost_and_what_resuming_here_costs(viewer_client, costly):
    data = viewer_client.get("/sessions/S1/turns/ESTIMATED/thread/?format=json").json()["cost"]
    # Spent: $0.11553 + $0.005055. Resuming sends the 1,250 + 87 = 1,337 tokens of context again:
    # × $3 = $0.004011 as plain input, × $0.30 = $0.0004011 read from the prompt cache.
    assert data["spent"]["usd"] == "0.120585"
    assert (data["resume"]["usd"], data["resume_cached"]["usd"]) == ("0.004011", "0.0004011")
    page = parse_html(viewer_client.get("/sessions/S1/turns/ESTIMATED/thread/").content)
    resume = " ".join(" ".join(page.find(".//*[@class='small resume-cost']").itertext()).split())
    assert resume.startswith("Resuming here sends this context again: ≈ $0.00401 per model call")
    assert "≈ $0.000401 read from the prompt cache" in resume
    whole = viewer_client.get("/sessions/S1/turns/NAMELESS/thread/").content.decode()
    assert "≈ $0.121</span> + 2 unpriced turns" in whole


def test_the_compare_page_says_what_each_side_cost_after_the_fork_point(viewer_client, ledger):
    s = ledger.session(id="S1")
    root = ledger.turn(s, id="ROOT", model=SONNET)
    ledger.turn(s, root, id="A", model="gpt-5", prompt_tokens=10_000, completion_tokens=1_000)
    ledger.set_head(s, root, ledger.turn(s, root, id="B", model="llama3:8b"))
    data = viewer_client.get("/sessions/S1/compare/?a=A&b=B&format=json").json()["cost"]
    # gpt-5: 10,000 × $1.25 + 1,000 × $10 = $0.0225; the fork point's cost belongs to neither.
    assert data["a"]["usd"] == "0.0225" and data["b"]["unpriced_models"] == ["llama3:8b"]
    page = viewer_client.get("/sessions/S1/compare/?a=A&b=B").content.decode()
    assert ">≈ $0.0225</span>" in page and ">no price</span> + 1 unpriced turn" in page


def test_the_session_list_shows_each_sessions_cost_as_its_page_sums_it(viewer_client, ledger):
    """One grouped query prices the page's sessions; it must agree with the turns one by one,
    odd values included."""
    odd = [
        {"model": SONNET},
        {"model": SONNET, "prompt_tokens": 1250.7, "completion_tokens": "87"},  # REAL, text
        {"model": "claude-sonnet-4-5", "prompt_tokens": 250_000},  # a long-context call
        {"model": "claude-sonnet-4-5", "prompt_tokens": 1_000},  # the same hour, short
        {"model": "gpt-5", "prompt_tokens": 2_000, "started_at": 1.7e12 + 0.5},  # REAL time
        {"model": "gpt-5", "prompt_tokens": -4, "completion_tokens": 10**12, "started_at": "x"},
        {"model": "llama3:8b"},
        {"model": 5, "prompt_tokens": None, "completion_tokens": None},  # no tokens: no cost
    ]
    for n, session_id in enumerate(("A", "B", "C")):
        s = ledger.session(id=session_id, updated_at=n)
        parent = None
        for i, fields in enumerate(odd[n:] + odd[: n * 2]):
            parent = ledger.turn(s, parent, id=f"{session_id}{i}", **fields)
            if i == 2:
                ledger.usage(parent, calls=2, input=450_000, cache_read=300_000, output=900)
        ledger.set_head(s, ledger.turn(s, parent, id=f"{session_id}-head"), parent)
    listed = {
        row["id"]: row["cost"]
        for row in viewer_client.get("/sessions/?format=json").json()["sessions"]
    }
    for session_id in ("A", "B", "C"):
        page = viewer_client.get(f"/sessions/{session_id}/?format=json").json()["cost"]
        assert listed[session_id] == page, session_id
    assert listed["A"]["unpriced_models"] == ["llama3:8b"]
    rows = parse_html(viewer_client.get("/sessions/").content).iter("tr")
    cells = [td for tr in rows for td in tr.iter("td") if td.get("class") == "num cost"]
    assert len(cells) == 3 and all(td.text.startswith("≈ $") for td in cells)
    # Each holds a turn without a price: counted beside the sum, its model named on hover.
    for td in cells:
        assert "".join(td.itertext()).endswith(" + 1 unpriced")
        assert td.get("title") == "1 turn of 1 unpriced model (llama3:8b) not counted"


def test_the_health_page_lists_the_model_names_without_a_price(admin_client, ledger, costly):
    ledger.request(id="R1", agent_model="acme-large", agent_tokens_prompt=10)
    ledger.request(id="R2", agent_model=SONNET, agent_tokens_prompt=10)
    page = parse_html(admin_client.get("/health/").content)
    row = next(tr for tr in page.iter("tr") if "without a known price" in "".join(tr.itertext()))
    examples = {"".join(li.itertext()): li.find("a") for li in row.iter("li")}
    assert set(examples) == {
        "'acme-large': 0 turns, 1 request",
        "'llama3:8b': 1 turn, 0 requests",
    }
    link = examples["'acme-large': 0 turns, 1 request"].get("href")
    listed = admin_client.get(link + "&format=json").json()["requests"]
    assert [r["id"] for r in listed] == ["R1"]


def test_the_session_list_sorts_by_cost_through_its_pages(viewer_client, ledger):
    # gpt-5 at $1.25 per million input tokens: session S<i> costs i × $0.00125. The most recently
    # active are the cheapest, so the order is the cost's, not the activity's.
    for i in range(1, 54):
        s = ledger.session(id=f"S{i:02d}", updated_at=T0 - i)
        ledger.set_head(s, s, ledger.turn(s, id=f"T{i:02d}", model="gpt-5",
                                          prompt_tokens=i * 1000, completion_tokens=0))  # fmt: skip
    s = ledger.session(id="LOCAL", updated_at=T0)  # no price: after every priced session
    ledger.set_head(s, s, ledger.turn(s, id="TL", model="llama3:8b"))
    listing = parse_html(viewer_client.get("/sessions/").content)
    sort_link = next(a.get("href") for a in listing.iter("a") if a.text == "Cost")
    assert sort_link == "?sort=cost"
    first = viewer_client.get(f"/sessions/{sort_link}&format=json").json()
    assert [r["id"] for r in first["sessions"]] == [f"S{i:02d}" for i in range(53, 3, -1)]
    assert first["sessions"][0]["cost"]["usd"] == "0.06625"
    # The "Next" link, followed as htmx does, brings the rest in the same order.
    page = viewer_client.get(f"/sessions/{sort_link}").content.decode()
    row = page.split('<tr class="more">', 1)[1]
    more = html.unescape(row.split('hx-get="', 1)[1].split('"', 1)[0])
    rest = viewer_client.get(urljoin("/sessions/", more), HTTP_HX_REQUEST="true").content.decode()
    ids = re.findall(r'href="/sessions/([^/"]+)/"', rest)
    assert ids == ["S03", "S02", "S01", "LOCAL"]


def test_junk_in_turn_usage_counts_as_no_tokens_and_breaks_nothing(viewer_client, ledger):
    s = ledger.session(id="S1")
    turn = ledger.turn(s, id="T1", model=SONNET)
    ledger.usage(turn, calls="two", input=2_000.9, cache_read=-5, cache_write=1e20, output=2_000)
    ledger.set_head(s, turn, turn)
    panel = viewer_client.get("/sessions/S1/turns/T1/", HTTP_HX_REQUEST="true")
    assert panel.status_code == 200
    # Only the output is a usable count (a fraction is junk, as on the charts): 2,000 × $15 =
    # $0.03, exact (the row is there).
    assert ">$0.03</span>" in panel.content.decode()
    listed = viewer_client.get("/sessions/?format=json").json()["sessions"][0]["cost"]
    assert listed == viewer_client.get("/sessions/S1/?format=json").json()["cost"]
    assert listed["usd"] == "0.03"
