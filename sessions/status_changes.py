"""The operator write on sessions: change their status, never delete them (seed 000: the ledger
is append-only). One transaction on the writable ledger connection, updated_at set to now, and
an entry per session in Django's admin log saying who did it."""

from django.contrib.admin.models import CHANGE, LogEntry
from django.db import transaction

from ledgerweb.db import LEDGER_WRITE
from ledgerweb.timestamps import now_ms
from sessions.models import Session

STATUSES = ("active", "archived", "deleted")
CHUNK = 500


def change_status(session_ids: list[str], status: str, user) -> int:
    """Set `status` on these sessions; returns how many rows changed."""
    if status not in STATUSES:
        raise ValueError(f"unknown session status {status!r}")
    sessions = Session.objects.using(LEDGER_WRITE)
    with transaction.atomic(using=LEDGER_WRITE):
        changed, count, now = [], 0, now_ms()
        # In chunks: SQLite bounds the number of parameters of one statement.
        for start in range(0, len(session_ids), CHUNK):
            chunk = session_ids[start : start + CHUNK]
            pending = sessions.filter(id__in=chunk).exclude(status=status)
            changed += pending.only("id", "label", "routing_key")
            count += pending.update(status=status, updated_at=now)
        if not changed:
            return 0
    LogEntry.objects.log_actions(
        user_id=user.pk,
        queryset=changed,
        action_flag=CHANGE,
        change_message=f"Set status to {status}.",
    )
    return count
