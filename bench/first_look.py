"""The first look at a big ledger: a fresh install's dashboard while the summariser works.

    .venv/bin/python -m bench.first_look --write-doc

On the pipeline bench's 1M-request ledger (var/bench/pipeline-1m.sqlite3, built when missing),
with a fresh Django database (var/bench/first-look-django.sqlite3, deleted and migrated): the
background summariser (`ledger_rollup --follow`, in its own process, as `make serve` starts it)
and, from the same moment, the dashboard as the browser loads it: the page `?window=30d`, then
its 7 charts (`/pipeline/charts/<slug>/?window=30d`, with `HX-Request`), again and again until
the page no longer says "Summarising". Then the 7 charts of each preset window, summarised.
The production query time limit stays on (a chart that runs out of time answers 503: counted).
The clock is moved back to just after the ledger's newest request, in both processes.
"""

import argparse
import os
import re
import statistics
import subprocess
import sys
import time

from bench.pipeline_bench import DEMO_ARGS, LEDGER
from bench.rollup_checks import clock_from
from bench.sessions_bench import (
    BENCH,
    DOC,
    ENV,
    ROOT,
    code_version,
    load,
    manage,
    run_header,
    scalar,
    superuser_client,
)
from tools.docfile import publish

HEADING = "# Benchmarks: the first look at a big ledger"
COMMAND = ".venv/bin/python -m bench.first_look --write-doc"
DJANGO_DB = BENCH / "first-look-django.sqlite3"
BENCH_ENV = ENV | {"LEDGER_DB": str(LEDGER), "DJANGO_DB": str(DJANGO_DB)}
TARGETS = {"24h": 500, "30d": 2000}  # ms, the 7 charts summed (issue 21)
WHILE_TARGET = 2000  # ms, each chart while summarising
PROGRESS = re.compile(r"Summarising: ([\d,]+) of ([\d,]+) hours")


def setup() -> None:
    os.environ.update(BENCH_ENV)
    sys.path.insert(0, str(ROOT))
    import django

    django.setup()
    from django.core.management import call_command
    from django.test.utils import override_settings

    # DEBUG off serves hashed names from a manifest: as bench.pipeline_bench.setup.
    override_settings(STATIC_ROOT=BENCH / "static").enable()
    call_command("collectstatic", interactive=False, verbosity=0)


def summariser(newest: int) -> None:
    """The --summarise process: ledger_rollup --follow on the bench's clock."""
    setup()
    from django.core.management import call_command

    with clock_from(newest + 1):
        call_command("ledger_rollup", follow=True, every=5)


def dashboard(client, window: str) -> tuple[float, tuple[int, int] | None, list[dict]]:
    """The page and its 7 charts as the browser asks for them: (page ms, progress or None when
    summarised, one dict per chart)."""
    from pipeline.charts import CHARTS

    start = time.perf_counter()
    page = client.get(f"/pipeline/?window={window}")
    page_ms = (time.perf_counter() - start) * 1000
    found = PROGRESS.search(page.content.decode())
    progress = tuple(int(g.replace(",", "")) for g in found.groups()) if found else None
    charts = []
    for slug in CHARTS:
        start = time.perf_counter()
        response = client.get(f"/pipeline/charts/{slug}/?window={window}", HTTP_HX_REQUEST="true")
        charts.append({
            "slug": slug, "ms": (time.perf_counter() - start) * 1000,
            "status": response.status_code,
            "left_out": "Not counted yet" in response.content.decode(),
        })  # fmt: skip
    return page_ms, progress, charts


def first_look(timeout_s: float) -> dict:
    """Dashboards of 30 days from the summariser's start until summarised."""
    client = superuser_client()
    newest = scalar(LEDGER, "SELECT max(started_at) FROM nexus_requests")
    process = subprocess.Popen(
        [sys.executable, "-m", "bench.first_look", "--summarise", str(newest)],
        cwd=ROOT, env=os.environ | BENCH_ENV, stdout=subprocess.DEVNULL,
    )  # fmt: skip
    rounds, start = [], time.monotonic()
    try:
        time.sleep(1)  # the summariser holds its lock
        while time.monotonic() - start < timeout_s:
            page_ms, progress, charts = dashboard(client, "30d")
            rounds.append({"at": time.monotonic() - start, "page": page_ms,
                           "progress": progress, "charts": charts})  # fmt: skip
            print(f"{rounds[-1]['at']:.0f} s: {progress} "
                  f"{sum(c['ms'] for c in charts):.0f} ms", file=sys.stderr)  # fmt: skip
            if progress is None:
                break
    finally:
        # Summarised, the summariser runs the health checks (~40 s of a core on this ledger,
        # hourly): stopped here, so that what follows measures the charts, not that.
        process.terminate()
        process.wait()
    after = {window: [dashboard(client, window)[2] for _ in range(5)] for window in TARGETS}
    return {"rounds": rounds, "after": after}


