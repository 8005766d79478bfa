"""ledger_import otlp (issue 32) on OTLP JSON written by instrumentation libraries run here.

OpenTelemetry's own OpenAI instrumentation (opentelemetry-instrumentation-openai-v2) and its GenAI
helpers (opentelemetry-util-genai: agent and tool spans), and OpenInference's OpenAI
instrumentation, call a fake OpenAI server on loopback; OpenTelemetry's OTLP JSON file exporter
writes what they traced; the importer reads it.
"""

import json
import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

import openai
import pytest
from importing import one, query, run_import
from opentelemetry.exporter.otlp.json.file import FileSpanExporter
from opentelemetry.sdk.trace import TracerProvider
from opentelemetry.sdk.trace.export import SimpleSpanProcessor


class FakeOpenAI(BaseHTTPRequestHandler):
    """Answers every chat completion with "Sunny." and its token usage."""

    def do_POST(self):
        body = json.loads(self.rfile.read(int(self.headers["Content-Length"])))
        answer = json.dumps({
            "id": "chatcmpl-1", "object": "chat.completion", "created": 1_717_000_000,
            "model": body["model"] + "-2024",
            "choices": [{"index": 0, "finish_reason": "stop",
                         "message": {"role": "assistant", "content": "Sunny."}}],
            "usage": {"prompt_tokens": 12, "completion_tokens": 3, "total_tokens": 15,
                      "prompt_tokens_details": {"cached_tokens": 4}},
        }).encode()  # fmt: skip
        self.send_response(200)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(answer)))
        self.end_headers()
        self.wfile.write(answer)

    def log_message(self, *args):
        pass


@pytest.fixture
def client():
    server = ThreadingHTTPServer(("127.0.0.1", 0), FakeOpenAI)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    yield openai.OpenAI(base_url=f"http://127.0.0.1:{server.server_port}/v1", api_key="test")
    server.shutdown()


def traced(path):
    provider = TracerProvider()
    provider.add_span_processor(SimpleSpanProcessor(FileSpanExporter(path=path)))
    return provider


def test_agent_runs_traced_by_opentelemetrys_genai_instrumentation_become_turns(client, tmp_path):
    from opentelemetry.instrumentation.openai_v2 import OpenAIInstrumentor
    from opentelemetry.util.genai.handler import get_telemetry_handler

    traces = tmp_path / "traces.jsonl"
    provider = traced(traces)
    OpenAIInstrumentor().instrument(tracer_provider=provider)
    try:
        handler = get_telemetry_handler(tracer_provider=provider)
        for n in range(2):
            with handler.invoke_local_agent(
                agent_name="weather", request_model="gpt-4o-mini"
            ) as run:
                run.conversation_id = "conv-1"
                client.chat.completions.create(
                    model="gpt-4o-mini", messages=[{"role": "user", "content": f"Weather {n}?"}]
                )
                with handler.tool("get_weather", tool_call_id=f"call_{n}"):
                    pass
                client.chat.completions.create(
                    model="gpt-4o-mini", messages=[{"role": "user", "content": "And now?"}]
                )
    finally:
        OpenAIInstrumentor().uninstrument()
        provider.shutdown()

    ledger = tmp_path / "ledger.sqlite3"
    summary = run_import("otlp", traces, ledger=ledger)
    assert "sessions added: 1" in summary
    found = query(
        ledger,
        "SELECT id, parent_turn_id, model, prompt_tokens, completion_tokens, total_tokens"
        " FROM turns ORDER BY started_at",
    )
    assert len(found) == 2
    (first, *_), second = found[0], found[1]
    assert found[0][1:] == (None, "gpt-4o-mini-2024", 12, 6, 18)  # two calls of 3 tokens out
    assert second[1] == first  # the conversation's order: the second run follows the first
    assert query(ledger, "SELECT persona, current_turn_id FROM sessions WHERE id = 'conv-1'") == [
        ("weather", second[0])]  # fmt: skip
    assert query(
        ledger, "SELECT id, turn_id, tool_name, status FROM tool_calls ORDER BY started_at"
    ) == [("call_0", first, "get_weather", "completed"),
          ("call_1", second[0], "get_weather", "completed")]  # fmt: skip
    assert query(ledger, "SELECT model_calls, input_tokens, output_tokens FROM turn_usage") == [
        (2, 24, 6), (2, 24, 6)]  # fmt: skip
    again = run_import("otlp", traces, ledger=ledger)
    assert "sessions added: 0" in again and "turns: 0 added" in again


def test_a_session_traced_by_openinference_becomes_a_session_with_its_prompts(client, tmp_path):
    from openinference.instrumentation import using_session
    from openinference.instrumentation.openai import OpenAIInstrumentor

    traces = tmp_path / "traces.jsonl"
    provider = traced(traces)
    OpenAIInstrumentor().instrument(tracer_provider=provider)
    try:
        with using_session("oi-session-1"):
            client.chat.completions.create(
                model="gpt-4o-mini", messages=[{"role": "user", "content": "Привет!"}]
            )
            client.chat.completions.create(model="gpt-4o-mini", messages=[
                {"role": "user", "content": "Привет!"}, {"role": "assistant", "content": "Sunny."},
                {"role": "user", "content": "Again?"}])  # fmt: skip
    finally:
        OpenAIInstrumentor().uninstrument()
        provider.shutdown()

    ledger = tmp_path / "ledger.sqlite3"
    run_import("otlp", traces, ledger=ledger)
    assert query(ledger, "SELECT id, label FROM sessions") == [("oi-session-1", "Привет!")]
    # Each turn's messages in their order, the turns in the tree's order (two calls a fake
    # server answers at once can start in the same millisecond: the times cannot order them).
    said = {}
    for turn, role, content in query(
        ledger, "SELECT turn_id, role, content FROM messages ORDER BY turn_id, sequence"
    ):
        said.setdefault(turn, []).append((role, content))
    ((first, second),) = query(
        ledger, "SELECT p.id, c.id FROM turns c JOIN turns p ON p.id = c.parent_turn_id"
    )
    # The second call's input repeats the first exchange: only its new prompt is its turn's.
    assert said == {
        first: [("user", "Привет!"), ("assistant", "Sunny.")],
        second: [("user", "Again?"), ("assistant", "Sunny.")],
    }
    assert one(ledger, "SELECT cache_read_tokens FROM turn_usage LIMIT 1") == 4


def test_json_that_is_not_otlp_is_refused_and_a_broken_line_is_listed(tmp_path):
    other = tmp_path / "other.json"
    other.write_text(json.dumps({"hello": "world"}))
    summary = run_import("otlp", other, ledger=tmp_path / "a.sqlite3", left_out="refused")
    assert "is not OTLP JSON trace data" in summary
    assert not (tmp_path / "a.sqlite3").exists()

    lines = tmp_path / "traces.jsonl"
    span = {
        "traceId": "ab" * 16,
        "spanId": "cd" * 8,
        "name": "chat m",
        "startTimeUnixNano": "1717000000000000000",
        "endTimeUnixNano": "1717000001000000000",
        "attributes": [{"key": "gen_ai.operation.name", "value": {"stringValue": "chat"}}],
    }
    document = {"resourceSpans": [{"scopeSpans": [{"spans": [span]}]}]}
    lines.write_text(json.dumps(document) + "\n{not json\n")  # fmt: skip
    summary = run_import("otlp", lines, ledger=tmp_path / "b.sqlite3", left_out="malformed")
    assert "traces.jsonl:2: not JSON" in summary
    assert one(tmp_path / "b.sqlite3", "SELECT count(*) FROM turns") == 1
