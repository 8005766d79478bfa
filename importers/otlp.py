"""OpenTelemetry traces in OTLP JSON (files or a folder of them) as Agents Ledger sessions.

A file is one ExportTraceServiceRequest (`{"resourceSpans": […]}`) or JSON lines of them (the
OTLP file format: what the Collector's file exporter and `ledger_otel_export --to-dir` write).
A folder is read whole, since one conversation's spans may be spread over several files.

Spans are read as the GenAI semantic conventions describe them (OpenTelemetry's own
instrumentations), and as OpenInference (`openinference.span.kind`, `llm.*`, `tool.*`) and
OpenLLMetry (`traceloop.span.kind`) write them:

- a conversation (`gen_ai.conversation.id`, else `session.id`, else the trace) is a session;
- an agent span (`invoke_agent`, AGENT, agent/workflow) is a turn; a model call (`chat`, LLM)
  is a turn of its own only outside any agent span, else its usage counts toward the agent's;
- a tool span (`execute_tool`, TOOL, tool) is a tool call of the nearest turn above it;
- a turn's parent is the turn span above it, else `ledgerweb.turn.parent_id` (spans written by
  ledger_otel_export), else the conversation's previous turn by time.

Spans written by ledger_otel_export come back with the ledger's own ids, labels, heads, token
counts and turn_usage rows (ledgerfacts/otel_attributes.py); other spans get ids derived from
their trace and span ids, so importing again adds nothing. Spans of no such kind (HTTP calls,
the pipeline's stages) are counted in the summary.
"""

import base64
import binascii
import json
from collections import defaultdict
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path

from importers.bundle import ImportReport, SessionBundle, WrongFormat, derived_id
from importers.jsonl import encode_json, is_blank, read_jsonl
from importers.naming import label_from, main_routing_key
from ledgerfacts import otel_attributes as attr

FORMAT = "otlp"
PERSONA = "otlp"
EXPECTED = (
    'OTLP JSON trace data: a {"resourceSpans": [...]} object per file or per line, as the '
    "OpenTelemetry Collector's file exporter or ledger_otel_export --to-dir write it"
)
AGENT_OPERATIONS = {attr.INVOKE_AGENT, "create_agent", "invoke_workflow"}
CHAT_OPERATIONS = {attr.CHAT, "text_completion", "generate_content"}
OPENINFERENCE_KIND = "openinference.span.kind"
TRACELOOP_KIND = "traceloop.span.kind"
CONVERSATION_KEYS = (
    attr.CONVERSATION_ID,
    attr.SESSION_ID,
    "traceloop.association.properties.session_id",
    "langfuse.session.id",
)


@dataclass
class Span:
    """One span as the importer needs it."""

    trace: str  # hex
    id: str  # hex
    parent: str | None  # hex
    name: str
    start_ms: int
    end_ms: int
    error: str | None  # the status message of a span whose status is ERROR
    attributes: dict
    service: str | None  # the resource's service.name
    where: str
    kind: str = ""  # agent, chat, tool or '' (set by _kind)
    children: list = field(default_factory=list)

    def get(self, key, default=None):
        return self.attributes.get(key, default)


def read(paths: list[Path], report: ImportReport) -> Iterator[SessionBundle]:
    for path in paths:
        if path.is_dir():
            files = sorted(
                p for p in path.rglob("*") if p.is_file() and p.suffix in (".json", ".jsonl")
            )
            if not files:
                raise WrongFormat(f"{path} holds no .json or .jsonl file: expected {EXPECTED}")
            spans = []
            for file in files:
                try:
                    spans += _read_file(file, report)
                except WrongFormat as error:
                    report.wrong_format(str(file), str(error))
        else:
            spans = _read_file(path, report)
        yield from _sessions(spans, report)


# ----- reading OTLP JSON ----------------------------------------------------------------------


