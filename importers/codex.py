"""Codex CLI rollouts (~/.codex/sessions/…/rollout-*.jsonl, and the first CLI's rollout-*.json).

The Codex CLI has written three layouts, each recognised per file:

- envelope (Rust CLI since September 2025): every line is {timestamp, type, payload}:
  `session_meta` (the session), `turn_context` (the model of the turns that follow),
  `response_item` (messages, tool calls and their outputs, reasoning), `event_msg` (token counts,
  turn start/end; most others repeat response items for the UI) and `compacted`.
- flat (Rust CLI, May to September 2025): a first line {id, timestamp, instructions, git}, then
  bare response items ({"type": "message", …}) and {"record_type": "state"} lines; no time per
  line, so every record takes the session's start time.
- document (the TypeScript CLI, spring 2025): one JSON document {session: {id, timestamp,
  instructions}, items: [response items]}.

The older two are read as the envelope layout would have written them. A rollout is one linear
conversation: a turn starts at each user message and takes the assistant's messages and tool calls
until the next one; a `compacted` record is a turn of its own. Tool calls (`function_call`,
`custom_tool_call`, `local_shell_call`, …) are matched to their outputs by `call_id`. A record
type we do not know is counted and reported, never a reason to refuse the file.

A subagent thread (session_meta `parent_thread_id`, or source subagent.thread_spawn) becomes a
subagent session of its parent, linked to the tool call that spawned it (the parent's
`collab_agent_spawn_end` event names the new thread); a fork (`forked_from_id`) a fork session
of its origin (ARCHITECTURE.md §2 routing keys).

The session keeps its id from session_meta. Rows inside a rollout have no id that is unique
beyond it, so theirs are derived from the session id and their line number: a rollout only grows
at its end, so importing it again gives every old row the same id and adds only the new ones.
A tool call's `call_id` (unique only within its rollout: a fork repeats its origin's) is kept
beside it in the optional tool_call_source_ids table, so a call_id pasted in the search box
finds it (docs/decisions.md, "A Codex call_id is kept beside the tool call's derived id").
"""

import json
import re
from collections.abc import Iterator
from contextlib import suppress
from dataclasses import dataclass, field
from pathlib import Path

from importers.bundle import ImportReport, SessionBundle, WrongFormat, derived_id
from importers.jsonl import (
    Record,
    encode_json,
    int_or_zero,
    jsonl_files,
    read_jsonl,
    read_transcripts,
)
from importers.naming import label_from, main_routing_key
from importers.times import KEPT_ORDER, TurnOrder, zoned_iso_ms
from ledgerfacts.ids import looks_like_id

FORMAT = "codex"
PERSONA = "codex"
EXPECTED = (
    "a Codex CLI rollout: JSONL records {timestamp, type, payload}, as in "
    "~/.codex/sessions/YYYY/MM/DD/rollout-*.jsonl"
)
# User-role messages Codex writes itself before a prompt: context for the model, not a question.
CONTEXT_PREFIXES = (
    "<environment_context>",
    "<user_instructions>",
    "# AGENTS.md instructions",
    "<permissions instructions>",
)
# response_item type -> (tool name, or the payload key that names it; the payload key of its input)
CALLS = {
    "function_call": ("name", "arguments"),
    "custom_tool_call": ("name", "input"),
    "local_shell_call": ("local_shell", "action"),
    "tool_search_call": ("tool_search", "arguments"),
    "web_search_call": ("web_search", "action"),
    "image_generation_call": ("image_generation", "revised_prompt"),
}
OUTPUTS = {"function_call_output", "custom_tool_call_output", "tool_search_output"}
# event_msg types that repeat what response items already say (for the terminal UI).
REPEATS = {
    "user_message", "agent_message", "agent_reasoning", "agent_reasoning_raw_content",
    "agent_reasoning_section_break", "exec_command_begin", "exec_command_end",
    "patch_apply_begin", "patch_apply_end", "mcp_tool_call_begin", "mcp_tool_call_end",
    "web_search_begin", "web_search_end", "view_image_tool_call", "image_generation_end",
    "item_started", "item_completed", "context_compacted", "thread_settings_applied",
}  # fmt: skip
CWD_IN_CONTEXT = re.compile(r"<cwd>(.*?)</cwd>", re.S)
TIME_IN_NAME = re.compile(r"rollout-(\d{4}-\d\d-\d\d)(?:T(\d\d)-(\d\d)-(\d\d))?")
# A call_id the search box could never be given as an id, or PostgreSQL's text cannot hold.
UNPASTEABLE_CALL_ID = (
    "Codex call_ids that cannot be pasted as an id (over 300 characters, or holding a space, a "
    "line break or NUL): not kept for the search box"
)
UUID_IN_NAME = re.compile(r"[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}", re.I)


