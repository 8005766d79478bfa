"""Ledger rows as OpenTelemetry spans, following the GenAI semantic conventions.

Pure functions over row dicts (reader.py reads them). Each finished turn is a trace of its own:
an `invoke_agent` span with its model and token usage, and one `execute_tool` span per tool
call beneath it. The session is the conversation (`gen_ai.conversation.id` and `session.id` on
every span); the tree is kept by links (a turn links to its parent turn's span, which may be in
another session for a fork; a subagent's root turn links to the tool call that spawned it) and
by `ledgerweb.turn.parent_id`. Each finished pipeline request is a trace: a root span and one
span per stage it timed, laid end to end from its start; the failed stage carries the error.

Span and trace ids are derived from the ledger's ids (a hash), so a span sent twice is the same
span, and a child sent in a later run than its parent still points at it.
"""

import hashlib
import json
from dataclasses import dataclass, field

from opentelemetry.sdk.resources import Resource
from opentelemetry.sdk.trace import Event, ReadableSpan
from opentelemetry.sdk.util.instrumentation import InstrumentationScope
from opentelemetry.trace import Link, SpanContext, SpanKind, Status, StatusCode, TraceFlags

from ledgerfacts import otel_attributes as attr
from pipeline.stages import STAGE_INDEX, STAGES, parse_timings

SCOPE = InstrumentationScope(attr.SCOPE, "1", attr.SCHEMA_URL)
SAMPLED = TraceFlags(TraceFlags.SAMPLED)
FINISHED_TURN = ("completed", "failed")
FINISHED_REQUEST = ("completed", "failed", "skipped")
# A message or tool payload longer than this is cut (and said so) unless --max-content says
# otherwise: backends refuse huge requests, and a span is not where a 50 MB result is read.
MAX_CONTENT = 65_536


def resource(ledger_name: str) -> Resource:
    return Resource(
        {"service.name": "ledgerweb", "ledgerweb.ledger": ledger_name}, schema_url=attr.SCHEMA_URL
    )


def _hash(kind: str, value) -> bytes:
    return hashlib.sha256(f"{kind}\x1f{value}".encode("utf-8", "surrogatepass")).digest()


def trace_id(kind: str, ledger_id) -> int:
    return int.from_bytes(_hash(kind, ledger_id)[:16]) or 1


def span_id(kind: str, ledger_id) -> int:
    return int.from_bytes(_hash(kind, ledger_id)[16:24]) or 1


def turn_context(turn_id) -> SpanContext:
    return SpanContext(trace_id("turn", turn_id), span_id("turn", turn_id), False, SAMPLED)


def tool_call_context(turn_id, call_id) -> SpanContext:
    return SpanContext(trace_id("turn", turn_id), span_id("tool", call_id), False, SAMPLED)


def request_context(request_id) -> SpanContext:
    return SpanContext(
        trace_id("request", request_id), span_id("request", request_id), False, SAMPLED
    )


@dataclass
class Oddities:
    """Values a span could not carry as the ledger holds them (REAL or text where a count is
    declared, a time that is no time): counted for the command's summary."""

    counts: dict[str, int] = field(default_factory=dict)

    def note(self, what: str) -> None:
        self.counts[what] = self.counts.get(what, 0) + 1


def ns(ms, oddities: Oddities, what: str) -> int | None:
    """Unix nanoseconds of a ledger time (ms); None (noted) for a value that is no time."""
    if isinstance(ms, bool) or not isinstance(ms, int | float) or ms != ms or ms < 0:
        if ms is not None:
            oddities.note(f"{what} that is not a time")
        return None
    if ms > 1e14:
        oddities.note(f"{what} that is not a time")
        return None
    return int(ms * 1_000_000)


def count(value, oddities: Oddities, what: str) -> int | None:
    """A token count as an integer attribute; None for NULL, noted when it is not a count."""
    if value is None:
        return None
    if isinstance(value, float) and value.is_integer():
        return int(value)
    if isinstance(value, bool) or not isinstance(value, int):
        oddities.note(f"{what} that is not a whole number")
        return None
    return value


def text(value) -> str | None:
    """A text attribute: None stays out, anything else as text ('' is kept: it is not NULL)."""
    if value is None:
        return None
    if isinstance(value, bytes):
        return value.decode("utf-8", "replace")
    return value if isinstance(value, str) else str(value)


def content(value, limit: int) -> str | None:
    value = text(value)
    if value is None or len(value) <= limit:
        return value
    return value[:limit] + f"… [cut by ledgerweb: {len(value):,} characters]"


