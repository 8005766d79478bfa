"""Alerts (issue 30, item 3): each kind of rule finds what it should and says it once per
cooldown (a new issue once, a regression once per resolution); the background process delivers
to a webhook receiver this test starts on loopback and to Django's test outbox, exactly one alert
per rule per cooldown, within the evaluation interval; a receiver answering 500 is tried again
with backoff and the failure is shown; the alert log lists what was sent, to whom and why."""

import json
import threading
import time
from decimal import Decimal
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

import pytest
from django.core import mail
from django.core.exceptions import ValidationError
from django.db import connections
from django.urls import reverse

from alerts import delivery, rules
from alerts import jobs as alert_jobs
from alerts.models import Alert, AlertRule, Delivery
from background import jobs, lock, runner
from issues.figures import issue_id
from ledgerfacts.timestamps import now_ms
from pipeline import rollups
from pipeline.signatures import signature

pytestmark = pytest.mark.django_db(transaction=True, databases="__all__")
H = rollups.HOUR
MIN = 60_000
CRASH = "Tool crashed: run_terminal_command killed after 5012 ms"
CRASH_ID = issue_id("runAgent", signature(CRASH))


@pytest.fixture(autouse=True)
def fresh_plans(monkeypatch, settings):
    monkeypatch.setattr(rollups, "_plans", rollups.sqlite.WhileUnchanged(keep=64))
    settings.BASE_URL = "https://ledger.example.org"


def rule(kind: str, **fields) -> AlertRule:
    values = {"name": f"{kind} rule", "kind": kind, "email_to": "ops@example.com",
              "created_at": now_ms() - 10 * MIN} | fields  # fmt: skip
    return AlertRule.objects.create(**values)


def fail(ledger, at: int, message: str = CRASH, stage: str = "runAgent", **fields):
    return ledger.request(started_at=at, status="failed", error_stage=stage,
                          error_message=message, **fields)  # fmt: skip


# -- What each kind of rule finds, and how often it says it ---------------------------------------


def test_a_new_issue_is_said_once_and_an_older_one_never(ledger):
    r = rule(AlertRule.NEW_ISSUE)
    fail(ledger, r.created_at - H, "Old trouble 1")  # first seen before the rule: not new
    fail(ledger, now_ms() - 5 * MIN)
    fail(ledger, now_ms() - 4 * MIN, message="Tool crashed: run_terminal_command killed after 9 ms")
    (alert,) = rules.evaluate()
    assert alert.text.startswith("new issue: runAgent — Tool crashed: run_terminal_command killed")
    assert "(2 failures since" in alert.text
    assert alert.url == f"https://ledger.example.org/pipeline/issues/{CRASH_ID}/"
    assert alert.subjects == [CRASH_ID]
    assert rules.evaluate() == []  # new once
    fail(ledger, now_ms() - MIN, "Another crash 7", "deliverResponse")
    assert [a.text[:40] for a in rules.evaluate()] == ["new issue: deliverResponse — Another cra"]


def test_several_new_issues_at_once_make_one_alert_that_lists_them(ledger):
    rule(AlertRule.NEW_ISSUE)
    for i in range(13):
        fail(ledger, now_ms() - MIN - i, f"Problem number {'x' * i}")
    (alert,) = rules.evaluate()
    lines = alert.text.splitlines()
    assert lines[0] == "new_issue rule: 13 new issues" and lines[-1] == "- and 3 more"
    assert len(lines) == 12 and len(alert.subjects) == 13
    assert alert.url == "https://ledger.example.org/pipeline/issues/?status=new"


def test_a_regression_is_said_once_per_resolution(ledger, operator, client, monkeypatch):
    r = rule(AlertRule.REGRESSION, cooldown_minutes=0)
    fail(ledger, now_ms() - 2 * H)
    client.force_login(operator)
    client.post(reverse("issues:change", args=[CRASH_ID]), {"action": "resolve"})
    assert rules.evaluate() == []
    time.sleep(0.01)
    fail(ledger, now_ms() - 1)
    (alert,) = rules.evaluate()
    assert (
        alert.text.startswith("regressed: runAgent — Tool crashed")
        and "failed again 1 time" in alert.text
    )
    assert rules.evaluate() == []  # this regression was said
    client.post(reverse("issues:change", args=[CRASH_ID]), {"action": "resolve"})
    time.sleep(0.01)
    fail(ledger, now_ms() - 1)
    assert len(rules.evaluate()) == 1  # a new resolution, a new regression
    assert r.alert_set.count() == 2


