"""Sending alerts: a webhook gets a JSON POST whose `text` a chat tool shows (Slack, Mattermost,
Rocket.Chat, Discord's /slack endpoint), an address an email through Django's mail settings. A
delivery that fails is tried again after 1, 2, 4, 8… times ALERTS_RETRY_S, up to MAX_ATTEMPTS
tries, each failure kept and shown on the alert log."""

import json
import urllib.error
import urllib.request
from datetime import UTC, datetime

from django.conf import settings
from django.core.mail import send_mail

from alerts.models import Alert, Delivery
from ledgerfacts.timestamps import now_ms
from ledgerweb.db import ledger_identity, ledger_name

MAX_ATTEMPTS = 6
WEBHOOK_TIMEOUT_S = 5
# Deliveries one step sends at most (each waits up to WEBHOOK_TIMEOUT_S): the rest next time.
PER_STEP = 20


def message(alert: Alert) -> str:
    """What a person reads: the alert and its link."""
    return f"[ledgerweb] {alert.text}\n{alert.url}"


def payload(alert: Alert) -> dict:
    return {
        "text": message(alert),
        "rule": alert.rule_name,
        "kind": alert.kind,
        "subjects": alert.subjects,
        "url": alert.url,
        "ledger": ledger_name(settings.LEDGER_DB),
        "fired_at": datetime.fromtimestamp(alert.fired_at / 1000, UTC).isoformat(),
    }


def post_webhook(url: str, body: dict) -> None:
    """POST the JSON; anything but a 2xx answer raises, saying what came back."""
    request = urllib.request.Request(
        url,
        data=json.dumps(body).encode(),
        headers={"Content-Type": "application/json", "User-Agent": "ledgerweb-alerts"},
        method="POST",
    )
    try:
        with urllib.request.urlopen(request, timeout=WEBHOOK_TIMEOUT_S) as response:  # noqa: S310 - the admin's URL
            response.read(10_000)
    except urllib.error.HTTPError as error:
        raise DeliveryError(f"HTTP {error.code} {error.reason}") from None
    except (urllib.error.URLError, TimeoutError, OSError) as error:
        reason = getattr(error, "reason", error)
        raise DeliveryError(f"could not reach it: {reason}") from None


class DeliveryError(Exception):
    pass


def send_email(address: str, alert: Alert) -> None:
    subject = f"[ledgerweb] {alert.text.splitlines()[0][:150]}"
    body = (
        f"{message(alert)}\n\nRule: {alert.rule_name}\nLedger: {ledger_name(settings.LEDGER_DB)}\n"
    )
    try:
        send_mail(subject, body, settings.DEFAULT_FROM_EMAIL, [address], fail_silently=False)
    except (OSError, ValueError) as error:  # smtplib's errors are OSErrors
        raise DeliveryError(f"{type(error).__name__}: {error}") from None


def deliver(delivery: Delivery, now: int | None = None) -> bool:
    """Try one delivery now; True when it went out. A failure is kept with the next try's time
    (doubling each time), or the delivery is given up after MAX_ATTEMPTS."""
    now = now_ms() if now is None else now
    delivery.attempts += 1
    try:
        if delivery.channel == Delivery.WEBHOOK:
            post_webhook(delivery.target, payload(delivery.alert))
        else:
            send_email(delivery.target, delivery.alert)
    except DeliveryError as error:
        delivery.last_error = str(error)[:2000]
        if delivery.attempts >= MAX_ATTEMPTS:
            delivery.status = Delivery.FAILED
        else:
            wait_ms = settings.ALERTS_RETRY_S * 1000 * 2 ** (delivery.attempts - 1)
            delivery.next_attempt_at = now + wait_ms
        delivery.save()
        return False
    delivery.status, delivery.sent_at = Delivery.SENT, now
    delivery.save()
    return True


def deliver_due(now: int | None = None) -> tuple[int, int, bool]:
    """Send the deliveries whose time has come, oldest first, at most PER_STEP: (sent, failed,
    whether more are due)."""
    now = now_ms() if now is None else now
    due = list(
        Delivery.objects.filter(
            alert__ledger=ledger_identity(), status=Delivery.PENDING, next_attempt_at__lte=now
        )
        .select_related("alert")
        .order_by("next_attempt_at", "id")[: PER_STEP + 1]
    )
    sent = failed = 0
    for delivery in due[:PER_STEP]:
        if deliver(delivery, now):
            sent += 1
        else:
            failed += 1
    return sent, failed, len(due) > PER_STEP
