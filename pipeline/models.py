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


# -- Rollups: ours, in Django's database (the router keeps managed models out of the ledger) ------


class RollupLedger(models.Model):
    """A ledger as the rollups know it: a random key their rows are stored under, and an anchor,
    one request of that ledger (id and started_at), by which it is recognised at its path. A
    file replaced or rebuilt at the same path lacks the anchor and gets a new key, so its hours
    are built afresh, never mixed with the old ones (pipeline/rollups.py, docs/decisions.md)."""

    key = models.CharField(max_length=32, unique=True)
    path = models.TextField()
    anchor_id = models.TextField()
    anchor_started_at = TimestampMs()
    seen_at = TimestampMs()  # last recognised (refreshed at most hourly, with the anchor)


class RollupHour(models.Model):
    """One settled hour of one ledger whose facts are stored, with the fingerprints each chart
    checks before trusting them: the hour's settled row count and the sum of its rows' rowids
    (both from the started_at index, every chart), and a checksum of the columns the facts read
    (re-read a few hours per chart, those verified longest ago)."""

    ledger = models.TextField()  # RollupLedger.key
    hour = TimestampMs()  # start of the hour, Unix ms
    requests = models.IntegerField()
    rows_digest = models.FloatField(default=0)
    content = models.BigIntegerField(default=0)
    built_at = TimestampMs()
    verified_at = TimestampMs(default=0)

    class Meta:
        constraints = [models.UniqueConstraint(fields=["ledger", "hour"], name="rollup_hour_once")]


class RollupFact(models.Model):
    """One grouped count of an hour: requests by status, by principal, tokens by model… (`kind`
    names the facts query of pipeline/rollups.py that produced it). Each hour is stored twice:
    per source and persona (for a filtered dashboard), and `combined` over all of them (what an
    unfiltered dashboard reads: ~20 times fewer rows)."""

    ledger = models.TextField()
    hour = TimestampMs()
    kind = models.CharField(max_length=16)
    combined = models.BooleanField()
    source = models.TextField(null=True)
    persona = models.TextField(null=True)
    key = models.TextField(null=True)
    sub = models.TextField(null=True)
    n = models.BigIntegerField()
    total = models.BigIntegerField(null=True)
    last = TimestampMs(null=True)

    class Meta:
        indexes = [
            models.Index(fields=["ledger", "kind", "combined", "hour"], name="rollup_fact_hour")
        ]


class RollupTimings(models.Model):
    """An hour's timings of one stage for one source and persona (or `combined`, as above): the
    distinct values (float64) and how often each occurred (int64), as packed arrays — exact
    percentiles need every value."""

    ledger = models.TextField()
    hour = TimestampMs()
    combined = models.BooleanField()
    source = models.TextField(null=True)
    persona = models.TextField(null=True)
    stage = models.TextField()
    values = models.BinaryField()
    counts = models.BinaryField()

    class Meta:
        indexes = [models.Index(fields=["ledger", "combined", "hour"], name="rollup_timings_hour")]


class FailureSignature(models.Model):
    """The error signature of one failed request of a stored hour (pipeline/signatures.py),
    written when the hour is built, so that "similar failures" reads rowids instead of masking
    every failure's message (pipeline/signature_search.py). The ledger's rowid, not its id: every
    row has one, even a row whose id is NULL; a VACUUM that renumbers rowids moves the hours'
    census fingerprints, so their stored signatures are dropped and built again."""

    ledger = models.TextField()  # RollupLedger.key
    hour = TimestampMs()
    request_rowid = models.BigIntegerField()
    signature = models.TextField()

    class Meta:
        indexes = [
            # Covering: a search reads its rowids from the index alone.
            models.Index(
                fields=["ledger", "signature", "hour", "request_rowid"],
                name="failure_signature_find",
            ),
            models.Index(fields=["ledger", "hour"], name="failure_signature_hour"),
        ]


class FailureGroupHour(models.Model):
    """One stored hour's failures of one group, a failed stage and an error signature
    (pipeline/failure_groups.py), for one source and persona or `combined` over all of them, as
    RollupFact keeps its rows: how many, the first and last started_at, the newest requests, and
    the sorted distinct hashes of the principals, sessions, channels, personas and models they
    touched (packed int64 arrays). The failure inbox and the alert rules read these."""

    ledger = models.TextField()  # RollupLedger.key
    hour = TimestampMs()
    combined = models.BooleanField()
    source = models.TextField(null=True)
    persona = models.TextField(null=True)
    error_stage = models.TextField(null=True)
    signature = models.TextField()
    n = models.BigIntegerField()
    first_at = TimestampMs()
    last_at = TimestampMs()
    newest = models.TextField()  # JSON [[started_at, rowid or id], …], newest first
    # failure_groups.TOUCHED, each as touched_<name>
    touched_principals = models.BinaryField()
    touched_sessions = models.BinaryField()
    touched_channels = models.BinaryField()
    touched_personas = models.BinaryField()
    touched_models = models.BinaryField()

    class Meta:
        indexes = [
            models.Index(fields=["ledger", "combined", "hour"], name="failure_group_hour"),
        ]