def read(paths: list[Path], report: ImportReport) -> Iterator[SessionBundle]:
    lineage = _Lineage()

    def read_one(path: Path, report: ImportReport) -> SessionBundle | None:
        return read_rollout(path, report, lineage)

    return read_transcripts(
        paths, report, read_one=read_one, files_in=rollout_files, expected=EXPECTED
    )


def rollout_files(folder: Path) -> list[Path]:
    """The rollouts of a ~/.codex/sessions-style folder: JSONL, and the first CLI's JSON files."""
    documents = [p for p in folder.rglob("rollout-*.json") if p.is_file()]
    return sorted([*jsonl_files(folder), *documents])


def _is_envelope(data: dict) -> bool:
    return isinstance(data.get("type"), str) and isinstance(data.get("payload"), dict)


def read_rollout(
    path: Path, report: ImportReport, lineage: "_Lineage | None" = None
) -> SessionBundle | None:
    records = _envelope_records(path, report)
    session_id = _session_id(path, records)
    rollout = _Rollout(path, session_id or path.name, report, lineage or _Lineage())
    for record in records:
        rollout.add(record)  # even without a session: unknown records are still counted
    if session_id is None:
        if rollout.turns:
            report.session_failed(str(path), "no session_meta record and no session id in its name")
        return None
    return rollout.bundle()


# ----- layouts --------------------------------------------------------------------------------

# The response item types of the flat layout's bare lines (they tell it from other JSONL).
ITEM_TYPES = {"message", "reasoning", *CALLS, *OUTPUTS}
OLDER_LAYOUT_TIME = "Codex records of an older layout (no time of their own: the session's start)"


def _envelope_records(path: Path, report: ImportReport) -> list[Record]:
    """The rollout's records in the envelope layout, whichever layout the file has."""
    jsonl = read_jsonl(path)
    if any(_is_envelope(r.data) for r in jsonl.records):
        jsonl.report_malformed(report)
        return jsonl.records
    if _is_flat(jsonl.records):
        jsonl.report_malformed(report)
        return _from_flat(path, jsonl.records, report)
    if document := _document(path, jsonl):
        return _from_document(path, document, report)
    hint = ""
    if any("uuid" in r.data and "sessionId" in r.data for r in jsonl.records):
        hint = " (it looks like a Claude Code transcript: try 'claude-code')"
    raise WrongFormat(f"{path} is not {EXPECTED}{hint}")


def _is_meta_line(data: dict) -> bool:
    return isinstance(data.get("id"), str) and "timestamp" in data and "type" not in data


def _is_flat(records: list[Record]) -> bool:
    if not records:
        return False
    if _is_meta_line(records[0].data):
        return True
    return any(
        r.data.get("record_type") == "state"
        or (_text(r.data.get("type")) in ITEM_TYPES and "sessionId" not in r.data)
        for r in records
    )


def _from_flat(path: Path, records: list[Record], report: ImportReport) -> list[Record]:
    start = _time_in_name(path)  # until the first line says better
    converted = []
    for record in records:
        data = record.data
        if _is_meta_line(data) and not converted:
            start = data["timestamp"] if zoned_iso_ms(data["timestamp"]) else start
            converted.append(_enveloped(record, start, "session_meta", data))
        elif data.get("record_type") == "state":
            report.unmapped("Codex state lines (older layout: no conversation in them)")
        elif isinstance(data.get("type"), str):
            converted.append(_enveloped(record, start, "response_item", data))
            report.repaired(OLDER_LAYOUT_TIME)
        else:
            report.unknown("codex:(no type) (older layout)")
    return converted


def _document(path: Path, jsonl) -> dict | None:
    """The first CLI's rollout: one JSON document {session, items} (pretty-printed)."""
    if jsonl.records and path.suffix != ".json":
        return None
    try:
        document = json.loads(path.read_bytes())
    except ValueError:
        return None
    if isinstance(document, dict) and isinstance(document.get("items"), list):
        session = document.get("session")
        if isinstance(session, dict):
            return document
    return None


