"""Agent OS ledgers (seeds/003: `tasks`, `calls`, `messages`) into the Agents Ledger.

- tasks → sessions, ids kept; persona "agentos", routing key "agentos:<task id>". A subtask
  (parent_task_id) is a subagent session, "subagent:<parent task>:<call id>", where the call is
  the parent's call that names the subtask's id in its parameters or details, else the one
  call of the parent running when the subtask was created.
- messages → messages, ids kept. A task's messages, in time order, are cut into turns: a turn
  starts at a user message that follows the assistant's reply; the start and end messages of
  calls never start a turn (they are part of the exchange that made the call). Turn ids are
  derived from the task id and the turn's position, so they are the same on every import. The
  task's system prompt is the first message of its first turn.
- calls → tool_calls, ids kept, in the turn of their start message; timed by their start and
  end messages.

Mutability (seeds/003): tasks and calls change after they are written, messages never do. An
unfinished call, or the last turn of a task still running, is written as pending (or
streaming); the writer brings such rows up to date on a later import, once the source has
finished them.
"""

import json
from collections.abc import Iterator
from pathlib import Path

from importers.bundle import ImportReport, SessionBundle, derived_id
from importers.naming import label_from, main_routing_key
from importers.sqlite_source import (
    RowsByKey,
    SourceReader,
    call_outcome,
    json_as_written,
    message_row,
    read_ledgers,
    text_id,
)
from importers.times import any_unit_ms

FORMAT = "agentos"
KIND = "an Agent OS ledger"
PERSONA = "agentos"

REQUIRED = {
    "tasks": (
        "id", "parent_task_id", "completion_status", "system_prompt", "created_at", "updated_at",
    ),
    "calls": (
        "id", "task_id", "ability_name", "parameters", "status", "details", "created_at",
        "updated_at", "start_message_id", "end_message_id",
    ),
    "messages": ("id", "task_id", "role", "content", "timestamp"),
}  # fmt: skip

# Call statuses → the ledger's; in_progress (and anything unknown) is still pending.
CALL_STATUS = {"completed": "completed", "failed": "failed"}
# A finished task's completion_status → the status of its last turn (others: completed).
FAILED_TASK = {"failed", "error", "cancelled", "canceled"}


def read(paths: list[Path], report: ImportReport) -> Iterator[SessionBundle]:
    return read_ledgers(paths, report, kind=KIND, required=REQUIRED, reader=_Reader)


