from django.db import models


class JobStatus(models.Model):
    """What a background job last did for a ledger, so pages can say whether the background work
    keeps up and show its failures (a job that fails keeps failing visibly, not in a log only)."""

    ledger = models.TextField()  # ledgerweb.db.ledger_identity()
    name = models.CharField(max_length=100)
    last_started_at = models.BigIntegerField(null=True)  # Unix ms
    last_finished_at = models.BigIntegerField(null=True)
    last_message = models.TextField(default="")
    last_ok_at = models.BigIntegerField(null=True)  # the last step that did not fail
    last_error = models.TextField(default="")  # the newest failure's summary; '' once one passes
    last_error_at = models.BigIntegerField(null=True)
    failures = models.BigIntegerField(default=0)  # failed steps in a row
    steps = models.BigIntegerField(default=0)

    class Meta:
        constraints = [
            models.UniqueConstraint(fields=["ledger", "name"], name="one_status_per_job")
        ]
        ordering = ["name"]

    def __str__(self) -> str:
        return f"{self.name} ({self.ledger})"
