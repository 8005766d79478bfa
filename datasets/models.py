from django.conf import settings
from django.db import models


class ExportRun(models.Model):
    """One export of a dataset, from the page or the command: who asked for what, how many
    records it wrote, and what it left out and why (a JSONL file has no room for that)."""

    user = models.ForeignKey(
        settings.AUTH_USER_MODEL, null=True, blank=True, on_delete=models.SET_NULL
    )
    by_command = models.BooleanField(default=False)
    kind = models.CharField(max_length=20)  # chat / preferences
    selection = models.JSONField(default=dict)  # what was asked for: labels, 👍, form
    started_at = models.BigIntegerField()  # Unix ms
    finished_at = models.BigIntegerField(null=True, blank=True)  # None: running, or stopped
    records = models.IntegerField(default=0)
    report = models.JSONField(default=dict)  # datasets.records.Report.as_json()

    class Meta:
        indexes = [models.Index(fields=["-started_at"], name="export_run_started")]
        # A JSONField's system check asks the database; this spares a fresh checkout (no var/
        # yet) a connection on every manage.py command, as ledgerweb.HealthReport does.
        required_db_features = {"supports_json_field"}

    def __str__(self) -> str:
        return f"{self.kind} export {self.pk}"
