"""The alert log: what was sent, to whom, why, and how the sending went."""

from urllib.parse import urlsplit

from django.http import HttpRequest, HttpResponse
from django.shortcuts import render
from django.views.decorators.http import require_GET

from alerts.models import Alert, AlertRule, Delivery
from ledgerweb.db import ledger_identity
from ledgerweb.http import respond
from ledgerweb.params import SQLITE_INT, answers_bad_parameters, choice, read, strict, whole_number

PAGE_SIZE = 50
STATUSES = (Delivery.PENDING, Delivery.SENT, Delivery.FAILED)


def shown_target(delivery: Delivery) -> str:
    """Where it went, as everyone may see it: a webhook's address carries its secret in the
    path (Slack's, Discord's), so only its host is shown (the admin shows the rule whole)."""
    if delivery.channel == Delivery.WEBHOOK:
        return f"{urlsplit(delivery.target).netloc or delivery.target[:40]}/…"
    return delivery.target


@require_GET
@answers_bad_parameters
def alert_log(request: HttpRequest) -> HttpResponse:
    errors: dict[str, str] = {}
    rule_id = read(request.GET, "rule", whole_number(1, SQLITE_INT), errors)
    status = read(request.GET, "status", choice(*STATUSES), errors) or ""
    before = strict(
        request.GET, "before", whole_number(1, SQLITE_INT)
    )  # written by the page's own link
    alerts = Alert.objects.filter(ledger=ledger_identity()).prefetch_related("deliveries")
    if rule_id is not None:
        alerts = alerts.filter(rule_id=rule_id)
    if status:
        alerts = alerts.filter(deliveries__status=status).distinct()
    if before is not None:
        alerts = alerts.filter(id__lt=before)
    page = list(alerts.order_by("-id")[: PAGE_SIZE + 1])
    more = len(page) > PAGE_SIZE
    page = page[:PAGE_SIZE]
    kinds = dict(AlertRule.KINDS)
    for alert in page:
        alert.kind_label = kinds.get(alert.kind, alert.kind)
        for delivery in alert.deliveries.all():
            delivery.shown = shown_target(delivery)
    rules = list(AlertRule.objects.all())
    ctx = {
        "alerts": page,
        "next_before": page[-1].id if more else None,
        "rules": rules,
        "rule_id": rule_id,
        "status": status,
        "statuses": STATUSES,
        "errors": errors,
    }
    return respond(
        request,
        page=lambda: render(request, "alerts/log.html", ctx),
        twin=lambda: _twin(ctx),
    )


def _twin(ctx: dict) -> dict:
    return {
        "errors": ctx["errors"],
        "next_before": ctx["next_before"],
        "alerts": [
            {
                "id": a.id,
                "rule": a.rule_name,
                "kind": a.kind,
                "subjects": a.subjects,
                "text": a.text,
                "url": a.url,
                "fired_at": a.fired_at,
                "deliveries": [
                    {
                        "channel": d.channel,
                        "target": d.shown,
                        "status": d.status,
                        "attempts": d.attempts,
                        "last_error": d.last_error or None,
                        "next_attempt_at": d.next_attempt_at
                        if d.status == Delivery.PENDING
                        else None,
                        "sent_at": d.sent_at,
                    }
                    for d in a.deliveries.all()
                ],
            }
            for a in ctx["alerts"]
        ],
    }
