"""Journey 7 in a real browser (issue 30): an alert arrives with a link; the link opens the issue
(first and last seen, trend, what it touched, its newest request's stack); one click to the
failed request and one to the turn that ran; the operator resolves it with a note; the same
failure comes back: the issue says regressed, comes first in the inbox, and one alert says so.
At a desktop's width and a phone's. A viewer sees it all and is refused on the server."""

import re
import time

import pytest
from playwright.sync_api import expect

from alerts import delivery, rules
from alerts.models import AlertRule, Delivery
from issues.figures import issue_id
from issues.models import Issue, IssueChange
from ledgerfacts.timestamps import now_ms
from pipeline.signatures import signature

pytestmark = pytest.mark.django_db(transaction=True, databases="__all__")
H = 3_600_000
CRASH = "Tool crashed: run_terminal_command killed after {} ms"
CRASH_ID = issue_id("runAgent", signature(CRASH.format(1)))
SIZES = {"desktop": {"width": 1280, "height": 900}, "phone": {"width": 390, "height": 844}}


def crash(ledger, at: int, n: int, turn: str | None = None) -> dict:
    return ledger.request(
        id=f"CRASH-{n}", started_at=at, status="failed", stage="runAgent",
        error_stage="runAgent", error_message=CRASH.format(5000 + n),
        error_stack=f"ToolCrashError: killed\n  at runAgent (agent.ts:{n}:9)",
        event_source="discord", session_persona="atlas", principal_id=f"p{n % 3}",
        session_key="discord:guild-1", agent_model="claude-sonnet-4-20250514", turn_id=turn,
    )  # fmt: skip


@pytest.fixture
def failing(ledger):
    session = ledger.session(id="S-dad", label="Dad")
    turn = ledger.turn(session, id="T-crash", status="failed", started_at=now_ms() - H)
    ledger.set_head(session, turn, turn)
    for n in range(12):
        crash(ledger, now_ms() - 50 * 60_000 + n * 1000, n, turn="T-crash")
    return ledger


def alert_text(webhook: list) -> str:
    """What the chat shows: the text of the alert the webhook got."""
    return webhook[-1]["text"]


@pytest.fixture
def webhook(monkeypatch):
    """Deliveries go to this list (the loopback receiver of tests/test_alerts.py proves the
    HTTP part); the journey starts at what a person reads."""
    received = []
    monkeypatch.setattr(delivery, "post_webhook", lambda url, body: received.append(body))
    return received


