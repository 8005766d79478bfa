"""The failure inbox and the alert rules on the large bench ledger (issue 30): `make bench`.

    .venv/bin/python -m bench.issues_bench --write-doc

1. Uses var/bench/scale.sqlite3 (bench.scale_ledger builds it when missing) read-only, and a
   Django database of its own (var/bench/issues-django.sqlite3) holding the ledger's hourly
   summaries, failure groups included (`ledger_rollup` over its whole history, kept between runs).
2. Times, in-process with Django's test client (DEBUG off, a superuser), warm: the inbox's first
   page over the last 24 hours and 30 days of the ledger's data (it ends when it was built),
   sorted by last seen and by escalation, its JSON twin, and the busiest issue's page: median
   and p95 of --runs runs, and the ledger and Django queries of one run.
3. The alert rules' CPU: one rule of each kind (a new issue, a regression, failure rates by
   stage, channel and persona, stuck requests, the cost of a day), evaluated --runs times as the
   background job does every minute: process CPU seconds per evaluation, which is the CPU per
   minute at the default ALERTS_EVERY_S of 60.
4. Writes its section of docs/benchmarks.md (--write-doc).
"""

import argparse
import math
import os
import statistics
import sys
import time
from pathlib import Path
from urllib.parse import urlencode

from bench.scale_bench import static_files_changed
from bench.scale_ledger import BENCH, LEDGER, ROOT, connect, ensure_ledger
from tools.docfile import publish

DJANGO_DB = BENCH / "issues-django.sqlite3"
HEADING = "# Benchmarks: the failure inbox and the alert rules"
COMMAND = ".venv/bin/python -m bench.issues_bench --write-doc  # make bench runs it"
TARGET_MS = 300  # the inbox's first page, warm
H = 3_600_000
DAY = 24 * H
ENV = {
    "DJANGO_SETTINGS_MODULE": "ledgerweb.settings",
    "SECRET_KEY": "bench-issues",
    "DEBUG": "0",
    "HTTPS": "0",
    "ALLOWED_HOSTS": "testserver",
    "DJANGO_DB": str(DJANGO_DB),
    # What is measured is the whole work: the production limit would stop a slow query.
    "LEDGER_QUERY_TIMEOUT_MS": "600000",
    "LOG_LEVEL": "ERROR",
}


def setup(ledger: Path) -> None:
    os.environ.update(ENV, LEDGER_DB=str(ledger))
    sys.path.insert(0, str(ROOT))
    import django

    django.setup()
    from django.core.management import call_command

    call_command("migrate", interactive=False, verbosity=0)
    if static_files_changed():  # DEBUG off serves the names in the static files' manifest
        call_command("collectstatic", interactive=False, verbosity=0)


def build_summaries(ledger: Path) -> float:
    """`ledger_rollup` over the ledger's whole history (a deployment's background process keeps
    them): seconds, ~0 when kept from the last run."""
    from django.core.management import call_command

    with connect(ledger) as conn:
        oldest = conn.execute("SELECT min(started_at) FROM nexus_requests").fetchone()[0]
    days = math.ceil((time.time() * 1000 - oldest) / DAY) + 1
    started = time.monotonic()
    call_command("ledger_rollup", "--days", str(days), stdout=open(os.devnull, "w"))  # noqa: SIM115
    return time.monotonic() - started


def client():
    from django.contrib.auth import get_user_model
    from django.test import Client

    user, _ = get_user_model().objects.get_or_create(
        username="bench", defaults={"is_superuser": True, "is_staff": True}
    )
    c = Client()
    c.force_login(user)
    return c


def queries(c, url: str) -> tuple[int, int]:
    """(ledger queries, Django database queries) of one run of the page."""
    from django.db import connections
    from django.test.utils import CaptureQueriesContext

    with (
        CaptureQueriesContext(connections["ledger"]) as ledger,
        CaptureQueriesContext(connections["default"]) as own,
    ):
        assert c.get(url).status_code == 200, url
    return len(ledger), len(own)


