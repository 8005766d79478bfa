"""Every page on a large ledger, against the raw SQL and Datasette (issues 7 and 33): `make bench`.

    .venv/bin/python -m bench.scale_bench --write-doc               # the large ledger
    .venv/bin/python -m bench.scale_bench --write-doc --scale-50    # the scale-50 ledger

1. Builds the ledger (var/bench/scale.sqlite3, or scale50.sqlite3) with ledger_demo unless it
   has the rows (bench.scale_ledger).
2. Migrates its own Django database (var/bench/scale-django.sqlite3, or scale50-django.sqlite3):
   a superuser, a signed-in session, the dashboard's rollups and the search index, built as
   `ledger_rollup` and `ledger_index` build them (kept between runs).
3. Captures the ledger SQL of each page with nothing stored (bench.page_capture), then starts
   gunicorn and the background process as `make serve` does, and Datasette on the same file.
   Per page, after warm-up, times in turn: our page through gunicorn over loopback HTTP; the
   page's question asked plainly (bench.plain_questions: the one statement a person would
   write) through Datasette's HTML query page and replayed with sqlite3; and our own captured
   statements replayed with sqlite3 and through Datasette (HTML and JSON). Round-robin, so a
   burst of load elsewhere hits every column alike. For each of our requests, the CPU time the
   gunicorn workers spent and the time they waited for a core (/proc/<pid>/schedstat).
4. Requests per second on the request page with locust, then the gunicorn workers' peak RSS.
5. Writes its section of docs/benchmarks.md (--write-doc).
"""

import argparse
import importlib.metadata
import json
import math
import os
import secrets
import sqlite3
import statistics
import subprocess
import sys
import time
from contextlib import closing, contextmanager, nullcontext
from dataclasses import dataclass, field, replace
from pathlib import Path
from urllib.parse import urlencode

from bench import page_sql, plain_questions
from bench.scale_ledger import (
    BENCH,
    LARGE,
    ROOT,
    SCALE_50,
    big_turn,
    connect,
    ensure_ledger,
    long_session,
)
from bench.servers import HOST, cpu_and_wait_ms, free_port, peak_rss_mb, serve
from tools.docfile import replace_section

HEADINGS = {
    LARGE: "# Benchmarks: at scale, against Datasette and the raw SQL",
    SCALE_50: "# Benchmarks: the scale-50 ledger, against Datasette and the raw SQL",
}
COMMANDS = {
    LARGE: "make bench  # = .venv/bin/python -m bench.scale_bench --write-doc",
    SCALE_50: "make bench  # = .venv/bin/python -m bench.scale_bench --write-doc --scale-50",
}
# Its own (other benches use django.sqlite3), one per ledger: the summaries and the index kept.
DJANGO_DBS = {LARGE: BENCH / "scale-django.sqlite3", SCALE_50: BENCH / "scale50-django.sqlite3"}
DJANGO_DB = DJANGO_DBS[LARGE]  # the default ledger's (bench.profile_page)
CAPTURE_DB = BENCH / "scale-capture.sqlite3"  # bench.page_capture's, fresh each time
CAPTURE_OUT = BENCH / "scale-capture.json"
# The production per-query limit (2 s; 25 s for the health report) would stop slow statements
# with a 503: lifted, so what is measured is the whole work; Datasette's limit likewise.
TIME_LIMIT_MS = 600_000
# Datasette's default max_returned_rows (1,000) would cut the 5,000-turn session and its thread.
DATASETTE_MAX_ROWS = 1_000_000
WORKERS = 2  # as `make serve`
ENV = {
    "DJANGO_SETTINGS_MODULE": "ledgerweb.settings",
    "SECRET_KEY": "bench-" + secrets.token_urlsafe(16),
    "DEBUG": "0",
    "HTTPS": "0",
    "ALLOWED_HOSTS": f"{HOST},testserver",
    "DJANGO_DB": str(DJANGO_DB),
    "LEDGER_QUERY_TIMEOUT_MS": str(TIME_LIMIT_MS),
    "LEDGER_HEALTH_TIMEOUT_MS": str(TIME_LIMIT_MS),
    "LOG_LEVEL": "ERROR",
}
WINDOWS = {"24h": 86_400_000, "30d": 30 * 86_400_000}
# Absolute targets (ms) from the sessions and pipeline issues, checked on the p95.
TARGET_SESSION, TARGET_TURN, TARGET_LIST, TARGET_REQUEST = 500, 200, 150, 50
TARGET_WINDOW = {"24h": 500, "30d": 2000}
RSS_TARGET_MB = 200
AFTER_COMMIT = ", after a ledger commit"  # the name of a page's row measured after a commit
# ours; the plain question replayed with sqlite3 and through Datasette's HTML query page; our
# own statements replayed with sqlite3 and through Datasette (HTML and JSON).
METHODS = ("ours", "plain_raw", "plain_html", "raw", "ds_html", "ds_json")
SLOW_MS = 5_000  # a method slower than this in warm-up is timed once (its warm-up), not n times
# The targets against the plain question (issue 33): our median at or below Datasette's, and
# within 2 × the plain SQL + PLAIN_SLACK_MS; our p95 within TAIL_RATIO × our median.
PLAIN_SLACK_MS = 5
TAIL_RATIO = 2


@dataclass
class Page:
    name: str
    url: str
    target_ms: float | None = None
    headers: dict[str, str] = field(default_factory=dict)
    window: str | None = None  # the dashboard window of a chart
    plain: str | None = None  # the question asked plainly (bench.plain_questions), as SQL text
    statements: list[page_sql.Statement] = field(default_factory=list)
    times: dict[str, list[float]] = field(default_factory=dict)
    per_statement: list[list[float]] = field(default_factory=list)  # raw ms per run, per statement
    cpu: list[float] = field(default_factory=list)  # gunicorn workers' CPU ms, per timed request
    waited: list[float] = field(default_factory=list)  # their ms waiting for a core, per request
    plain_problem: str | None = (
        None  # why Datasette does not answer the plain question    kb: float = 0.0
    )
    table_fallback: str | None = None  # a Datasette table page ("table?filters") asking the same
    datasette_table: str | None = None  # set when Datasette is asked through the table page
    datasette_problem: str | None = None
    datasette_note: str | None = None
    html_skipped: bool = False  # Datasette's JSON took over SLOW_MS: its HTML is not timed
    # Pages that keep work while the ledger is unchanged (a session's tree, the charts' plans)
    # are also measured after a commit: ours only (the question, raw SQL and Datasette are the
    # warm row's), each run right after a commit that changes nothing (see Runner.touch_ledger).
    after_commit: bool = False
    cold_too: bool = False  # measure this page after a commit as well

    @property
    def selects(self) -> list[page_sql.Statement]:
        return [s for s in self.statements if s.is_select]


