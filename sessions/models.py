"""The Agents Ledger (seeds/000) as unmanaged models, column for column with
ledgerweb/sql/agents_ledger.sql, compactions.sql, turn_usage.sql and tool_call_source_ids.sql
(tests/test_schema_drift.py keeps them equal).

The runtime owns these tables: we never migrate them. References are ForeignKeys without database
constraints because a live ledger can hold dangling ids; code that follows one must expect the
target to be missing.
"""

from django.db import models

from ledgerfacts.commands import as_typed

# Ledger timestamps are Unix milliseconds in INTEGER columns.
TimestampMs = models.BigIntegerField


def _ref(to, column, related_name, *, null=True):
    return models.ForeignKey(
        to,
        db_column=column,
        db_constraint=False,
        on_delete=models.DO_NOTHING,
        related_name=related_name,
        null=null,
        blank=null,
    )


class Session(models.Model):
    id = models.TextField(primary_key=True)
    persona = models.TextField()
    routing_key = models.TextField()
    label = models.TextField(null=True, blank=True)
    root_turn = _ref("Turn", "root_turn_id", "+")
    current_turn = _ref("Turn", "current_turn_id", "+")
    created_at = TimestampMs()
    updated_at = TimestampMs()
    status = models.TextField(default="active")
    source_event_id = models.TextField(null=True, blank=True)

    class Meta:
        managed = False
        db_table = "sessions"
        permissions = [
            ("archive_session", "Can archive and restore sessions"),
            ("fork_session", "Can fork a new session from a turn"),
            ("mark_session_deleted", "Can mark sessions deleted"),
        ]

    def __str__(self) -> str:
        # An imported label may hold a Claude Code command's tags: shown as it was typed.
        return as_typed(self.label) or self.label or self.routing_key or self.id


class Turn(models.Model):
    id = models.TextField(primary_key=True)
    session = _ref(Session, "session_id", "turns", null=False)
    parent_turn = _ref("self", "parent_turn_id", "children")
    status = models.TextField(default="pending")
    started_at = TimestampMs()
    completed_at = TimestampMs(null=True, blank=True)
    prompt_tokens = models.IntegerField(null=True, blank=True)
    completion_tokens = models.IntegerField(null=True, blank=True)
    total_tokens = models.IntegerField(null=True, blank=True)
    model = models.TextField(null=True, blank=True)
    source_event_id = models.TextField(null=True, blank=True)

    class Meta:
        managed = False
        db_table = "turns"

    def __str__(self) -> str:
        return self.id


class Message(models.Model):
    id = models.TextField(primary_key=True)
    turn = _ref(Turn, "turn_id", "messages", null=False)
    role = models.TextField()
    content = models.TextField()
    sequence = models.IntegerField()
    created_at = TimestampMs()

    class Meta:
        managed = False
        db_table = "messages"
        ordering = ["sequence"]

    def __str__(self) -> str:
        return f"{self.role} #{self.sequence}"


class ToolCall(models.Model):
    id = models.TextField(primary_key=True)
    turn = _ref(Turn, "turn_id", "tool_calls", null=False)
    tool_name = models.TextField()
    parameters = models.TextField()  # JSON, possibly invalid
    result = models.TextField(null=True, blank=True)  # JSON, possibly invalid
    error = models.TextField(null=True, blank=True)
    status = models.TextField(default="pending")
    started_at = TimestampMs()
    completed_at = TimestampMs(null=True, blank=True)
    sequence = models.IntegerField()

    class Meta:
        managed = False
        db_table = "tool_calls"
        ordering = ["sequence"]

    def __str__(self) -> str:
        return f"{self.tool_name} #{self.sequence}"


def _turn_key(related_name):
    """The turn_id primary key of an optional per-turn table (compactions, turn_usage)."""
    return models.OneToOneField(
        Turn,
        primary_key=True,
        db_column="turn_id",
        db_constraint=False,
        on_delete=models.DO_NOTHING,
        related_name=related_name,
    )


class Compaction(models.Model):
    """Optional table: metadata of a compaction turn (ARCHITECTURE.md §2)."""

    turn = _turn_key("compaction")
    summary = models.TextField()
    summarized_turn_ids = models.TextField()  # JSON array
    kept_turn_ids = models.TextField()  # JSON array
    model = models.TextField(null=True, blank=True)
    tokens_before = models.IntegerField(null=True, blank=True)
    tokens_after = models.IntegerField(null=True, blank=True)
    duration_ms = models.IntegerField(null=True, blank=True)
    trigger_reason = models.TextField(null=True, blank=True)
    created_at = TimestampMs()

    class Meta:
        managed = False
        db_table = "compactions"

    def __str__(self) -> str:
        return f"compaction {self.turn_id}"


class TurnUsage(models.Model):
    """Optional table, defined by ledgerweb (ledgerweb/sql/turn_usage.sql): what a turn's model
    calls billed, cache reads and writes included, where an importer knows it."""

    turn = _turn_key("usage")
    model_calls = models.IntegerField()
    input_tokens = models.IntegerField()
    cache_read_tokens = models.IntegerField()
    cache_write_tokens = models.IntegerField()
    output_tokens = models.IntegerField()

    class Meta:
        managed = False
        db_table = "turn_usage"

    def __str__(self) -> str:
        return f"usage of {self.turn_id}"


class ToolCallSourceId(models.Model):
    """Optional table, defined by ledgerweb (ledgerweb/sql/tool_call_source_ids.sql): the id a
    tool call has in the transcript it was imported from (a Codex call_id), where the ledger's
    id is another. Not unique: one source id may name several calls."""

    tool_call = models.OneToOneField(
        ToolCall,
        primary_key=True,
        db_column="tool_call_id",
        db_constraint=False,
        on_delete=models.DO_NOTHING,
        related_name="source",
    )
    source_id = models.TextField()

    class Meta:
        managed = False
        db_table = "tool_call_source_ids"

    def __str__(self) -> str:
        return f"{self.tool_call_id} is {self.source_id} in its transcript"
