"""The operator write on sessions: change their status, never delete them (seed 000: the ledger
is append-only). One transaction on the writable ledger connection, updated_at set to now, and
an entry per session in Django's admin log saying who did it."""

from django.contrib.admin.models import CHANGE, LogEntry
from django.db import transaction

from ledgerweb.db import LEDGER_WRITE
from ledgerweb.timestamps import now_ms
from sessions.models import Session

STATUSES = ("active", "archived", "deleted")


def change_status(session_ids: list[str], status: str, user) -> int:
    """Set `status` on these sessions; returns how many rows changed."""
    if status not in STATUSES:
        raise ValueError(f"unknown session status {status!r}")
    with transaction.atomic(using=LEDGER_WRITE):
        sessions = Session.objects.using(LEDGER_WRITE).filter(id__in=session_ids)
        changed = list(sessions.exclude(status=status).only("id", "label", "routing_key"))
        if not changed:
            return 0
        count = (
            Session.objects.using(LEDGER_WRITE)
            .filter(id__in=[s.id for s in changed])
            .update(status=status, updated_at=now_ms())
        )
    LogEntry.objects.log_actions(
        user_id=user.pk,
        queryset=changed,
        action_flag=CHANGE,
        change_message=f"Set status to {status}.",
    )
    return count