def _read_file(path: Path, report: ImportReport) -> list[Span]:
    if is_blank(path):
        report.empty(str(path))
        return []
    documents = _documents(path, report)
    if documents is None:
        raise WrongFormat(f"{path} is not {EXPECTED}")
    spans = []
    for where, document in documents:
        for resource_spans in _list(document.get("resourceSpans")):
            resource = _attributes(_dict(resource_spans.get("resource")).get("attributes"))
            service = resource.get("service.name")
            for scope_spans in _list(resource_spans.get("scopeSpans")):
                for raw in _list(scope_spans.get("spans")):
                    span = _span(raw, service, where, report)
                    if span:
                        spans.append(span)
    return spans


def _documents(path: Path, report: ImportReport) -> list[tuple[str, dict]] | None:
    """The OTLP documents of a file: one JSON object, or JSON lines (a line that is not JSON is
    listed); None when it is neither."""
    try:
        whole = json.loads(path.read_bytes())
    except (ValueError, RecursionError):
        whole = None
    if isinstance(whole, dict):
        return [(str(path), whole)] if "resourceSpans" in whole else None
    if whole is not None:
        return None
    lines = read_jsonl(path)
    if not any("resourceSpans" in r.data for r in lines.records):
        return None
    for where, why in lines.malformed:
        report.skipped(where, why)
    return [(r.where, r.data) for r in lines.records if "resourceSpans" in r.data]


def _span(raw, service, where: str, report: ImportReport) -> Span | None:
    if not isinstance(raw, dict):
        report.skipped(where, "a span that is not a JSON object")
        return None
    trace, span_id = _hex_id(raw.get("traceId"), 16), _hex_id(raw.get("spanId"), 8)
    start, end = _ms(raw.get("startTimeUnixNano")), _ms(raw.get("endTimeUnixNano"))
    if not trace or not span_id or start is None:
        report.skipped(where, f"span {raw.get('name')!r} without a trace id, span id or start time")
        return None
    status = _dict(raw.get("status"))
    failed = status.get("code") in (2, "STATUS_CODE_ERROR")
    return Span(
        trace=trace,
        id=span_id,
        parent=_hex_id(raw.get("parentSpanId"), 8),
        name=str(raw.get("name") or ""),
        start_ms=start,
        end_ms=max(end if end is not None else start, start),
        error=(str(status.get("message") or "") or "the span's status is ERROR")
        if failed
        else None,
        attributes=_attributes(raw.get("attributes")),
        # The SDK's default name ("unknown_service:python") names no service.
        service=service
        if isinstance(service, str) and not service.startswith("unknown_service")
        else None,
        where=where,
    )


def _hex_id(value, size: int) -> str | None:
    """An id as lower-case hex: OTLP JSON writes hex; the protobuf JSON mapping, base64."""
    if not isinstance(value, str) or not value:
        return None
    if len(value) == size * 2:
        try:
            return bytes.fromhex(value).hex() if int(value, 16) else None
        except ValueError:
            pass
    try:
        raw = base64.b64decode(value, validate=True)
    except (binascii.Error, ValueError):
        return None
    return raw.hex() if len(raw) == size and any(raw) else None


def _ms(value) -> int | None:
    try:
        nanos = int(value)
    except (TypeError, ValueError):
        return None
    return nanos // 1_000_000 if nanos > 0 else None


def _attributes(items) -> dict:
    found = {}
    for item in _list(items):
        if isinstance(item, dict) and isinstance(item.get("key"), str):
            found[item["key"]] = _value(item.get("value"))
    return found


def _value(value):
    value = _dict(value)
    if "stringValue" in value:
        return value["stringValue"]
    if "intValue" in value:
        try:
            return int(value["intValue"])
        except (TypeError, ValueError):
            return None
    if "doubleValue" in value:
        return value["doubleValue"]
    if "boolValue" in value:
        return value["boolValue"]
    if "arrayValue" in value:
        return [_value(v) for v in _list(_dict(value["arrayValue"]).get("values"))]
    if "kvlistValue" in value:
        return _attributes(_dict(value["kvlistValue"]).get("values"))
    return None


def _list(value) -> list:
    return value if isinstance(value, list) else []