class _Reader(SourceReader):
    def __init__(self, conn, path: str, report: ImportReport):
        # Every column the seed names is read; any other is one the Agents Ledger cannot hold.
        super().__init__(conn, path, report, REQUIRED)
        self.spawned_by = self.spawning_calls()

    # -- the whole source, task by task --------------------------------------------------------

    def bundles(self) -> Iterator[SessionBundle]:
        tables = {
            "messages": RowsByKey(
                self.conn, "messages", "task_id", "timestamp, rowid", "rowid AS _rowid, *"
            ),
            "calls": RowsByKey(self.conn, "calls", "task_id", "created_at, id"),
        }
        for task, rows in self.sessions_with_rows("tasks", "task", tables):
            if bundle := self.task_bundle(task, rows["messages"], rows["calls"]):
                yield bundle

    def spawning_calls(self) -> dict[str, str]:
        """Subtask id → the id of the parent's call that spawned it, where one can be told."""
        spawned_by = {}
        subtasks = self.conn.execute(
            "SELECT CAST(id AS TEXT) AS id, CAST(parent_task_id AS TEXT) AS parent, created_at"
            " FROM tasks WHERE parent_task_id IS NOT NULL"
        ).fetchall()
        for subtask in subtasks:
            calls = self.conn.execute(
                "SELECT id, parameters, details, status, created_at, updated_at FROM calls"
                " WHERE task_id = ? ORDER BY created_at, id",
                (subtask["parent"],),
            ).fetchall()
            naming = [c for c in calls if _names(c["parameters"], subtask["id"])] or [
                c for c in calls if _names(c["details"], subtask["id"])
            ]
            created = any_unit_ms(subtask["created_at"])
            running = [c for c in calls if created and _was_running(c, created)]
            chosen = naming[0] if naming else running[0] if len(running) == 1 else None
            if chosen and text_id(chosen["id"]):
                spawned_by[subtask["id"]] = text_id(chosen["id"])
        return spawned_by

    # -- one task ------------------------------------------------------------------------------

    def task_bundle(self, task: dict, message_rows: list[dict], call_rows: list[dict]):
        task_id = text_id(task["id"])
        where = self.where("tasks", task_id)
        messages = self.valid_messages(message_rows)
        created_at = any_unit_ms(task["created_at"]) or min(
            (m["ms"] for m in messages), default=None
        )
        if created_at is None:
            self.report.session_failed(where, "no usable timestamp: no created_at, no messages")
            return None
        self.count_unread("tasks", task)

        calls = self.valid_calls(call_rows, {m["id"]: m for m in messages})
        call_messages = {c[k] for c in calls for k in ("start_message_id", "end_message_id")}
        turns = self.turns(task, task_id, created_at, _exchanges(messages, call_messages))
        turn_of = {m["id"]: t for t in turns for m in t["_messages"]}
        tool_calls = [self.tool_call(c, turn_of[c["start_message_id"]]) for c in calls]
        _number_within_turns(tool_calls)

        times = [created_at, any_unit_ms(task["updated_at"]) or 0, *(m["ms"] for m in messages)]
        times += [c["completed_at"] or c["started_at"] for c in tool_calls]
        return SessionBundle(
            where=where,
            session={
                "id": task_id,
                "persona": PERSONA,
                "routing_key": self.routing_key(task, task_id),
                "label": _label(task, messages, call_messages),
                "root_turn_id": turns[0]["id"] if turns else None,
                "current_turn_id": turns[-1]["id"] if turns else None,
                "created_at": created_at,
                "updated_at": max(times),
                "status": "active",
            },
            turns=[{k: v for k, v in t.items() if k != "_messages"} for t in turns],
            messages=[
                message_row(m, t["id"], n)
                for t in turns
                for n, m in enumerate(t["_messages"], start=1)
            ],
            tool_calls=[{k: v for k, v in c.items() if k != "_order"} for c in tool_calls],
        )

    def valid_messages(self, rows: list[dict]) -> list[dict]:
        messages = []
        for message_id, row in self.valid_rows("messages", "message", rows, _message_problem):
            self.count_unread("messages", row)
            messages.append({**row, "id": message_id, "ms": any_unit_ms(row["timestamp"])})
        # Time order, then the order they were written in (rowid) for messages of one ms.
        return sorted(messages, key=lambda m: (m["ms"], m["_rowid"]))

    def valid_calls(self, rows: list[dict], messages: dict[str, dict]) -> list[dict]:
        def problem(row: dict) -> str | None:
            if text_id(row["ability_name"]) is None:
                return "it has no ability_name"
            if (start := text_id(row["start_message_id"])) not in messages:
                return f"its start message {start} does not exist in its task"
            return None

        calls = []
        for call_id, row in self.valid_rows("calls", "call", rows, problem):
            start, end = text_id(row["start_message_id"]), text_id(row["end_message_id"])
            if end is not None and end not in messages:
                self.report.skipped(
                    self.where("calls", call_id) + " end_message_id",
                    f"message {end} does not exist in its task: the call's end time is its"
                    " updated_at instead",
                )
                end = None
            self.count_unread("calls", row)
            calls.append(
                {
                    **row,
                    "id": call_id,
                    "start_message_id": start,
                    "end_message_id": end,
                    "_start": messages[start],
                    "_end": messages.get(end),
                }
            )
        return calls

    def turns(self, task: dict, task_id: str, created_at: int, exchanges: list[list[dict]]):
        """Turn rows, each with its messages under "_messages"; the last one is unfinished while
        the task runs, and failed when the task failed."""
        prompt = task["system_prompt"]
        if isinstance(prompt, str) and prompt:
            system = {
                "id": derived_id(created_at, PERSONA, task_id, "system_prompt"),
                "role": "system",
                "content": prompt,
                "ms": created_at,
            }
            exchanges = [[system, *exchanges[0]], *exchanges[1:]] if exchanges else [[system]]
        outcome = text_id(task["completion_status"])
        rows, parent = [], None
        for n, exchange in enumerate(exchanges):
            last = n == len(exchanges) - 1
            replied = any(m["role"] == "assistant" for m in exchange)
            if not last:
                status = "completed"
            elif outcome is None:
                status = "streaming" if replied else "pending"
            else:
                status = "failed" if outcome.lower() in FAILED_TASK else "completed"
            started = created_at if n == 0 else exchange[0]["ms"]
            turn_id = derived_id(started, PERSONA, task_id, n)
            rows.append(
                {
                    "id": turn_id,
                    "session_id": task_id,
                    "parent_turn_id": parent,
                    "status": status,
                    "started_at": min(started, exchange[0]["ms"]),
                    "completed_at": max(m["ms"] for m in exchange)
                    if status in ("completed", "failed")
                    else None,
                    "_messages": exchange,
                }
            )
            parent = turn_id
        return rows

    def tool_call(self, call: dict, turn: dict) -> dict:
        details = json_as_written(call["details"], None)
        status, error = call_outcome(call["status"], details, CALL_STATUS)
        if status == "pending" and details not in (None, "", "{}", "null"):
            self.report.unmapped("calls.details (recovery info of unfinished calls)")
        if call["_end"]:
            completed = call["_end"]["ms"]
        else:
            completed = any_unit_ms(call["updated_at"]) if status != "pending" else None
        return {
            "id": call["id"],
            "turn_id": turn["id"],
            "tool_name": text_id(call["ability_name"]),
            "parameters": json_as_written(call["parameters"], "{}"),
            "result": details if status != "pending" else None,
            "error": error,
            "status": status,
            "started_at": call["_start"]["ms"],
            "completed_at": completed,
            "sequence": 0,  # numbered within the turn below
            "_order": (call["_start"]["ms"], any_unit_ms(call["created_at"]) or 0, call["id"]),
        }

    def routing_key(self, task: dict, task_id: str) -> str:
        parent = text_id(task["parent_task_id"])
        if parent is None:
            return main_routing_key(None, task_id)
        return f"subagent:{parent}:{self.spawned_by.get(task_id, task_id)}"