def _from_document(path: Path, document: dict, report: ImportReport) -> list[Record]:
    session = document["session"]
    start = session.get("timestamp")
    start = start if zoned_iso_ms(start) else _time_in_name(path)
    records = [_enveloped(Record(f"{path}: session", 0, session), start, "session_meta", session)]
    for n, item in enumerate(document["items"], start=1):
        where = f"{path}: items[{n - 1}]"
        if not isinstance(item, dict) or not isinstance(item.get("type"), str):
            report.skipped(where, "not a response item")
            continue
        records.append(_enveloped(Record(where, n, item), start, "response_item", item))
        report.repaired(OLDER_LAYOUT_TIME)
    return records


def _time_in_name(path: Path) -> str | None:
    """The start time in a rollout's name: rollout-2025-05-07T17-24-21-<uuid>.jsonl (UTC) or,
    from the first CLI, rollout-2025-04-16-<uuid>.json (a day only)."""
    found = TIME_IN_NAME.match(path.name)
    if not found:
        return None
    day, hour, minute, second = found.groups()
    return f"{day}T{hour or '00'}:{minute or '00'}:{second or '00'}Z"


def _enveloped(record: Record, timestamp, kind: str, payload: dict) -> Record:
    """A record of an older layout in the envelope layout; its time (the session's start) is
    a stand-in, so durations ending at it are not known."""
    data = {"timestamp": timestamp, "type": kind, "payload": payload}
    return Record(record.where, record.line, data, stand_in_time=kind != "session_meta")


def _session_id(path: Path, records: list[Record]) -> str | None:
    """The id in the rollout's first session_meta, else the uuid in its file name."""
    for record in records:
        if record.data.get("type") == "session_meta" and _is_envelope(record.data):
            payload = record.data["payload"]
            session_id = payload.get("id") or payload.get("session_id")
            if isinstance(session_id, str) and session_id:
                return session_id
    found = UUID_IN_NAME.search(path.name)
    return found.group(0) if found else None


@dataclass
class _Turn:
    row: dict
    calls: list[dict] = field(default_factory=list)
    messages: int = 0
    answered: bool = False
    ended: str | None = None  # the status a task_complete / turn_aborted / error gave it
    ended_at: int | None = None  # None also when its record's time was a stand-in
    last_ms: int = 0
    last_is_stand_in: bool = False  # the time of its latest record is a stand-in: no known end
    order: TurnOrder = field(default_factory=TurnOrder)  # its messages' and calls' times

    @property
    def end(self) -> int | None:
        """When the turn ended: its end event's time, else its latest record's; not known when
        that time is a stand-in (an older layout's, or a record without one)."""
        if self.ended:
            return self.ended_at
        return None if self.last_is_stand_in else self.last_ms

    completion: int = 0
    compaction: bool = False
    # What the turn's model calls billed (the optional turn_usage row): each new token_count
    # is one call; its last_token_usage says what that call read and wrote.
    model_calls: int = 0
    billed_input: int = 0
    cached_input: int = 0
    billed_output: int = 0