@pytest.mark.parametrize("size", SIZES)
def test_an_operator_triages_an_issue_from_its_alert_and_hears_when_it_comes_back(
    page, live_server, operator, failing, webhook, sign_in, size, settings
):
    settings.BASE_URL = live_server.url
    page.set_viewport_size(SIZES[size])
    for kind in (AlertRule.NEW_ISSUE, AlertRule.REGRESSION):
        AlertRule.objects.create(name=kind, kind=kind, webhook_url="https://chat.example/hook",
                                 created_at=now_ms() - 2 * H, cooldown_minutes=0)  # fmt: skip
    rules.evaluate()
    delivery.deliver_due()
    # 1. The alert in the chat, with its link.
    text = alert_text(webhook)
    assert text.startswith("[ledgerweb] new issue: runAgent — Tool crashed: run_terminal_command")
    assert "(12 failures since" in text
    link = text.splitlines()[-1]
    assert link == f"{live_server.url}/pipeline/issues/{CRASH_ID}/"

    # 2. The link opens the issue: when, how many, the trend, what it touched, the stack.
    sign_in("otto", next_url=link.removeprefix(live_server.url))
    expect(page.locator("h1")).to_contain_text("runAgent failed")
    expect(page.locator(".failure-signature")).to_have_text(signature(CRASH.format(1)))
    expect(page.locator(".issue-head .meta")).to_contain_text("12 failures")
    expect(page.locator("#trend svg rect")).to_have_count(24 + 30)
    expect(page.locator("#touched dd").first).to_have_text("3")  # principals
    expect(page.locator("#stack-text")).to_contain_text("at runAgent (agent.ts:11:9)")

    # One click to the failed request, which names its issue and status.
    page.locator("#requests table.newest a", has_text="CRASH-11").click()
    expect(page).to_have_url(re.compile(r"/pipeline/requests/CRASH-11/$"))
    expect(page.locator("#request-issue")).to_contain_text("new")
    page.locator("#request-issue a").first.click()
    expect(page).to_have_url(re.compile(rf"/pipeline/issues/{CRASH_ID}/$"))
    # And one to the turn that ran.
    page.locator("#requests table.newest a", has_text="T-crash").first.click()
    expect(page).to_have_url(re.compile(r"/sessions/S-dad/turns/T-crash/$"))
    page.go_back()

    # 3. Resolve it, with a note.
    page.fill("#resolve-note", "Raised the sandbox's memory to 4 GB")
    page.get_by_role("button", name="Resolve").click()
    expect(page.locator(".messages")).to_contain_text("Issue resolved.")
    expect(page.locator("#lifecycle .status")).to_have_text("resolved")
    expect(page.locator("#history")).to_contain_text("resolved by otto")
    expect(page.locator("#history")).to_contain_text("Raised the sandbox's memory to 4 GB")

    # The same failure comes back: regressed, first in the inbox, and one alert says so.
    time.sleep(0.01)
    crash(failing, now_ms() - 1, 99)
    other = failing.request(id="LATER", started_at=now_ms(), status="failed",
                            error_stage="deliverResponse",
                            error_message="Discord API 429")  # fmt: skip
    page.reload()
    expect(page.locator("#lifecycle .status")).to_have_text("regressed")
    expect(page.locator("#lifecycle")).to_contain_text("failed again")
    page.get_by_role("link", name="Issues", exact=True).first.click()
    rows = page.locator("table.issues tbody tr")
    expect(rows.first).to_contain_text("regressed")
    expect(rows.first).to_contain_text("Tool crashed")
    expect(rows.nth(1)).to_contain_text("Discord API")  # seen later, listed after
    assert other["id"] == "LATER"
    rules.evaluate()
    delivery.deliver_due()
    regressions = [body for body in webhook if "regressed:" in body["text"]]
    assert len(regressions) == 1
    assert "failed again 1 time since" in regressions[0]["text"]
    rules.evaluate()
    delivery.deliver_due()
    assert len([body for body in webhook if "regressed:" in body["text"]]) == 1
    assert set(Delivery.objects.values_list("status", flat=True)) == {"sent"}
    overflow = page.evaluate("document.documentElement.scrollWidth")
    assert overflow <= SIZES[size]["width"], f"the inbox is {overflow} px wide"


@pytest.mark.parametrize("size", SIZES)
def test_a_viewer_sees_the_issue_and_is_refused_every_change(
    page, live_server, viewer, failing, sign_in, size
):
    page.set_viewport_size(SIZES[size])
    sign_in("vera", next_url=f"/pipeline/issues/{CRASH_ID}/")
    expect(page.locator("h1")).to_contain_text("runAgent failed")
    expect(page.locator("#lifecycle")).to_contain_text("your role can look only")
    expect(page.get_by_role("button", name="Resolve")).to_have_count(0)
    # Posting the form anyway (its token from the page's cookie) is refused on the server.
    token = next(c["value"] for c in page.context.cookies() if c["name"] == "csrftoken")
    response = page.request.post(
        f"{live_server.url}/pipeline/issues/{CRASH_ID}/change/",
        form={"action": "resolve", "note": "nope"},
        headers={"X-CSRFToken": token, "Referer": page.url},
    )
    assert response.status == 403
    assert "Resolving, ignoring or merging an issue is not for your role" in response.text()
    assert not Issue.objects.exists() and not IssueChange.objects.exists()
    page.reload()
    expect(page.locator("#lifecycle .status")).to_have_text("new")
    assert page.evaluate("document.documentElement.scrollWidth") <= SIZES[size]["width"]