# -- The pages -----------------------------------------------------------------------------------


def pages(ledger: Path) -> list[Page]:
    from pipeline.charts import CHARTS

    q = plain_questions
    conn = connect(ledger)
    long_id, long_turns = long_session(conn)
    turn = big_turn(conn, long_id)
    head = conn.execute("SELECT current_turn_id FROM sessions WHERE id = ?", (long_id,)).fetchone()
    failed = conn.execute(
        """SELECT id FROM nexus_requests
           WHERE status = 'failed' AND turn_id IS NOT NULL AND error_stage IS NOT NULL
           ORDER BY started_at DESC LIMIT 1"""
    ).fetchone()[0]
    until = conn.execute("SELECT max(started_at) FROM nexus_requests").fetchone()[0] + 1
    conn.close()
    session = f"/sessions/{long_id}/"
    turn_question = q.fill(q.TURN, turn=turn)
    todo = [
        Page("overview", "/", plain=q.fill(q.OVERVIEW, day_ago=until - WINDOWS["24h"])),
        Page("session list, first page", "/sessions/", TARGET_LIST, plain=q.session_list()),
        Page("session list, persona=echo", "/sessions/?persona=echo", TARGET_LIST,
             plain=q.session_list("echo")),
        Page(f"session page, {long_turns:,} turns", session, TARGET_SESSION,
             table_fallback=f"turns?session_id={long_id}&_sort=started_at&_size=max",
             cold_too=True, plain=q.fill(q.SESSION_TURNS, session=long_id)),
        Page("session page at the 600-call turn (full page)", f"{session}turns/{turn}/",
             TARGET_SESSION, plain=turn_question),
        Page("turn panel, 600 tool calls (htmx)", f"{session}turns/{turn}/", TARGET_TURN,
             {"HX-Request": "true"}, plain=turn_question),
        Page("thread page, the long session's head", f"{session}turns/{head[0]}/thread/",
             plain=q.fill(q.THREAD, turn=head[0])),
        Page("request list, failures", "/pipeline/requests/?status=failed", TARGET_LIST,
             plain=q.FAILED_REQUESTS),
        Page("request page, failed", f"/pipeline/requests/{failed}/", TARGET_REQUEST,
             plain=q.fill(q.REQUEST, request=failed)),
        Page("dashboard (cards; charts load apart)", "/pipeline/"),
    ]  # fmt: skip
    for window, span in WINDOWS.items():
        qs = urlencode({"since": until - span, "until": until})
        todo += [
            Page(f"chart {slug}, {window}", f"/pipeline/charts/{slug}/?{qs}",
                 TARGET_WINDOW[window], window=window, cold_too=True,
                 plain=q.chart(slug, until - span, until))
            for slug in CHARTS
        ]  # fmt: skip
    todo += [
        Page("health check (/healthz)", "/healthz", plain=q.HEALTHZ),
        Page("ledger health (staff)", "/health/"),
    ]
    return todo


# -- Django: its database, a signed-in session, the SQL of each page -----------------------------


def setup_django(ledger: Path) -> None:
    os.environ.update(ENV, LEDGER_DB=str(ledger))
    sys.path.insert(0, str(ROOT))
    import django

    django.setup()


def prepare_django(ledger: Path) -> tuple[str, float | None, float]:
    """The bench's own Django database migrated, with the dashboard's rollups of the ledger and
    its search index (kept from the last run, or rebuilt from scratch when that database no
    longer fits the code): what the background process keeps up once it has caught up, so that
    the pages are measured beside it as `make serve` runs it on a ledger it knows. Return a
    signed-in session cookie, the rollups' seconds and the index's."""
    from django.contrib.auth import get_user_model
    from django.core.management import call_command
    from django.db import DatabaseError, connections
    from django.test import Client

    database = Path(os.environ["DJANGO_DB"])
    try:
        call_command("migrate", interactive=False, verbosity=0)
        rollup_s = build_rollups(ledger)
    except DatabaseError as error:
        print(f"{database.name} does not fit the code ({error}): starting afresh", file=sys.stderr)
        connections.close_all()
        for path in (database, Path(f"{database}-wal"), Path(f"{database}-shm")):
            path.unlink(missing_ok=True)
        call_command("migrate", interactive=False, verbosity=0)
        rollup_s = build_rollups(ledger)
    started = time.monotonic()
    call_command("ledger_index", verbosity=0)
    index_s = time.monotonic() - started
    user, _ = get_user_model().objects.get_or_create(
        username="bench", defaults={"is_superuser": True, "is_staff": True}
    )
    client = Client()
    client.force_login(user)
    return client.cookies["sessionid"].value, rollup_s, index_s


def start_collectstatic() -> subprocess.Popen | None:
    """collectstatic in the background (~80 s: it compresses every file) when needed."""
    if not static_files_changed():
        return None
    return subprocess.Popen(
        [sys.executable, "manage.py", "collectstatic", "--noinput", "-v0"], cwd=ROOT,
        env=os.environ | ENV,
    )  # fmt: skip


def wait(process: subprocess.Popen | None, what: str) -> None:
    if process and process.wait():
        sys.exit(f"{what} failed (exit {process.returncode})")


