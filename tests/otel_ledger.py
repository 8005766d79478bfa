"""The ledger the OpenTelemetry tests export (tests/test_otel_export.py, test_otel_receiver.py)."""

import json

from builders import T0


def agents_ledger(ledger) -> dict:
    """A conversation tree with what the mapping must keep: a regenerated answer (two children
    of one turn), a failed turn whose tool call failed, billed usage with cache tokens, a fork
    whose own turn continues from the origin's, a subagent spawned by a tool call, text in many
    scripts, ids with quotes and newlines, a turn still running, and two pipeline requests."""
    main = ledger.session(id="sess 'main'\n1", label="Зачем — 為什麼 — למה 🙂", persona="atlas")
    root = ledger.turn(main, id="turn-root", started_at=T0, completed_at=T0 + 4_000)
    ledger.usage(root, calls=3, input=5_000, cache_read=4_000, cache_write=600, output=300)
    first = ledger.turn(main, root, id="turn-a", started_at=T0 + 10_000, completed_at=T0 + 12_000)
    again = ledger.turn(
        main,
        root,
        id="turn-b",
        started_at=T0 + 20_000,
        completed_at=T0 + 23_000,
        model="gpt-5",
        prompt_tokens=900,
        completion_tokens=40,
        total_tokens=940,
    )
    spawn = ledger.tool_call(again, 0, id="call-spawn", tool_name="Task")
    ledger.tool_call(again, 1, id="call 'x'\n2", tool_name="bash")
    failed = ledger.turn(
        main,
        again,
        id="turn-failed",
        status="failed",
        started_at=T0 + 30_000,
        completed_at=T0 + 31_000,
    )
    ledger.tool_call(
        failed,
        0,
        id="call-broken",
        status="failed",
        error="exit 2: нет файла",
        result=None,
        started_at=T0 + 30_100,
        completed_at=T0 + 30_900,
    )
    ledger.set_head(main, root, failed)
    fork = ledger.session(id="fork-1", routing_key=f"fork:{main['id']}:fork-1", label="a fork")
    forked = ledger.turn(
        fork, first, id="turn-in-fork", started_at=T0 + 40_000, completed_at=T0 + 41_000
    )
    ledger.set_head(fork, root, forked)
    child = ledger.session(
        id="sub-1",
        routing_key=f"subagent:{main['id']}:{spawn['id']}",
        label="subagent",
        persona="worker",
    )
    sub_root = ledger.turn(child, id="turn-sub", started_at=T0 + 21_000, completed_at=T0 + 22_000)
    ledger.set_head(child, sub_root, sub_root)
    running = ledger.turn(
        main,
        failed,
        id="turn-running",
        status="streaming",
        started_at=T0 + 50_000,
        completed_at=None,
    )
    ledger.request(
        id="req-ok",
        turn_id="turn-a",
        stage_timings=json.dumps(
            {"receiveEvent": 5, "resolveIdentity": 7, "runAgent": 2_000, "finalize": 3}
        ),
    )
    ledger.request(id="req-failed", status="failed", stage="runAgent", error_stage="runAgent",
                   error_message="model timed out", error_stack="Traceback …",
                   stage_timings=json.dumps({"receiveEvent": 5, "runAgent": 30_000}),
                   completed_at=T0 + 31_000)  # fmt: skip
    return {"main": main, "running": running, "ledger": ledger}
