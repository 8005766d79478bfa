"""The demo stays healthy as time passes (issue 27, item 9).

A fresh demo ledger holds requests and turns still in flight (received a minute ago, the agent
still answering): a showcase of the live pages. Left alone they stay in flight, and fifteen
minutes later the health report calls them stuck, an ERROR a newcomer reads as "it broke". So
the background process finishes them, as the runtime would have: a few minutes after it started,
each in-flight request of the demo ledger runs its remaining stages and completes, and the turn
it ran (with its pending tool calls) completes too.

Only a ledger `ledger_demo` built is touched: it carries the demo's mark in the SQLite header's
application_id (demo/marker.py), which no runtime's ledger has. On any other ledger the step
does nothing.
"""

import json
import random

from django.db import connections, transaction

from background.jobs import Job, Step, register
from ledgerfacts.timestamps import now_ms
from ledgerweb import sqlite
from ledgerweb.db import LEDGER, LEDGER_WRITE

from .marker import DEMO_MARKS
from .pipeline import STAGE_MS, STAGES

# In flight this long, a demo request is finished (the health report calls one stuck after 15
# minutes: ledgerweb/health.py, STUCK_AFTER_MS).
FINISH_AFTER_MS = 3 * 60_000
EVERY_S = 60
BATCH = 200  # requests a step finishes, in one short write transaction


def is_demo_ledger() -> bool:
    """Whether the ledger is a file `ledger_demo` built (its header's application_id)."""
    if connections[LEDGER].vendor != "sqlite":
        return False
    ((application_id,),) = sqlite.rows("PRAGMA application_id")
    return application_id in DEMO_MARKS


def finish_in_flight(**options) -> Step:
    if not is_demo_ledger():
        return Step()
    cutoff = now_ms() - FINISH_AFTER_MS
    with transaction.atomic(using=LEDGER_WRITE), connections[LEDGER_WRITE].cursor() as cursor:
        cursor.execute(
            "SELECT id, stage, stage_timings, started_at, turn_id FROM nexus_requests"
            " WHERE status = 'processing' AND started_at < %s LIMIT %s",
            [cutoff, BATCH],
        )
        requests = cursor.fetchall()
        for request_id, stage, raw_timings, started, turn_id in requests:
            timings = _finished_timings(stage, raw_timings, random.Random(request_id))
            done = int(started) + sum(timings.values())
            cursor.execute(
                "UPDATE nexus_requests SET status = 'completed', stage = 'finalize',"
                " stage_timings = %s, completed_at = %s WHERE id = %s",
                [json.dumps(timings), done, request_id],
            )
            if turn_id:
                _finish_turn(cursor, turn_id, done)
        # A live head without a request (a subagent's turn): finished too.
        cursor.execute(
            "SELECT id, started_at FROM turns WHERE status IN ('pending', 'streaming')"
            " AND started_at < %s LIMIT %s",
            [cutoff, BATCH],
        )
        turns = cursor.fetchall()
        for turn_id, started in turns:
            _finish_turn(cursor, turn_id, int(started) + FINISH_AFTER_MS)
    finished = len(requests) + len(turns)
    if not finished:
        return Step()
    return Step(
        f"finished {len(requests)} demo requests and {len(turns)} turns still in flight",
        more=len(requests) == BATCH or len(turns) == BATCH,
    )


def _finished_timings(stage: str, raw: str | None, rng: random.Random) -> dict[str, int]:
    """The request's timings so far, and the stages from where it was on to finalize."""
    try:
        timings = json.loads(raw) if raw else {}
    except ValueError:
        timings = {}
    if not isinstance(timings, dict):
        timings = {}
    start = STAGES.index(stage) if stage in STAGES else 0
    for name in STAGES[start:]:
        if not isinstance(timings.get(name), int | float):
            median, sigma = STAGE_MS[name]
            timings[name] = max(1, round(rng.lognormvariate(0, sigma) * median))
    return {name: int(value) for name, value in timings.items()}


def _finish_turn(cursor, turn_id: str, done: int) -> None:
    cursor.execute(
        "UPDATE tool_calls SET status = 'completed', completed_at = %s"
        " WHERE turn_id = %s AND status = 'pending'",
        [done, turn_id],
    )
    cursor.execute(
        "UPDATE turns SET status = 'completed', completed_at = %s"
        " WHERE id = %s AND status IN ('pending', 'streaming')",
        [done, turn_id],
    )


def register_all() -> None:
    register(Job("demo-in-flight", every_s=EVERY_S, step=finish_in_flight))
