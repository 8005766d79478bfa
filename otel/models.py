"""How far each export has gone, in ledgerweb's own database (never in the ledger)."""

from django.db import models


class ExportMark(models.Model):
    """One destination's watermark on one ledger: every turn and request up to these rowids has
    been read; those finished were sent, those still running are OpenRows, sent when they end."""

    ledger = models.TextField()  # ledger_identity(): the file's path or the database
    # A hash of the destination as given (an address may carry a token); `shown` names it.
    destination = models.CharField(max_length=64)
    shown = models.TextField()
    # A hash of the ledger's first turn (id, time): a file replaced at the same path lacks it.
    anchor = models.CharField(max_length=64, default="", blank=True)
    turns_rowid = models.BigIntegerField(default=0)
    requests_rowid = models.BigIntegerField(default=0)
    spans_sent = models.BigIntegerField(default=0)
    updated_at = models.DateTimeField(auto_now=True)

    class Meta:
        constraints = [
            models.UniqueConstraint(fields=["ledger", "destination"], name="one_mark_per_export")
        ]

    def __str__(self) -> str:
        return f"{self.ledger} → {self.shown}"


class OpenRow(models.Model):
    """A turn or request read while it was still running: looked at again on every run, sent
    once it has finished. Kept by rowid (an id may hold characters a database cannot store)."""

    mark = models.ForeignKey(ExportMark, on_delete=models.CASCADE, related_name="open_rows")
    table = models.CharField(max_length=20)  # "turns" or "nexus_requests"
    rowid = models.BigIntegerField()

    class Meta:
        constraints = [
            models.UniqueConstraint(fields=["mark", "table", "rowid"], name="one_open_row")
        ]
