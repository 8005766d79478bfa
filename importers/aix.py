"""AIX/Mnemonic agents ledgers (seeds/001: `agent_sessions`, `agent_messages`, `agent_turns`,
`agent_tool_calls`, fed from Cursor and other IDEs) into the Agents Ledger.

- agent_sessions → sessions, ids kept. persona = `source` ("cursor", "codex", …). A main
  session's routing key is "<source>:<project>:<id>"; a subagent's is
  "subagent:<parent_session_id>:<tool_call_id>" (ARCHITECTURE.md §2), labelled with its task
  description. Each session is its own bundle: the link lives in the routing key, not in the
  order of writing.
- agent_turns → turns, ids and parent links (so branches) kept. A turn holds its query messages,
  its response message and the messages no turn names (Cursor's tool-call bubbles, a system
  prompt) whose sequence comes before its response and after the previous turn's.
- agent_messages → messages, ids kept, numbered from 1 within their turn in source order.
- agent_tool_calls → tool_calls, ids kept, in the turn of the message that made them;
  cancelled and rejected calls are failed calls with that word as the error.

Columns the Agents Ledger cannot hold (metadata_json, workspace_path, …) are counted per
column in the report's "not held" list.
"""

import bisect
import json
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path

from importers.bundle import ImportReport, SessionBundle
from importers.naming import label_from, main_routing_key
from importers.sqlite_source import (
    RowsByKey,
    SourceReader,
    call_outcome,
    columns_of,
    json_as_written,
    message_row,
    read_ledgers,
    text_id,
)
from importers.times import any_unit_ms

FORMAT = "aix"
KIND = "an AIX ledger"

REQUIRED = {
    "agent_sessions": ("id",),
    "agent_messages": ("id", "session_id", "role", "content", "sequence", "timestamp"),
    "agent_turns": ("id", "session_id", "parent_turn_id", "query_message_ids"),
    "agent_tool_calls": ("id", "session_id", "message_id", "tool_name"),
}
# Every column read, or derived from what is read (message_count, has_children): the values of
# any other column are what the Agents Ledger cannot hold.
READ = {
    "agent_sessions": {
        "id", "source", "model", "project", "created_at", "message_count", "is_subagent",
        "parent_session_id", "parent_message_id", "tool_call_id", "task_description",
    },
    "agent_messages": {"id", "session_id", "role", "content", "sequence", "timestamp"},
    "agent_turns": {
        "id", "session_id", "parent_turn_id", "query_message_ids", "response_message_id",
        "model", "token_count", "timestamp", "has_children", "tool_call_count",
    },
    "agent_tool_calls": {
        "id", "message_id", "session_id", "tool_name", "tool_number", "params_json",
        "result_json", "status", "child_session_id", "started_at", "completed_at",
    },
}  # fmt: skip

# AIX tool-call statuses → the ledger's (pending/completed/failed); any other is pending.
CALL_STATUS = {
    "completed": "completed",
    "failed": "failed",
    "error": "failed",
    "cancelled": "failed",
    "canceled": "failed",
    "rejected": "failed",
}


def read(paths: list[Path], report: ImportReport) -> Iterator[SessionBundle]:
    return read_ledgers(paths, report, kind=KIND, required=REQUIRED, reader=_Reader)


@dataclass
class _Turn:
    row: dict
    id: str
    parent_id: str | None
    query_ids: list[str]
    response_id: str | None
    ms: int | None  # agent_turns.timestamp: when the turn completed
    messages: list[dict] = field(default_factory=list)
    skipped: str | None = None  # why the turn is left out


