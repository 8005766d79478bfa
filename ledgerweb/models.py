from django.db import models


class HealthReport(models.Model):
    """The last health check of a ledger (ledgerweb/health.py), kept in Django's database so
    that the staff page shows it at once: the checks scan whole tables (41 s on a big ledger),
    so the background summariser runs them (see docs/decisions.md)."""

    ledger_path = models.TextField(unique=True)
    checked_at = models.BigIntegerField()  # Unix ms
    took_ms = models.BigIntegerField()
    findings = models.JSONField()

    class Meta:
        # As search.IndexState: spares the system checks a connection (a fresh checkout has no
        # var/ yet, and `check --deploy` or `ledger_import` must not need one).
        required_db_features = {"supports_json_field"}
