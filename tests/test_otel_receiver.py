"""ledger_otel_export against a real OTLP receiver (issue 32): Arize Phoenix on loopback.

Every finished turn, tool call, request and stage of the ledger must arrive with its attributes,
parentage, times and status, as Phoenix stores and answers them; a second run must send nothing
(counted on the wire by a relay in front of Phoenix, since Phoenix drops a repeated span id
silently), and a run after the ledger grew only what is new. The export reads the test's ledger,
so the PostgreSQL pass exports from a PostgreSQL ledger.
"""

from datetime import datetime
from io import StringIO

import pytest
from builders import T0
from django.core.management import call_command
from otel_ledger import agents_ledger
from otlp_receiver import PHOENIX, CountingRelay, Phoenix

from ledgerweb import sqlite

pytestmark = [
    pytest.mark.django_db(transaction=True, databases="__all__"),
    pytest.mark.skipif(
        not PHOENIX.exists(), reason="the OTLP receiver is not installed: run `make receiver`"
    ),
]


@pytest.fixture
def agents(ledger):
    return agents_ledger(ledger)


@pytest.fixture(scope="module")
def phoenix(tmp_path_factory):
    server = Phoenix(tmp_path_factory.mktemp("phoenix")).start()
    yield server
    server.stop()


@pytest.fixture
def relay(phoenix):
    relay = CountingRelay(phoenix.url)
    yield relay
    relay.close()


def export(endpoint: str) -> str:
    out = StringIO()
    call_command("ledger_otel_export", "--endpoint", endpoint, "--header", "x-test=1", stdout=out)
    return out.getvalue()


def ms(iso: str) -> int:
    return round(datetime.fromisoformat(iso).timestamp() * 1000)


def test_every_turn_tool_call_and_request_arrives_with_its_attributes_parents_times_and_status(
    agents, phoenix, relay
):
    export(relay.url)
    turns = sqlite.rows(
        "SELECT id, session_id, status, started_at, completed_at, model, prompt_tokens"
        " FROM turns WHERE status IN ('completed', 'failed')",
        named=True,
    )
    calls = sqlite.rows("SELECT id, turn_id, tool_name, status, error FROM tool_calls", named=True)
    requests = sqlite.rows("SELECT id, status, stage_timings FROM nexus_requests", named=True)
    stages = 6  # 4 timed stages of req-ok, 2 of req-failed
    expected = len(turns) + len(calls) + len(requests) + stages
    stored = phoenix.wait_for(relay.received)
    assert len(stored) == expected == len(relay.received)

    by_turn = {s["attributes"]["ledgerweb.turn.id"]: s for s in stored
               if s["name"].startswith("invoke_agent")}  # fmt: skip
    assert set(by_turn) == {t["id"] for t in turns}
    for turn in turns:
        span = by_turn[turn["id"]]
        assert span["attributes"]["gen_ai.conversation.id"] == turn["session_id"]
        assert span["attributes"]["session.id"] == turn["session_id"]
        assert span["attributes"]["gen_ai.operation.name"] == "invoke_agent"
        assert span["attributes"].get("gen_ai.request.model") == turn["model"]
        assert (ms(span["start_time"]), ms(span["end_time"])) == (
            turn["started_at"], turn["completed_at"])  # fmt: skip
        assert span["status_code"] == ("ERROR" if turn["status"] == "failed" else "UNSET")
        assert span["parent_id"] is None  # each turn its own trace; its parent is a link
    assert by_turn["turn-root"]["attributes"]["gen_ai.usage.input_tokens"] == 5_000
    assert by_turn["turn-root"]["attributes"]["gen_ai.usage.cache_read.input_tokens"] == 4_000
    assert by_turn["turn-b"]["attributes"]["ledgerweb.turn.parent_id"] == "turn-root"

    by_call = {s["attributes"]["gen_ai.tool.call.id"]: s for s in stored
               if s["name"].startswith("execute_tool")}  # fmt: skip
    assert set(by_call) == {c["id"] for c in calls}
    for call in calls:
        span, turn = by_call[call["id"]], by_turn[call["turn_id"]]
        assert span["name"] == f"execute_tool {call['tool_name']}"
        assert span["parent_id"] == turn["context"]["span_id"]
        assert span["context"]["trace_id"] == turn["context"]["trace_id"]
        assert span["status_code"] == ("ERROR" if call["status"] == "failed" else "UNSET")
    assert by_call["call-broken"]["status_message"] == "exit 2: нет файла"

    failed = next(s for s in stored if s["attributes"].get("ledgerweb.request.id") == "req-failed")
    assert failed["status_code"] == "ERROR" and failed["status_message"] == "model timed out"
    children = sorted((s for s in stored if s["parent_id"] == failed["context"]["span_id"]),
                      key=lambda s: s["start_time"])  # fmt: skip
    assert [(s["name"], s["status_code"]) for s in children] == [
        ("receiveEvent", "UNSET"), ("runAgent", "ERROR")]  # fmt: skip
    assert ms(children[0]["start_time"]) == T0
    assert ms(children[1]["end_time"]) - ms(children[1]["start_time"]) == 30_000


def test_a_second_run_sends_nothing_and_a_later_one_only_what_is_new(agents, phoenix, relay):
    first = export(relay.url)
    sent = len(relay.received)
    assert f": {sent:,} spans" in first and len(set(relay.received)) == sent
    assert len(phoenix.wait_for(relay.received)) == sent
    requests = relay.requests

    assert ": 0 spans" in export(relay.url)
    assert len(relay.received) == sent and relay.requests == requests  # not even an empty one

    ledger = agents["ledger"]
    later = ledger.turn(agents["main"], agents["running"], id="turn-later",
                        started_at=T0 + 60_000, completed_at=T0 + 61_000)  # fmt: skip
    ledger.tool_call(later, 0, id="call-later")
    ledger.conn.execute("UPDATE turns SET status = 'completed', completed_at = ?"
                        " WHERE id = 'turn-running'", (T0 + 55_000,))  # fmt: skip
    export(relay.url)
    assert len(relay.received) == sent + 3  # turn-running, turn-later and its call
    assert len(set(relay.received)) == sent + 3  # nothing twice
    stored = phoenix.wait_for(relay.received[sent:])
    ids = {s["attributes"].get("ledgerweb.turn.id") for s in stored}
    assert {"turn-running", "turn-later"} <= ids
