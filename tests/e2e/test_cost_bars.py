"""The cost chart in a real browser: clicking a model's bar lands on its requests, whose costs
add up to the bar."""

import re
from decimal import Decimal
from urllib.parse import urlencode

import pytest
from builders import T0
from playwright.sync_api import expect
from test_charts import click_bar

pytestmark = pytest.mark.django_db(transaction=True, databases="__all__")
H = 3_600_000
WINDOW = urlencode({"since": T0, "until": T0 + H})


def test_a_cost_bar_lists_the_requests_it_sums(page, live_server, viewer, ledger, sign_in):
    # gpt-5 at $1.25 / $10: 6,000 + 400 tokens is $0.0115, 4,000 + 600 is $0.011: $0.0225.
    for i, (prompt, completion) in enumerate(((6_000, 400), (4_000, 600))):
        ledger.request(id=f"G{i}", started_at=T0 + 1000 * (i + 1), agent_model="gpt-5",
                       agent_tokens_prompt=prompt, agent_tokens_completion=completion)  # fmt: skip
    sign_in("vera", next_url=f"/pipeline/?{WINDOW}")
    expect(page.locator("#chart-cost")).to_contain_text("Total for the window: ≈ $0.0225.")
    page.locator("#chart-cost").scroll_into_view_if_needed()
    bars = page.locator("#chart-cost .main-svg .point path")
    expect(bars.first).to_be_attached()
    heights = [bar.bounding_box()["height"] for bar in bars.all()]
    drawn = [i for i, height in enumerate(heights) if height > 1]
    assert len(drawn) == 1  # both requests lie in the window's first minute
    click_bar(page, bars.nth(drawn[0]))
    expect(page).to_have_url(re.compile(r"/pipeline/requests/\?.*model=gpt-5"))
    cells = page.locator("table.requests td.cost")
    expect(cells).to_have_count(2)
    assert sum(Decimal(t.strip("≈ $")) for t in cells.all_inner_texts()) == Decimal("0.0225")
