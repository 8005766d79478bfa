"""ledger_otel_export (issue 32): the ledger as OTLP traces, sent once, and back again.

The round trip is the proof of the mapping: a ledger exported as OTLP JSON files and imported
with `ledger_import otlp` gives back the same sessions, turns, tool calls and billed tokens. The
export runs on the test's ledger, so the PostgreSQL pass exports from a PostgreSQL ledger.
"""

import json
import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from io import StringIO
from pathlib import Path

import pytest
from builders import T0
from django.core.management import CommandError, call_command
from importing import query, run_import
from otel_ledger import agents_ledger

from otel.models import ExportMark

pytestmark = pytest.mark.django_db(transaction=True, databases="__all__")

SESSION_COLUMNS = "id, persona, routing_key, label, root_turn_id, current_turn_id, status"
TURN_COLUMNS = (
    "id, session_id, parent_turn_id, status, started_at, completed_at, prompt_tokens,"
    " completion_tokens, total_tokens, model, source_event_id"
)
CALL_COLUMNS = "id, turn_id, tool_name, status, error, started_at, completed_at, sequence"
USAGE_COLUMNS = (
    "turn_id, model_calls, input_tokens, cache_read_tokens, cache_write_tokens, output_tokens"
)


def export(folder: Path, *options) -> str:
    out = StringIO()
    call_command("ledger_otel_export", "--to-dir", str(folder), *options, stdout=out)
    return out.getvalue()


def spans_in(folder: Path) -> list[dict]:
    """Every span of the OTLP JSON files in a folder, with its attributes as a plain dict."""
    found = []
    for path in sorted(folder.glob("*.jsonl")):
        for line in path.read_text().splitlines():
            for resource_spans in json.loads(line)["resourceSpans"]:
                for scope_spans in resource_spans["scopeSpans"]:
                    for span in scope_spans["spans"]:
                        span["attrs"] = {
                            a["key"]: next(iter(a["value"].values())) for a in span["attributes"]
                        }
                        found.append(span)
    return found


def ledger_rows(conn_rows, sql: str) -> set[tuple]:
    return {tuple(row) for row in conn_rows(sql)}


@pytest.fixture
def agents(ledger):
    return agents_ledger(ledger)


def test_exported_ledger_imported_again_gives_back_its_sessions_turns_tool_calls_and_tokens(
    agents, tmp_path
):
    summary = export(tmp_path / "out")
    assert "turns: 6" in summary and "tool calls: 3" in summary and "requests: 2" in summary
    assert "Still running, sent once finished (a later run): 1 turns" in summary
    back = tmp_path / "back.sqlite3"
    run_import("otlp", tmp_path / "out", ledger=back)

    from ledgerweb import sqlite

    def ours(sql):
        return {tuple(row) for row in sqlite.rows(sql)}

    def theirs(sql):
        return {tuple(row) for row in query(back, sql)}

    finished = "status IN ('completed', 'failed')"
    assert theirs(f"SELECT {SESSION_COLUMNS} FROM sessions") == ours(
        f"SELECT {SESSION_COLUMNS} FROM sessions"
    )
    assert theirs(f"SELECT {TURN_COLUMNS} FROM turns") == ours(
        f"SELECT {TURN_COLUMNS} FROM turns WHERE {finished}"
    )
    assert theirs(f"SELECT {CALL_COLUMNS} FROM tool_calls") == ours(
        f"SELECT {CALL_COLUMNS} FROM tool_calls"
    )
    assert theirs(f"SELECT {USAGE_COLUMNS} FROM turn_usage") == ours(
        f"SELECT {USAGE_COLUMNS} FROM turn_usage"
    )


def test_each_turn_is_an_agent_span_with_its_tool_calls_beneath_and_its_parent_linked(
    agents, tmp_path
):
    export(tmp_path)
    spans = spans_in(tmp_path)
    by_turn = {s["attrs"]["ledgerweb.turn.id"]: s for s in spans if s["name"].startswith("invoke")}
    again = by_turn["turn-b"]
    assert again["attrs"]["gen_ai.operation.name"] == "invoke_agent"
    assert again["attrs"]["gen_ai.conversation.id"] == "sess 'main'\n1"
    assert again["attrs"]["session.id"] == "sess 'main'\n1"
    assert again["attrs"]["gen_ai.request.model"] == "gpt-5"
    assert again["attrs"]["gen_ai.usage.input_tokens"] == "900"  # intValue is a JSON string
    assert again["startTimeUnixNano"] == str((T0 + 20_000) * 1_000_000)
    assert again["endTimeUnixNano"] == str((T0 + 23_000) * 1_000_000)
    root = by_turn["turn-root"]
    assert [link["spanId"] for link in again["links"]] == [root["spanId"]]
    assert root["attrs"]["gen_ai.usage.cache_read.input_tokens"] == "4000"
    assert root["attrs"]["gen_ai.usage.cache_creation.input_tokens"] == "600"
    calls = [s for s in spans if s.get("parentSpanId") == again["spanId"]]
    assert sorted(s["name"] for s in calls) == ["execute_tool Task", "execute_tool bash"]
    assert {s["traceId"] for s in calls} == {again["traceId"]}
    broken = next(s for s in spans if s["attrs"].get("gen_ai.tool.call.id") == "call-broken")
    assert broken["status"] == {"code": 2, "message": "exit 2: нет файла"}
    assert by_turn["turn-failed"]["status"]["code"] == 2
    fork_turn = by_turn["turn-in-fork"]  # continues from the origin's turn-a, in another trace
    assert fork_turn["links"][0]["spanId"] == by_turn["turn-a"]["spanId"]
    spawn = next(s for s in spans if s["attrs"].get("gen_ai.tool.call.id") == "call-spawn")
    assert by_turn["turn-sub"]["links"][0]["spanId"] == spawn["spanId"]
    assert "turn-running" not in by_turn
    assert not any("gen_ai.input.messages" in s["attrs"] for s in spans)  # no content unasked
    assert not any("gen_ai.tool.call.arguments" in s["attrs"] for s in spans)