def timed(c, url: str, runs: int) -> dict:
    response = c.get(url)  # warm-up: the plan kept while the ledger is unchanged
    assert response.status_code == 200, (url, response.content[:500])
    times = []
    for _ in range(runs):
        started = time.perf_counter()
        c.get(url)
        times.append((time.perf_counter() - started) * 1000)
    ledger_q, own_q = queries(c, url)
    return {
        "url": url,
        "median": statistics.median(times),
        "p95": sorted(times)[max(0, math.ceil(0.95 * len(times)) - 1)],
        "kb": len(response.content) / 1024,
        "ledger_queries": ledger_q,
        "own_queries": own_q,
    }


def pages(ledger: Path) -> list[tuple[str, str, bool]]:
    """(name, address, held to the target) of the pages timed."""
    with connect(ledger) as conn:
        until = conn.execute("SELECT max(started_at) FROM nexus_requests").fetchone()[0] + 1
    day = urlencode({"since": until - DAY, "until": until})
    month = urlencode({"since": until - 30 * DAY, "until": until})
    return [
        ("inbox, first page, the data's last 24 h", f"/pipeline/issues/?{day}", True),
        ("inbox, first page, the data's last 30 d", f"/pipeline/issues/?{month}", True),
        ("inbox, 30 d, sorted by escalation", f"/pipeline/issues/?{month}&sort=escalation", True),
        ("inbox, 30 d, every status, JSON", f"/pipeline/issues/?{month}&status=all&format=json",
         False),
        ("inbox as it opens (the last 24 h from now)", "/pipeline/issues/", True),
    ]  # fmt: skip


def issue_page(c, ledger: Path) -> tuple[str, str, bool]:
    with connect(ledger) as conn:
        until = conn.execute("SELECT max(started_at) FROM nexus_requests").fetchone()[0] + 1
    month = urlencode({"since": until - 30 * DAY, "until": until})
    busiest = c.get(f"/pipeline/issues/?{month}&sort=count&format=json").json()["issues"][0]
    return (f"the busiest issue's page, 30 d ({busiest['count']:,} failures)",
            f"/pipeline/issues/{busiest['id']}/?{month}", False)  # fmt: skip


def rule_cpu(runs: int) -> dict:
    """CPU seconds of one evaluation of a rule of each kind (the background job's every minute)."""
    from decimal import Decimal

    from alerts import rules
    from alerts.models import Alert, AlertRule, Cooldown
    from ledgerfacts.timestamps import now_ms
    from pipeline import rollups

    AlertRule.objects.all().delete()
    kinds = [
        {"kind": AlertRule.NEW_ISSUE},
        {"kind": AlertRule.REGRESSION},
        *({"kind": AlertRule.FAILURE_RATE, "dimension": d, "threshold_percent": 5, "minutes": 60}
          for d in ("stage", "channel", "persona")),
        {"kind": AlertRule.STUCK, "minutes": 15},
        {"kind": AlertRule.DAILY_COST, "cost_usd": Decimal("1")},
    ]  # fmt: skip
    for fields in kinds:
        AlertRule.objects.create(name=fields["kind"], email_to="bench@example.org",
                                 created_at=now_ms(), **fields)  # fmt: skip
    rules.evaluate()  # warm-up (and the alerts it fires: later ones are within their cooldowns)
    cpu, wall, fresh = [], [], []
    for _ in range(runs):
        started_cpu, started = time.process_time(), time.perf_counter()
        rules.evaluate()
        cpu.append(time.process_time() - started_cpu)
        wall.append(time.perf_counter() - started)
    for _ in range(runs):
        # A ledger being written makes the plans again (its census of hours): as after a commit.
        rollups._plans = rollups.sqlite.WhileUnchanged(keep=64)
        started_cpu = time.process_time()
        rules.evaluate()
        fresh.append(time.process_time() - started_cpu)
    fired = Alert.objects.count()
    AlertRule.objects.all().delete()
    Alert.objects.all().delete()
    Cooldown.objects.all().delete()
    return {"rules": len(kinds), "cpu_s": statistics.median(cpu), "cpu_max_s": max(cpu),
            "wall_s": statistics.median(wall), "fresh_cpu_s": statistics.median(fresh),
            "fired": fired, "runs": runs}  # fmt: skip


