"""Builders for ledger rows: defaults taken from the seeds' example rows, overridable per call."""

import json
import sqlite3
from itertools import count
from pathlib import Path

import pytest
from django.conf import settings
from django.db import connections
from pg_ledger import PostgresConnection, unstorable

from ledgerweb.db import is_postgres_url, ledger_databases

T0 = 1_764_000_000_000  # 2025-11-24, Unix ms: builders count from here

# Tests that read the ledger need its aliases as well as Django's own database.
LEDGER_DB = pytest.mark.django_db(databases="__all__")


def use_ledger(path: Path | str) -> None:
    """Point both ledger aliases (and the settings) at another ledger file or PostgreSQL URL."""
    for alias, entry in ledger_databases(path, settings.LEDGER_QUERY_TIMEOUT_MS).items():
        connections[alias].close()
        # A PostgreSQL URL may name another server (host, port, user): all of it is taken.
        if is_postgres_url(path) or connections[alias].settings_dict["ENGINE"] != entry["ENGINE"]:
            _switch_engine(alias, entry)
        connections[alias].settings_dict["NAME"] = entry["NAME"]
    settings.LEDGER_DB = path


def _switch_engine(alias: str, entry: dict) -> None:
    """A ledger alias moves to another engine or server: a new connection object."""
    settings.DATABASES[alias] = entry
    configured = connections.configure_settings({"default": {}, alias: entry})
    connections.settings[alias] = configured[alias]
    connections[alias] = connections.create_connection(alias)