def _dict(value) -> dict:
    return value if isinstance(value, dict) else {}


# ----- spans to sessions ----------------------------------------------------------------------


def _kind(span: Span) -> str:
    operation = span.get(attr.OPERATION)
    openinference = str(span.get(OPENINFERENCE_KIND) or "").upper()
    traceloop = str(span.get(TRACELOOP_KIND) or "").lower()
    if operation in AGENT_OPERATIONS or openinference == "AGENT" or traceloop in ("agent",):
        return "agent"
    if operation == attr.EXECUTE_TOOL or openinference == "TOOL" or traceloop == "tool":
        return "tool"
    if (
        operation in CHAT_OPERATIONS
        or openinference == "LLM"
        or span.get("llm.request.type") in ("chat", "completion")
    ):
        return "chat"
    return ""


def _sessions(spans: list[Span], report: ImportReport) -> Iterator[SessionBundle]:
    by_id: dict[tuple[str, str], Span] = {}
    for span in spans:
        by_id.setdefault((span.trace, span.id), span)  # the same span in two files: once
    spans = list(by_id.values())
    for span in spans:
        span.kind = _kind(span)
        parent = by_id.get((span.trace, span.parent)) if span.parent else None
        if parent:
            parent.children.append(span)
    conversation_of_trace: dict[str, str] = {}
    for span in sorted(spans, key=lambda s: s.start_ms):
        conversation = next((span.get(k) for k in CONVERSATION_KEYS if span.get(k)), None)
        if conversation is not None:
            conversation_of_trace.setdefault(span.trace, str(conversation))
    conversations: dict[str, list[Span]] = defaultdict(list)
    unmapped = 0
    for span in spans:
        if not span.kind:
            unmapped += 1
            continue
        conversations[conversation_of_trace.get(span.trace, span.trace)].append(span)
    if unmapped:
        pipeline = sum(1 for s in spans if not s.kind and attr.STAGE_NAME in s.attributes)
        pipeline += sum(1 for s in spans if not s.kind and attr.REQUEST_ID in s.attributes)
        if pipeline:
            report.unmapped("pipeline request and stage spans (the Nexus Ledger is not imported)",
                            pipeline)  # fmt: skip
        if unmapped - pipeline:
            report.unmapped("spans that are not agent, model or tool spans", unmapped - pipeline)
    for conversation, members in conversations.items():
        bundle = _session(conversation, members, by_id, report)
        if bundle:
            yield bundle


def _turn_span_of(span: Span, by_id) -> Span | None:
    """The nearest span above `span` that is a turn (an agent span, or a chat span outside any
    agent span)."""
    seen = set()
    current = by_id.get((span.trace, span.parent)) if span.parent else None
    while current is not None and current.id not in seen:
        seen.add(current.id)
        if current.kind == "agent" or (current.kind == "chat" and _is_turn(current, by_id)):
            return current
        current = by_id.get((current.trace, current.parent)) if current.parent else None
    return None


def _is_turn(span: Span, by_id) -> bool:
    if span.kind == "agent":
        return True
    if span.kind != "chat":
        return False
    seen = set()
    current = by_id.get((span.trace, span.parent)) if span.parent else None
    while current is not None and current.id not in seen:
        seen.add(current.id)
        if current.kind == "agent":
            return False
        current = by_id.get((current.trace, current.parent)) if current.parent else None
    return True


