"""Journey 3 in a real browser: an operator archives idle sessions from the admin, after a
preview that tells each session apart, and restores one; last activity never moves."""

import re

import pytest
from builders import T0
from django.contrib.admin.models import LogEntry
from playwright.sync_api import expect

from ledgerfacts.timestamps import now_ms

pytestmark = pytest.mark.django_db(transaction=True, databases="__all__")
DAY = 86_400_000


def last_activity(ledger) -> dict[str, int]:
    return dict(ledger.conn.execute("SELECT id, updated_at FROM sessions").fetchall())


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
    expect(page.locator("table.session-preview")).to_contain_text("IDLE1")
    page.get_by_role("button", name="Yes, set 2 to archived").click()
    expect(page.locator(".messagelist")).to_contain_text("2 sessions set to archived")

    page.goto(live_server.url + "/sessions/")
    expect(page.locator("table.sessions")).to_contain_text("Today's chat")
    expect(page.locator("table.sessions")).not_to_contain_text("Trip planning 2024")
    page.goto(live_server.url + "/sessions/IDLE1/")
    expect(page.get_by_text("This session is archived")).to_be_visible()


def test_archive_idle_previews_each_session_then_keeps_last_activity_and_restores(
    page, live_server, operator, ledger, sign_in
):
    old, older = now_ms() - 40 * DAY, now_ms() - 90 * DAY
    ledger.session(id="TWIN-A", label="Untitled", updated_at=old)
    ledger.session(id="TWIN-B", label="Untitled", updated_at=older)
    ledger.session(id="FRESH", label="Today's chat", updated_at=now_ms())
    before = last_activity(ledger)
    sign_in("otto", next_url="/admin/conversations/session/")
    page.get_by_role("link", name="Archive idle sessions…").click()
    page.fill("#days", "30")
    page.get_by_role("button", name="Preview").click()

    # The preview tells the two "Untitled" apart: id, last activity, idle time, a link each.
    rows = page.locator("table.session-preview tbody tr")
    expect(rows).to_have_count(2)
    expect(rows.nth(0)).to_contain_text("TWIN-B")  # longest idle first
    expect(rows.nth(0)).to_contain_text("2\xa0months")
    expect(rows.nth(1)).to_contain_text("TWIN-A")
    expect(rows.nth(1)).to_contain_text("1\xa0month")
    rows.nth(1).get_by_role("link", name="open ↗").click()
    expect(page).to_have_url(f"{live_server.url}/sessions/TWIN-A/")
    page.go_back()

    page.get_by_role("button", name="Archive 2 sessions").click()
    expect(page.locator(".messagelist")).to_contain_text("Archived 2 sessions")
    assert last_activity(ledger) == before  # statuses changed, last activity did not
    entries = LogEntry.objects.filter(object_id__in=["TWIN-A", "TWIN-B"])
    assert {(e.user.username, e.change_message) for e in entries} == {
        ("otto", "Set status from active to archived; last activity unchanged.")
    }

    # Restore one: active again, and the list still says how long it has been idle.
    page.goto(live_server.url + "/admin/conversations/session/?status__exact=archived")
    page.locator("tr", has_text="TWIN-A").locator("input.action-select").check()
    page.select_option("select[name=action]", "restore")
    page.get_by_role("button", name=re.compile("Run|Go")).click()
    page.get_by_role("button", name="Yes, set 1 to active").click()
    expect(page.locator(".messagelist")).to_contain_text("1 session set to active")
    page.goto(live_server.url + "/admin/conversations/session/?status__exact=active")
    row = page.locator("#result_list tr", has_text="TWIN-A")
    expect(row.locator("td.field-last_activity .idle")).to_contain_text("1\xa0month")
    assert last_activity(ledger) == before


def test_on_a_phone_the_archive_preview_and_its_confirmation_fit_the_screen(
    page, live_server, operator, ledger, sign_in
):
    for i in range(3):
        ledger.session(id=f"01M64SHN3FHPPAQ34SNX0N1Z9{i}", label="#weekly-discussion in Paper Club",
                       updated_at=now_ms() - (40 + i) * DAY)  # fmt: skip
    page.set_viewport_size({"width": 390, "height": 844})
    sign_in("otto", next_url="/admin/conversations/session/archive-idle/?days=30")
    rows = page.locator("table.session-preview tbody tr")
    expect(rows).to_have_count(3)
    expect(rows.first).to_contain_text("01M64SHN3FHPPAQ34SNX0N1Z92")
    expect(rows.first).to_contain_text("1\xa0month")
    assert page.evaluate("document.documentElement.scrollWidth") <= 390
    page.goto(live_server.url + "/admin/conversations/session/?status__exact=active")
    page.locator("#action-toggle").check()
    page.select_option("select[name=action]", "archive")
    page.get_by_role("button", name=re.compile("Run|Go")).click()
    expect(page.locator("table.session-preview tbody tr")).to_have_count(3)
    assert page.evaluate("document.documentElement.scrollWidth") <= 390