def static_files_changed() -> bool:
    """True when var/static has no manifest, or one older than a file in static/ or than the
    last install into the venv (Django admin's and django-htmx's files): DEBUG=0 serves the
    names in that manifest."""
    from django.conf import settings

    manifest = Path(settings.STATIC_ROOT) / "staticfiles.json"
    if not manifest.exists():
        return True
    sources = [f for d in settings.STATICFILES_DIRS for f in Path(d).rglob("*") if f.is_file()]
    sources += Path(sys.prefix).glob(".installed*")
    return any(f.stat().st_mtime > manifest.stat().st_mtime for f in sources)


def start_capture(todo: list[Page], ledger: Path) -> subprocess.Popen:
    """bench.page_capture in a child process (its own empty Django database: no rollups
    stored), running while this process builds the rollups; read with finish_capture()."""
    env = os.environ | ENV | {"LEDGER_DB": str(ledger), "DJANGO_DB": str(CAPTURE_DB)}
    process = subprocess.Popen(
        [sys.executable, "-m", "bench.page_capture"], cwd=ROOT, env=env, text=True,
        stdin=subprocess.PIPE, stdout=open(CAPTURE_OUT, "w"),  # noqa: SIM115
        stderr=open(CAPTURE_OUT.with_suffix(".log"), "w"),  # noqa: SIM115
    )  # fmt: skip
    process.stdin.write(json.dumps([{"url": p.url, "headers": p.headers} for p in todo]))
    process.stdin.close()
    return process


def finish_capture(process: subprocess.Popen, todo: list[Page]) -> None:
    if process.wait():
        log = CAPTURE_OUT.with_suffix(".log")
        sys.exit(f"capturing the SQL failed:\n{log.read_text()[-3000:]}")
    for page, statements in zip(todo, json.loads(CAPTURE_OUT.read_text()), strict=True):
        page.statements = [
            page_sql.Statement(s["sql"], s["params"] if isinstance(s["params"], dict)
                               else tuple(s["params"]), s["literal_sql"])
            for s in statements
        ]  # fmt: skip


def build_rollups(ledger: Path) -> float | None:
    """Seconds to build the dashboard's stored rollups over the ledger's whole history (None:
    this code has no `ledger_rollup`). A deployment runs it once, then pages keep it current."""
    from django.core.management import call_command, get_commands

    if "ledger_rollup" not in get_commands():
        return None
    with closing(connect(ledger)) as conn:
        oldest = conn.execute("SELECT min(started_at) FROM nexus_requests").fetchone()[0]
    days = math.ceil((time.time() * 1000 - oldest) / 86_400_000) + 1
    started = time.monotonic()
    call_command("ledger_rollup", "--days", str(days), stdout=open(os.devnull, "w"))  # noqa: SIM115
    return time.monotonic() - started


# -- Measuring -----------------------------------------------------------------------------------


class Runner:
    """One timed run of a page by each method."""

    def __init__(self, ours, datasette, ledger: Path):
        self.ours, self.datasette, self.db, self.path = ours, datasette, ledger.stem, ledger
        self.conn = connect(ledger)
        self.conn.isolation_level = None  # page_sql.replay opens its own read transaction
        self.workers = ours.workers()

    def run(self, page: Page, method: str) -> float:
        if method == "ours":
            if page.after_commit:
                self.touch_ledger()
            cpu, waited = cpu_and_wait_ms(self.workers)
            ms, status, body = self.ours.get(page.url, page.headers)
            cpu_after, waited_after = cpu_and_wait_ms(self.workers)
            if status != 200:
                sys.exit(f"{page.url} answered {status} through gunicorn")
            page.kb = len(body) / 1024
            page.cpu.append(cpu_after - cpu)
            page.waited.append(waited_after - waited)
            return ms
        if method == "raw":
            ms, each = page_sql.replay(self.conn, page.statements)
            page.per_statement.append(each)
            return ms
        if method == "plain_raw":
            return page_sql.replay(self.conn, [self.plain_statement(page)])[0]
        if method == "plain_html":
            ms, status, _ = self.datasette.get(self.plain_path(page))
            if status != 200:
                sys.exit(f"Datasette answered {status} to the plain question of {page.name}")
            return ms
        total = 0.0
        for path in self.datasette_paths(page, json_=method == "ds_json"):
            ms, status, body = self.datasette.get(path)
            if status != 200:
                sys.exit(f"Datasette answered {status} to {path[:300]}")
            total += ms
        return total

    def touch_ledger(self) -> None:
        """Commit to the ledger without changing it (user_version set, then set back): every
        reader's PRAGMA data_version moves, as after any write by the runtime."""
        with closing(sqlite3.connect(self.path)) as conn:
            (version,) = conn.execute("PRAGMA user_version").fetchone()
            conn.execute(f"PRAGMA user_version = {version + 1}")
            conn.execute(f"PRAGMA user_version = {version}")

    @staticmethod
    def plain_statement(page: Page) -> page_sql.Statement:
        return page_sql.Statement(page.plain, (), page.plain)

    def plain_path(self, page: Page, json_: bool = False) -> str:
        return f"/{self.db}{'.json' if json_ else ''}?" + urlencode({"sql": page.plain})

    def check_plain(self, page: Page) -> str | None:
        """Whether Datasette answers the plain question whole (the rows sqlite3 returns, none
        cut by its row limit): None, or what went wrong."""
        _, status, body = self.datasette.get(self.plain_path(page, json_=True))
        answer = json.loads(body) if status == 200 else {}
        rows = page_sql.row_count(self.conn, self.plain_statement(page))
        if answer.get("truncated") or len(answer.get("rows", ())) != rows:
            return (f"it returns {rows:,} rows; Datasette answered {status} with "
                    f"{len(answer.get('rows', ())):,}")  # fmt: skip
        return None

    def datasette_paths(self, page: Page, json_: bool) -> list[str]:
        """The page's question for Datasette: each SELECT through the query page, or its table
        page when that is what it has to fall back on."""
        suffix = ".json" if json_ else ""
        if page.datasette_table:
            table, query = page.datasette_table.split("?", 1)
            return [f"/{self.db}/{table}{suffix}?{query}"]
        return [f"/{self.db}{suffix}?" + urlencode({"sql": s.literal_sql}) for s in page.selects]

    def check_datasette(self, page: Page) -> tuple[str | None, float]:
        """Datasette's JSON answer, checked to be the page's (every row of every statement, as
        the raw replay returns them), and timed: (what differs or None, ms). A page with a table
        page to fall back on uses it when the query page cannot answer."""
        problem, ms = self._check_sql(page)
        if problem and page.table_fallback:
            page.datasette_table = page.table_fallback
            [path] = self.datasette_paths(page, json_=True)
            ms, status, body = self.datasette.get(path)
            if status == 200 and json.loads(body).get("next") is None:
                page.datasette_note = f"its table page `{page.table_fallback}` ({problem})"
                return None, ms
            page.datasette_table = None
        return problem, ms

    def _check_sql(self, page: Page) -> tuple[str | None, float]:
        total = 0.0
        paths = self.datasette_paths(page, json_=True)
        for i, (s, path) in enumerate(zip(page.selects, paths, strict=True), 1):
            ms, status, body = self.datasette.get(path)
            total += ms
            if status == 400 and len(path) > 60_000:
                return (
                    f"statement {i} is a {len(path) // 1024} KB URL: its server answers 400",
                    total,
                )
            answer = json.loads(body) if status == 200 else {}
            rows = page_sql.row_count(self.conn, s)
            if answer.get("truncated") or len(answer.get("rows", ())) != rows:
                return (f"statement {i} returns {rows:,} rows; Datasette answered {status} "
                        f"with {len(answer.get('rows', ())):,}"), total  # fmt: skip
        return None, total


