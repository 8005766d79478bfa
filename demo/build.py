"""Build the demo ledger: plan the sessions, stream every row into a temporary file, index it,
switch it to WAL and move it into place (an interrupted build never leaves a half ledger)."""

import math
import os
import sqlite3
import sys
import time
from pathlib import Path

from tqdm import tqdm

from ledgerfacts.schema import create_indexes, create_ledger

from .agents import PrimarySpec, write_primary_session
from .context import DemoContext
from .marker import DEMO_APPLICATION_ID, DEMO_LIVE_APPLICATION_ID
from .personas import PERSONA_WEIGHTS, PERSONAS, Address
from .pipeline import write_extra_requests, write_processing_requests
from .plan import Script
from .sink import RowSink
from .timeline import DAY, HISTORY, MINUTE, SECOND

# Counts at scale 1: about 170 channel sessions (plus their subagents and forks), ~2,500 turns,
# ~6,000 Nexus requests. Every count below is multiplied by --scale.
PRIMARY_SESSIONS = 170
EXTRA_REQUESTS = 3_850
LONG_SESSION_TURNS = 400
LONG_ANSWER_RATE = 0.004
FORK_RATE = 0.1
RECENT_HEAD_RATE = 0.04
ARCHIVE_AFTER = 10 * DAY
ARCHIVE_RATE = 0.65
DELETE_RATE = 0.006

LONG_SESSION_ADDRESS = Address(
    "cursor", "message", "cursor:ledgerweb:1", "ledgerweb — main working session",
    "owner", "person", True, "owner-full",
)  # fmt: skip


class LedgerExists(Exception):
    pass


def build_demo_ledger(path: Path | str, *, seed: int = 1, scale: float = 1.0,
                      now_ms: int | None = None, replace: bool = False,
                      progress: bool = False,
                      extra_requests_scale: float | None = None,
                      live: bool = False) -> dict[str, int]:  # fmt: skip
    """Write a demo ledger to path and return the row count of each table.

    extra_requests_scale, when given, scales the requests that run no agent instead of `scale`
    (a benchmark ledger with many sessions then keeps about one request per turn). `live`
    marks the file for the demo's live writer (demo/live_writer.py), which keeps it moving."""
    path = Path(path)
    if path.exists() and not replace:
        raise LedgerExists(f"{path} exists (use --replace to overwrite it)")
    now = now_ms if now_ms is not None else int(time.time() * 1000)
    tmp = path.with_name(path.name + ".tmp")
    _remove(tmp)
    try:
        extra_scale = scale if extra_requests_scale is None else extra_requests_scale
        counts = _build(tmp, seed, scale, extra_scale, now, progress, live)
        # A WAL left by the file we replace would be replayed into the new one: drop it first.
        _remove(Path(f"{path}-wal"), Path(f"{path}-shm"))
        os.replace(tmp, path)
    except BaseException:
        _remove(tmp)
        raise
    return counts


def _remove(*paths: Path) -> None:
    for p in paths:
        p.unlink(missing_ok=True)


def _build(tmp: Path, seed: int, scale: float, extra_scale: float, now: int,
           progress: bool, live: bool = False) -> dict[str, int]:  # fmt: skip
    create_ledger(tmp, with_indexes=False)
    conn = sqlite3.connect(tmp)
    try:
        # No journal and no fsync while loading: the file is thrown away if the build fails.
        conn.execute("PRAGMA journal_mode = OFF")
        conn.execute("PRAGMA synchronous = OFF")
        conn.execute("PRAGMA cache_size = -200000")
        sink = RowSink(conn)
        _generate(DemoContext.create(seed, now, sink), scale, extra_scale, progress)
        sink.flush()
        conn.commit()
        create_indexes(conn)
        conn.commit()
        conn.execute("PRAGMA journal_mode = WAL")
        # The demo's mark (demo/marker.py): demo/live.py finishes its in-flight requests, and
        # with `live` the live writer keeps it moving (demo/live_writer.py).
        mark = DEMO_LIVE_APPLICATION_ID if live else DEMO_APPLICATION_ID
        conn.execute(f"PRAGMA application_id = {mark}")
        return dict(sink.counts)
    finally:
        conn.close()