class _Rollout:
    """The state of reading one rollout, record by record."""

    def __init__(self, path: Path, session_id: str, report: ImportReport, lineage: "_Lineage"):
        self.path = path
        self.report = report
        self.lineage = lineage
        self.session_id = session_id
        self.meta: dict | None = None
        self.label: str | None = None
        self.model: str | None = None
        self.turns: list[_Turn] = []
        self.messages: list[dict] = []
        self.compactions: list[dict] = []
        self.preamble: list[tuple[Record, int, str]] = []  # context waiting for the next turn
        self.open_calls: dict[str, dict] = {}  # call_id -> the call still waiting for its output
        self.calls: dict[str, dict] = {}  # call_id -> its row (a subagent names its spawning call)
        self.source_ids: list[dict] = []  # tool_call_source_ids rows: each call's call_id
        self.total_output: int | None = None  # output tokens so far, from the last token_count
        self.context_tokens: int | None = None
        self.has_task_events = False
        self.last_ms: int | None = None
        self.stand_in = False  # the current record's time is not its own (an estimate)

    @property
    def current(self) -> _Turn | None:
        return self.turns[-1] if self.turns else None

    # ----- dispatch ---------------------------------------------------------------------------

    def add(self, record: Record) -> None:
        data = record.data
        if not _is_envelope(data):
            kind = data.get("type") if isinstance(data.get("type"), str) else "(no type)"
            self.report.unknown(f"codex:{kind} (no {{timestamp, type, payload}} envelope)")
            return
        ms = zoned_iso_ms(data.get("timestamp"))
        if ms is None and self.last_ms is None:
            self.report.skipped(record.where, f"no usable timestamp ({data.get('timestamp')!r})")
            return
        self.stand_in = ms is None or record.stand_in_time
        if ms is None:
            # A rollout is written in time order: the record before is the best estimate.
            ms = self.last_ms
            self.report.repaired("Codex records without a usable timestamp (the previous one's)")
        self.last_ms = ms
        kind, payload = data["type"], data["payload"]
        if kind == "session_meta":
            self.session_meta(payload)
        elif kind == "turn_context":
            if isinstance(payload.get("model"), str):
                self.model = payload["model"]
        elif kind == "response_item":
            self.response_item(record, ms, payload)
        elif kind == "event_msg":
            self.event(record, ms, payload)
        elif kind == "compacted":
            self.compacted(record, ms, payload)
        else:
            self.report.unknown(f"codex:{kind}")

    def session_meta(self, payload: dict) -> None:
        session_id = payload.get("id") or payload.get("session_id")
        if self.meta is None and session_id == self.session_id:
            self.meta = payload
        else:
            # A forked or resumed rollout repeats the meta of the session it came from.
            self.report.unmapped("Codex session_meta of another session (fork/resume history)")

    def response_item(self, record: Record, ms: int, payload: dict) -> None:
        kind = _name(payload.get("type"))
        if kind == "message":
            self.message(record, ms, payload)
        elif kind in CALLS:
            self.call(record, ms, payload, kind)
        elif kind in OUTPUTS:
            self.output(record, ms, payload)
        elif kind == "reasoning":
            self.report.unmapped("Codex reasoning items")
        else:
            self.report.unknown(f"codex:response_item:{kind}")

    def event(self, record: Record, ms: int, payload: dict) -> None:
        kind = _name(payload.get("type"))
        turn = self.current
        if kind == "token_count":
            self.token_count(payload.get("info"))
        elif kind == "task_started":
            self.has_task_events = True
        elif kind in ("task_complete", "turn_aborted", "error"):
            self.has_task_events = True
            if turn and not turn.compaction:
                failed = kind != "task_complete" or bool(payload.get("error"))
                turn.ended = "failed" if failed else "completed"
                turn.ended_at = self.known(ms)
                self.touch(turn, ms)
        elif kind == "collab_agent_spawn_end":
            self.spawn_end(payload)
        elif kind == "thread_name_updated":
            if label := label_from(payload.get("thread_name")):
                self.label = label
        elif kind not in REPEATS:
            self.report.unknown(f"codex:event_msg:{kind}")

    def spawn_end(self, payload: dict) -> None:
        """A subagent thread started by one of our calls (a fork repeats its origin's spawns:
        those name the origin as sender and are not ours)."""
        call = self.calls.get(_text(payload.get("call_id")))
        child = _text(payload.get("new_thread_id"))
        sender = _text(payload.get("sender_thread_id"))
        if call and child and sender in (None, self.session_id):
            self.lineage.spawned(child, self.session_id, call["id"])

    # ----- conversation -----------------------------------------------------------------------

    def message(self, record: Record, ms: int, payload: dict) -> None:
        role = payload.get("role")
        text = _message_text(payload.get("content"), self.report)
        if role == "user" and not text.lstrip().startswith(CONTEXT_PREFIXES):
            self.start_turn(record, ms)
            self.add_message(record, ms, "user", text)
        elif role in ("user", "developer", "system"):
            if text:
                self.preamble.append((record, ms, text))
        elif role == "assistant":
            turn = self.turn_for(record, ms)
            turn.answered = True
            if text:
                self.add_message(record, ms, "assistant", text)
        else:
            self.report.unknown(f"codex:message role {role!r}")

    def start_turn(self, record: Record, ms: int) -> _Turn:
        parent = self.current.row["id"] if self.current else None
        turn = _Turn(
            {
                "id": derived_id(ms, self.session_id, "turn", record.line),
                "parent_turn_id": parent,
                "started_at": ms,
                "model": self.model,
            },
            last_ms=ms,
            last_is_stand_in=self.stand_in,
        )
        self.turns.append(turn)
        self.flush_preamble()
        return turn

    def turn_for(self, record: Record, ms: int) -> _Turn:
        """The current turn. The assistant speaking before any user message, or going on after
        a compaction in the middle of a Codex turn, opens one (below the compaction)."""
        if self.current is None or self.current.compaction:
            return self.start_turn(record, ms)
        return self.current

    def flush_preamble(self) -> None:
        waiting, self.preamble = self.preamble, []
        for record, ms, text in waiting:
            self.add_message(record, ms, "system", text)

    def add_message(self, record: Record, ms: int, role: str, text: str, part: int = 0) -> None:
        turn = self.current
        self.messages.append({
            "id": derived_id(ms, self.session_id, "message", record.line, part),
            "turn_id": turn.row["id"],
            "role": role,
            "content": text,
            "sequence": turn.messages,
            "created_at": turn.order.message(ms),
        })  # fmt: skip
        turn.messages += 1
        self.touch(turn, ms)

    def known(self, ms: int) -> int | None:
        """The current record's time as an end time: None when it is a stand-in (a duration
        ending there is not known, and shown so, not as 0 ms)."""
        return None if self.stand_in else ms

    def touch(self, turn: _Turn, ms: int) -> None:
        """A record of `turn` at `ms`: the latest one says when the turn was last heard of."""
        if ms >= turn.last_ms:
            turn.last_is_stand_in = self.stand_in
        turn.last_ms = max(turn.last_ms, ms)

    def call(self, record: Record, ms: int, payload: dict, kind: str) -> None:
        name_key, input_key = CALLS[kind]
        name = payload.get(name_key) if name_key == "name" else name_key
        turn = self.turn_for(record, ms)
        status = payload.get("status")
        done_now = kind in ("web_search_call", "image_generation_call")  # no separate output
        row = {
            "id": derived_id(ms, self.session_id, "call", record.line),
            "turn_id": turn.row["id"],
            "tool_name": str(name or kind),
            "parameters": encode_json(payload.get(input_key, {})),
            "result": encode_json(payload.get("result")) if payload.get("result") else None,
            "error": None,
            "status": "pending",
            "started_at": turn.order.call(ms),
            "completed_at": self.known(ms) if done_now else None,
            "sequence": len(turn.calls),
        }
        if status in ("failed", "incomplete"):
            row["status"], row["error"] = "failed", f"the call ended {status}"
            row["completed_at"] = self.known(ms)
        elif done_now:
            row["status"] = "completed"
        turn.calls.append(row)
        turn.answered = True
        self.touch(turn, ms)
        if isinstance(payload.get("call_id"), str):
            self.calls[payload["call_id"]] = row
            if row["status"] == "pending":
                self.open_calls[payload["call_id"]] = row
            self.keep_call_id(row["id"], payload["call_id"])

    def keep_call_id(self, tool_call_id: str, call_id: str) -> None:
        """The call's call_id beside its derived id, when a person can paste it as an id."""
        if looks_like_id(call_id) and "\x00" not in call_id:
            self.source_ids.append({"tool_call_id": tool_call_id, "source_id": call_id})
        elif call_id:
            self.report.unmapped(UNPASTEABLE_CALL_ID)

    def output(self, record: Record, ms: int, payload: dict) -> None:
        call_id = payload.get("call_id")
        call = self.open_calls.pop(call_id, None) if isinstance(call_id, str) else None
        if call is None:
            self.report.unmapped("Codex tool outputs whose call is not in the rollout")
            return
        output = payload.get("output", payload.get("tools"))
        if isinstance(output, dict) and output.get("success") is False:
            call["status"] = "failed"
            call["error"] = _message_text(output.get("content"), None) or encode_json(output)
        else:
            call["status"] = "completed"
            call["result"] = encode_json(output if output is not None else "")
        call["completed_at"] = self.known(ms)
        if self.current:
            self.touch(self.current, ms)

    def token_count(self, info) -> None:
        if not isinstance(info, dict) or not self.current:
            return
        last = (
            info.get("last_token_usage") if isinstance(info.get("last_token_usage"), dict) else {}
        )
        if last.get("input_tokens") == 0:
            # A model call always reads its input: a count of 0 measured none (Codex writes
            # such placeholders). The turn's tokens stay unknown rather than 0.
            self.report.unmapped("Codex token counts of 0 (no model call measured)")
            return
        total = info.get("total_token_usage")
        turn = self.current
        if isinstance(last.get("input_tokens"), int):
            turn.row["prompt_tokens"] = last["input_tokens"]
            self.context_tokens = last["input_tokens"] + int_or_zero(last.get("output_tokens"))
        # Codex repeats a token_count now and then; the running total counts each output once.
        repeated = False
        if isinstance(total, dict) and isinstance(total.get("output_tokens"), int):
            grown = total["output_tokens"] - (self.total_output or 0)
            turn.completion += grown if grown >= 0 else int_or_zero(last.get("output_tokens"))
            self.total_output = total["output_tokens"]
            repeated = grown == 0
        if isinstance(last.get("input_tokens"), int) and not repeated:
            # OpenAI's input_tokens already include the cached ones (billed at the cache rate).
            turn.model_calls += 1
            turn.billed_input += last["input_tokens"]
            turn.cached_input += int_or_zero(last.get("cached_input_tokens"))
            turn.billed_output += int_or_zero(last.get("output_tokens"))

    def compacted(self, record: Record, ms: int, payload: dict) -> None:
        turn = self.start_turn(record, ms)
        turn.ended, turn.ended_at, turn.compaction = "completed", self.known(ms), True
        summary = payload.get("message") if isinstance(payload.get("message"), str) else ""
        history = payload.get("replacement_history")
        if not summary.strip() and isinstance(history, list) and history:
            summary = (
                _message_text(history[-1].get("content"), None)
                if isinstance(history[-1], dict)
                else ""
            )
        self.add_message(record, ms, "system", "Conversation compacted")
        if summary:
            self.add_message(record, ms, "assistant", summary, part=1)
        self.compactions.append({
            "turn_id": turn.row["id"],
            "summary": summary,
            "summarized_turn_ids": json.dumps([t.row["id"] for t in self.turns[:-1]]),
            "kept_turn_ids": "[]",
            "tokens_before": self.context_tokens,
            "created_at": ms,
        })  # fmt: skip

    # ----- the bundle -------------------------------------------------------------------------

    def bundle(self) -> SessionBundle | None:
        if not self.turns:
            if self.preamble:
                self.report.unmapped("Codex rollouts without a conversation")
            return None
        if self.preamble:
            self.flush_preamble()  # context written after the last prompt stays with it
        rows = [self.finish(turn, is_last=turn is self.turns[-1]) for turn in self.turns]
        meta = self.meta or {}
        session = {
            "id": self.session_id,
            "persona": PERSONA,
            "routing_key": self.routing_key(meta),
            "label": self.label or self.first_prompt(),
            "root_turn_id": rows[0]["id"],
            "current_turn_id": rows[-1]["id"],
            "created_at": zoned_iso_ms(meta.get("timestamp")) or rows[0]["started_at"],
            "updated_at": max(t.last_ms for t in self.turns),
            "status": "active",
        }
        return SessionBundle(
            where=str(self.path),
            session=session,
            turns=rows,
            messages=self.messages,
            tool_calls=[call for turn in self.turns for call in turn.calls],
            compactions=self.compactions,
            turn_usage=[usage for turn in self.turns if (usage := _billed_usage(turn))],
            tool_call_source_ids=self.source_ids,
        )

    def finish(self, turn: _Turn, *, is_last: bool) -> dict:
        open_calls = [c for c in turn.calls if c["status"] == "pending"]
        if turn.ended:
            status = turn.ended
        elif is_last and not turn.answered:
            status = "pending"
        elif is_last and (open_calls or self.has_task_events):
            status = "streaming"  # no task_complete yet: Codex is still at it
        else:
            status = "completed"
        for call in open_calls:
            if status not in ("streaming", "pending"):
                call["status"] = "failed"
                call["error"] = "no output for this call in the rollout"
        prompt = turn.row.get("prompt_tokens")
        finished = status in ("completed", "failed")
        if turn.order.moved:
            self.report.repaired(KEPT_ORDER, turn.order.moved)
        return {
            **turn.row,
            "session_id": self.session_id,
            "status": status,
            "completed_at": turn.end if finished else None,
            "prompt_tokens": prompt,
            "completion_tokens": turn.completion if prompt is not None else None,
            "total_tokens": prompt + turn.completion if prompt is not None else None,
        }

    def routing_key(self, meta: dict) -> str:
        """subagent:<parent>:<spawning call> for a subagent thread, fork:<origin>:<id> for a fork,
        else <project>:<working folder> (importers/naming.py)."""
        if parent := _parent_thread(meta):
            call = self.lineage.spawning_call(self.session_id, parent, self.path)
            if call is None:
                self.report.repaired(
                    "Codex subagent threads whose spawning call is in no rollout found "
                    f"(linked to their parent session only, call '{UNKNOWN_CALL}')"
                )
            return f"subagent:{parent}:{call or UNKNOWN_CALL}"
        if origin := _text(meta.get("forked_from_id")):
            return f"fork:{origin}:{self.session_id}"
        cwd = _text(meta.get("cwd")) or self.cwd_in_context()
        return main_routing_key(cwd, cwd or self.session_id)

    def cwd_in_context(self) -> str | None:
        """The working folder in an <environment_context> message (older layouts' meta has none)."""
        for message in self.messages:
            if message["role"] == "system" and (found := CWD_IN_CONTEXT.search(message["content"])):
                return found.group(1).strip() or None
        return None

    def first_prompt(self) -> str | None:
        prompt = next((m["content"] for m in self.messages if m["role"] == "user"), "")
        return label_from(prompt)