def measure(runner: Runner, page: Page, runs: int, min_runs: int, budget_s: float,
            slow_ms: float = SLOW_MS) -> None:  # fmt: skip
    """Read the page's SQL once (so that no method pays for a cold page cache), warm up each
    method, then time `runs` rounds of them in turn. Ours runs in every round (its p95 needs
    them); the others in fewer, down to min_runs, spread over the rounds, when theirs would
    overrun the budget. A method slower than slow_ms in warm-up is not repeated: its warm-up
    is its one timed run."""
    page_sql.replay(runner.conn, page.statements)  # untimed: the SQL's pages into the cache
    warm = {"ours": runner.run(page, "ours")}
    if page.plain and not page.after_commit:
        warm["plain_raw"] = runner.run(page, "plain_raw")
        page.plain_problem = runner.check_plain(page)
        if page.plain_problem:
            print(f"{page.name}: no Datasette for the plain question: {page.plain_problem}",
                  file=sys.stderr)  # fmt: skip
        else:
            warm["plain_html"] = runner.run(page, "plain_html")
    if not page.after_commit:
        warm["raw"] = runner.run(page, "raw")
    if page.selects and not page.after_commit:
        page.datasette_problem, warm["ds_json"] = runner.check_datasette(page)
        if page.datasette_problem:
            del warm["ds_json"]
            print(f"{page.name}: no Datasette: {page.datasette_problem}", file=sys.stderr)
        elif warm["ds_json"] > slow_ms:
            # Its HTML renders the same rows as the JSON and more: slower still, not worth the
            # minutes; the JSON time stands as a lower bound.
            page.html_skipped = True
        else:
            warm["ds_html"] = runner.run(page, "ds_html")
    page.times = {m: [ms] for m, ms in warm.items() if ms > slow_ms}
    fast = [m for m in METHODS if m in warm and m not in page.times]
    round_ms = sum(warm[m] for m in fast)
    if round_ms < 1000:
        for m in fast:
            runner.run(page, m)
    if "ours" in fast:
        # Each worker keeps its own connection and results (the after-commit rows measure a
        # first load): warm them all, whichever takes each request.
        for _ in range(2 * WORKERS):
            runner.run(page, "ours")
    others_ms = sum(warm[m] for m in fast if m != "ours")
    n_others = max(min_runs, min(runs, int(budget_s * 1000 / max(others_ms, 1))))
    if "raw" in fast:
        page.per_statement.clear()
    if "ours" in fast:  # else its one run, the first, is what is kept
        page.cpu.clear()
        page.waited.clear()
    else:
        del page.cpu[1:], page.waited[1:]
    page.times |= {m: [] for m in fast}
    for i in range(runs):
        for m in fast:
            # n_others runs of the others, spread evenly over the rounds
            if m == "ours" or (i * n_others) // runs != ((i + 1) * n_others) // runs:
                page.times[m].append(runner.run(page, m))
    print(f"{page.name}: " + ", ".join(f"{m} {median(xs):.0f} ms" for m, xs in page.times.items())
          + f" ({runs} runs, {n_others} of the others)", file=sys.stderr)  # fmt: skip


def say(started: float, what: str) -> None:
    print(f"[{time.monotonic() - started:6.0f} s] {what}", file=sys.stderr)


def median(xs: list[float]) -> float:
    return statistics.median(xs)


def p95(xs: list[float]) -> float:
    return sorted(xs)[math.ceil(0.95 * len(xs)) - 1]  # nearest rank


def load_test(ours, request_url: str, seconds: int, users: int) -> dict:
    """Requests per second on the request page: locust, headless, users looping without pause."""
    csv = BENCH / "locust"
    env = os.environ | {"BENCH_URL": request_url, "BENCH_COOKIE": ours.headers["Cookie"]}
    subprocess.run(
        [sys.executable, "-m", "locust", "-f", str(ROOT / "bench" / "locustfile.py"),
         "--headless", "--users", str(users), "--spawn-rate", str(users), "--run-time",
         f"{seconds}s", "--host", ours.url, "--csv", str(csv), "--only-summary",
         "--loglevel", "WARNING"],
        cwd=ROOT, env=env, check=True, capture_output=True,
    )  # fmt: skip
    import csv as csvlib

    with open(f"{csv}_stats.csv") as f:
        total = next(r for r in csvlib.DictReader(f) if r["Name"] == "Aggregated")
    return {
        "rps": float(total["Requests/s"]),
        "requests": int(total["Request Count"]),
        "failures": int(total["Failure Count"]),
        "median": float(total["50%"]),
        "p95": float(total["95%"]),
        "users": users,
        "seconds": seconds,
    }


