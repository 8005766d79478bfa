"""The alerts' background job (background/): every ALERTS_EVERY_S seconds (60 by default) each
enabled rule is evaluated, and the deliveries whose time has come are sent; a step that left
deliveries due says so, and the runner gives it another turn in the same round."""

import math
import time

from django.conf import settings

from alerts import delivery, rules
from background.jobs import Job, Step, register

_evaluated_at = -math.inf  # time.monotonic() of this process's last evaluation


def step(**options) -> Step:
    """Evaluate the rules (unless this is the same round's second turn, given to send what was
    left due), then send what is due."""
    global _evaluated_at
    fired = []
    if time.monotonic() - _evaluated_at >= settings.ALERTS_EVERY_S / 2:
        _evaluated_at = time.monotonic()
        fired = rules.evaluate()
    sent, failed, more = delivery.deliver_due()
    words = [f"{len(fired)} alert{'s' if len(fired) != 1 else ''} fired"]
    if sent or failed:
        words.append(f"{sent} sent, {failed} failed (tried again later)")
    return Step(", ".join(words), more=more and bool(sent or failed))


def register_job() -> None:
    register(Job("alerts", every_s=settings.ALERTS_EVERY_S, step=step))