def doc(rows: list[dict], rule: dict, summaries_s: float, counts: dict, load: str) -> str:
    lines = [
        HEADING,
        "",
        f"Command: `{COMMAND}`. Machine load (1 min) when measured: {load}. Django's test client"
        " in-process (DEBUG off), warm: median and p95 of each page's runs after one warm-up.",
        "",
        f"Ledger: `var/bench/scale.sqlite3` ({counts['requests']:,} requests, {counts['failed']:,}"
        f" failed; built by bench.scale_ledger). Its hourly summaries with their failure groups:"
        f" {summaries_s:,.0f} s to build (`ledger_rollup`; 0 when kept from the last run).",
        "",
        "| page | median ms | p95 ms | KB | ledger queries | own queries | target |",
        "|---|---|---|---|---|---|---|",
    ]
    for r in rows:
        verdict = (
            "—"
            if not r["held"]
            else f"< {TARGET_MS} ms: **{'met' if r['median'] < TARGET_MS else 'missed'}**"
        )
        lines.append(
            f"| {r['name']} (`{r['url']}`) | {r['median']:.1f} | {r['p95']:.1f} | {r['kb']:.0f}"
            f" | {r['ledger_queries']} | {r['own_queries']} | {verdict} |"
        )
    lines += [
        "",
        f"Alert rules: {rule['rules']} (one of each kind: a new issue, a regression, failure"
        " rates by stage, channel and persona over 60 minutes, requests stuck for 15 minutes,"
        f" the cost of the last 24 hours), evaluated {rule['runs']} times as the background job"
        f" does every minute: **{rule['cpu_s']:.2f} CPU seconds per evaluation** (median; at"
        f" most {rule['cpu_max_s']:.2f}), {rule['wall_s']:.2f} s of wall time: that is the CPU"
        " per minute at the default ALERTS_EVERY_S=60. Next to a live writer, whose commits make"
        " the plans (the census of the ledger's hours) again each time:"
        f" **{rule['fresh_cpu_s']:.2f} CPU seconds** per evaluation.",
        "",
        "Every page view and evaluation reads the issues of all the ledger's hours (the census"
        " of its hours, kept while the ledger is unchanged; the stored groups summed in SQL) and"
        " the live part since the last summarised hour; what the shown issues touched comes from"
        " their stored hash arrays, kept per worker while the same records answer (warm: as here)."
        " An issue's page also breaks its failures down by channel, persona, model and principal"
        " from the ledger, through the request list's own filter (each count is the list it"
        " links): one pass over its failures' rows, the bulk of its time for a busy issue.",
        "",
    ]
    return "\n".join(lines)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=20)
    parser.add_argument("--write-doc", action="store_true")
    args = parser.parse_args()
    ensure_ledger(ENV)
    setup(LEDGER)
    summaries_s = build_summaries(LEDGER)
    c = client()
    rows = []
    for name, url, held in [*pages(LEDGER), issue_page(c, LEDGER)]:
        result = timed(c, url, args.runs)
        rows.append(result | {"name": name, "held": held})
        print(f"{name}: median {result['median']:.1f} ms, p95 {result['p95']:.1f} ms", flush=True)
    rule = rule_cpu(max(5, args.runs // 2))
    print(f"alert rules: {rule['cpu_s']:.2f} CPU s per evaluation", flush=True)
    with connect(LEDGER) as conn:
        requests, failed = conn.execute(
            "SELECT count(*), sum(status = 'failed') FROM nexus_requests"
        ).fetchone()
    load = f"{os.getloadavg()[0]:.1f} on {os.cpu_count()} cores"
    section = doc(rows, rule, summaries_s, {"requests": requests, "failed": failed}, load)
    publish(HEADING, section, args.write_doc)


if __name__ == "__main__":
    main()
