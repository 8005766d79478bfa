"""What checking the dashboard's stored hours costs, and what the browser's preset windows cost.

    .venv/bin/python -m bench.rollup_checks --write-doc

On the pipeline bench's 1M-request ledger (var/bench/pipeline-1m.sqlite3, built when missing)
with its rollups built (var/bench/django.sqlite3, ~6 min the first time): the time of each
check a plan makes (pipeline/rollups.py) over the last 24 hours and 30 days of the ledger, and
of the 7 charts as the dashboard asks for them (`?window=30d`, a window ending now), with the
plan kept between charts and made again for each chart (as before the plan key ignored `until`).
The clock is moved back so that "now" is just after the ledger's newest request, and keeps
ticking: each chart's window ends a little later, as in a browser.
"""

import argparse
import math
import statistics
import sys
import time
from contextlib import contextmanager
from datetime import timedelta

from bench.pipeline_bench import HOUR, LEDGER, build_rollups, setup
from bench.sessions_bench import (
    DOC,
    ROOT,
    code_version,
    load,
    manage,
    run_header,
    scalar,
    superuser_client,
)
from tools.docfile import publish

HEADING = "# Benchmarks: checking the stored chart hours"
COMMAND = ".venv/bin/python -m bench.rollup_checks --write-doc"
DEMO_ARGS = ("--scale", "165", "--seed", "2", "--now", "1795658400000")  # as pipeline_bench
WINDOWS = {"24h": 24 * HOUR, "30d": 30 * 24 * HOUR}


@contextmanager
def clock_from(start_ms: int):
    """now_ms() starts at `start_ms` and ticks on (every caller reads ledgerfacts.timestamps)."""
    from ledgerfacts import timestamps

    real = timestamps.datetime
    offset = timedelta(milliseconds=timestamps.now_ms() - start_ms)

    class Shifted(real):
        @classmethod
        def now(cls, tz=None):
            return real.now(tz) - offset

    timestamps.datetime = Shifted
    try:
        yield
    finally:
        timestamps.datetime = real


def timed(fn, runs: int) -> tuple[float, float]:
    """Median and max of `runs` calls, in ms."""
    times = []
    for _ in range(runs):
        start = time.perf_counter()
        fn()
        times.append((time.perf_counter() - start) * 1000)
    return statistics.median(times), max(times)