class _Reader(SourceReader):
    def __init__(self, conn, path: str, report: ImportReport):
        super().__init__(conn, path, report, READ)
        # A subagent row may lack tool_call_id; the Task call that spawned it may name it.
        self.spawned_by = {}
        if "child_session_id" in columns_of(conn, "agent_tool_calls"):
            for row in conn.execute(
                "SELECT CAST(child_session_id AS TEXT) AS child, id FROM agent_tool_calls"
                " WHERE child_session_id IS NOT NULL ORDER BY id"
            ):
                self.spawned_by.setdefault(row["child"], text_id(row["id"]))

    # -- the whole source, session by session ----------------------------------------------------

    def bundles(self) -> Iterator[SessionBundle]:
        tables = {
            "agent_messages": RowsByKey(self.conn, "agent_messages", "session_id", "sequence"),
            "agent_turns": RowsByKey(self.conn, "agent_turns", "session_id", "timestamp"),
            "agent_tool_calls": RowsByKey(self.conn, "agent_tool_calls", "session_id", "id"),
        }
        for session, rows in self.sessions_with_rows("agent_sessions", "session", tables):
            if bundle := self.session_bundle(session, rows):
                yield bundle

    # -- one session ---------------------------------------------------------------------------

    def session_bundle(self, session: dict, rows: dict) -> SessionBundle | None:
        session_id = text_id(session["id"])
        where = self.where("agent_sessions", session_id)
        messages, known_ids = self.valid_messages(rows["agent_messages"])
        turns = self.valid_turns(rows["agent_turns"])
        self.check_references(turns, known_ids)
        kept = self.tree_order(turns)
        placed = self.place_messages(turns, messages)
        calls = self.tool_calls(rows["agent_tool_calls"], placed, messages)

        times = [m["ms"] for m in messages.values()] + [t.ms for t in turns.values() if t.ms]
        created_at = any_unit_ms(session.get("created_at")) or min(times, default=None)
        if created_at is None:
            self.report.session_failed(where, "no usable timestamp: no created_at, no messages")
            return None
        self.count_unread("agent_sessions", session)

        turn_rows = [self.turn_row(t, session, created_at) for t in kept]
        message_rows = [
            message_row(m, t.id, n)
            for t in kept
            for n, m in enumerate(sorted(t.messages, key=_message_order), start=1)
        ]
        calls_at = [c["completed_at"] or c["started_at"] for c in calls]
        updated_at = max([created_at, *times, *calls_at])
        return SessionBundle(
            where=where,
            session={
                "id": session_id,
                "persona": text_id(session.get("source")) or "aix",
                "routing_key": self.routing_key(session, session_id),
                "label": self.label(session, kept),
                "root_turn_id": turn_rows[0]["id"] if turn_rows else None,
                "current_turn_id": _head(turn_rows),
                "created_at": created_at,
                "updated_at": updated_at,
                "status": "active",
            },
            turns=turn_rows,
            messages=message_rows,
            tool_calls=calls,
        )

    def valid_messages(self, rows: list[dict]) -> tuple[dict[str, dict], set[str]]:
        """Messages by id with their time in ms; malformed rows reported and left out. Also
        every id the session's rows name, so a reference to a skipped row is not "missing"."""
        messages = {}
        for message_id, row in self.valid_rows("agent_messages", "message", rows, _message_problem):
            messages[message_id] = {**row, "id": message_id, "ms": any_unit_ms(row["timestamp"])}
            self.count_unread("agent_messages", row)
        return messages, {text_id(row["id"]) for row in rows}

    def valid_turns(self, rows: list[dict]) -> dict[str, _Turn]:
        turns = {}
        for turn_id, row in self.valid_rows("agent_turns", "turn", rows):
            query_ids = _id_list(row["query_message_ids"])
            if query_ids is None:
                self.report.skipped(
                    self.where("agent_turns", turn_id) + " query_message_ids",
                    f"not a JSON array of message ids ({str(row['query_message_ids'])[:60]!r}):"
                    " the turn's query messages are placed by their sequence instead",
                )
                query_ids = []
            turns[turn_id] = _Turn(
                row,
                turn_id,
                text_id(row["parent_turn_id"]),
                query_ids,
                text_id(row.get("response_message_id")),
                any_unit_ms(row.get("timestamp")),
            )
        return turns

    def check_references(self, turns: dict[str, _Turn], known: set) -> None:
        for turn in turns.values():
            named = turn.query_ids + ([turn.response_id] if turn.response_id else [])
            for message_id in named:
                if message_id not in known:
                    self.report.skipped(
                        self.where("agent_turns", turn.id),
                        f"names message {message_id}, which does not exist in its session",
                    )

    def tree_order(self, turns: dict[str, _Turn]) -> list[_Turn]:
        """The turns to import, each parent before its children (oldest sibling first); a turn
        whose parent is missing, skipped or in a loop is reported and left out."""
        children: dict[str | None, list[_Turn]] = {}
        for turn in turns.values():
            parent = turn.parent_id if turn.parent_id in turns else None
            if turn.parent_id and parent is None:
                turn.skipped = f"its parent turn {turn.parent_id} does not exist"
            children.setdefault(parent, []).append(turn)
        order, todo = [], sorted(children.get(None, []), key=_turn_order, reverse=True)
        while todo:
            turn = todo.pop()
            if turn.skipped is None:
                order.append(turn)
            for child in sorted(children.get(turn.id, []), key=_turn_order, reverse=True):
                child.skipped = child.skipped or (
                    turn.skipped and f"its parent turn {turn.id} was left out"
                )
                todo.append(child)
        reached = {t.id for t in order} | {t.id for t in turns.values() if t.skipped}
        for turn in turns.values():
            if turn.id not in reached:
                turn.skipped = "its chain of parent turns loops"
        for turn in turns.values():
            if turn.skipped:
                self.skip("agent_turns", turn.row, turn.skipped)
        return order

    def place_messages(self, turns: dict[str, _Turn], messages: dict) -> dict[str, _Turn]:
        """Message id → its turn (kept or not); messages of no turn are reported."""
        placed: dict[str, _Turn] = {}
        for turn in sorted(turns.values(), key=_turn_order):
            for message_id in [*turn.query_ids, turn.response_id]:
                if message_id in messages and message_id not in placed:
                    placed[message_id] = turn
        ends = sorted(
            (_sequence_key(messages[m]), t.id)
            for t in turns.values()
            if (m := _last_named(t, messages))
        )
        for message in sorted(messages.values(), key=_message_order):
            if message["id"] not in placed:
                at = bisect.bisect_left(ends, (_sequence_key(message), ""))
                if at < len(ends):
                    placed[message["id"]] = turns[ends[at][1]]
        for message in messages.values():
            turn = placed.get(message["id"])
            if turn is None:
                where = self.where("agent_messages", message.get("id"))
                self.report.waiting(where, "no turn holds it yet (an open exchange?)")
            elif turn.skipped:
                self.skip("agent_messages", message, f"its turn {turn.id} was left out")
            else:
                turn.messages.append(message)
        return placed

    def tool_calls(self, rows: list[dict], placed: dict, messages: dict) -> list[dict]:
        def problem(row: dict) -> str | None:
            message_id = text_id(row["message_id"])
            turn = placed.get(message_id)
            if text_id(row["tool_name"]) is None:
                return "it has no tool_name"
            if turn is None:
                return f"its message {message_id} is not imported (missing, or in no turn yet)"
            if turn.skipped:
                return f"its turn {turn.id} was left out"
            return None

        calls = []
        for call_id, row in self.valid_rows("agent_tool_calls", "call", rows, problem):
            message_id = text_id(row["message_id"])
            turn, name = placed[message_id], text_id(row["tool_name"])
            calls.append((turn, messages[message_id], row, call_id, name))
            self.count_unread("agent_tool_calls", row)
        by_turn: dict[str, int] = {}
        result = []
        for turn, message, row, call_id, name in sorted(calls, key=_call_order):
            by_turn[turn.id] = by_turn.get(turn.id, 0) + 1
            result.append(_call_row(row, call_id, name, turn.id, message, by_turn[turn.id]))
        return result

    # -- rows of the Agents Ledger -------------------------------------------------------------

    def turn_row(self, turn: _Turn, session: dict, session_ms: int) -> dict:
        self.count_unread("agent_turns", turn.row)
        started = min((m["ms"] for m in turn.messages), default=turn.ms or session_ms)
        response = next((m for m in turn.messages if m["id"] == turn.response_id), None)
        completed = turn.ms or (response["ms"] if response else None)
        tokens = turn.row.get("token_count")
        return {
            "id": turn.id,
            "session_id": text_id(session["id"]),
            "parent_turn_id": turn.parent_id,
            "status": "completed" if completed else "pending",
            "started_at": started,
            "completed_at": completed,
            "total_tokens": tokens if _is_number(tokens) else None,
            "model": text_id(turn.row.get("model")) or text_id(session.get("model")),
        }

    def routing_key(self, session: dict, session_id: str) -> str:
        parent = text_id(session.get("parent_session_id"))
        if parent and session.get("is_subagent") not in (0, "0"):
            call_id = (
                text_id(session.get("tool_call_id"))
                or self.spawned_by.get(session_id)
                or session_id.removeprefix("task-")
            )
            return f"subagent:{parent}:{call_id}"
        project = text_id(session.get("project"))
        return main_routing_key(project, f"{project}:{session_id}" if project else session_id)

    def label(self, session: dict, turns: list[_Turn]) -> str | None:
        if description := label_from(session.get("task_description")):
            return description
        for turn in turns:
            for message in sorted(turn.messages, key=_message_order):
                if message["role"] == "user" and (line := label_from(message["content"])):
                    return line
        return label_from(text_id(session.get("project")))