def _message_text(content, report: ImportReport | None) -> str:
    """The text of a message's content (a string or input_text/output_text blocks)."""
    if isinstance(content, str):
        return content
    if not isinstance(content, list):
        return ""
    parts = []
    for block in content:
        if not isinstance(block, dict):
            continue
        if isinstance(block.get("text"), str):
            parts.append(block["text"])
        elif block.get("type") in ("input_image", "output_image") and report:
            report.unmapped("Codex images")
    return "\n\n".join(parts)


def _name(value) -> str:
    """A record's type as text (hostile input may hold a list or an object there)."""
    return value if isinstance(value, str) else f"({type(value).__name__})"


def _text(value) -> str | None:
    return value if isinstance(value, str) and value else None


def _parent_thread(meta: dict) -> str | None:
    """The thread that spawned this one: `parent_thread_id`, or (older) in source.subagent."""
    if parent := _text(meta.get("parent_thread_id")):
        return parent
    source = meta.get("source")
    subagent = source.get("subagent") if isinstance(source, dict) else None
    spawn = subagent.get("thread_spawn") if isinstance(subagent, dict) else None
    return _text(spawn.get("parent_thread_id")) if isinstance(spawn, dict) else None


# The call part of a subagent's routing key when the parent's rollout could not be found.
UNKNOWN_CALL = "unknown-call"


