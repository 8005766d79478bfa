"""Evaluating the alert rules: what each kind finds right now, and which of it may be said again.

A rule's findings of one evaluation become one alert (a list when there are several: never one
message per issue of a burst), each finding said at most once per the rule's cooldown, a new issue
once ever and a regression once per resolution.
"""

from dataclasses import dataclass
from datetime import UTC, datetime
from decimal import Decimal
from urllib.parse import urlencode

from django.conf import settings
from django.db import transaction
from django.urls import reverse

from alerts.models import Alert, AlertRule, Cooldown, Delivery
from issues.inbox import InboxFilters, Reading, read_issues
from ledgerfacts.timestamps import now_ms
from ledgerweb.db import ledger_identity
from pipeline import rates
from pipeline.charts import window_costs
from pipeline.filters import value_query

MINUTE = 60_000
LISTED = 10  # findings an alert lists; the rest are counted
MAX_SUBJECT = 500
# What several findings of one rule are, in the line that lists them.
MANY = {
    AlertRule.NEW_ISSUE: "new issues",
    AlertRule.REGRESSION: "regressed issues",
    AlertRule.FAILURE_RATE: "failure rates above the threshold",
    AlertRule.STUCK: "findings",
    AlertRule.DAILY_COST: "findings",
    "test": "tests",
}


@dataclass
class Finding:
    subject: str  # what the cooldown is kept for: an issue id, "channel:discord", "stuck", "cost"
    text: str  # one line
    url: str  # absolute: the issue, request or page to open
    since: int | None = None  # a regression: the resolution it is about (said once per one)


def link(path: str, query: dict | None = None) -> str:
    """An absolute link back to this site (settings.BASE_URL)."""
    return f"{settings.BASE_URL}{path}{'?' + urlencode(query) if query else ''}"


def hhmm(ms: int) -> str:
    return f"{datetime.fromtimestamp(ms / 1000, UTC):%Y-%m-%d %H:%M} UTC"


def _issue_line(f) -> str:
    stage = f.stage if f.stage not in (None, "") else "(no stage)"
    return f"{stage} — {f.signature[:200]}"


class Evaluation:
    """One evaluation of every enabled rule, sharing what several rules read (the issues)."""

    def __init__(self, now: int | None = None):
        self.now = now_ms() if now is None else now
        self._reading: Reading | None = None

    @property
    def reading(self) -> Reading:
        if self._reading is None:
            self._reading = read_issues(InboxFilters.from_query({"window": "24h"}))
        return self._reading

    def findings(self, rule: AlertRule) -> list[Finding]:
        return getattr(self, rule.kind)(rule)

    def new_issue(self, rule: AlertRule) -> list[Finding]:
        found = []
        for key, f in self.reading.figures.items():
            if f.first_seen is None or f.first_seen < rule.created_at:
                continue
            if self.reading.status(key).name in ("resolved", "ignored"):
                continue
            n = f"{f.total:,} failure{'s' if f.total != 1 else ''} since {hhmm(f.first_seen)}"
            found.append(Finding(key, f"new issue: {_issue_line(f)} ({n})", link(_issue_path(key))))
        return found

    def regression(self, rule: AlertRule) -> list[Finding]:
        found = []
        for key, f in self.reading.figures.items():
            if self.reading.status(key).name != "regressed":
                continue
            state = self.reading.states[key]
            again = self.reading.failures_after(f, state.resolved_at)
            text = (
                f"regressed: {_issue_line(f)}: resolved {hhmm(state.resolved_at)}, failed again"
                f" {again:,} time{'s' if again != 1 else ''} since (last {hhmm(f.last_seen)})"
            )
            found.append(Finding(key, text, link(_issue_path(key)), since=state.resolved_at))
        return found

    def failure_rate(self, rule: AlertRule) -> list[Finding]:
        since = self.now - rule.minutes * MINUTE
        by_value, _ = rates.failure_rates(since, self.now, rule.dimension)
        found = []
        for value, rate in sorted(by_value.items(), key=lambda kv: -kv[1].percent):
            if rule.value and value != rule.value:
                continue
            if rate.requests < rule.min_requests or rate.percent <= rule.threshold_percent:
                continue
            shown = "(none)" if value is None else "(empty)" if value == "" else value
            text = (
                f"failure rate: {rule.dimension} {shown} at {rate.percent:.1f}% ({rate.failed:,}"
                f" of {rate.requests:,} requests) in the last {rule.minutes:,} min, above"
                f" {rule.threshold_percent:g}%"
            )
            param = {"stage": "error_stage", "channel": "source", "persona": "persona"}
            query = {"status": "failed", **value_query(param[rule.dimension], value)}
            query |= {"since": since, "until": self.now}
            subject = f"{rule.dimension}:{value}"[:MAX_SUBJECT]
            found.append(Finding(subject, text, link(reverse("pipeline:requests"), query)))
        return found

    def stuck(self, rule: AlertRule) -> list[Finding]:
        stuck = rates.stuck_requests(self.now - rule.minutes * MINUTE)
        if not stuck.count:
            return []
        text = (
            f"{stuck.count:,} request{'s' if stuck.count != 1 else ''} stuck in processing for"
            f" more than {rule.minutes:,} min; the oldest since {hhmm(stuck.oldest_started_at)}"
        )
        url = link(reverse("pipeline:request", args=[stuck.oldest_id]))
        return [Finding("stuck", text, url)]

    def daily_cost(self, rule: AlertRule) -> list[Finding]:
        totals, _ = window_costs(("24h",), self.now)
        total = totals["24h"]
        if total.amount <= Decimal(rule.cost_usd):
            return []
        text = f"agent cost over the last 24 h: {total.label}, above ${Decimal(rule.cost_usd):,.2f}"
        return [Finding("cost", text, link(reverse("pipeline:dashboard"), {"window": "24h"}))]