def _call_row(row: dict, call_id: str, name: str, turn_id: str, message: dict, n: int) -> dict:
    result = json_as_written(row.get("result_json"), None)
    status, error = call_outcome(row.get("status"), result, CALL_STATUS)
    return {
        "id": call_id,
        "turn_id": turn_id,
        "tool_name": name,
        "parameters": json_as_written(row.get("params_json"), "{}"),
        "result": result,
        "error": error,
        "status": status,
        "started_at": any_unit_ms(row.get("started_at")) or message["ms"],
        "completed_at": any_unit_ms(row.get("completed_at")),
        "sequence": n,
    }


def _head(turn_rows: list[dict]) -> str | None:
    """The session's head: its most recently active leaf turn."""
    parents = {t["parent_turn_id"] for t in turn_rows}
    leaves = [t for t in turn_rows if t["id"] not in parents]
    if not leaves:
        return None
    return max(leaves, key=lambda t: (t["completed_at"] or t["started_at"], t["id"]))["id"]


def _message_problem(row: dict) -> str | None:
    if text_id(row["role"]) is None:
        return "it has no role"
    if not _is_number(row["sequence"]):
        return f"its sequence {row['sequence']!r} is not a number"
    if any_unit_ms(row["timestamp"]) is None:
        return f"its timestamp {row['timestamp']!r} is not a time"
    return None