# -- Report --------------------------------------------------------------------------------------


def verdicts(page: Page) -> list[str]:
    """The targets a page misses."""
    t = {m: median(xs) for m, xs in page.times.items()}
    missed = []
    datasette = t.get("ds_json") if page.html_skipped else t.get("ds_html")  # a lower bound
    if datasette is not None and t["ours"] > datasette:
        missed.append("slower than Datasette")
    if "raw" in t and t["ours"] > 2 * t["raw"] + 20:
        missed.append("over 2× raw + 20 ms")
    if page.target_ms and p95(page.times["ours"]) >= page.target_ms:
        missed.append(f"p95 ≥ {page.target_ms:g} ms")
    return missed


def fmt(ms: float | None) -> str:
    if ms is None:
        return "—"
    return f"{ms:,.0f}" if ms >= 100 else f"{ms:.1f}"


def cell(page: Page, method: str) -> str:
    """A method's median; marked when it was timed once (slower than SLOW_MS)."""
    xs = page.times.get(method)
    if method == "ds_html" and page.html_skipped:
        return f"> {fmt(median(page.times['ds_json']))} (JSON's; not timed)"
    if not xs:
        return "—"
    many = len(page.times["ours"]) > 1
    return fmt(median(xs)) + (" (1 run)" if len(xs) == 1 and many else "")


def ratio(page: Page) -> str:
    """Ours ÷ Datasette HTML (with its JSON as the lower bound when the HTML was not timed)."""
    ours = median(page.times["ours"])
    if page.html_skipped:
        return f"< {ours / median(page.times['ds_json']):.2f}"
    if "ds_html" in page.times:
        return f"{ours / median(page.times['ds_html']):.2f}"
    return "—"


def plain_verdicts(page: Page) -> list[str]:
    """The targets against the plain question (issue 33) a page misses, and its tail's and
    absolute target's. A page after a commit is judged on its tail and absolute target only:
    the plain question is asked of the same rows either way."""
    ours = page.times["ours"]
    missed = []
    if not page.after_commit:
        html = page.times.get("plain_html")
        if html and median(ours) > median(html):
            missed.append("slower than Datasette")
        plain = page.times.get("plain_raw")
        if plain and median(ours) > 2 * median(plain) + PLAIN_SLACK_MS:
            missed.append(f"over 2× plain SQL + {PLAIN_SLACK_MS} ms")
    if len(ours) > 1 and p95(ours) > TAIL_RATIO * median(ours):
        missed.append(f"p95 over {TAIL_RATIO}× median")
    if page.target_ms and p95(ours) >= page.target_ms:
        missed.append(f"p95 ≥ {page.target_ms:g} ms")
    return missed


def plain_table(todo: list[Page]) -> str:
    """Each page against its question asked plainly: ours (median, p95, what the workers spent
    on a CPU and waiting for one), the plain SQL in sqlite3, Datasette's HTML answer."""
    lines = [
        "| page | runs | ours median | ours p95 | p95 ÷ median | workers' CPU ms | waited for"
        " a core ms (max) | plain SQL | Datasette, plain question: median (p95) | ours ÷"
        " Datasette | 2 × plain + 5 ms | targets missed |",
        "|---|--:|--:|--:|--:|--:|--:|--:|--:|--:|--:|---|",
    ]
    plain = {p.name: p for p in todo if not p.after_commit}
    for page in todo:
        ours = page.times["ours"]
        asked = plain.get(page.name.removesuffix(AFTER_COMMIT), page)
        sql = asked.times.get("plain_raw")
        html = asked.times.get("plain_html")
        datasette = f"{fmt(median(html))} ({fmt(p95(html))})" if html else "—"
        if asked.plain_problem:
            datasette = f"— ({asked.plain_problem})"
        lines.append(
            f"| {page.name}{f' (< {page.target_ms:g} ms)' if page.target_ms else ''} "
            f"| {len(ours)} | {fmt(median(ours))} | {fmt(p95(ours))} "
            f"| {p95(ours) / median(ours):.1f} "
            f"| {fmt(median(page.cpu)) if page.cpu else '—'} "
            f"| {f'{fmt(median(page.waited))} ({fmt(max(page.waited))})' if page.waited else '—'} "
            f"| {fmt(median(sql)) if sql else '—'} | {datasette} "
            f"| {f'{median(ours) / median(html):.2f}' if html else '—'} "
            f"| {fmt(2 * median(sql) + PLAIN_SLACK_MS) if sql else '—'} "
            f"| {', '.join(plain_verdicts(page)) or 'none'} |"
        )
    return "\n".join(lines)


def plain_sql_list(todo: list[Page]) -> str:
    """The plain questions as asked, each once (the turn's is both turn pages'; a 30-day
    chart's is its 24-hour one with the window and a day's bucket)."""
    seen: dict[str, list[str]] = {}
    for page in todo:
        if page.plain and not page.after_commit:
            seen.setdefault(page.plain, []).append(page.name)
    return "\n\n".join(f"{'; '.join(names)}:\n\n```sql\n{sql}\n```" for sql, names in seen.items())


def table(todo: list[Page]) -> str:
    lines = [
        "| page | runs | ours median | ours p95 | raw SQL (stmts) | Datasette HTML | Datasette"
        " JSON | ours ÷ Datasette | ours ÷ raw | KB | targets missed |",
        "|---|--:|--:|--:|--:|--:|--:|--:|--:|--:|---|",
    ]
    for page in todo:
        ours, raw = median(page.times["ours"]), median(page.times.get("raw", [math.nan]))
        target = f" (< {page.target_ms:g} ms)" if page.target_ms else ""
        problem = f" (no Datasette: {page.datasette_problem})" if page.datasette_problem else ""
        if page.datasette_note:
            problem = f" (Datasette: {page.datasette_note})"
        lines.append(
            f"| {page.name}{target} | {len(page.times['ours'])} | {cell(page, 'ours')} "
            f"| {fmt(p95(page.times['ours']))} | {cell(page, 'raw')} ({len(page.statements)}) "
            f"| {cell(page, 'ds_html')} | {cell(page, 'ds_json')} | {ratio(page)} "
            f"| {'—' if math.isnan(raw) else f'{ours / max(raw, 0.01):.1f}'} | {page.kb:.0f} "
            f"| {', '.join(verdicts(page)) or 'none'}{problem} |"
        )
    for after_commit in (False, True):
        for window in WINDOWS:
            charts = [p for p in todo if p.window == window and p.after_commit == after_commit]
            if charts:
                lines.append(sum_row(window, charts))
    return "\n".join(lines)