def test_a_failure_rate_above_its_threshold_is_said_once_per_cooldown(ledger):
    r = rule(AlertRule.FAILURE_RATE, dimension="channel", threshold_percent=50, minutes=10,
             min_requests=4, cooldown_minutes=30)  # fmt: skip
    now = now_ms()
    for i in range(6):
        ledger.request(started_at=now - 1000 - i * 1000, event_source="discord",
                       status="failed" if i < 4 else "completed")  # fmt: skip
    for i in range(6):
        ledger.request(started_at=now - 1000 - i * 1000 - 500, event_source="imessage",
                       status="failed" if i < 1 else "completed")  # fmt: skip
    ledger.request(started_at=now - 20 * MIN, event_source="gmail", status="failed")  # too old
    (alert,) = rules.evaluate(now)
    assert alert.text == (
        "failure rate: channel discord at 66.7% (4 of 6 requests) in the last 10 min, above 50%"
    )
    assert "/pipeline/requests/?status=failed&source=discord&since=" in alert.url
    assert rules.evaluate(now + MIN) == []  # within the cooldown
    AlertRule.objects.filter(pk=r.pk).update(cooldown_minutes=1)
    assert len(rules.evaluate(now + 2 * MIN)) == 1  # past it, the rate still too high
    assert rules.evaluate(now + 30 * MIN) == []  # the window moved on: nothing to say


@pytest.mark.parametrize("dimension, value, expected", [
    ("stage", "", "failure rate: stage runAgent at 50.0% (3 of 6 requests)"),
    ("persona", "scout", "failure rate: persona scout at 75.0% (3 of 4 requests)"),
])  # fmt: skip
def test_failure_rates_by_stage_and_by_persona(ledger, dimension, value, expected):
    rule(AlertRule.FAILURE_RATE, dimension=dimension, value=value, threshold_percent=40,
         minutes=10, min_requests=3)  # fmt: skip
    now = now_ms()
    for i, (persona, status) in enumerate(
        [("scout", "failed"), ("scout", "failed"), ("scout", "failed"), ("scout", "completed"),
         ("atlas", "completed"), ("atlas", "completed")]
    ):  # fmt: skip
        ledger.request(started_at=now - 1000 - i * 1000, session_persona=persona, status=status,
                       error_stage="runAgent" if status == "failed" else None)  # fmt: skip
    (alert,) = rules.evaluate(now)
    assert alert.text.startswith(expected)


def test_too_few_requests_say_nothing_whatever_their_rate(ledger):
    rule(AlertRule.FAILURE_RATE, dimension="channel", threshold_percent=10, minutes=10,
         min_requests=5)  # fmt: skip
    for i in range(4):
        ledger.request(started_at=now_ms() - i * 1000, event_source="discord", status="failed")
    assert rules.evaluate() == []


def test_requests_stuck_in_processing_are_said(ledger):
    rule(AlertRule.STUCK, minutes=15)
    ledger.request(id="STUCK-1", started_at=now_ms() - 40 * MIN, status="processing")
    ledger.request(id="STUCK-2", started_at=now_ms() - 20 * MIN, status="processing")
    ledger.request(id="FRESH", started_at=now_ms() - 5 * MIN, status="processing")
    (alert,) = rules.evaluate()
    assert alert.text.startswith("2 requests stuck in processing for more than 15 min")
    assert alert.url == "https://ledger.example.org/pipeline/requests/STUCK-1/"


def test_the_cost_of_the_last_day_above_the_amount_is_said(ledger):
    rule(AlertRule.DAILY_COST, cost_usd=Decimal("1.00"))
    for i in range(3):
        ledger.request(started_at=now_ms() - H - i, agent_model="claude-sonnet-4-20250514",
                       agent_tokens_prompt=200_000, agent_tokens_completion=10_000)  # fmt: skip
    (alert,) = rules.evaluate()
    assert (
        alert.text.startswith("agent cost over the last 24 h: ≈ $") and "above $1.00" in alert.text
    )
    AlertRule.objects.update(cost_usd=Decimal("1000"))
    Alert.objects.all().delete()
    assert rules.evaluate() == []


def test_a_disabled_rule_says_nothing(ledger):
    rule(AlertRule.NEW_ISSUE, enabled=False)
    fail(ledger, now_ms() - MIN)
    assert rules.evaluate() == []