def _is_number(value) -> bool:
    return isinstance(value, int | float) and not isinstance(value, bool)


def _id_list(raw) -> list[str] | None:
    """query_message_ids: a JSON array of ids (NULL for none), or None when it is not one."""
    if raw is None or raw == "":
        return []
    try:
        value = json.loads(raw) if isinstance(raw, str | bytes) else None
    except ValueError:
        return None
    if not isinstance(value, list):
        return None
    ids = [text_id(v) for v in value]
    return None if None in ids else ids


def _sequence_key(message: dict) -> float:
    return float(message["sequence"])


def _message_order(message: dict) -> tuple:
    return (_sequence_key(message), message["ms"], message["id"])


def _turn_order(turn: _Turn) -> tuple:
    return (turn.ms is None, turn.ms or 0, turn.id)


def _last_named(turn: _Turn, messages: dict) -> str | None:
    """The last message a turn names (its response, else its last query message)."""
    if turn.response_id in messages:
        return turn.response_id
    named = [messages[m] for m in turn.query_ids if m in messages]
    return max(named, key=_message_order)["id"] if named else None


def _call_order(call: tuple) -> tuple:
    turn, message, row, call_id, _ = call
    number = row.get("tool_number")
    return (
        turn.id,
        _message_order(message),
        number if _is_number(number) else float("inf"),
        any_unit_ms(row.get("started_at")) or 0,
        call_id,
    )