def test_a_request_is_a_trace_of_its_stages_end_to_end_and_the_failed_one_says_why(
    agents, tmp_path
):
    export(tmp_path)
    spans = spans_in(tmp_path)
    root = next(s for s in spans if s["attrs"].get("ledgerweb.request.id") == "req-failed")
    assert root["status"] == {"code": 2, "message": "model timed out"}
    stages = sorted(
        (s for s in spans if s.get("parentSpanId") == root["spanId"]),
        key=lambda s: int(s["startTimeUnixNano"]),
    )
    assert [s["name"] for s in stages] == ["receiveEvent", "runAgent"]
    assert stages[0]["startTimeUnixNano"] == str(T0 * 1_000_000)
    assert stages[1]["startTimeUnixNano"] == stages[0]["endTimeUnixNano"]
    assert int(stages[1]["endTimeUnixNano"]) - int(stages[1]["startTimeUnixNano"]) == 30_000_000_000
    assert stages[1]["status"] == {"code": 2, "message": "model timed out"}
    assert stages[1]["events"][0]["name"] == "exception"
    assert "code" not in stages[0].get("status", {})
    ok = next(s for s in spans if s["attrs"].get("ledgerweb.request.id") == "req-ok")
    turn_a = next(s for s in spans if s["attrs"].get("ledgerweb.turn.id") == "turn-a")
    assert ok["links"][0]["spanId"] == turn_a["spanId"]


def test_a_second_run_sends_nothing_and_a_turn_that_finished_since_is_sent_then(agents, tmp_path):
    export(tmp_path)
    first_files = set(tmp_path.glob("*.jsonl"))
    summary = export(tmp_path)
    assert "Exported to" in summary and ": 0 spans" in summary
    assert set(tmp_path.glob("*.jsonl")) == first_files  # no empty file either

    ledger = agents["ledger"]
    ledger.conn.execute(
        "UPDATE turns SET status = 'completed', completed_at = ? WHERE id = 'turn-running'",
        (T0 + 55_000,),
    )
    later = ledger.turn(agents["main"], agents["running"], id="turn-later", started_at=T0 + 60_000,
                        completed_at=T0 + 61_000)  # fmt: skip
    ledger.tool_call(later, 0, id="call-later")
    export(tmp_path)
    new_files = set(tmp_path.glob("*.jsonl")) - first_files
    assert len(new_files) == 1
    sent = [s for line in new_files.pop().read_text().splitlines() for s in _spans(line)]
    assert sorted(s["name"] for s in sent) == [
        "execute_tool gog", "invoke_agent atlas", "invoke_agent atlas"]  # fmt: skip
    assert ": 0 spans" in export(tmp_path)


def _spans(line: str):
    for resource_spans in json.loads(line)["resourceSpans"]:
        for scope_spans in resource_spans["scopeSpans"]:
            yield from scope_spans["spans"]


def test_content_only_when_asked_and_then_it_comes_back_on_import(agents, tmp_path):
    ledger = agents["ledger"]
    root = {"id": "turn-root", "started_at": T0}
    ledger.message(root, 0, role="user", content="Привет, 世界 — what's up?")
    ledger.message(root, 1, role="assistant", content="All good 👍")
    export(tmp_path / "out", "--with-content")
    spans = spans_in(tmp_path / "out")
    turn = next(s for s in spans if s["attrs"].get("ledgerweb.turn.id") == "turn-root")
    assert json.loads(turn["attrs"]["gen_ai.input.messages"]) == [
        {"role": "user", "parts": [{"type": "text", "content": "Привет, 世界 — what's up?"}]}
    ]
    call = next(s for s in spans if s["attrs"].get("gen_ai.tool.call.id") == "call-spawn")
    assert json.loads(call["attrs"]["gen_ai.tool.call.arguments"]) == {
        "action": "search", "query": "from:amazon"}  # fmt: skip
    back = tmp_path / "back.sqlite3"
    run_import("otlp", tmp_path / "out", ledger=back)
    assert query(back, "SELECT role, content FROM messages WHERE turn_id = 'turn-root'"
                 " ORDER BY sequence") == [  # fmt: skip
        ("user", "Привет, 世界 — what's up?"), ("assistant", "All good 👍")]  # fmt: skip