@pytest.mark.parametrize("fields, field", [
    ({"kind": AlertRule.FAILURE_RATE, "minutes": 5, "threshold_percent": 10}, "dimension"),
    ({"kind": AlertRule.FAILURE_RATE, "dimension": "channel", "minutes": 5}, "threshold_percent"),
    ({"kind": AlertRule.STUCK}, "minutes"),
    ({"kind": AlertRule.DAILY_COST}, "cost_usd"),
    ({"kind": AlertRule.NEW_ISSUE, "email_to": ""}, "webhook_url"),
])  # fmt: skip
def test_a_rule_missing_what_its_kind_needs_is_refused_with_the_field_named(fields, field):
    with pytest.raises(ValidationError) as refused:
        AlertRule(
            **({"name": "r", "email_to": "ops@example.com", "created_at": 0} | fields)
        ).clean()
    assert field in refused.value.message_dict


# -- Delivery, end to end --------------------------------------------------------------------------


class Receiver:
    """A webhook receiver on loopback: it keeps every POST with when it came, and answers the
    statuses it is given in turn (then 200)."""

    def __init__(self, statuses=()):
        self.posts: list[tuple[float, str, dict]] = []
        self.statuses = list(statuses)
        receiver = self

        class Handler(BaseHTTPRequestHandler):
            def do_POST(self):
                body = json.loads(self.rfile.read(int(self.headers["Content-Length"])))
                receiver.posts.append((time.monotonic(), self.path, body))
                status = receiver.statuses.pop(0) if receiver.statuses else 200
                self.send_response(status)
                self.end_headers()
                self.wfile.write(b"ok")

            def log_message(self, *args):
                pass

        self.server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        threading.Thread(target=self.server.serve_forever, daemon=True).start()

    def url(self, path: str) -> str:
        return f"http://127.0.0.1:{self.server.server_address[1]}{path}"

    def to(self, path: str) -> list[tuple[float, dict]]:
        return [(at, body) for at, where, body in self.posts if where == path]

    def stop(self):
        self.server.shutdown()
        self.server.server_close()


@pytest.fixture
def receiver():
    made = []

    def make(statuses=()):
        made.append(Receiver(statuses))
        return made[-1]

    yield make
    for r in made:
        r.stop()


class Background:
    """The background process's loop (background.runner) in a thread, holding the ledger's lock,
    with the alerts job due every second, until the test leaves the block."""

    def __init__(self, monkeypatch, settings):
        settings.ALERTS_EVERY_S = 1
        monkeypatch.setattr(alert_jobs, "_evaluated_at", float("-inf"))
        self.job = jobs.Job("alerts", every_s=1, step=alert_jobs.step)
        self.stop = threading.Event()
        self.thread = threading.Thread(target=self._run, daemon=True)

    def _run(self):
        try:
            with lock.holding_lock(wait=True):
                due, watch = {"alerts": 0.0}, runner.LedgerWatch()
                while not self.stop.is_set():
                    runner.run_round([self.job], due, {}, print, print, watch, every=1)
                    self.stop.wait(0.05)
        finally:
            connections.close_all()

    def __enter__(self):
        self.thread.start()
        return self

    def __exit__(self, *exc):
        self.stop.set()
        self.thread.join(30)


def wait_for(condition, seconds: float = 15.0):
    deadline = time.monotonic() + seconds
    while time.monotonic() < deadline:
        if condition():
            return True
        time.sleep(0.05)
    return False


