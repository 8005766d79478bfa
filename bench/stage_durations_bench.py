"""Server time of "a stage's p95 → the requests above it" (journey 4.3) on a 1M-request ledger.

    .venv/bin/python -m bench.stage_durations_bench --write-doc

Uses var/bench/pipeline-1m.sqlite3 and var/bench/django.sqlite3 as bench.pipeline_bench does
(builds the ledger when missing, ~3 minutes, and the dashboard's rollups). Times the stage-timings
chart and the request lists its figures link to (a stage's timing at or above its p95 or its max,
slowest first, the next page, with another filter), over 24 hours and 30 days ending at the
ledger's newest request; first with every hour summarised, then (--unsummarised) as on a fresh
install before the summariser has run, where the list reads the newest hours live up to its
bound and says which it left out.
"""

import argparse
import sys
import time
from urllib.parse import parse_qsl, urlencode

from bench.pipeline_bench import (
    BENCH,
    DEMO_ARGS,
    HOUR,
    LEDGER,
    SLOW_MS,
    WINDOWS,
    build_rollups,
    measure,
    setup,
)
from bench.sessions_bench import (
    ROOT,
    case,
    code_version,
    load,
    manage,
    run_header,
    scalar,
    table,
)
from tools.docfile import replace_section

COMMAND = ".venv/bin/python -m bench.stage_durations_bench --write-doc"
HEADING = "# Benchmarks: a stage's p95 to its requests (journey 4.3)"
TARGET_MS = 500  # the list a chart's figure opens, like a chart of the 24 h window
STAGE = "runAgent"


def cases() -> list[dict]:
    from bench.sessions_bench import superuser_client

    client = superuser_client()
    until = scalar(LEDGER, "SELECT max(started_at) FROM nexus_requests") + 1
    todo = []
    for window, span in WINDOWS.items():
        since = (until - span) // HOUR * HOUR
        qs = urlencode({"since": since, "until": until})
        chart = f"/pipeline/charts/stage-timings/?{qs}"
        todo.append(case(f"chart stage-timings, {window}", LEDGER, window, chart, TARGET_MS))
        data = client.get(chart + "&format=json").json()
        # The slowest stage's p95, as a person picks it from the chart.
        stage = max(data["stages"], key=lambda s: s["p95"])
        name = stage["stage"]
        p95, top = stage["links"]["p95"], stage["links"]["max"]
        todo.append(case(f"{name} ≥ p95 ({stage['p95']:,.0f} ms), slowest first, {window}", LEDGER,
                         f"{p95['requests']:,} requests", p95["url"], TARGET_MS))  # fmt: skip
        first = client.get(p95["url"] + "&format=json").json()
        if first["next"]:
            todo.append(case(f"… its page 2, {window}", LEDGER, "", p95["url"] + "&"
                             + urlencode({"after": first["next"]}), TARGET_MS))  # fmt: skip
        todo.append(case(f"{name} ≥ max (the slowest), {window}", LEDGER,
                         f"{top['requests']:,} requests", top["url"], TARGET_MS))  # fmt: skip
        failed = dict(parse_qsl(p95["url"].split("?", 1)[1])) | {"status": "failed"}
        todo.append(case(f"failed, {name} ≥ p95, slowest first, {window}", LEDGER, "",
                         "/pipeline/requests/?" + urlencode(failed), TARGET_MS))  # fmt: skip
    everything = {"timing": STAGE, "order": "slowest"}
    todo.append(case(f"every request by {STAGE}, slowest first, all time", LEDGER,
                     "1,005,786 rows", "/pipeline/requests/?" + urlencode(everything),
                     TARGET_MS))  # fmt: skip
    return todo


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--runs", type=int, default=10)
    parser.add_argument("--slow-runs", type=int, default=3)
    parser.add_argument("--warmup", type=int, default=2)
    parser.add_argument("--write-doc", action="store_true")
    args = parser.parse_args()
    start, before = time.monotonic(), {"load": load(), "code": code_version()}
    BENCH.mkdir(parents=True, exist_ok=True)
    manage("migrate", "--verbosity", "0")
    if not LEDGER.exists():
        manage("ledger_demo", str(LEDGER.relative_to(ROOT)), *DEMO_ARGS)
    setup()
    from pipeline import rollups
    from pipeline.models import RollupHour

    # Hours a run stopped before putting back (an interrupted run) come back first.
    RollupHour.objects.filter(ledger="bench-set-aside").update(ledger=rollups.ledger_key())
    summary = build_rollups()
    print(f"rollups: {summary}", file=sys.stderr)
    todo = cases()
    rows = measure(todo, args.runs, args.slow_runs, args.warmup)
    # Then as on a fresh install: the stored hours set aside (not deleted: moved to another
    # ledger key and back), the same URLs reading the newest hours live.
    from background import lock

    stored = rollups.ledger_key()
    RollupHour.objects.filter(ledger=stored).update(ledger="bench-set-aside")
    rollups._plans = rollups.sqlite.WhileUnchanged(keep=64)
    running = lock.running
    lock.running = lambda: True  # as beside a summariser: no page builds hours meanwhile
    try:
        fresh = [c | {"page": c["page"] + " (nothing summarised)"} for c in todo]
        rows += measure(fresh, args.runs, args.slow_runs, args.warmup)
    finally:
        lock.running = running
        RollupHour.objects.filter(ledger="bench-set-aside").update(ledger=stored)
    rows = [r | {"page": f"{r['page']} ({r['runs']} runs)"} for r in rows]
    print(table(rows))
    if args.write_doc:
        replace_section(HEADING, doc(rows, args, time.monotonic() - start, before, summary))
        print("wrote docs/benchmarks.md")


def doc(rows, args, seconds: float, before: dict, summary: str) -> str:
    return f"""{run_header(HEADING, COMMAND, before)}- Runs: {args.warmup} warm-up requests,
  then {args.runs} timed requests per page, or {args.slow_runs} (p95 = max) for a page slower than
  {SLOW_MS / 1000:g} s in warm-up; whole run {seconds:.0f} s.
- Ledger: `{LEDGER.relative_to(ROOT)}` (`manage.py ledger_demo … {" ".join(DEMO_ARGS)}`), its
  rollups in `var/bench/django.sqlite3`: {summary}. Windows end at the newest `started_at` + 1 ms
  and start on the hour, as the preset windows do. Each list is the URL the chart's JSON gives
  for the figure (`links`), as a click on the bar or the table's figure opens it.
- "Nothing summarised": the same pages with the stored hours set aside, as on a fresh install
  before the summariser has run: the lists read the newest hours live, up to 10,000 requests,
  and say which hours they did not search (the chart too: it counts what it read).
- Query time limit lifted to 600 s as in bench.pipeline_bench, so that what is measured is the
  whole work. Target: a chart's figure opens its list within {TARGET_MS} ms (p95).

Server time as in the sessions section.

{table(rows)}
"""


if __name__ == "__main__":
    main()