def _session(conversation: str, members: list[Span], by_id, report) -> SessionBundle | None:
    turn_spans = sorted(
        (s for s in members if _is_turn(s, by_id)), key=lambda s: (s.start_ms, s.id)
    )
    if not turn_spans:
        report.unmapped("tool spans of a conversation without an agent or model span", len(members))
        return None
    turn_id = {s.id: _turn_id(s) for s in turn_spans}
    turns, messages, usage = [], [], []
    previous = None
    for span in turn_spans:
        above = _turn_span_of(span, by_id)
        if above is not None:
            parent = turn_id[above.id]
        elif span.get(attr.TURN_ID) is not None:
            parent = span.get(attr.TURN_PARENT_ID)  # the ledger's own: None for a root
        else:
            parent = turn_id[previous.id] if previous else None  # conversation order
        turns.append(_turn_row(span, turn_id[span.id], parent, conversation, by_id))
        messages += _messages(span, turn_id[span.id], by_id)
        if row := _usage_row(span, turn_id[span.id], by_id):
            usage.append(row)
        previous = span
    calls = _tool_calls(members, turn_id, by_id, report)
    first, last = turn_spans[0], max(turn_spans, key=lambda s: (s.end_ms, s.start_ms))
    ids = {t["id"] for t in turns}
    head_span = max(
        (s for s in turn_spans if s.get(attr.SESSION_HEAD)), key=lambda s: s.end_ms, default=None
    )
    head = head_span.get(attr.SESSION_HEAD) if head_span else None
    if head is None:
        parents = {t["parent_turn_id"] for t in turns}
        leaves = [t for t in turns if t["id"] not in parents]
        head = max(leaves or turns, key=lambda t: (t["completed_at"], t["started_at"]))["id"]
    root = first.get(attr.SESSION_ROOT) or next(
        (t["id"] for t in turns if t["parent_turn_id"] not in ids), turns[0]["id"]
    )
    persona = _first(turn_spans, attr.AGENT_NAME) or first.service or PERSONA
    label = _first(turn_spans, attr.SESSION_LABEL)
    if label is None:
        prompt = next((m["content"] for m in messages if m["role"] == "user"), None)
        label = label_from(prompt) or label_from(first.name)
    created = _first(turn_spans, attr.SESSION_CREATED_AT)
    session = {
        "id": conversation,
        "persona": str(persona),
        "routing_key": _first(turn_spans, attr.SESSION_ROUTING_KEY)
        or main_routing_key(first.service, conversation),
        "label": label,
        "root_turn_id": root,
        "current_turn_id": head,
        "created_at": created if isinstance(created, int) else first.start_ms,
        "updated_at": max(last.end_ms, max(t["started_at"] for t in turns)),
        "status": _first(turn_spans, attr.SESSION_STATUS) or "active",
    }
    return SessionBundle(
        where=f"{first.where} (conversation {conversation})",
        session=session,
        turns=turns,
        messages=messages,
        tool_calls=calls,
        turn_usage=usage,
    )


def _first(spans: list[Span], key: str):
    return next((s.get(key) for s in spans if s.get(key) is not None), None)


def _turn_id(span: Span) -> str:
    own = span.get(attr.TURN_ID)
    return str(own) if own is not None else derived_id(span.start_ms, "otlp", span.trace, span.id)


def _model_calls(span: Span) -> list[Span]:
    """The model-call spans beneath a turn span (not beneath a deeper agent), in time order."""
    found, stack = [], list(span.children)
    while stack:
        child = stack.pop()
        if child.kind == "chat":
            found.append(child)
        if child.kind != "agent":
            stack.extend(child.children)
    return sorted(found, key=lambda s: s.start_ms)


def _tokens(span: Span, key: str, openinference: str) -> int | None:
    value = span.get(key)
    if value is None:
        value = span.get(openinference)
    return value if isinstance(value, int) and not isinstance(value, bool) else None


INPUT = (attr.INPUT_TOKENS, "llm.token_count.prompt")
OUTPUT = (attr.OUTPUT_TOKENS, "llm.token_count.completion")
CACHE_READ = (attr.CACHE_READ_TOKENS, "llm.token_count.prompt_details.cache_read")
CACHE_WRITE = (attr.CACHE_WRITE_TOKENS, "llm.token_count.prompt_details.cache_write")


def _model(span: Span) -> str | None:
    for key in (attr.RESPONSE_MODEL, attr.REQUEST_MODEL, "llm.model_name"):
        if isinstance(span.get(key), str) and span.get(key):
            return span.get(key)
    return None


