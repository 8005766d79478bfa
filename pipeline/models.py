"""The Nexus Ledger (seeds/002) as an unmanaged model, column for column with
ledgerweb/sql/nexus_ledger.sql (tests/test_schema_drift.py keeps them equal).

`turn_id` stays a plain id: the pipeline links to a turn by URL and does not import the sessions
app (ARCHITECTURE.md §3).
"""

from django.db import models

TimestampMs = models.BigIntegerField


class NexusRequest(models.Model):
    id = models.TextField(primary_key=True)

    event_id = models.TextField()
    event_type = models.TextField()
    event_source = models.TextField()

    stage = models.TextField()
    status = models.TextField()

    principal_id = models.TextField(null=True, blank=True)
    principal_type = models.TextField(null=True, blank=True)
    principal_is_user = models.BooleanField(null=True, blank=True)

    access_decision = models.TextField(null=True, blank=True)
    access_policy = models.TextField(null=True, blank=True)
    session_key = models.TextField(null=True, blank=True)
    session_persona = models.TextField(null=True, blank=True)
    permissions = models.TextField(null=True, blank=True)  # JSON

    hooks_matched = models.TextField(null=True, blank=True)  # JSON array
    hooks_fired = models.TextField(null=True, blank=True)  # JSON array
    hooks_handled = models.BooleanField(null=True, blank=True)
    hooks_context = models.TextField(null=True, blank=True)  # JSON

    turn_id = models.TextField(null=True, blank=True)
    agent_model = models.TextField(null=True, blank=True)
    agent_tokens_prompt = models.IntegerField(null=True, blank=True)
    agent_tokens_completion = models.IntegerField(null=True, blank=True)
    agent_tokens_total = models.IntegerField(null=True, blank=True)
    agent_tool_calls = models.TextField(null=True, blank=True)  # JSON array

    delivery_channel = models.TextField(null=True, blank=True)
    delivery_message_ids = models.TextField(null=True, blank=True)  # JSON array
    delivery_success = models.BooleanField(null=True, blank=True)
    delivery_error = models.TextField(null=True, blank=True)

    started_at = TimestampMs()
    completed_at = TimestampMs(null=True, blank=True)

    stage_timings = models.TextField(null=True, blank=True)  # JSON object: stage → ms

    error_stage = models.TextField(null=True, blank=True)
    error_message = models.TextField(null=True, blank=True)
    error_stack = models.TextField(null=True, blank=True)

    request_snapshot = models.TextField(null=True, blank=True)  # JSON, dropped by retention

    class Meta:
        managed = False
        db_table = "nexus_requests"
        permissions = [("run_retention", "Can apply the Nexus Ledger retention policy")]

    def __str__(self) -> str:
        return self.id
