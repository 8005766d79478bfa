"""Buffered bulk inserts: rows go to per-table lists and leave in executemany batches."""

import sqlite3

COLUMNS = {
    "sessions": (
        "id", "persona", "routing_key", "label", "root_turn_id", "current_turn_id",
        "created_at", "updated_at", "status", "source_event_id",
    ),
    "turns": (
        "id", "session_id", "parent_turn_id", "status", "started_at", "completed_at",
        "prompt_tokens", "completion_tokens", "total_tokens", "model", "source_event_id",
    ),
    "messages": ("id", "turn_id", "role", "content", "sequence", "created_at"),
    "tool_calls": (
        "id", "turn_id", "tool_name", "parameters", "result", "error", "status",
        "started_at", "completed_at", "sequence",
    ),
    "compactions": (
        "turn_id", "summary", "summarized_turn_ids", "kept_turn_ids", "model", "tokens_before",
        "tokens_after", "duration_ms", "trigger_reason", "created_at",
    ),
    "nexus_requests": (
        "id", "event_id", "event_type", "event_source", "stage", "status",
        "principal_id", "principal_type", "principal_is_user",
        "access_decision", "access_policy", "session_key", "session_persona", "permissions",
        "hooks_matched", "hooks_fired", "hooks_handled", "hooks_context",
        "turn_id", "agent_model", "agent_tokens_prompt", "agent_tokens_completion",
        "agent_tokens_total", "agent_tool_calls",
        "delivery_channel", "delivery_message_ids", "delivery_success", "delivery_error",
        "started_at", "completed_at", "stage_timings",
        "error_stage", "error_message", "error_stack", "request_snapshot",
    ),
}  # fmt: skip

BATCH_ROWS = 20_000


class RowSink:
    """Collects rows (tuples in COLUMNS order) and writes each table in batches.

    Memory stays bounded by BATCH_ROWS per table whatever the scale of the build.
    """

    def __init__(self, conn: sqlite3.Connection, batch_rows: int = BATCH_ROWS):
        self.conn = conn
        self.batch_rows = batch_rows
        self.counts = dict.fromkeys(COLUMNS, 0)
        self._pending: dict[str, list[tuple]] = {table: [] for table in COLUMNS}
        self._insert = {
            table: f"INSERT INTO {table} ({', '.join(cols)}) VALUES ({', '.join('?' * len(cols))})"
            for table, cols in COLUMNS.items()
        }

    def add(self, table: str, row: tuple) -> None:
        pending = self._pending[table]
        pending.append(row)
        if len(pending) >= self.batch_rows:
            self._flush(table)

    def flush(self) -> None:
        for table in COLUMNS:
            self._flush(table)

    def _flush(self, table: str) -> None:
        pending = self._pending[table]
        if pending:
            self.conn.executemany(self._insert[table], pending)
            self.counts[table] += len(pending)
            pending.clear()