def _turn_row(span: Span, turn_id: str, parent, conversation: str, by_id) -> dict:
    calls = _model_calls(span)
    # The model that answered: the turn's own response model, else its last model call's.
    model = (
        span.get(attr.RESPONSE_MODEL) if isinstance(span.get(attr.RESPONSE_MODEL), str) else None
    )
    model = model or next((m for c in reversed(calls) if (m := _model(c))), None) or _model(span)
    prompt = span.get(attr.TURN_PROMPT_TOKENS)
    completion = span.get(attr.TURN_COMPLETION_TOKENS)
    total = span.get(attr.TURN_TOTAL_TOKENS)
    if span.get(attr.TURN_ID) is None:
        # The context of the turn's last model call, and the output of all of them.
        last = calls[-1] if calls else span
        prompt = _tokens(last, *INPUT) if _tokens(span, *INPUT) is None or calls else None
        prompt = prompt if prompt is not None else _tokens(span, *INPUT)
        outputs = [_tokens(c, *OUTPUT) for c in calls] or [_tokens(span, *OUTPUT)]
        completion = _tokens(span, *OUTPUT)
        if completion is None and any(o is not None for o in outputs):
            completion = sum(o or 0 for o in outputs)
        total = prompt + completion if prompt is not None and completion is not None else None
    status = span.get(attr.TURN_STATUS) or ("failed" if span.error else "completed")
    return {
        "id": turn_id,
        "session_id": conversation,
        "parent_turn_id": parent,
        "status": status,
        "started_at": span.start_ms,
        "completed_at": span.end_ms,
        "prompt_tokens": prompt,
        "completion_tokens": completion,
        "total_tokens": total,
        "model": model,
        "source_event_id": span.get(attr.TURN_SOURCE_EVENT),
    }


def _usage_row(span: Span, turn_id: str, by_id) -> dict | None:
    """turn_usage: as the ledger had it (spans of ledger_otel_export carry its model calls),
    else the input billed over the turn's model calls, cache reads and writes apart."""
    if span.get(attr.TURN_ID) is not None and span.get(attr.TURN_MODEL_CALLS) is None:
        return None  # the ledger had no usage row for this turn
    calls = _model_calls(span) or [span]
    if span.get(attr.TURN_MODEL_CALLS) is not None or _tokens(span, *INPUT) is not None:
        sources, model_calls = [span], span.get(attr.TURN_MODEL_CALLS) or len(calls)
    else:
        sources, model_calls = calls, len(calls)
    if all(_tokens(s, *INPUT) is None and _tokens(s, *OUTPUT) is None for s in sources):
        return None
    return {
        "turn_id": turn_id,
        "model_calls": model_calls,
        "input_tokens": sum(_tokens(s, *INPUT) or 0 for s in sources),
        "cache_read_tokens": sum(_tokens(s, *CACHE_READ) or 0 for s in sources),
        "cache_write_tokens": sum(_tokens(s, *CACHE_WRITE) or 0 for s in sources),
        "output_tokens": sum(_tokens(s, *OUTPUT) or 0 for s in sources),
    }


# ----- messages -------------------------------------------------------------------------------


def _messages(span: Span, turn_id: str, by_id) -> list[dict]:
    """The turn's prompt and answer, where the spans carry content (the conventions leave it out
    unless asked): the turn span's own, else its first model call's prompt and last one's answer.
    A model call's input repeats the conversation so far: only what follows its last assistant
    message is this turn's."""
    calls = _model_calls(span)
    inputs = _said(span, "input") or (_said(calls[0], "input") if calls else [])
    outputs = _said(span, "output") or (_said(calls[-1], "output") if calls else [])
    last_answer = max((i for i, (role, _) in enumerate(inputs) if role == "assistant"), default=-1)
    said = inputs[last_answer + 1 :] + outputs
    return [
        {
            "id": derived_id(span.start_ms, "otlp-message", turn_id, n),
            "turn_id": turn_id,
            "role": role if role in ("user", "assistant", "system") else "user",
            "content": text,
            "sequence": n,
            "created_at": span.start_ms if n < len(said) - len(outputs) else span.end_ms,
        }
        for n, (role, text) in enumerate(said)
    ]