def _clean(attributes: dict) -> dict:
    return {k: v for k, v in attributes.items() if v is not None}


def _ends(start: int | None, end: int | None) -> tuple[int, int]:
    """A span's start and end: a start that is no time takes the end (and the reverse), so a
    span is never placed in 1970; callers leave out what has neither."""
    start = start if start is not None else end
    end = end if end is not None else start
    return start or 0, max(end or 0, start or 0)


# ----- turns and tool calls -------------------------------------------------------------------


@dataclass
class TurnRows:
    """A finished turn with its session's facts, its tool calls, its usage row and messages."""

    turn: dict  # turns columns, plus persona, label, routing_key, session_status, created_at,
    # head (sessions.current_turn_id)
    tool_calls: list[dict]
    usage: dict | None = None  # the turn_usage row, when the ledger has one for it
    messages: list[dict] | None = None  # only with --with-content


def turn_spans(
    rows: TurnRows, res: Resource, oddities: Oddities, *, max_content: int | None = None
) -> list[ReadableSpan]:
    """A turn's span and its tool calls' spans; with `max_content` (--with-content) its
    messages and the calls' arguments and results too, each cut at that many characters."""
    turn = rows.turn
    context = turn_context(turn["id"])
    conversation = _clean({
        attr.CONVERSATION_ID: text(turn["session_id"]),
        attr.SESSION_ID: text(turn["session_id"]),
    })  # fmt: skip
    start, end = _ends(
        ns(turn["started_at"], oddities, "turns.started_at"),
        ns(turn["completed_at"], oddities, "turns.completed_at"),
    )
    if not start:
        oddities.note("turns not sent: neither started_at nor completed_at is a time")
        return []
    prompt = count(turn["prompt_tokens"], oddities, "turns.prompt_tokens")
    completion = count(turn["completion_tokens"], oddities, "turns.completion_tokens")
    attributes = {
        attr.OPERATION: attr.INVOKE_AGENT,
        **conversation,
        attr.AGENT_NAME: text(turn.get("persona")),
        attr.REQUEST_MODEL: text(turn["model"]),
        attr.RESPONSE_MODEL: text(turn["model"]),
        attr.TURN_ID: text(turn["id"]),
        attr.TURN_PARENT_ID: text(turn["parent_turn_id"]),
        attr.TURN_STATUS: text(turn["status"]),
        attr.TURN_PROMPT_TOKENS: prompt,
        attr.TURN_COMPLETION_TOKENS: completion,
        attr.TURN_TOTAL_TOKENS: count(turn["total_tokens"], oddities, "turns.total_tokens"),
        attr.TURN_SOURCE_EVENT: text(turn.get("source_event_id")),
        attr.SESSION_LABEL: text(turn.get("label")),
        attr.SESSION_ROUTING_KEY: text(turn.get("routing_key")),
        attr.SESSION_STATUS: text(turn.get("session_status")),
        attr.SESSION_CREATED_AT: count(turn.get("session_created_at"), oddities, "created_at"),
        attr.SESSION_HEAD: text(turn.get("head")),
        attr.SESSION_ROOT: text(turn.get("root")),
        **_usage(rows, oddities, prompt, completion),
    }
    if max_content is not None and rows.messages is not None:
        attributes |= _messages(rows.messages, max_content)
    failed_calls = [c for c in rows.tool_calls if c.get("status") == "failed"]
    status = Status(StatusCode.UNSET)
    if turn["status"] == "failed":
        why = text(failed_calls[0].get("error")) if failed_calls else None
        status = Status(StatusCode.ERROR, why or "the turn failed")
        attributes[attr.ERROR_TYPE] = "tool_error" if failed_calls else "_OTHER"
    span = ReadableSpan(
        name=f"{attr.INVOKE_AGENT} {text(turn.get('persona')) or 'agent'}",
        context=context,
        parent=None,
        resource=res,
        attributes=_clean(attributes),
        kind=SpanKind.INTERNAL,
        status=status,
        start_time=start,
        end_time=end,
        links=_turn_links(turn),
        instrumentation_scope=SCOPE,
    )
    calls = [
        _tool_span(call, turn, context, conversation, res, oddities, end, max_content)
        for call in rows.tool_calls
    ]
    return [span, *calls]


