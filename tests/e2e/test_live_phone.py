"""Journey 6 on a phone (390 px): the session's panel shows what the agent writes within 2 s and
a new turn is counted and leads there; the request list says "N new requests" and a tap inserts
them. The desktop's journey, with the reader's place kept, is test_live_session.py and
test_live_requests.py."""

import pytest
from builders import T0
from playwright.sync_api import expect

from ledgerfacts.timestamps import now_ms

pytestmark = pytest.mark.django_db(transaction=True, databases="__all__")
PHONE = {"width": 390, "height": 844}
ON_SCREEN_MS = 2_000  # from the ledger commit to the screen (issue 29)


def fits(page) -> None:
    assert page.evaluate("document.documentElement.scrollWidth") <= PHONE["width"], page.url


def test_on_a_phone_the_running_turn_fills_in_and_a_new_turn_is_counted(
    page, live_server, viewer, ledger, sign_in
):
    page.set_viewport_size(PHONE)
    s = ledger.session(id="S1", label="Deploy the release")
    parent = None
    for i in range(12):
        parent = ledger.turn(s, parent, id=f"M{i:02d}", started_at=T0 + 10 * i)
        ledger.message(parent, 1, content=f"Step {i}: check the service")
    running = ledger.turn(s, parent, id="R", status="pending", started_at=now_ms() - 1000,
                          completed_at=None, total_tokens=None)  # fmt: skip
    ledger.message(running, 1, content="Roll the release out to the second region")
    ledger.set_head(s, {"id": "M00"}, running)
    sign_in("vera", next_url="/sessions/S1/turns/R/")
    expect(page.locator("#live-bar")).to_contain_text("Following live")
    expect(page.locator("#panel")).to_contain_text("Roll the release out")
    fits(page)

    ledger.tool_call({"id": "R", "started_at": now_ms()}, 1, id="C-deploy",
                     tool_name="kubectl_rollout", status="pending", completed_at=None)  # fmt: skip
    expect(page.locator("#call-C-deploy")).to_be_visible(timeout=ON_SCREEN_MS)
    ledger.message({"id": "R", "started_at": now_ms()}, 2, role="assistant",
                   content="Region two is serving the new release.")  # fmt: skip
    expect(page.locator("#panel")).to_contain_text("Region two is serving", timeout=ON_SCREEN_MS)

    new = ledger.turn(s, {"id": "R"}, id="N1", status="pending", started_at=now_ms(),
                      completed_at=None)  # fmt: skip
    ledger.message(new, 1, content="Now the third region")
    ledger.conn.execute("UPDATE sessions SET current_turn_id = 'N1' WHERE id = 'S1'")
    expect(page.locator("#turn-N1")).to_be_attached(timeout=ON_SCREEN_MS)
    expect(page.locator("#panel [data-panel-turn]")).to_have_attribute("data-panel-turn", "R")
    news = page.locator("#live-bar [data-live-news]")
    # In view on the phone's screen (the tree under the panel): shown, not counted.
    expect(page.locator("#turn-N1")).to_be_in_viewport()
    expect(page.locator("#turn-N1 .mark-head")).to_have_count(1)
    expect(news).to_be_hidden()
    fits(page)


def test_on_a_phone_new_requests_are_counted_and_a_tap_inserts_them(
    page, live_server, viewer, ledger, sign_in
):
    page.set_viewport_size(PHONE)
    ledger.request(id="R0", started_at=T0)
    sign_in("vera", next_url="/pipeline/requests/")
    expect(page.locator("#live-bar")).to_contain_text("Following live")
    fits(page)
    for n in (1, 2):
        ledger.request(id=f"R{n}", started_at=T0 + n)
    banner = page.locator("#live-bar [data-live-news]")
    expect(banner).to_have_text("2 new requests — show", timeout=5_000)
    fits(page)
    banner.click()
    rows = page.locator("#rows tr[data-request]")
    expect(rows).to_have_count(3)
    assert [rows.nth(i).get_attribute("data-request") for i in range(3)] == ["R2", "R1", "R0"]
    expect(banner).to_be_hidden()
    fits(page)