def check_rows(until: int, runs: int) -> list[tuple[str, str, int, float, float]]:
    """(check, window, ledger rows read, median ms, max ms) for each check a plan makes."""
    from django.db import transaction

    from ledgerweb.db import LEDGER as ALIAS

    rows = []
    for window, span in WINDOWS.items():
        for label, (fn, read) in _checks((until - span) // HOUR * HOUR, until).items():
            with transaction.atomic(using=ALIAS):  # as in a request: one read transaction
                fn()  # warm
                median, worst = timed(fn, runs if read < 200_000 else max(3, runs // 4))
            rows.append((label, window, read, median, worst))
            print(f"{window} {label}: {median:.1f} ms", file=sys.stderr)
    return rows


def _checks(since: int, until: int) -> dict[str, tuple]:
    """label → (function, ledger rows it reads)."""
    from pipeline import rollups

    end = (until - rollups.SETTLE_MS) // HOUR * HOUR
    n = scalar(LEDGER, "SELECT count(*) FROM nexus_requests WHERE started_at >= ? AND "
               "started_at < ?", (since, end))  # fmt: skip
    hours = sorted(rollups.census(since, end))
    batch, batch_rows = _verify_batch(hours)
    return {
        "which ledger (anchor lookup)": (rollups.ledger_key, 1),
        "census: count per hour (before)": (lambda: _count_only(since, end), n),
        "census: count + rowid sum per hour": (lambda: rollups.census(since, end), n),
        "'processing' rows per hour": (lambda: rollups.processing_counts(since, end), n),
        f"content of the {len(batch)} hours verified longest ago (one plan)": (
            lambda: rollups.content_checksums(batch), batch_rows),
        "content of every hour (ledger_rollup)": (lambda: rollups.content_checksums(hours), n),
        "a whole plan, made, with its content re-read": (
            lambda: _fresh_plan(since, until, reread=True), n),
        "a whole plan, made, within VERIFY_EVERY_S of the last re-read": (
            lambda: _fresh_plan(since, until, reread=False), n),
        "a whole plan, kept (ledger unchanged)": (lambda: rollups.plan(since, until), 0),
    }  # fmt: skip


def _count_only(since: int, end: int):
    """The census as it was: row counts only (index-only count(*))."""
    from ledgerweb import sqlite

    nh = f"(SELECT min(started_at) FROM nexus_requests WHERE started_at >= {{}}) / {HOUR} * {HOUR}"
    return sqlite.rows(
        f"""WITH RECURSIVE hour(start) AS (SELECT {nh.format("%s")} UNION ALL
                SELECT {nh.format(f"hour.start + {HOUR}")} FROM hour WHERE hour.start < %s)
            SELECT start, (SELECT count(*) FROM nexus_requests WHERE started_at >= start
                           AND started_at < start + {HOUR}) FROM hour WHERE start < %s""",
        [since, end, end],
    )


def _verify_batch(hours: list[int]) -> tuple[list[int], int]:
    """The hours one plan re-reads (oldest verified first, up to VERIFY_ROWS rows) and rows."""
    from pipeline import rollups
    from pipeline.models import RollupHour

    stored = dict(
        RollupHour.objects.filter(ledger=rollups.ledger_key(), hour__in=hours)
        .order_by("verified_at", "-hour")
        .values_list("hour", "requests")
    )
    picked, n = [], 0
    for hour, requests in stored.items():
        if picked and n + requests > rollups.VERIFY_ROWS:
            break
        picked.append(hour)
        n += requests
    return picked, n


def _fresh_plan(since: int, until: int, reread: bool):
    """A plan made again (as after a ledger commit), re-reading content or not."""
    from pipeline import rollups

    rollups._plans._kept.clear()
    rollups._content_checked_at = -math.inf if reread else time.monotonic()
    return rollups.plan(since, until)


def chart_rows(runs: int) -> list[tuple[str, float, float]]:
    """(what, median ms, max ms) of the dashboard's 7 charts of each preset window, one after
    another, with the plan kept and made for each chart in turn (so that a change in the
    machine's load weighs on both alike)."""
    from pipeline import rollups
    from pipeline.charts import CHARTS

    client = superuser_client()

    def dashboard(window: str, kept: bool) -> float:
        start = time.perf_counter()
        for slug in CHARTS:
            if not kept:
                rollups._plans._kept.clear()  # as when the key held `until`
            url = f"/pipeline/charts/{slug}/?window={window}"
            assert client.get(url).status_code == 200, url
        return (time.perf_counter() - start) * 1000

    rows = []
    for window in WINDOWS:
        times: dict[bool, list[float]] = {True: [], False: []}
        dashboard(window, True)  # warm
        for _ in range(runs):
            for kept in (True, False):
                times[kept].append(dashboard(window, kept))
        for kept, what in (
            (True, "plan kept between charts (now)"),
            (False, "plan made for each chart (before; or after each commit)"),
        ):
            rows.append((f"7 charts of `?window={window}`, {what}",
                         statistics.median(times[kept]), max(times[kept])))  # fmt: skip
            print(f"{rows[-1][0]}: {rows[-1][1]:.0f} ms", file=sys.stderr)
    return rows


def dashboards(runs: int) -> int:
    """How many dashboards of 7 charts are timed."""
    return runs


def doc(checks, charts, args, seconds: float, before: dict, rollups: str) -> str:
    from pipeline import rollups as r

    check_table = "\n".join(
        f"| {label} | {window} | {read:,} | {median:.1f} | {worst:.1f} |"
        for label, window, read, median, worst in checks
    )
    chart_table = "\n".join(f"| {what} | {m:.0f} | {w:.0f} |" for what, m, w in charts)
    return f"""{run_header(HEADING, COMMAND, before)}- Ledger: `{LEDGER.relative_to(ROOT)}`
  (`manage.py ledger_demo … {" ".join(DEMO_ARGS)}`), the windows end at its newest request;
  rollups: {rollups}. VERIFY_ROWS = {r.VERIFY_ROWS:,}, VERIFY_EVERY_S = {r.VERIFY_EVERY_S:g}.
  Whole run {seconds:.0f} s.
- Each check inside one read transaction, as in a request; median and max of {args.runs} runs
  ({max(3, args.runs // 4)} for those reading more than 200,000 rows). On a loaded machine (see
  the load average) a figure can move by half from one run to the next: a whole plan, which
  includes the census, may measure less than the census alone.

| check (pipeline/rollups.py) | window | ledger rows | median ms | max ms |
|---|---|--:|--:|--:|
{check_table}

The dashboard as the browser loads it (Django's test client, in process, one chart after
another; median and max of {dashboards(args.runs)} dashboards):

| charts | median ms | max ms |
|---|--:|--:|
{chart_table}
"""


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--runs", type=int, default=10)
    parser.add_argument("--write-doc", action="store_true", help=f"write {DOC.relative_to(ROOT)}")
    args = parser.parse_args()
    start, before = time.monotonic(), {"load": load(), "code": code_version()}
    LEDGER.parent.mkdir(parents=True, exist_ok=True)
    manage("migrate", "--verbosity", "0")
    if not LEDGER.exists():
        manage("ledger_demo", str(LEDGER.relative_to(ROOT)), *DEMO_ARGS)
    setup()
    rollups = build_rollups()
    print(f"rollups: {rollups}", file=sys.stderr)
    newest = scalar(LEDGER, "SELECT max(started_at) FROM nexus_requests")
    with clock_from(newest + 1):
        checks = check_rows(newest + 1, args.runs)
        charts = chart_rows(dashboards(args.runs))
    text = doc(checks, charts, args, time.monotonic() - start, before, rollups)
    publish(HEADING, text, args.write_doc)


if __name__ == "__main__":
    main()