def _usage(rows: TurnRows, oddities: Oddities, prompt, completion) -> dict:
    """Billed tokens: the turn_usage row where there is one (input with cache reads and writes),
    else the turn's own prompt and completion tokens."""
    usage = rows.usage
    if usage is None:
        return {attr.INPUT_TOKENS: prompt, attr.OUTPUT_TOKENS: completion}
    return {
        attr.INPUT_TOKENS: count(usage["input_tokens"], oddities, "turn_usage.input_tokens"),
        attr.OUTPUT_TOKENS: count(usage["output_tokens"], oddities, "turn_usage.output_tokens"),
        attr.CACHE_READ_TOKENS: count(
            usage["cache_read_tokens"], oddities, "turn_usage.cache_read_tokens"
        ),
        attr.CACHE_WRITE_TOKENS: count(
            usage["cache_write_tokens"], oddities, "turn_usage.cache_write_tokens"
        ),
        attr.TURN_MODEL_CALLS: count(usage["model_calls"], oddities, "turn_usage.model_calls"),
    }


def _messages(messages: list[dict], limit: int) -> dict:
    """gen_ai.input.messages (the prompt: user and system) and gen_ai.output.messages (the
    answer), as the conventions' JSON: [{"role", "parts": [{"type": "text", "content"}]}]."""

    def as_json(found: list[dict]) -> str | None:
        if not found:
            return None
        return json.dumps(
            [
                {
                    "role": text(m["role"]),
                    "parts": [{"type": "text", "content": content(m["content"], limit)}],
                }
                for m in found
            ],
            ensure_ascii=False,
        )

    ordered = sorted(messages, key=lambda m: (_number(m.get("sequence")), text(m["id"]) or ""))
    return {
        attr.INPUT_MESSAGES: as_json([m for m in ordered if m["role"] != "assistant"]),
        attr.OUTPUT_MESSAGES: as_json([m for m in ordered if m["role"] == "assistant"]),
    }


def _number(value) -> float:
    return value if isinstance(value, int | float) and not isinstance(value, bool) else 0


def _turn_links(turn: dict) -> list[Link]:
    links = []
    if turn["parent_turn_id"] is not None:
        links.append(Link(turn_context(turn["parent_turn_id"]), {attr.LINK_KIND: "parent_turn"}))
    routing_key = text(turn.get("routing_key")) or ""
    if turn["parent_turn_id"] is None and routing_key.startswith("subagent:"):
        # subagent:<parent session>:<tool call>: the call that spawned this subagent session
        parts = routing_key.split(":", 2)
        if len(parts) == 3 and turn.get("spawning_turn_id") is not None:
            spawner = tool_call_context(turn["spawning_turn_id"], parts[2])
            links.append(Link(spawner, {attr.LINK_KIND: "spawned_by"}))
    return links


def _tool_span(call, turn, parent, conversation, res, oddities, turn_end, max_content):
    start, end = _ends(
        ns(call["started_at"], oddities, "tool_calls.started_at"),
        ns(call["completed_at"], oddities, "tool_calls.completed_at") or turn_end,
    )
    start = start or turn_end
    name = text(call["tool_name"]) or "(unnamed tool)"
    attributes = {
        attr.OPERATION: attr.EXECUTE_TOOL,
        **conversation,
        attr.TOOL_NAME: name,
        attr.TOOL_CALL_ID: text(call["id"]),
        attr.TOOL_CALL_STATUS: text(call["status"]),
        attr.TOOL_CALL_SEQUENCE: count(call["sequence"], oddities, "tool_calls.sequence"),
        attr.TURN_ID: text(turn["id"]),
    }
    if max_content is not None:
        attributes[attr.TOOL_ARGUMENTS] = content(call["parameters"], max_content)
        attributes[attr.TOOL_RESULT] = content(call.get("result"), max_content)
    status = Status(StatusCode.UNSET)
    if call["status"] == "failed":
        status = Status(StatusCode.ERROR, text(call.get("error")) or "the tool call failed")
        attributes[attr.ERROR_TYPE] = "tool_error"
    return ReadableSpan(
        name=f"{attr.EXECUTE_TOOL} {name}",
        context=tool_call_context(turn["id"], call["id"]),
        parent=parent,
        resource=res,
        attributes=_clean(attributes),
        kind=SpanKind.INTERNAL,
        status=status,
        start_time=start,
        end_time=end,
        instrumentation_scope=SCOPE,
    )


# ----- pipeline requests ----------------------------------------------------------------------