def sum_row(window: str, charts: list[Page]) -> str:
    """The window's whole dashboard: the charts' medians added up (they load one by one when
    the workers are busy); missing when a method lacks a chart."""
    sums = {
        m: sum(median(p.times[m]) for p in charts) if all(m in p.times for p in charts) else None
        for m in ("ours", "raw", "ds_json")
    }
    ours, target = sums["ours"], TARGET_WINDOW[window]
    if charts[0].after_commit:
        missed = [f"sum ≥ {target:g} ms"] if ours >= target else []
        return (
            f"| **all {len(charts)} charts, {window}, after a ledger commit: sum of medians** "
            f"(< {target:g} ms) | | {fmt(ours)} | | — | — | — | — | — | | "
            f"{', '.join(missed) or 'none'} |"
        )
    html = [median(p.times["ds_json" if p.html_skipped else "ds_html"]) for p in charts
            if p.html_skipped or "ds_html" in p.times]  # fmt: skip
    ds = sum(html) if len(html) == len(charts) else None
    bound = "≥ " if any(p.html_skipped for p in charts) else ""  # JSON times stand in
    missed = [f"sum ≥ {target:g} ms"] if ours >= target else []
    if ds is not None and ours > ds:
        missed.append("slower than Datasette")
    if ours > 2 * sums["raw"] + 20:
        missed.append("over 2× raw + 20 ms")
    return (
        f"| **all {len(charts)} charts, {window}: sum of medians** (< {target:g} ms) | "
        f"| {fmt(ours)} | | {fmt(sums['raw'])} | {bound if ds else ''}{fmt(ds)} "
        f"| {fmt(sums['ds_json'])} | {f'{"< " if bound else ""}{ours / ds:.2f}' if ds else '—'} "
        f"| {ours / sums['raw']:.1f} | | {', '.join(missed) or 'none'} |"
    )


def slowest_statement(page: Page) -> str:
    """The page's slowest statement in the raw replay: its median ms and its first words."""
    by_statement = list(zip(*page.per_statement, strict=True))
    i = max(range(len(by_statement)), key=lambda k: median(by_statement[k]))
    sql = " ".join(page.statements[i].sql.split())
    return f"{median(by_statement[i]):,.0f} ms in statement {i + 1}: `{sql[:160]}…`"


def profile_lines(todo: list[Page]) -> str:
    """For each page that misses a target: where its time went (the workers' CPU, waiting for a
    core, the rest), and its SQL time vs everything else, the slowest statement."""
    lines = []
    for page in todo:
        missed = plain_verdicts(page)
        if missed and page.cpu:
            times = page.times["ours"][-len(page.cpu) :]  # a slow page's one run is its last
            rest = [t - c - w for t, c, w in zip(times, page.cpu, page.waited, strict=True)]
            ours, cpu, waited = (median(xs) for xs in (times, page.cpu, page.waited))
            slow = max(range(len(times)), key=times.__getitem__)
            lines.append(
                f"- **{page.name}** ({', '.join(missed)}): median {fmt(ours)} ms; medians of "
                f"the workers' CPU {fmt(cpu)} ms, of their waiting for a core {fmt(waited)} ms, "
                f"of the rest {fmt(median(rest))} ms (the client, the kernel's loopback); its "
                f"slowest request "
                f"{fmt(times[slow])} ms: CPU {fmt(page.cpu[slow])} ms, waited "
                f"{fmt(page.waited[slow])} ms"
            )
    for page in todo:
        missed = verdicts(page)
        if not missed or not page.statements or page.after_commit:
            continue
        ours, raw = median(page.times["ours"]), median(page.times["raw"])
        if ours < raw:  # it reads stored rollups: its own ledger SQL is not the raw SQL
            lines.append(
                f"- **{page.name}** ({', '.join(missed)}): {fmt(ours)} ms from the stored "
                f"rollups and the hours it reads live; the SQL answering it from the ledger "
                f"alone takes {fmt(raw)} ms (slowest: {slowest_statement(page)})"
            )
            continue
        lines.append(
            f"- **{page.name}** ({', '.join(missed)}): {fmt(ours)} ms = {fmt(raw)} ms of SQL "
            f"(raw replay, {len(page.statements)} statements) + {fmt(ours - raw)} ms of "
            f"everything else (Python, template, HTTP); slowest: {slowest_statement(page)}"
        )
    lines.append(
        "- By function: `.venv/bin/python -m bench.profile_page URL [--scale-50]` (cProfile of"
        " one request)."
    )
    return "\n".join(lines)


