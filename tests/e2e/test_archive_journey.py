"""An operator tidies up in a real browser: archive idle sessions from the admin."""

import re

import pytest
from builders import T0
from playwright.sync_api import expect

from ledgerweb.timestamps import now_ms

pytestmark = pytest.mark.django_db(transaction=True, databases="__all__")


def test_an_operator_archives_idle_sessions_and_they_leave_the_list(
    page, live_server, operator, ledger, sign_in
):
    ledger.session(id="IDLE1", label="Trip planning 2024", updated_at=T0)
    ledger.session(id="IDLE2", label="Old receipts", updated_at=T0 + 1)
    ledger.session(id="FRESH", label="Today's chat", updated_at=now_ms())
    sign_in("otto", next_url="/admin/conversations/session/?idle=month")
    expect(page.locator("#result_list")).to_contain_text("Trip planning 2024")
    expect(page.locator("#result_list")).not_to_contain_text("Today's chat")

    page.locator("#action-toggle").check()  # select every idle session shown
    page.select_option("select[name=action]", "archive")
    page.get_by_role("button", name=re.compile("Run|Go")).click()
    expect(page.locator("h1")).to_contain_text("Set 2 sessions to archived?")
    page.get_by_role("button", name="Yes, set 2 to archived").click()
    expect(page.locator(".messagelist")).to_contain_text("2 sessions set to archived")

    page.goto(live_server.url + "/sessions/")
    expect(page.locator("table.sessions")).to_contain_text("Today's chat")
    expect(page.locator("table.sessions")).not_to_contain_text("Trip planning 2024")
    page.goto(live_server.url + "/sessions/IDLE1/")
    expect(page.get_by_text("This session is archived")).to_be_visible()
