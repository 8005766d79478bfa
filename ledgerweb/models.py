from django.contrib.auth.models import User
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


class LinkedValue(models.Model):
    """A ledger value too long for a link, under the key a link carries instead
    (ledgerweb/long_values.py). Kept for good, so a bookmarked link keeps working."""

    key = models.CharField(max_length=22, primary_key=True)
    value = models.TextField()  # as a JSON string: PostgreSQL's text cannot hold a NUL
    created_at = models.DateTimeField(auto_now_add=True)


class Person(User):
    """The site's users as the admin lists them for admins (not staff) to give roles: a proxy of
    Django's user, so that its own permissions let an admin see who has which role and change
    only that, never passwords or the superuser flag (ledgerweb/people_admin.py)."""

    class Meta:
        proxy = True
        verbose_name = "person and role"
        verbose_name_plural = "people and roles"
        permissions = [("assign_role", "Can give people a role")]