def test_a_ledger_replaced_at_the_same_place_is_exported_afresh(agents, tmp_path):
    export(tmp_path)
    mark = ExportMark.objects.get()
    ExportMark.objects.filter(pk=mark.pk).update(anchor="another ledger's first turn")
    summary = export(tmp_path)
    assert "Started afresh: the ledger at this place is not the one exported before" in summary
    assert "turns: 6" in summary


def test_an_endpoint_that_refuses_keeps_the_watermark_and_says_so(agents, tmp_path):
    with pytest.raises(CommandError, match="did not accept a batch"):
        call_command("ledger_otel_export", "--endpoint", "http://127.0.0.1:9", "--timeout", "1",
                     stdout=StringIO(), stderr=StringIO())  # fmt: skip
    assert ExportMark.objects.get().turns_rowid == 0


def test_a_header_that_is_not_name_equals_value_is_refused_before_anything_is_sent(agents):
    with pytest.raises(CommandError, match="is not NAME=VALUE"):
        call_command("ledger_otel_export", "--endpoint", "http://127.0.0.1:9", "--header", "x")
    assert not ExportMark.objects.exists()


def test_only_the_pipeline_then_the_rest_sends_each_span_once(agents, tmp_path):
    first = export(tmp_path, "--only", "pipeline")
    assert "turns: 0" in first and "requests: 2" in first
    rest = export(tmp_path)
    assert "turns: 6" in rest and "requests: 0" in rest


def test_odd_values_are_sent_as_far_as_they_go_and_counted(ledger, tmp_path):
    """REAL where INTEGER is declared is a count when whole; text where a count or a time is
    declared is left off its span and counted; a turn with no usable time at all is not sent."""
    session = ledger.session(id="odd")
    ledger.turn(session, id="real-tokens", prompt_tokens=12.0, completion_tokens=1.5)
    ledger.turn(session, id="text-start", started_at="2025-01-01 10:00", completed_at=T0 + 9)
    ledger.turn(session, id="no-time", started_at="soon", completed_at=None)
    summary = export(tmp_path)
    assert "turns: 2" in summary
    assert "turns.completion_tokens that is not a whole number: 1" in summary
    assert "turns.started_at that is not a time: 2" in summary
    assert "turns not sent: neither started_at nor completed_at is a time: 1" in summary
    spans = {s["attrs"]["ledgerweb.turn.id"]: s for s in spans_in(tmp_path)}
    assert spans["real-tokens"]["attrs"]["ledgerweb.turn.prompt_tokens"] == "12"
    assert "ledgerweb.turn.completion_tokens" not in spans["real-tokens"]["attrs"]
    assert spans["text-start"]["startTimeUnixNano"] == str((T0 + 9) * 1_000_000)


class Capture(BaseHTTPRequestHandler):
    """A loopback OTLP/HTTP endpoint that keeps what it was sent."""

    requests: list = []

    def do_POST(self):
        body = self.rfile.read(int(self.headers["Content-Length"]))
        Capture.requests.append((self.path, dict(self.headers), body))
        self.send_response(200)
        self.send_header("Content-Length", "0")
        self.end_headers()

    def log_message(self, *args):
        pass


def test_otlp_json_over_http_with_the_headers_given(agents):
    server = ThreadingHTTPServer(("127.0.0.1", 0), Capture)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    Capture.requests = []
    try:
        call_command("ledger_otel_export", "--endpoint", f"http://127.0.0.1:{server.server_port}",
                     "--protocol", "http/json", "--header", "Authorization=Basic c2VjcmV0",
                     stdout=StringIO())  # fmt: skip
    finally:
        server.shutdown()
        server.server_close()
    assert [path for path, _, _ in Capture.requests] == ["/v1/traces", "/v1/traces"]
    path, headers, body = Capture.requests[0]
    headers = {name.lower(): value for name, value in headers.items()}
    assert headers["content-type"] == "application/json"
    assert headers["authorization"] == "Basic c2VjcmV0"
    spans = [s for r in json.loads(body)["resourceSpans"] for ss in r["scopeSpans"]
             for s in ss["spans"]]  # fmt: skip
    assert len(spans) == 9  # six turns and three tool calls; the requests came in the second
    assert ExportMark.objects.get().shown == f"http://127.0.0.1:{server.server_port}/v1/traces"