def _issue_path(key: str) -> str:
    return reverse("issues:issue", args=[key])


# -- Which findings may be said, and the alert they make ------------------------------------------


def due(rule: AlertRule, findings: list[Finding], now: int) -> list[Finding]:
    """The findings this rule has not said within its cooldown (a new issue: ever; a regression:
    for this resolution)."""
    if not findings:
        return []
    kept = {
        c.subject: c.alerted_at
        for c in Cooldown.objects.filter(
            ledger=ledger_identity(), rule=rule, subject__in=[f.subject for f in findings]
        )
    }
    cooldown = rule.cooldown_minutes * MINUTE
    out = []
    for finding in findings:
        last = kept.get(finding.subject)
        if last is None:
            out.append(finding)
        elif rule.kind == AlertRule.NEW_ISSUE:
            continue  # new once
        elif finding.since is not None and last >= finding.since:
            continue  # this regression was said already
        elif now - last >= cooldown:
            out.append(finding)
    return out


def fire(rule: AlertRule, findings: list[Finding], now: int) -> Alert:
    """One alert for a rule's findings, its deliveries queued and its cooldowns started."""
    if len(findings) == 1:
        text, url = findings[0].text, findings[0].url
    else:
        lines = [f"- {f.text}" for f in findings[:LISTED]]
        if len(findings) > LISTED:
            lines.append(f"- and {len(findings) - LISTED:,} more")
        text = f"{rule.name}: {len(findings):,} {MANY[rule.kind]}\n" + "\n".join(lines)
        url = _overview_link(rule)
    ledger = ledger_identity()
    with transaction.atomic(using="default"):
        alert = Alert.objects.create(
            ledger=ledger, rule=rule, rule_name=rule.name, kind=rule.kind,
            subjects=[f.subject for f in findings], text=text, url=url, fired_at=now,
        )  # fmt: skip
        targets = [(Delivery.WEBHOOK, rule.webhook_url)] if rule.webhook_url else []
        targets += [(Delivery.EMAIL, address) for address in rule.recipients]
        Delivery.objects.bulk_create(
            Delivery(alert=alert, channel=channel, target=target, next_attempt_at=now)
            for channel, target in targets
        )
        for finding in findings:
            Cooldown.objects.update_or_create(
                ledger=ledger, rule=rule, subject=finding.subject, defaults={"alerted_at": now}
            )
    return alert


def _overview_link(rule: AlertRule) -> str:
    if rule.kind == AlertRule.NEW_ISSUE:
        return link(reverse("issues:inbox"), {"status": "new"})
    if rule.kind == AlertRule.REGRESSION:
        return link(reverse("issues:inbox"), {"status": "regressed"})
    return link(reverse("pipeline:dashboard"))


def evaluate(now: int | None = None) -> list[Alert]:
    """Every enabled rule, once: the alerts this evaluation fired."""
    evaluation = Evaluation(now)
    fired = []
    for rule in AlertRule.objects.filter(enabled=True):
        findings = due(rule, evaluation.findings(rule), evaluation.now)
        if findings:
            fired.append(fire(rule, findings, evaluation.now))
    return fired