def test_one_alert_per_rule_per_cooldown_reaches_a_webhook_and_an_inbox(
    ledger, receiver, monkeypatch, settings, client, viewer
):
    hook = receiver()
    rule(AlertRule.NEW_ISSUE, name="New issues", webhook_url=hook.url("/new"))
    rule(AlertRule.FAILURE_RATE, name="Discord failing", dimension="channel", value="discord",
         threshold_percent=50, minutes=10, min_requests=3, webhook_url=hook.url("/rate"),
         email_to="")  # fmt: skip
    with Background(monkeypatch, settings):
        time.sleep(1.5)  # a round or two with nothing to say
        assert hook.posts == []
        written = time.monotonic()
        for i in range(4):
            fail(ledger, now_ms() - 1000 - i, event_source="discord")
        assert wait_for(lambda: len(hook.to("/new")) == 1 and len(hook.to("/rate")) == 1)
        # Within the evaluation interval (1 s), with the time a step takes on a busy machine.
        assert max(at for at, _, _ in hook.posts) - written < 6
        for i in range(4):  # the same trouble goes on: nothing more within the cooldown
            fail(ledger, now_ms() - 500 - i, event_source="discord")
        time.sleep(3)
    assert len(hook.to("/new")) == 1 and len(hook.to("/rate")) == 1
    (_, new), (_, rate) = hook.to("/new")[0], hook.to("/rate")[0]
    assert new["text"].startswith("[ledgerweb] new issue: runAgent — Tool crashed")
    assert new["text"].endswith(f"https://ledger.example.org/pipeline/issues/{CRASH_ID}/")
    assert new["rule"] == "New issues" and new["url"].endswith(f"/pipeline/issues/{CRASH_ID}/")
    assert rate["text"].startswith("[ledgerweb] failure rate: channel discord at 100.0%")
    (email,) = mail.outbox
    assert email.to == ["ops@example.com"] and "new issue: runAgent" in email.subject
    assert f"https://ledger.example.org/pipeline/issues/{CRASH_ID}/" in email.body
    assert set(Delivery.objects.values_list("status", flat=True)) == {"sent"}

    client.force_login(viewer)
    page = client.get(reverse("alerts:log")).content.decode()
    assert "New issues" in page and "Discord failing" in page and "ops@example.com" in page
    assert f"127.0.0.1:{hook.server.server_address[1]}/…" in page  # the host, not the path
    log = client.get(reverse("alerts:log"), {"format": "json"}).json()
    assert {a["rule"] for a in log["alerts"]} == {"New issues", "Discord failing"}


def test_a_webhook_answering_500_is_tried_again_with_backoff_and_the_failure_shown(
    ledger, receiver, monkeypatch, settings, client, viewer
):
    settings.ALERTS_RETRY_S = 1
    hook = receiver(statuses=[500, 500])
    rule(AlertRule.NEW_ISSUE, name="Flaky chat", webhook_url=hook.url("/hook"), email_to="")
    fail(ledger, now_ms() - 1000)
    with Background(monkeypatch, settings):
        assert wait_for(lambda: len(hook.to("/hook")) == 3, seconds=20)
        assert wait_for(lambda: Delivery.objects.filter(status="sent").exists())
    times = [at for at, _ in hook.to("/hook")]
    assert times[1] - times[0] >= 0.9 and times[2] - times[1] >= 1.9  # 1 s, then 2 s
    d = Delivery.objects.get()
    assert (d.status, d.attempts, d.last_error) == ("sent", 3, "HTTP 500 Internal Server Error")
    assert len({body["text"] for _, body in hook.to("/hook")}) == 1  # one alert, tried 3 times
    client.force_login(viewer)
    page = client.get(reverse("alerts:log")).content.decode()
    assert "3 attempts" in page and "HTTP 500 Internal Server Error" in page


def test_a_webhook_that_keeps_failing_is_given_up_and_said_on_the_log(
    ledger, receiver, monkeypatch, client, viewer
):
    monkeypatch.setattr(delivery, "MAX_ATTEMPTS", 2)
    hook = receiver(statuses=[500] * 5)
    rule(AlertRule.NEW_ISSUE, name="Dead chat", webhook_url=hook.url("/down"), email_to="")
    fail(ledger, now_ms() - 1000)
    (alert,) = rules.evaluate()
    assert delivery.deliver_due() == (0, 1, False)
    d = Delivery.objects.get()
    assert d.status == "pending" and d.next_attempt_at > now_ms()
    assert delivery.deliver_due(d.next_attempt_at) == (0, 1, False)
    d.refresh_from_db()
    assert (d.status, d.attempts) == ("failed", 2)
    assert delivery.deliver_due(d.next_attempt_at + 10**6) == (0, 0, False)  # given up
    client.force_login(viewer)
    page = client.get(reverse("alerts:log"), {"status": "failed"}).content.decode()
    assert "Dead chat" in page and "✕" not in page  # the symbol comes from the stylesheet
    assert "status-delivery-failed" in page and "HTTP 500" in page


def test_an_unreachable_webhook_is_said_not_raised(ledger, monkeypatch):
    rule(AlertRule.NEW_ISSUE, webhook_url="http://127.0.0.1:9/nothing-listens", email_to="")
    fail(ledger, now_ms() - 1000)
    rules.evaluate()
    assert delivery.deliver_due() == (0, 1, False)
    assert Delivery.objects.get().last_error.startswith("could not reach it")
