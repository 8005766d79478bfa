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
import sqlite3
from contextlib import closing

from django.db import connections

from background.jobs import Job, Step, register
from ledgerfacts.dbapi import write_transaction
from ledgerfacts.timestamps import now_ms
from ledgerweb import sqlite
from ledgerweb.db import BUSY_TIMEOUT_S, LEDGER, LEDGER_WRITE, ledger_path_of

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
    # A writable connection of its own to the demo's file, as the demo's other writers
    # (demo/live_writer.py): one short write transaction, never the browsing path's.
    path = ledger_path_of(LEDGER_WRITE)
    with (
        closing(sqlite3.connect(path, timeout=BUSY_TIMEOUT_S, isolation_level=None)) as conn,
        write_transaction(conn),
    ):
        requests = conn.execute(
            "SELECT id, stage, stage_timings, started_at, turn_id FROM nexus_requests"
            " WHERE status = 'processing' AND started_at < ? LIMIT ?",
            [cutoff, BATCH],
        ).fetchall()
        for request_id, stage, raw_timings, started, turn_id in requests:
            timings = _finished_timings(stage, raw_timings, random.Random(request_id))
            done = int(started) + sum(timings.values())
            conn.execute(
                "UPDATE nexus_requests SET status = 'completed', stage = 'finalize',"
                " stage_timings = ?, completed_at = ? WHERE id = ?",
                [json.dumps(timings), done, request_id],
            )
            if turn_id:
                _finish_turn(conn, turn_id, done)
        # A live head without a request (a subagent's turn): finished too.
        turns = conn.execute(
            "SELECT id, started_at FROM turns WHERE status IN ('pending', 'streaming')"
            " AND started_at < ? LIMIT ?",
            [cutoff, BATCH],
        ).fetchall()
        for turn_id, started in turns:
            _finish_turn(conn, turn_id, int(started) + FINISH_AFTER_MS)
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


def _finish_turn(conn: sqlite3.Connection, turn_id: str, done: int) -> None:
    conn.execute(
        "UPDATE tool_calls SET status = 'completed', completed_at = ?"
        " WHERE turn_id = ? AND status = 'pending'",
        [done, turn_id],
    )
    conn.execute(
        "UPDATE turns SET status = 'completed', completed_at = ?"
        " WHERE id = ? AND status IN ('pending', 'streaming')",
        [done, turn_id],
    )


def register_all() -> None:
    register(Job("demo-in-flight", every_s=EVERY_S, step=finish_in_flight))