# The request's columns carried on its root span (the snapshot and the stack stay out: the
# failed stage carries the stack, and a snapshot is the request page's business).
REQUEST_COLUMNS = (
    "event_id",
    "event_type",
    "event_source",
    "stage",
    "status",
    "principal_id",
    "principal_type",
    "access_decision",
    "access_policy",
    "session_key",
    "session_persona",
    "hooks_matched",
    "hooks_fired",
    "turn_id",
    "agent_model",
    "agent_tool_calls",
    "delivery_channel",
    "delivery_message_ids",
    "delivery_error",
    "error_stage",
    "error_message",
)
REQUEST_COUNTS = ("agent_tokens_prompt", "agent_tokens_completion", "agent_tokens_total")
REQUEST_FLAGS = ("principal_is_user", "hooks_handled", "delivery_success")


def request_spans(request: dict, res: Resource, oddities: Oddities) -> list[ReadableSpan]:
    """A finished request: its root span, then one span per stage, end to end from its start."""
    context = request_context(request["id"])
    start = ns(request["started_at"], oddities, "nexus_requests.started_at")
    if start is None:
        start = ns(request["completed_at"], oddities, "nexus_requests.completed_at")
    if not start:
        oddities.note("requests not sent: neither started_at nor completed_at is a time")
        return []
    timings = parse_timings(request.get("stage_timings"))
    if timings.problems and request.get("stage_timings") not in (None, ""):
        oddities.note("nexus_requests.stage_timings that could not be read whole")
    failed_stage = text(request.get("error_stage")) if request["status"] == "failed" else None
    stages, cursor = [], start
    for name, ms in sorted(timings.ms.items(), key=lambda item: STAGE_INDEX.get(item[0], 99)):
        stage_end = cursor + int(ms * 1_000_000)
        stages.append(_stage_span(name, cursor, stage_end, context, request, failed_stage, res))
        cursor = stage_end
    if failed_stage and failed_stage not in timings.ms:
        # It failed before its time was written: a span of no length where the others end.
        stages.append(
            _stage_span(failed_stage, cursor, cursor, context, request, failed_stage, res)
        )
    end = ns(request["completed_at"], oddities, "nexus_requests.completed_at")
    attributes = {attr.REQUEST_ID: text(request["id"])}
    for column in REQUEST_COLUMNS:
        attributes[attr.REQUEST_PREFIX + column] = text(request.get(column))
    for column in REQUEST_COUNTS:
        attributes[attr.REQUEST_PREFIX + column] = count(
            request.get(column), oddities, f"nexus_requests.{column}"
        )
    for column in REQUEST_FLAGS:
        flag = request.get(column)
        if flag in (0, 1) and not isinstance(flag, float):
            attributes[attr.REQUEST_PREFIX + column] = bool(flag)
        elif flag is not None:
            oddities.note(f"nexus_requests.{column} that is not a flag")
    status = Status(StatusCode.UNSET)
    if request["status"] == "failed":
        status = Status(StatusCode.ERROR, text(request.get("error_message")) or "failed")
        attributes[attr.ERROR_TYPE] = failed_stage or "_OTHER"
    links = []
    if request.get("turn_id") is not None:
        links.append(Link(turn_context(request["turn_id"]), {attr.LINK_KIND: "ran_turn"}))
    root = ReadableSpan(
        name=f"pipeline {text(request.get('event_type')) or 'request'}",
        context=context,
        parent=None,
        resource=res,
        attributes=_clean(attributes),
        kind=SpanKind.SERVER,
        status=status,
        start_time=start,
        end_time=max(end or cursor, cursor, start),
        links=links,
        instrumentation_scope=SCOPE,
    )
    return [root, *stages]


def _stage_span(name, start, end, parent, request, failed_stage, res) -> ReadableSpan:
    status, events, attributes = Status(StatusCode.UNSET), [], {attr.STAGE_NAME: name}
    if name == failed_stage:
        message = text(request.get("error_message")) or "failed"
        status = Status(StatusCode.ERROR, message)
        attributes[attr.ERROR_TYPE] = name
        events.append(
            Event(
                "exception",
                _clean(
                    {
                        "exception.type": name,
                        "exception.message": message,
                        "exception.stacktrace": text(request.get("error_stack")),
                    }
                ),  # fmt: skip
                timestamp=end,
            )
        )
    return ReadableSpan(
        name=name,
        context=SpanContext(
            parent.trace_id, span_id(f"stage:{name}", request["id"]), False, SAMPLED
        ),
        parent=parent,
        resource=res,
        attributes=attributes,
        kind=SpanKind.INTERNAL,
        status=status,
        start_time=start,
        end_time=end,
        events=events,
        instrumentation_scope=SCOPE,
    )


__all__ = ["STAGES", "FINISHED_REQUEST", "FINISHED_TURN", "turn_spans", "request_spans"]