def doc(todo, extra: dict, before: dict) -> str:
    from bench.sessions_bench import run_header

    bench_ledger = extra["bench_ledger"]
    path = bench_ledger.path.relative_to(ROOT)
    header = run_header(HEADINGS[bench_ledger], COMMANDS[bench_ledger], before)
    loads = extra["loads"]
    counts = ", ".join(f"{n:,} {t}" for t, n in extra["counts"].items())
    rss = ", ".join(f"{mb:.0f} MB" for mb in extra["rss"])
    built = f"built in {extra['build_s']:.0f} s" if extra["build_s"] else "reused (rows checked)"
    rollups = (
        "this code has none" if extra["rollup_s"] is None
        else f"`manage.py ledger_rollup` over the whole history before measuring, "
        f"{extra['rollup_s']:.0f} s (kept between runs: a first run builds them all)"
    )  # fmt: skip
    verdict_rss = "met" if max(extra["rss"]) < RSS_TARGET_MB else "MISSED"
    background = (
        "the background process as `make serve` starts it (`manage.py ledger_background`: the "
        "summaries, the search index, the health checks, the alerts), caught up before "
        "measuring"
        if extra["background"]
        else "no background process (`--no-background`)"
    )
    return f"""{header}- Load average (1 min) during the measurements: min {min(loads):.2f}, median
  {median(loads):.2f}, max {max(loads):.2f} (other jobs share the 2 cores)
- Whole run: {extra["seconds"] / 60:.1f} min (ledger {built}; budget: 30 min on a fresh machine)
- Ledger: {bench_ledger.name}, `{path}`, {extra["size_gb"]:.1f} GB: {counts};
  `manage.py ledger_demo {path} {" ".join(bench_ledger.demo_args)}`.
- Beside gunicorn, {background}.

## Each page against its question asked plainly

How it is measured:
- **ours**: real HTTP over loopback to gunicorn ({WORKERS} sync workers, as `make serve`;
  `DEBUG=0`, signed in as a superuser by session cookie), a new connection per request, from
  sending the request to the last byte of the body. Ledger time limits lifted to
  {TIME_LIMIT_MS // 1000} s so slow statements finish instead of answering 503. The
  dashboard's rollups in the bench's own Django database: {rollups}; the search index
  likewise ({extra["index_s"]:.0f} s to bring it up to date before measuring). "workers' CPU":
  the median CPU time the gunicorn workers spent on one request; "waited for a core": the time
  they were ready to run but the 2 cores were taken (by the bench itself, Datasette, the
  background process or other developers' work), from the scheduler's own counters
  (/proc/<pid>/task/<tid>/schedstat), median and max.
- **plain SQL** and **Datasette, plain question**: the one statement a person would write for
  the page's question (listed below the table; `bench/plain_questions.py`), replayed with
  Python's `sqlite3` in a read transaction, every row fetched, and asked through Datasette's
  query page as HTML (`/db?sql=`: what a person reads), its JSON first checked to hold every
  row sqlite3 returns. Datasette as described in the next section.
- Each page: {extra["runs"]} rounds of ours after warm-up, the other methods spread over them
  (at least {extra["min_runs"]} runs each, fewer than {extra["runs"]} when theirs would
  overrun {extra["budget_s"]:g} s); median and nearest-rank p95.
- Targets (issue 33): our median at or below Datasette's median for the plain question, and
  at most 2 × the plain SQL + {PLAIN_SLACK_MS} ms; our p95 at most {TAIL_RATIO} × our median;
  the absolute targets of the sessions and pipeline issues on the p95. After a commit, the
  tail and the absolute target (the plain question's figures are the row above's).

{plain_table(todo)}

The plain questions:

{plain_sql_list(todo)}

## Against our own statements replayed (issue 7)

How it is measured (ours as above):
- **raw SQL**: the ledger statements of the page, captured from Django on the `ledger`
  connection (an execute wrapper: SQL and parameters as the view passed them) in a child
  process with an empty Django database and rollup building off, so a chart reads its whole
  window from the ledger: the SQL that answers the page's question from the ledger alone.
  Replayed with Python's `sqlite3` (the same `ledger_error_signature` function registered) on a
  read-only connection, in one read transaction, every row fetched. For pages other than the
  charts it is exactly the SQL our page runs.
- **Datasette** {extra["datasette_version"]}: `datasette serve` on the same file, **not
  immutable** (`-i` promises SQLite the file never changes, which a live ledger breaks: no
  locking, possibly wrong reads), `sql_time_limit_ms` {TIME_LIMIT_MS}, `max_returned_rows`
  {DATASETTE_MAX_ROWS:,} (its default 1,000 would cut the 5,000-turn session), a plugin
  registering `ledger_error_signature`. The question is asked as the same SQL through its query
  page (parameters written in as literals), one request per SELECT, summed; HTML (`/db?sql=`)
  and JSON (`/db.json?sql=`), same client as ours. Its JSON answer is first checked to hold
  exactly the rows of the raw replay. Statements that are not SELECTs (a PRAGMA) are not sent.
- Each page: its SQL replayed once untimed (the OS page cache then holds what it reads, for
  every method alike), warm-up (two rounds, one for a round over 1 s, and {2 * WORKERS} more
  requests of ours, so that each worker has seen the page), then {extra["runs"]}
  rounds of all methods in turn, or fewer (at least {extra["min_runs"]}) where a round would
  overrun {extra["budget_s"]:g} s; a method slower than {extra["slow_s"]:g} s in warm-up is
  timed once (its warm-up: "1 run"). Median and nearest-rank p95, in ms.
- **After a ledger commit** rows: a worker keeps a session's tree and the charts' plans while
  the ledger is unchanged (PRAGMA data_version; docs/decisions.md), so the rows above measure
  a page seen again. These rows measure the page as a live ledger shows it: before each of our
  requests the bench commits a change that changes nothing (user_version set and set back), so
  every kept result is dropped. Ours only: the raw SQL and Datasette are the row above's.
- Targets: median ≤ Datasette HTML's median; median ≤ 2 × raw + 20 ms; the absolute targets of
  the sessions and pipeline issues on the p95 (a chart's window target on each chart, and on the
  sum of the window's charts).

{table(todo)}

## Load and memory

{load_line(extra["load_test"])}
- Peak RSS (VmHWM) of each gunicorn worker after every measurement above and the load test:
  {rss} (target < {RSS_TARGET_MB} MB: **{verdict_rss}**). Datasette's process:
  {extra["ds_rss"]:.0f} MB.

## Where the time goes (pages that miss a target)

{profile_lines(todo)}
"""


def load_line(load: dict | None) -> str:
    if load is None:
        return "- Request page under load: not measured in this run (`--load-seconds 0`)."
    return f"""- Request page (`/pipeline/requests/<failed id>/`) under load: locust,
  {load["users"]} users looping without pause for {load["seconds"]} s against the {WORKERS}
  gunicorn workers, locust on the same 2 cores: **{load["rps"]:.1f} requests/s**,
  {load["requests"]:,} requests, {load["failures"]} failures, median {load["median"]:.0f} ms,
  p95 {load["p95"]:.0f} ms."""