def _generate(ctx: DemoContext, scale: float, extra_scale: float, progress: bool) -> None:
    specs = plan_sessions(ctx, scale)
    extra = round(EXTRA_REQUESTS * extra_scale)
    total = sum(spec.n_turns for spec in specs) + extra
    floor = ctx.now - HISTORY + MINUTE
    with tqdm(total=total, unit="row", file=sys.stderr, disable=not progress,
              desc="demo ledger") as bar:  # fmt: skip
        for spec in specs:
            write_primary_session(ctx, spec, floor)
            bar.update(spec.n_turns)
        write_extra_requests(ctx.requests, ctx.rng, extra, ctx.now, bar)
        write_processing_requests(ctx.requests, ctx.rng, max(4, min(60, round(8 * scale))),
                                  ctx.now)  # fmt: skip


def plan_sessions(ctx: DemoContext, scale: float) -> list[PrimarySpec]:
    """The channel sessions, oldest activity anywhere in the last 30 days.

    The first two are scripted so every page has something to show at any scale: a long coding
    session (compactions, a 600-tool-call turn, a three-way branch, forks) and a deleted one.
    """
    rng = ctx.rng
    specs = [_long_session(ctx, scale), _deleted_session(ctx)]
    count = max(8, round(PRIMARY_SESSIONS * scale))
    long_answer_rate = LONG_ANSWER_RATE / math.sqrt(max(1.0, scale))
    recent = max(3, round(count * RECENT_HEAD_RATE))
    for i in range(count - len(specs)):
        persona = rng.choices(PERSONAS, PERSONA_WEIGHTS)[0]
        spec = PrimarySpec(persona, _session_length(rng), _last_start(ctx),
                           long_answer_rate=long_answer_rate)  # fmt: skip
        if i < recent:  # a live head: the agent is working on it right now
            spec.head_state = ("pending", "streaming", "delivering")[i % 3]
            spec.last_start = ctx.now - rng.randint(3, 90) * SECOND
        elif ctx.now - spec.last_start > ARCHIVE_AFTER:
            spec.status = _old_session_status(rng)
        if spec.n_turns >= 3 and rng.random() < FORK_RATE:
            spec.fork_own_turns = (rng.choice((0, 1, 2, 3, 5)),)
        specs.append(spec)
    rng.shuffle(specs)
    return specs


def _long_session(ctx: DemoContext, scale: float) -> PrimarySpec:
    n = min(5000, max(LONG_SESSION_TURNS, int(LONG_SESSION_TURNS * scale)))
    script = Script(
        fail_at=(n // 5, n // 5 + 1),  # two failed retries: three branches from one parent
        tool_calls_at={n // 3: 600, n // 2: 180},
        long_answer_at=n // 4,
    )
    echo = PERSONAS[1]
    return PrimarySpec(echo, n, ctx.now - 2 * 3600 * SECOND, address=LONG_SESSION_ADDRESS,
                       script=script, fork_own_turns=(0, 3))  # fmt: skip


def _deleted_session(ctx: DemoContext) -> PrimarySpec:
    atlas = PERSONAS[0]
    return PrimarySpec(atlas, 6, ctx.now - 20 * DAY, status="deleted")


def _session_length(rng) -> int:
    """Mostly short conversations, some medium, a few long ones."""
    roll = rng.random()
    if roll < 0.4:
        return rng.randint(1, 5)
    if roll < 0.8:
        return rng.randint(6, 20)
    return rng.randint(21, 45)


def _last_start(ctx: DemoContext) -> int:
    """When a session's newest turn started: half in the last few days, half any time."""
    rng = ctx.rng
    if rng.random() < 0.5:
        age = int(rng.expovariate(1 / (1.5 * DAY))) + 20 * MINUTE
    else:
        age = rng.randint(20 * MINUTE, 28 * DAY)
    return ctx.now - min(age, 29 * DAY)


def _old_session_status(rng) -> str:
    roll = rng.random()
    if roll < DELETE_RATE:
        return "deleted"
    return "archived" if roll < ARCHIVE_RATE else "active"