class _Lineage:
    """Which parent tool call spawned which subagent thread, across the rollouts of one import.

    A parent rollout read before its child says so as it is read; for a child read first (or
    alone), its parent's rollout is looked up by the thread id in its name, in the sessions
    folder the child is in, and read once for its spawn events.
    """

    def __init__(self):
        self.calls: dict[str, str] = {}  # child thread id -> the spawning tool call's ledger id
        self.parents_read: set[str] = set()

    def spawned(self, child: str, parent: str, call_id: str) -> None:
        self.calls[child] = call_id
        self.parents_read.add(parent)

    def spawning_call(self, child: str, parent: str, child_path: Path) -> str | None:
        if child not in self.calls and parent not in self.parents_read:
            self.parents_read.add(parent)
            if path := _rollout_of(parent, child_path):
                # Read for its spawn events only: its own report goes nowhere.
                with suppress(WrongFormat, OSError, ValueError, RecursionError):
                    read_rollout(path, ImportReport(), self)
        return self.calls.get(child)


def _rollout_of(thread_id: str, near: Path) -> Path | None:
    """The rollout of a thread, in the ~/.codex/sessions tree that holds `near`."""
    root = next((p for p in near.parents if p.name == "sessions"), near.parent)
    pattern = f"rollout-*{thread_id}.json*"
    return next((p for p in sorted(root.rglob(pattern)) if p.is_file()), None)


def _billed_usage(turn: _Turn) -> dict | None:
    """The optional turn_usage row of a turn whose token counts the rollout has."""
    if not turn.model_calls:
        return None
    return {
        "turn_id": turn.row["id"],
        "model_calls": turn.model_calls,
        "input_tokens": turn.billed_input,
        "cache_read_tokens": min(turn.cached_input, turn.billed_input),
        "cache_write_tokens": 0,  # OpenAI bills no cache writes
        "output_tokens": turn.billed_output,
    }