def _exchanges(messages: list[dict], call_messages: set[str]) -> list[list[dict]]:
    """Cut a task's messages into exchanges: a new one starts at a user message (other than a
    call's start or end message) once the assistant has replied in the current one."""
    exchanges: list[list[dict]] = []
    replied = True
    for message in messages:
        starts = message["role"] == "user" and message["id"] not in call_messages
        if not exchanges or (starts and replied):
            exchanges.append([])
            replied = False
        exchanges[-1].append(message)
        replied = replied or message["role"] == "assistant"
    return exchanges


def _number_within_turns(calls: list[dict]) -> None:
    in_turn: dict[str, int] = {}
    for call in sorted(calls, key=lambda c: c["_order"]):
        in_turn[call["turn_id"]] = call["sequence"] = in_turn.get(call["turn_id"], 0) + 1


def _message_problem(row: dict) -> str | None:
    if text_id(row["role"]) is None:
        return "it has no role"
    if any_unit_ms(row["timestamp"]) is None:
        return f"its timestamp {row['timestamp']!r} is not a time"
    return None


def _label(task: dict, messages: list[dict], call_messages: set[str]) -> str | None:
    for message in messages:
        query = message["role"] == "user" and message["id"] not in call_messages
        if query and (line := label_from(message["content"])):
            return line
    return label_from(task["system_prompt"])


def _names(text, value: str) -> bool:
    """True when the JSON `text` holds `value` as a string anywhere (a key's value, an item)."""
    if not isinstance(text, str) or value not in text:
        return False
    try:
        document = json.loads(text)
    except ValueError:
        return False
    stack = [document]
    while stack:
        item = stack.pop()
        if item == value:
            return True
        if isinstance(item, dict):
            stack.extend(item.values())
        elif isinstance(item, list):
            stack.extend(item)
    return False


def _was_running(call: dict, at: int) -> bool:
    started = any_unit_ms(call["created_at"])
    ended = any_unit_ms(call["updated_at"]) if call["status"] in ("completed", "failed") else None
    return started is not None and started <= at and (ended is None or at <= ended)
