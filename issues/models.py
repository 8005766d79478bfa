"""What operators decided about issues (ours, in ledgerweb's own database, with who and when)."""

from django.conf import settings
from django.db import models

TimestampMs = models.BigIntegerField


class Issue(models.Model):
    """The lifecycle of one issue of one ledger: its identity (failed stage and signature, so the
    page can name it even when its failures have left the ledger) and the operators' decision.
    An issue nobody triaged has no row: it is open. Whether a resolved issue regressed, or an
    ignored one came back, is read from its failures (issues/lifecycle.py), never stored."""

    OPEN, RESOLVED, IGNORED = "open", "resolved", "ignored"
    DECISIONS = [(OPEN, "open"), (RESOLVED, "resolved"), (IGNORED, "ignored")]

    ledger = models.TextField()  # ledgerweb.db.ledger_identity()
    issue_id = models.CharField(max_length=16)  # issues.figures.issue_id(stage, signature)
    error_stage = models.TextField(null=True)
    signature = models.TextField()
    decision = models.CharField(max_length=10, choices=DECISIONS, default=OPEN)
    resolved_at = TimestampMs(null=True)  # failures after this mean it regressed
    ignored_at = TimestampMs(null=True)
    ignore_until = TimestampMs(null=True)  # ignored for a time: until then
    ignore_count = models.IntegerField(null=True)  # or until this many more failures
    merged_into = models.CharField(max_length=16, blank=True, default="")  # another issue_id
    changed_at = TimestampMs(null=True)

    class Meta:
        constraints = [
            models.UniqueConstraint(fields=["ledger", "issue_id"], name="one_issue_per_ledger")
        ]
        permissions = [("triage_issue", "Can resolve, ignore and merge failure issues")]

    def __str__(self) -> str:
        return f"{self.error_stage or '(no stage)'}: {self.signature[:80]}"


class IssueChange(models.Model):
    """One operator's change to an issue, with an optional note: the issue's history."""

    issue = models.ForeignKey(Issue, on_delete=models.CASCADE, related_name="changes")
    action = models.CharField(max_length=20)  # resolved, reopened, ignored, merged, unmerged
    detail = models.TextField(blank=True, default="")  # "for 24 hours", "into 3f2a…"
    note = models.TextField(blank=True, default="")
    by = models.ForeignKey(settings.AUTH_USER_MODEL, null=True, on_delete=models.SET_NULL)
    by_name = models.CharField(max_length=150)  # kept when the account is deleted
    at = TimestampMs()

    class Meta:
        ordering = ["-at", "-id"]

    def __str__(self) -> str:
        return f"{self.action} by {self.by_name}"