def progress(hours: tuple[int, int] | None) -> str:
    return f"{hours[0]} of {hours[1]}" if hours else "all"


def doc(result: dict, seconds: float, before: dict) -> str:
    rounds, after = result["rounds"], result["after"]
    during = [r for r in rounds if r["progress"] is not None]
    done = next((r["at"] for r in rounds if r["progress"] is None), None)
    chart_ms = [c["ms"] for r in during for c in r["charts"]]
    failures = sum(c["status"] != 200 for r in rounds for c in r["charts"])
    lines = "\n".join(
        f"| {r['at']:.0f} | {progress(r['progress'])} | "
        f"{r['page']:.0f} | {max(c['ms'] for c in r['charts']):.0f} | "
        f"{sum(c['ms'] for c in r['charts']):.0f} | "
        f"{sum(c['left_out'] for c in r['charts'])} |"
        for r in rounds
    )
    after_lines = "\n".join(
        f"| {window} | {statistics.median(sum(c['ms'] for c in d) for d in dashboards):.0f} | "
        f"{TARGETS[window]} | {max(c['ms'] for d in dashboards for c in d):.0f} |"
        for window, dashboards in after.items()
    )
    summary = (
        f"fully summarised after **{done:.0f} s**" if done is not None
        else f"**not fully summarised** after {rounds[-1]['at']:.0f} s"
    )  # fmt: skip
    worst = f"{max(chart_ms):.0f} ms" if chart_ms else "none measured"
    over = sum(max(c["ms"] for c in r["charts"]) > WHILE_TARGET for r in during)
    return f"""{run_header(HEADING, COMMAND, before)}- Ledger: `{LEDGER.relative_to(ROOT)}`
  (1M requests over 30 days, `manage.py ledger_demo … {" ".join(DEMO_ARGS)}`); a fresh Django
  database; Django's test client in process, the summariser in a process of its own. Whole run
  {seconds:.0f} s.
- Result: {summary}; {failures} chart answers other than 200 (503: a query stopped by the
  time limit); slowest chart while summarising {worst}, {over} of {len(during)} dashboards with
  a chart over {WHILE_TARGET} ms (the target for each chart).

Each dashboard of `?window=30d` while summarising (page, then its 7 charts one after another):

| s | hours summarised | page ms | slowest chart ms | 7 charts ms | charts leaving hours out |
|--:|---|--:|--:|--:|--:|
{lines}

Then, summarised (the summariser stopped: it would be running its hourly health checks), the 7
charts of each preset window (median of 5 dashboards):

| window | 7 charts ms | target ms | slowest chart ms |
|---|--:|--:|--:|
{after_lines}
"""


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--summarise", type=int, metavar="NEWEST", help=argparse.SUPPRESS)
    parser.add_argument("--timeout", type=float, default=900, help="give up after (s)")
    parser.add_argument("--write-doc", action="store_true", help=f"write {DOC.relative_to(ROOT)}")
    args = parser.parse_args()
    if args.summarise:
        summariser(args.summarise)
        return
    start, before = time.monotonic(), {"load": load(), "code": code_version()}
    os.environ.update(BENCH_ENV)
    if not LEDGER.exists():
        manage("ledger_demo", str(LEDGER.relative_to(ROOT)), *DEMO_ARGS)
    DJANGO_DB.unlink(missing_ok=True)
    subprocess.run([sys.executable, "manage.py", "migrate", "--verbosity", "0"], cwd=ROOT,
                   env=os.environ | BENCH_ENV, check=True)  # fmt: skip
    setup()
    newest = scalar(LEDGER, "SELECT max(started_at) FROM nexus_requests")
    with clock_from(newest + 1):
        result = first_look(args.timeout)
    text = doc(result, time.monotonic() - start, before)
    publish(HEADING, text, args.write_doc)


if __name__ == "__main__":
    main()