def _said(span: Span, side: str) -> list[tuple[str, str]]:
    """(role, text) of one side of a span: GenAI's gen_ai.input/output.messages JSON,
    OpenInference's llm.input_messages.N.message.*, OpenLLMetry's gen_ai.prompt/completion.N.*,
    or OpenInference's plain input.value/output.value."""
    key = attr.INPUT_MESSAGES if side == "input" else attr.OUTPUT_MESSAGES
    raw = span.get(key)
    if isinstance(raw, str):
        try:
            value = json.loads(raw)
        except (ValueError, RecursionError):
            value = None
        if isinstance(value, list):
            return [
                (str(m.get("role") or "user"), _parts_text(m.get("parts")))
                for m in value
                if isinstance(m, dict) and _parts_text(m.get("parts"))
            ]
    for prefix in (
        f"llm.{side}_messages.",
        "gen_ai.prompt." if side == "input" else "gen_ai.completion.",
    ):
        numbered = _numbered(span, prefix)
        if numbered:
            return numbered
    value = span.get(f"{side}.value")
    if isinstance(value, str) and value and span.kind == "agent":
        return [("user" if side == "input" else "assistant", value)]
    return []


def _parts_text(parts) -> str:
    return "\n\n".join(
        str(p.get("content"))
        for p in _list(parts)
        if isinstance(p, dict) and p.get("type") == "text" and p.get("content") is not None
    )


def _numbered(span: Span, prefix: str) -> list[tuple[str, str]]:
    found: dict[int, dict] = defaultdict(dict)
    for key, value in span.attributes.items():
        if not key.startswith(prefix):
            continue
        number, _, rest = key[len(prefix) :].partition(".")
        if number.isdigit():
            found[int(number)][rest.removeprefix("message.")] = value
    return [
        (str(m.get("role") or "user"), str(m["content"]))
        for _, m in sorted(found.items())
        if isinstance(m.get("content"), str) and m["content"]
    ]


# ----- tool calls -----------------------------------------------------------------------------


def _tool_calls(members: list[Span], turn_id: dict, by_id, report) -> list[dict]:
    rows, per_turn = [], defaultdict(int)
    for span in sorted((s for s in members if s.kind == "tool"), key=lambda s: (s.start_ms, s.id)):
        owner = _turn_span_of(span, by_id)
        if owner is None:
            report.unmapped("tool spans outside any agent or model span")
            continue
        owner_id = turn_id[owner.id]
        sequence = span.get(attr.TOOL_CALL_SEQUENCE)
        if not isinstance(sequence, int):
            sequence = per_turn[owner_id]
        per_turn[owner_id] += 1
        call_id = span.get(attr.TOOL_CALL_ID)
        arguments = span.get(attr.TOOL_ARGUMENTS, span.get("tool.parameters"))
        if arguments is None and span.get(OPENINFERENCE_KIND):
            arguments = span.get("input.value")
        result = span.get(attr.TOOL_RESULT)
        if result is None and span.get(OPENINFERENCE_KIND):
            result = span.get("output.value")
        status = span.get(attr.TOOL_CALL_STATUS) or ("failed" if span.error else "completed")
        rows.append({
            "id": str(call_id) if call_id is not None else derived_id(
                span.start_ms, "otlp-tool", span.trace, span.id
            ),
            "turn_id": owner_id,
            "tool_name": str(
                span.get(attr.TOOL_NAME) or span.get("tool.name") or span.name or "(unnamed tool)"
            ),
            "parameters": "{}" if arguments is None else encode_json(arguments),
            "result": None if result is None else encode_json(result),
            "error": span.error if status == "failed" else None,
            "status": status,
            "started_at": span.start_ms,
            "completed_at": span.end_ms if status != "pending" else None,
            "sequence": sequence,
        })  # fmt: skip
    return rows