# -- Main ----------------------------------------------------------------------------------------


@contextmanager
def background_process(env: dict):
    """`manage.py ledger_background` beside gunicorn, as `make serve` starts it (its output in
    var/bench/background.log), stopped at the end."""
    with open(BENCH / "background.log", "w") as log:
        process = subprocess.Popen(
            [sys.executable, "manage.py", "ledger_background"], cwd=ROOT, env=os.environ | env,
            stdout=log, stderr=log,
        )  # fmt: skip
        try:
            yield process
        finally:
            process.terminate()
            try:
                process.wait(timeout=30)
            except subprocess.TimeoutExpired:
                process.kill()
                process.wait()


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--scale-50", action="store_true",
                        help="the scale-50 ledger instead of the large one")  # fmt: skip
    parser.add_argument("--runs", type=int, default=20)
    parser.add_argument("--min-runs", type=int, default=3)
    parser.add_argument("--budget", type=float, default=15,
                        help="seconds of rounds per page for the other methods")  # fmt: skip
    parser.add_argument("--slow", type=float, default=SLOW_MS / 1000,
                        help="seconds: a method slower in warm-up is timed once")  # fmt: skip
    parser.add_argument("--load-seconds", type=int, default=20, help="0: no load test")
    parser.add_argument("--load-users", type=int, default=4)
    parser.add_argument("--no-background", dest="background", action="store_false",
                        help="without the background process beside gunicorn")  # fmt: skip
    parser.add_argument("--only", help="measure only pages whose name contains this")
    parser.add_argument(
        "--ledger",
        type=Path,
        help="measure this ledger as it is (development; no build, no checks)",
    )
    parser.add_argument("--write-doc", action="store_true")
    args = parser.parse_args()
    from bench.scale_ledger import row_counts
    from bench.sessions_bench import code_version, load

    started, before = time.monotonic(), {"load": load(), "code": code_version()}
    bench_ledger = SCALE_50 if args.scale_50 else LARGE
    ledger = args.ledger or bench_ledger.path
    ENV["DJANGO_DB"] = str(DJANGO_DBS[bench_ledger])
    setup_django(ledger)
    static = start_collectstatic()
    build_s = 0.0 if args.ledger else ensure_ledger(ENV, bench_ledger)
    say(started, f"ledger ready: {ledger}")
    every_page = pages(ledger)
    todo = [p for p in every_page if not args.only or args.only in p.name]
    capture = start_capture(todo, ledger)
    cookie, rollup_s, index_s = prepare_django(ledger)
    say(started, f"Django database ready (rollups: {rollup_s} s, index: {index_s:.0f} s)")
    finish_capture(capture, todo)
    todo += [
        replace(
            p, name=p.name + AFTER_COMMIT, after_commit=True, times={}, per_statement=[],
            cpu=[], waited=[],
        )
        for p in todo
        if p.cold_too
    ]  # fmt: skip
    say(started, f"captured the SQL of {len(todo)} pages")
    wait(static, "collectstatic")

    gunicorn_port, datasette_port = free_port(), free_port()
    gunicorn = [
        str(ROOT / ".venv" / "bin" / "gunicorn"), "ledgerweb.wsgi", "--bind",
        f"{HOST}:{gunicorn_port}", "--workers", str(WORKERS), "--timeout", "900",
        "--access-logfile", "-",
    ]  # fmt: skip
    ds = [
        str(ROOT / ".venv" / "bin" / "datasette"), "serve", str(ledger), "--host", HOST,
        "--port", str(datasette_port), "--setting", "sql_time_limit_ms", str(TIME_LIMIT_MS),
        "--setting", "max_returned_rows", str(DATASETTE_MAX_ROWS),
        "--plugins-dir", str(ROOT / "bench" / "datasette_plugins"),
    ]  # fmt: skip
    loads = []
    env = ENV | {"LEDGER_DB": str(ledger)}
    with (
        serve("gunicorn", gunicorn, gunicorn_port, "/healthz", env, ROOT,
              {"Cookie": f"sessionid={cookie}"}) as ours,
        serve("datasette", ds, datasette_port, "/-/versions.json", {"PYTHONPATH": str(ROOT)},
              ROOT) as theirs,
        background_process(env) if args.background else nullcontext(),
    ):  # fmt: skip
        runner = Runner(ours, theirs, ledger)
        for page in todo:
            measure(runner, page, args.runs, args.min_runs, args.budget, args.slow * 1000)
            loads.append(os.getloadavg()[0])
        request = next(p for p in every_page if p.name.startswith("request page"))
        say(started, "measured every page")
        load_result = (
            load_test(ours, request.url, args.load_seconds, args.load_users)
            if args.load_seconds > 0  # locust's --run-time 0s would run until killed
            else None
        )
        rss = [peak_rss_mb(pid) for pid in ours.workers()]
        ds_rss = peak_rss_mb(theirs.process.pid)
    print(plain_table(todo))
    print(table(todo))
    print(profile_lines(todo))
    print(f"load: {load_result}\nworker peak RSS: {rss} MB; datasette {ds_rss:.0f} MB")
    extra = {
        "loads": loads, "counts": row_counts(ledger), "load_test": load_result, "rss": rss,
        "ds_rss": ds_rss, "build_s": build_s, "seconds": time.monotonic() - started,
        "size_gb": ledger.stat().st_size / 1e9, "bench_ledger": bench_ledger,
        "runs": args.runs, "min_runs": args.min_runs, "budget_s": args.budget, "slow_s": args.slow,
        "rollup_s": rollup_s, "index_s": index_s, "background": args.background,
        "datasette_version": importlib.metadata.version("datasette"),
    }  # fmt: skip
    if args.write_doc and not (args.ledger or args.only):
        replace_section(HEADINGS[bench_ledger], doc(todo, extra, before))
        print("wrote docs/benchmarks.md")
    elif args.write_doc:  # a partial run: a preview, docs/benchmarks.md left alone
        preview = BENCH / "scale-doc-preview.md"
        preview.write_text(doc(todo, extra, before))
        print(f"wrote {preview}")


if __name__ == "__main__":
    main()
