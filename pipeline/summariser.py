"""The chart summaries as a background job (background/): `manage.py ledger_background`, which
`make serve` starts beside gunicorn, builds the dashboard's missing hours newest first and keeps
up as the ledger grows, so that no page view pays for building them (see docs/decisions.md).

While a background process holds this ledger's lock (background.lock.running()), pages build no
hours and say the hours are being built for them.
"""

import time

from background.jobs import Job, Step, register
from ledgerfacts.timestamps import now_ms
from ledgerweb import sqlite
from pipeline import rollups

DAY = 24 * rollups.HOUR
# Building time per step: the census of the window runs again between steps, and the other
# background jobs take their turn.
SLICE_S = 5.0


def first_hour(until: int, days: int) -> int | None:
    """On the hour (a window's cut first hour is read live, not built), and not before the
    ledger's first request; None for a ledger without requests."""
    ((oldest,),) = sqlite.rows("SELECT min(started_at) FROM nexus_requests")
    if oldest is None:
        return None
    return int(max(until - days * DAY, oldest)) // rollups.HOUR * rollups.HOUR


def window_plan(days: int, budget_s: float) -> rollups.Plan:
    until = now_ms()
    since = first_hour(until, days)
    return rollups.Plan([], []) if since is None else rollups.plan(since, until, budget_s)


def summarise(days: int = 30, **options) -> Step:
    """One step: build missing hours of the window, newest first, for up to SLICE_S seconds.
    More is waiting while hours are missing and this step built some (an hour the ledger keeps
    changing waits for the next round)."""
    if "nexus_requests" not in sqlite.table_names():
        return Step()
    left = len(window_plan(days, budget_s=0).pending)
    if not left:
        return Step()
    started = time.monotonic()
    plan = window_plan(days, budget_s=SLICE_S)
    return Step(
        f"{len(plan.stored):,} of {len(plan.stored) + len(plan.pending):,} hours "
        f"summarised ({time.monotonic() - started:.1f} s)",
        more=0 < len(plan.pending) < left,
    )


def register_job() -> None:
    register(Job("summarise", every_s=None, step=summarise, first=True))