class LedgerBuilder:
    """Writes ledger rows with sensible defaults, committed at once, like the agent runtime."""

    def __init__(self, path: Path | str):
        self.path = path  # a file, or a postgres:// URL (pytest --ledger-backend=postgres)
        if is_postgres_url(path):
            self.conn = PostgresConnection(path)
        else:
            self.conn = sqlite3.connect(path, isolation_level=None)
        self._ids = count(1)
        # What a PostgreSQL ledger cannot hold, left out as ledger_ship leaves it out: a request
        # (by its id), or with leaves_out_sessions a whole session (by its id). Without it, a
        # session's such row skips the test, which is about that session.
        self.left_out: list[str] = []
        self.leaves_out_sessions = False
        self._session_of_turn: dict[str, str] = {}

    def _id(self, prefix: str) -> str:
        return f"{prefix}{next(self._ids):06d}"

    def _insert(self, table: str, row: dict) -> dict:
        columns = ", ".join(row)
        marks = ", ".join("?" for _ in row)
        values = list(row.values())
        if isinstance(self.conn, PostgresConnection):
            session_id = self._session_of(table, row)
            if session_id in self.left_out:
                return row  # the rest of a session left out
            values = self.conn.fit(table, row)
            if values is None:
                self._leave_out(table, row, session_id)
                return row
        self.conn.execute(f"INSERT INTO {table} ({columns}) VALUES ({marks})", values)
        return row

    def _session_of(self, table: str, row: dict) -> str | None:
        if table == "sessions":
            return row["id"]
        if table == "turns":
            self._session_of_turn[row["id"]] = row["session_id"]
            return row["session_id"]
        if table in ("messages", "tool_calls"):
            return self._session_of_turn.get(row["turn_id"])
        return None  # a request is shipped on its own, whatever turn it names

    def _leave_out(self, table: str, row: dict, session_id: str | None) -> None:
        """As ledger_ship does on PostgreSQL: a request alone, a session with all its rows."""
        if table == "nexus_requests":
            self.left_out.append(row["id"])
        elif self.leaves_out_sessions and session_id is not None:
            turns = "SELECT id FROM turns WHERE session_id = ?"
            for child in ("tool_calls", "messages"):
                self.conn.execute(f"DELETE FROM {child} WHERE turn_id IN ({turns})", (session_id,))
            self.conn.execute("DELETE FROM turns WHERE session_id = ?", (session_id,))
            self.conn.execute("DELETE FROM sessions WHERE id = ?", (session_id,))
            self.left_out.append(session_id)
        else:
            unstorable(self.conn.refused, "ledger_ship leaves out the whole session: ")

    def session(self, **fields) -> dict:
        row = {
            "id": self._id("S"),
            "persona": "atlas",
            "routing_key": "imessage:+15551234567:default",
            "label": "Mom - General",
            "created_at": T0,
            "updated_at": T0,
            "status": "active",
        } | fields
        return self._insert("sessions", row)

    def turn(self, session: dict, parent: dict | None = None, **fields) -> dict:
        row = {
            "id": self._id("T"),
            "session_id": session["id"],
            "parent_turn_id": parent["id"] if parent else None,
            "status": "completed",
            "started_at": T0,
            "completed_at": T0 + 5000,
            "prompt_tokens": 1250,
            "completion_tokens": 87,
            "total_tokens": 1337,
            "model": "claude-sonnet-4-20250514",
        } | fields
        return self._insert("turns", row)

    def message(self, turn: dict, sequence: int, role: str = "user", **fields) -> dict:
        row = {
            "id": self._id("M"),
            "turn_id": turn["id"],
            "role": role,
            "content": "What's the 2FA code from Amazon?",
            "sequence": sequence,
            "created_at": turn["started_at"],
        } | fields
        return self._insert("messages", row)

    def tool_call(self, turn: dict, sequence: int, **fields) -> dict:
        start = turn["started_at"] if isinstance(turn["started_at"], int) else T0
        row = {
            "id": self._id("C"),
            "turn_id": turn["id"],
            "tool_name": "gog",
            "parameters": json.dumps({"action": "search", "query": "from:amazon"}),
            "result": json.dumps({"messages": []}),
            "status": "completed",
            "started_at": start + 1000,
            "completed_at": start + 3000,
            "sequence": sequence,
        } | fields
        return self._insert("tool_calls", row)

    def request(self, **fields) -> dict:
        row = {
            "id": self._id("R"),
            "event_id": "imessage:p:+15551234567/1234567890",
            "event_type": "message",
            "event_source": "imessage",
            "stage": "finalize",
            "status": "completed",
            "started_at": T0,
            "completed_at": T0 + 1500,
        } | fields
        return self._insert("nexus_requests", row)

    def compaction(self, turn: dict, summary: str, summarized=(), kept=()) -> None:
        """Mark a turn as a compaction (the optional compactions table)."""
        self.conn.execute(
            "INSERT INTO compactions (turn_id, summary, summarized_turn_ids, kept_turn_ids,"
            " created_at) VALUES (?, ?, ?, ?, 0)",
            (turn["id"], summary, json.dumps(list(summarized)), json.dumps(list(kept))),
        )

    def usage(self, turn: dict, calls=1, input=0, cache_read=0, cache_write=0, output=0) -> None:
        """What a turn's model calls billed (the optional turn_usage table)."""
        self.conn.execute(
            "INSERT INTO turn_usage (turn_id, model_calls, input_tokens, cache_read_tokens,"
            " cache_write_tokens, output_tokens) VALUES (?, ?, ?, ?, ?, ?)",
            (turn["id"], calls, input, cache_read, cache_write, output),
        )

    def set_head(self, session: dict, root: dict, head: dict) -> None:
        self.conn.execute(
            "UPDATE sessions SET root_turn_id = ?, current_turn_id = ? WHERE id = ?",
            (root["id"], head["id"], session["id"]),
        )


def body_of(response) -> bytes:
    """A response's whole body, streamed (a download, export.json) or not."""
    if getattr(response, "streaming", False):
        return b"".join(response.streaming_content)
    return response.content


def parse_html(content: bytes | str):
    """Parse a page strictly: a parse error (unclosed or misnested tags) fails the test."""
    import html5lib

    parser = html5lib.HTMLParser(strict=True, namespaceHTMLElements=False)
    return parser.parse(content)


def parse_fragment(content: bytes | str, container: str = "div"):
    """Parse an htmx partial strictly, as the content of the element it is swapped into."""
    import html5lib

    parser = html5lib.HTMLParser(strict=True, namespaceHTMLElements=False)
    return parser.parseFragment(content, container=container)
