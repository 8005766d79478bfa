"""The operator write on sessions: change their status, never delete them (seed 000: the ledger
is append-only). One transaction on the writable ledger connection, and an entry per session in
Django's admin log saying who did it, when, and from which status.

`updated_at` is left alone: it is the session's last *activity* (seed 000), and a status change
is not activity. Setting it to now made every archived session read "just now", emptied the
idle preview and made a restored session look fresh."""

from itertools import groupby

from django.contrib.admin.models import CHANGE, LogEntry
from django.db import transaction

from ledgerweb.db import LEDGER_WRITE
from sessions.models import Session

STATUSES = ("active", "archived", "deleted")
CHUNK = 500


def change_status(session_ids: list[str], status: str, user) -> int:
    """Set `status` on these sessions; returns how many rows changed."""
    if status not in STATUSES:
        raise ValueError(f"unknown session status {status!r}")
    sessions = Session.objects.using(LEDGER_WRITE)
    with transaction.atomic(using=LEDGER_WRITE):
        changed, count = [], 0
        # In chunks: SQLite bounds the number of parameters of one statement.
        for start in range(0, len(session_ids), CHUNK):
            chunk = session_ids[start : start + CHUNK]
            pending = sessions.filter(id__in=chunk).exclude(status=status)
            changed += pending.only("id", "label", "routing_key", "status")
            count += pending.update(status=status)
        if not changed:
            return 0
    by_old_status = sorted(changed, key=lambda s: str(s.status))
    for old, group in groupby(by_old_status, key=lambda s: str(s.status)):
        LogEntry.objects.log_actions(
            user_id=user.pk,
            queryset=list(group),
            action_flag=CHANGE,
            change_message=f"Set status from {old} to {status}; last activity unchanged.",
        )
    return count
