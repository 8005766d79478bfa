"""Live pages under load (issue 29): fifty open live pages must not slow anyone down.

    .venv/bin/python -m bench.live_bench [--seconds 60] [--pages 50] [--clients 8] [--write-doc]

On a copy of the large bench ledger (var/bench/scale.sqlite3, built by `make bench`'s first step;
copied to var/bench/live-scale.sqlite3, because the writer writes to it), served as `make serve`
serves it (gunicorn, 2 sync workers, 30 days of chart hours summarised as the background process
keeps them), with a writer committing every 50 ms (demo/live_writer.LiveWriter on its own
process: a session's turns begin, stream tool calls, end; requests go stage by stage; quick
requests arrive):

1. browsing alone: --clients signed-in clients walk every page of the contract (tools.soak's
   walk, but the staff health page, which runs the ledger's checks without a kept report);
2. the same with --pages live pages open beside them. Each live page is simulated over HTTP as
   static/js/live.js behaves: it polls its endpoint at the interval the server says (and after a
   redraw, not before four times as long as the redraw took), and when told that its part changed
   it fetches its page again (the session, request and overview pages), or its chart cards in one
   request (the dashboard), or counts the new requests (the request list). The mix: 3 session pages
   following the writer's session (--hot), 3 request lists, a dashboard and an overview; the
   others are pages nobody writes to: 5 requests left processing and sessions (the 5,000-turn
   one among them), as most open tabs are. The writer's session is first grown to --hot-turns
   turns (3,000: an agent that has worked for hours), so that each of its pages' redraws lays
   out and draws a big tree, as it would in the field.

Measured: the browsing pages' p50/p95 in both runs (target: p95 within 20 %); the delay from a
commit to the page showing it (the writer notes each commit's time and rowids; a page "shows" a
row once it applied an answer or a page drawn at a cursor at or above that rowid) for the
session pages following the writer (target p95 ≤ 2 s) and the request lists, dashboards and
overviews; then, without browsing: the server's CPU and memory for 50 idle live pages (pages of
sessions nobody writes) with and without the writer, per page. Last, the road not taken: the same
50 pages as server-sent-event streams on an ASGI server (bench/live_sse_prototype.py, uvicorn, no
Django: a lower bound), its CPU and memory.
"""

import argparse
import json
import os
import random
import re
import shutil
import sqlite3
import subprocess
import sys
import threading
import time
import urllib.error
import urllib.parse
import urllib.request
from contextlib import closing, contextmanager
from dataclasses import dataclass, field
from html import unescape
from pathlib import Path

import psutil

from bench.scale_ledger import BENCH, LEDGER, ROOT, ensure_ledger, long_session
from bench.servers import cpu_and_wait_ms
from tools.docfile import publish
from tools.soak import (
    PASSWORD,
    PYTHON,
    REQUEST_TIMEOUT_S,
    USER,
    Browser,
    Tally,
    collect_static,
    environment,
    free_port,
    newest,
    pages,
    prepare_django,
    start_server,
)

COPY = BENCH / "live-scale.sqlite3"
DJANGO_DB = BENCH / "live-django.sqlite3"
HEADING = "# Live pages under load (issue 29)"
COMMIT_EVERY_S = 0.05
WORKERS = 2


# -- The writer (its own process, as an agent runtime is) -----------------------------------------


def write(path: Path, until: float, out: Path) -> None:
    """Commit a LiveWriter step every COMMIT_EVERY_S until `until`; note each commit's time, what
    it did and the tables' largest rowids after it."""
    from demo.live_writer import LiveWriter

    writer = LiveWriter(path, random.Random(29), turns_per_session=10**9)
    conn = sqlite3.connect(path, timeout=10, isolation_level=None)
    notes = []
    while time.time() < until:
        started = time.time()
        try:
            said = writer.step(conn)
        except sqlite3.OperationalError as error:
            said = f"error: {error}"
        committed = time.time()
        turns, requests = conn.execute(
            "SELECT (SELECT max(rowid) FROM turns), (SELECT max(rowid) FROM nexus_requests)"
        ).fetchone()
        notes.append((committed, said, turns, requests, committed - started))
        time.sleep(max(0.0, COMMIT_EVERY_S - (time.time() - started)))
    conn.close()
    out.write_text(json.dumps(notes))


def session_turns(path: Path, session_id: str) -> int:
    with closing(sqlite3.connect(f"file:{path}?mode=ro", uri=True)) as conn:
        return conn.execute("SELECT count(*) FROM turns WHERE session_id = ?",
                            (session_id,)).fetchone()[0]  # fmt: skip


def grow(path: Path, session_id: str, turns: int) -> None:
    """The writer's steps without a pause until its session has `turns` turns: an agent that has
    worked for hours, whose every redraw lays out and draws thousands of turns (a fresh copy's
    session would start with none, and its pages would cost what a small session costs)."""
    from demo.live_writer import LiveWriter

    writer = LiveWriter(path, random.Random(2900), turns_per_session=10**9)
    conn = sqlite3.connect(path, timeout=10, isolation_level=None)
    while (have := session_turns(path, session_id)) < turns:
        print(f"the writer's session: {have:,} of {turns:,} turns", file=sys.stderr)
        for _ in range(2000):
            writer.step(conn)
    conn.close()


def start_writer(seconds: float, tag: str) -> tuple[subprocess.Popen, Path, float]:
    out = BENCH / f"live-writer-{tag}.json"
    until = time.time() + seconds
    process = subprocess.Popen(
        [PYTHON, "-m", "bench.live_bench", "--writer", str(COPY), str(until), str(out)],
        cwd=ROOT, env=environment(COPY, DJANGO_DB, "ledgerweb.settings"),
    )  # fmt: skip
    return process, out, until


# -- Live pages, as static/js/live.js behaves ----------------------------------------------------

BAR = re.compile(r'<div class="live-bar[^>]*data-live [^>]*>')
ATTRIBUTE = re.compile(r'data-live-([a-z-]+)="([^"]*)"')
MARKS = ("sessions", "turns", "messages", "tool_calls", "nexus_requests")


def bar_of(html: str) -> dict | None:
    found = BAR.search(html)
    return {k: unescape(v) for k, v in ATTRIBUTE.findall(found[0])} if found else None


def mark(cursor: str, table: str) -> int:
    return int(cursor.split(".")[2 + MARKS.index(table)])


@dataclass
class LivePage:
    """One open live page: its path, what it follows, and what it saw when."""

    path: str
    follows: str  # "writer" (the writer's session), "requests", "pipeline", "ledger" or "idle"
    applied: list = field(default_factory=list)  # (time, cursor) of each state shown
    polls: int = 0
    fetches: int = 0
    errors: int = 0
    opened: threading.Event = field(default_factory=threading.Event)
    poll_times: list = field(default_factory=list)  # a Timing per poll
    redraw_times: list = field(default_factory=list)  # a Timing per redraw

    def run(self, base: str, cookies, stop: threading.Event) -> None:
        with counted_thread():
            self._run(base, cookies, stop)

    def _run(self, base: str, cookies, stop: threading.Event) -> None:
        browser = Browser(base)
        browser.opener = cookies
        status, body = browser.get(self.path)
        live = bar_of(body.decode(errors="replace")) if status == 200 else None
        if live is None:
            self.errors += 1
            self.opened.set()
            return
        cursor, every = live["cursor"], int(live["every"]) / 1000
        redraw_every = int(live.get("redraw-every", "0")) / 1000
        self.applied.append((time.time(), cursor, None))
        self.opened.set()
        wait, quiet = every, 0
        while not stop.wait(wait):
            try:
                asked = time.time()
                status, body, poll = timed_get(browser, poll_url(live["url"], cursor),
                                               {"Accept": "application/json"})  # fmt: skip
                self.polls += 1
                self.poll_times.append(poll)
                if status != 200:
                    self.errors += 1
                    continue
                answer = json.loads(body)
                every = answer.get("every_ms", every * 1000) / 1000
                at_most = answer.get("at_most_ms", 10**9) / 1000
                quiet = 0 if answer["changed"] else quiet + 1
                pace = every * (QUIET_SLOWER if quiet >= QUIET_ANSWERS else 1)
                if OLD_RULES:  # as first landed: the client's wait, from the answer, uncapped
                    wait = max(pace, POLL_GAP * poll.wall)
                else:
                    wait = next_wait(pace, POLL_GAP * poll.app, at_most, time.time() - asked)
                steps = {"asked": asked, "poll": poll}
                if not answer["changed"] or live["kind"] == "requests":
                    cursor = answer["cursor"]
                    self.applied.append((time.time(), cursor, steps))
                    continue
                redraw = Timing(0, 0, 0)
                if live["kind"] == "pipeline":
                    # As live.js does: every card in one request (pipeline/views.charts_at_once).
                    redraw = timed_get(browser, CHARTS_AT_ONCE, {"HX-Request": "true"})[2]
                    cursor = answer["cursor"]
                else:
                    status, body, redraw = timed_get(browser, self.path)
                    drawn = bar_of(body.decode(errors="replace")) if status == 200 else None
                    cursor = drawn["cursor"] if drawn else answer["cursor"]
                self.fetches += 1
                self.redraw_times.append(redraw)
                self.applied.append((time.time(), cursor, steps | {"redraw": redraw}))
                if OLD_RULES:
                    wait = max(pace, REDRAW_GAP * redraw.wall, redraw_every - redraw.wall)
                else:
                    rest = max(POLL_GAP * poll.app, REDRAW_GAP * redraw.app,
                               redraw_every - redraw.wall)  # fmt: skip
                    wait = next_wait(pace, rest, at_most, time.time() - asked)
            except (OSError, ValueError, urllib.error.URLError):
                self.errors += 1


# This bench's own threads' time on a CPU and waiting for one (seconds), added up as each ends
# (a process's /proc schedstat forgets the threads that ended).
CLIENT_SCHED = [0.0, 0.0]
_CLIENT_SCHED_LOCK = threading.Lock()


def _thread_sched() -> tuple[float, float]:
    on_cpu, queued, _ = Path("/proc/thread-self/schedstat").read_text().split()
    return int(on_cpu) / 1e9, int(queued) / 1e9


@contextmanager
def counted_thread():
    started = _thread_sched()
    try:
        yield
    finally:
        ended = _thread_sched()
        with _CLIENT_SCHED_LOCK:
            CLIENT_SCHED[0] += ended[0] - started[0]
            CLIENT_SCHED[1] += ended[1] - started[1]


def next_wait(pace: float, rest: float, at_most: float, elapsed: float) -> float:
    """static/js/live.js's nextWait: the pace counts from the poll's sending, a costly poll or
    redraw rests the server from now, neither past at_most after the poll's sending."""
    return max(0.0, min(max(pace - elapsed, rest), at_most - elapsed))


@dataclass(frozen=True)
class Timing:
    """One request's seconds: as the client waited (`wall`), as the server's worker spent it
    (`app`, from its Server-Timing header) and its CPU (`cpu`)."""

    wall: float
    app: float
    cpu: float


SERVER_TIMING = re.compile(r"(app|cpu);dur=([0-9.]+)")


def timed_get(browser: Browser, path: str, headers: dict | None = None):
    """Browser.get, with the request's Timing."""
    request = urllib.request.Request(browser.base + path, headers=headers or {})
    started = time.perf_counter()
    try:
        with browser.opener.open(request, timeout=REQUEST_TIMEOUT_S) as response:
            status, body, said = response.status, response.read(), response.headers
    except urllib.error.HTTPError as error:
        status, body, said = error.code, error.read(), error.headers
    wall = time.perf_counter() - started
    server = dict(SERVER_TIMING.findall(said.get("Server-Timing", "")))
    timing = Timing(wall, float(server.get("app", 0)) / 1000, float(server.get("cpu", 0)) / 1000)
    return status, body, timing


def poll_url(url: str, cursor: str) -> str:
    return url + ("&" if "?" in url else "?") + f"cursor={cursor}"


# As static/js/live.js: a redraw that held a worker for t is not followed by another before 4t,
# nor a poll that held one for t before 8t (the server's own time, from its Server-Timing
# header, not the client's wait); a page told "nothing changed" 20 times in a row asks 1.5 times
# less often; none of these waits passes the answer's at_most_ms (the page's promise); the
# dashboard redraws every chart (pipeline.charts.CHARTS) in one request, at most every 5 s.
REDRAW_GAP = 4
QUIET_ANSWERS, QUIET_SLOWER = 20, 1.5
POLL_GAP = 8
# --old-rules: the waits as first landed (the client's own wait for an answer, no cap), to
# compare the two on the same machine.
OLD_RULES = False
CHARTS = ("throughput", "failures", "stage-timings", "hooks", "sources", "tokens", "cost",
          "delivery")  # fmt: skip
CHARTS_AT_ONCE = "/pipeline/charts/?window=24h" + "".join(f"&chart={c}" for c in CHARTS)
# Pages open on the session being written (--hot): people watching an agent at work.
HOT_SESSION_PAGES = 3


def pick_pages(count: int, writer_session: str, hot: int = HOT_SESSION_PAGES) -> list[LivePage]:
    """The mix of open pages (see the module's docstring), scaled to `count`."""
    with closing(sqlite3.connect(f"file:{COPY}?mode=ro", uri=True)) as conn:
        long = long_session(conn)
        others = [sid for (sid,) in conn.execute(
            "SELECT id FROM sessions WHERE rowid IN (SELECT abs(random()) % (SELECT max(rowid)"
            " FROM sessions) FROM turns LIMIT 200) LIMIT 40")]  # fmt: skip
        processing = [rid for (rid,) in conn.execute(
            "SELECT id FROM nexus_requests WHERE status = 'processing' LIMIT 10")]  # fmt: skip
    idle_sessions = ([long[0]] if long else []) + [s for s in others if s != writer_session]
    mix = (
        [LivePage(f"/sessions/{writer_session}/", "writer") for _ in range(hot)]
        + [LivePage("/pipeline/requests/", "requests") for _ in range(3)]
        + [LivePage("/pipeline/?window=24h", "pipeline")]
        + [LivePage("/", "ledger")]
        + [LivePage(f"/pipeline/requests/{r}/", "idle") for r in processing[:5]]
        + [LivePage(f"/sessions/{s}/", "idle") for s in idle_sessions]
    )
    return [LivePage(p.path, p.follows) for p in (mix * (1 + count // len(mix)))[:count]]


def idle_pages(count: int, writer_session: str) -> list[LivePage]:
    return [p for p in pick_pages(200, writer_session) if p.follows == "idle"][:count]


OPEN_TIMEOUT_S = 180


def open_pages(base: str, pages: list[LivePage], stop: threading.Event) -> list[threading.Thread]:
    """Open the pages (each drawn once, as a tab opened before the run), and wait till they are."""
    signed_in = signed_in_browser(base)
    threads = []
    for n, page in enumerate(pages):
        thread = threading.Thread(target=page.run, args=(base, signed_in.opener, stop), daemon=True)
        thread.start()
        threads.append(thread)
        if n % 10 == 9:
            time.sleep(0.2)  # tabs are not all opened in the same instant
    deadline = time.time() + OPEN_TIMEOUT_S
    for page in pages:
        page.opened.wait(max(0.0, deadline - time.time()))
    return threads


def signed_in_browser(base: str) -> Browser:
    """A client signed in through the login form, sent on to /healthz (not to the overview, a
    heavy page on this ledger: its first draw is not what is measured)."""
    browser = Browser(base)
    _, page = browser.get("/accounts/login/")
    token = re.search(rb'name="csrfmiddlewaretoken" value="([^"]+)"', page).group(1).decode()
    form = {
        "username": USER,
        "password": PASSWORD,
        "csrfmiddlewaretoken": token,
        "next": "/healthz",
    }
    request = urllib.request.Request(
        base + "/accounts/login/?next=/healthz", data=urllib.parse.urlencode(form).encode(),
        headers={"Referer": base + "/"},
    )  # fmt: skip
    with browser.opener.open(request, timeout=120) as response:
        if response.url.rstrip("/").endswith("/accounts/login"):
            raise RuntimeError("the bench's user could not sign in")
    return browser


def delays(pages: list[LivePage], notes: list, kind: str) -> list[dict]:
    """For each commit a page should show, the first state it applied that holds it: the delay
    from the commit (`delay`), and its parts: waiting for the next poll (`gap`, from the commit
    to the poll's sending), the poll and the redraw as the client waited for them (`poll`,
    `redraw`) and as the server's worker spent them (`poll_app`, `redraw_app`)."""
    table = "turns" if kind == "writer" else "nexus_requests"
    if kind == "writer":
        commits = [(t, turns) for t, said, turns, _, _ in notes if said.endswith(" began")]
    else:
        commits = [(t, rowid) for t, said, _, rowid, _ in notes if not said.startswith("error")]
    found = []
    for page in (p for p in pages if p.follows == kind):
        states = page.applied[1:]
        for committed, rowid in commits:
            if committed < page.applied[0][0] + 1:
                continue  # before the page was open
            seen = next((s for s in states if mark(s[1], table) >= rowid), None)
            if seen is None:
                continue
            shown, _, steps = seen
            poll, redraw = steps["poll"], steps.get("redraw", Timing(0, 0, 0))
            gap = max(0.0, steps["asked"] - committed)
            found.append({
                "delay": shown - committed, "gap": gap, "poll": poll.wall, "poll_app": poll.app,
                "redraw": redraw.wall, "redraw_app": redraw.app,
            })  # fmt: skip
    return found


# -- Browsing clients -----------------------------------------------------------------------------

# Left out of the walk: the staff health page, which without a kept report runs the whole
# ledger's checks (half a minute on this ledger; the background process keeps one hourly).
NOT_BROWSED = {"health"}


def browse(base: str, until: float, tally: Tally, offset: float) -> None:
    """tools.soak's walk of every page of the contract (each client from its own place in it)."""
    with counted_thread():
        _browse(base, until, tally, offset)


def _browse(base: str, until: float, tally: Tally, offset: float) -> None:
    browser = signed_in_browser(base)
    while time.time() < until:
        walk = [p for p in pages(newest(browser, tally)) if p[0] not in NOT_BROWSED]
        start_at = int(offset * len(walk))
        for pattern, path, headers in walk[start_at:] + walk[:start_at]:
            if time.time() >= until:
                return
            started = time.perf_counter()
            try:
                status, body = browser.get(path, headers)
            except OSError as error:
                status, body = 599, str(error).encode()
            tally.add(pattern, path, status, body, time.perf_counter() - started)


# -- The server's cost -----------------------------------------------------------------------------


def cpu_seconds(pids: list[int]) -> float:
    total = 0.0
    for pid in pids:
        try:
            times = psutil.Process(pid).cpu_times()
            total += times.user + times.system
        except psutil.NoSuchProcess:
            pass
    return total


def rss_mb(pids: list[int]) -> float:
    return sum(psutil.Process(pid).memory_info().rss for pid in pids) / 1e6


def server_pids(server) -> list[int]:
    parent = psutil.Process(server.process.pid)
    return [parent.pid] + [child.pid for child in parent.children(recursive=True)]


def percentile(values: list[float], share: float) -> float:
    if not values:
        return float("nan")
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, int(share * len(ordered)))]


# -- Runs ------------------------------------------------------------------------------------------


def browsing_run(server, seconds: float, clients: int, pages: list[LivePage], tag: str) -> dict:
    stop = threading.Event()
    tally = Tally()
    threads = open_pages(server.url, pages, stop) if pages else []
    writer, out, until = start_writer(seconds, tag)
    workers = [threading.Thread(target=browse, args=(server.url, until, tally, i / clients))
               for i in range(clients)]  # fmt: skip
    pids = server_pids(server)
    cpu = cpu_seconds(pids)
    server_before, client_before = cpu_and_wait_ms(pids), tuple(CLIENT_SCHED)
    for worker in workers:
        worker.start()
    for worker in workers:
        worker.join()
    stop.set()
    server_after = cpu_and_wait_ms(pids)
    for thread in threads:
        thread.join(timeout=30)
    # (cpu, waiting for a core) in seconds, of the server's processes and of this bench's threads.
    server_sched = tuple((b - a) / 1000 for a, b in zip(server_before, server_after, strict=True))
    bench_sched = tuple(b - a for a, b in zip(client_before, CLIENT_SCHED, strict=True))
    writer.wait()
    notes = json.loads(out.read_text())
    return {
        "tally": tally,
        "notes": notes,
        "pages": pages,
        "cpu": cpu_seconds(pids) - cpu,
        "server_sched": server_sched,
        "bench_sched": bench_sched,
        "rss": rss_mb(server_pids(server)),
        "seconds": seconds,
    }


def together(runs: list[dict]) -> dict:
    """Rounds of one run as one: their requests, commits and pages, their costs added up."""
    tally = Tally()
    for run in runs:
        tally.seconds += run["tally"].seconds
        tally.statuses.update(run["tally"].statuses)
    added = {key: sum(run[key] for run in runs) for key in ("cpu", "seconds")}
    sched = {
        key: tuple(map(sum, zip(*(run[key] for run in runs), strict=True)))
        for key in ("server_sched", "bench_sched")
    }
    return {
        "tally": tally,
        "notes": [note for run in runs for note in run["notes"]],
        "pages": [page for run in runs for page in run["pages"]],
        "rss": max(run["rss"] for run in runs),
        **added,
        **sched,
    }


def idle_run(server, seconds: float, pages: list[LivePage], with_writer: bool, tag: str) -> dict:
    writer = start_writer(seconds, tag)[0] if with_writer else None
    stop = threading.Event()
    threads = open_pages(server.url, pages, stop) if pages else []
    time.sleep(2)  # every page open and drawn
    pids = server_pids(server)
    cpu, started = cpu_seconds(pids), time.time()
    time.sleep(seconds - 4)
    spent, took = cpu_seconds(pids) - cpu, time.time() - started
    rss = rss_mb(server_pids(server))
    stop.set()
    for thread in threads:
        thread.join(timeout=30)
    if writer:
        writer.wait()
    return {"cpu_per_s": spent / took, "rss": rss, "polls": sum(p.polls for p in pages)}


def sse_run(seconds: float, streams: int) -> dict:
    """The prototype under uvicorn, `streams` open streams, the writer committing."""
    import http.client

    port = free_port()
    env = environment(COPY, DJANGO_DB, "ledgerweb.settings")
    uvicorn = Path(sys.executable).with_name("uvicorn")
    process = subprocess.Popen(
        [str(uvicorn), "bench.live_sse_prototype:app", "--port", str(port), "--log-level",
         "warning"], cwd=ROOT, env=env,
    )  # fmt: skip
    try:
        for _ in range(100):
            try:
                conn = http.client.HTTPConnection("127.0.0.1", port, timeout=2)
                conn.request("GET", "/")
                conn.getresponse().read()
                break
            except OSError:
                time.sleep(0.1)
        base_rss = rss_mb([process.pid])
        events, stop = [0], threading.Event()

        def listen() -> None:
            conn = http.client.HTTPConnection("127.0.0.1", port, timeout=seconds + 30)
            conn.request("GET", "/stream")
            response = conn.getresponse()
            while not stop.is_set():
                line = response.fp.readline()
                if not line:
                    return
                if line.startswith(b"data:"):
                    events[0] += 1

        threads = [threading.Thread(target=listen, daemon=True) for _ in range(streams)]
        for thread in threads:
            thread.start()
        time.sleep(2)
        idle_cpu, started = cpu_seconds([process.pid]), time.time()
        time.sleep(min(10, seconds / 3))
        idle = (cpu_seconds([process.pid]) - idle_cpu) / (time.time() - started)
        writer = start_writer(seconds, "sse")[0]
        busy_cpu, started = cpu_seconds([process.pid]), time.time()
        writer.wait()
        busy = (cpu_seconds([process.pid]) - busy_cpu) / (time.time() - started)
        rss = rss_mb([process.pid])
        stop.set()
        return {"idle": idle, "busy": busy, "rss": rss, "base_rss": base_rss,
                "events": events[0]}  # fmt: skip
    finally:
        process.terminate()  # uvicorn waits for open streams to end: not for long
        try:
            process.wait(timeout=5)
        except subprocess.TimeoutExpired:
            process.kill()
            process.wait()


# -- The report ------------------------------------------------------------------------------------


def load() -> str:
    one, five, _ = os.getloadavg()
    return f"load average {one:.1f} (5 min {five:.1f}) on {os.cpu_count()} cores"


def report(
    args, alone: dict, beside: dict, idle: dict, sse: dict | None, loads: str, hot_turns: list
) -> str:
    a, b = alone["tally"].seconds, beside["tally"].seconds
    p95a, p95b = percentile(a, 0.95) * 1000, percentile(b, 0.95) * 1000
    lines = [
        HEADING,
        "",
        f"Command: `.venv/bin/python -m bench.live_bench --seconds {args.seconds:g} --pages"
        f" {args.pages} --clients {args.clients} --hot {args.hot} --rounds {args.rounds}"
        f" --hot-turns {args.hot_turns}"
        f"{' --old-rules' if args.old_rules else ''} --write-doc` (in `make"
        " bench`). A copy of the large bench ledger, gunicorn with 2 sync workers, a writer"
        " committing every 50 ms"
        f" ({len(beside['notes']):,} commits in the runs with live pages); the session it"
        f" writes, which --hot pages follow, had {hot_turns[0]:,} turns when the runs began and"
        f" {hot_turns[-1]:,} at their end (a new turn every ~12 commits). The runs with and"
        f" without live pages took turns,"
        f" {args.rounds} rounds of {args.seconds / args.rounds:g} s each. Measured at {loads}:"
        " other developers were working on the machine, so compare the two runs with each other.",
        "",
        "| run | browsing requests | p50 | p95 | server CPU (s per s) | server RSS |",
        "|---|---:|---:|---:|---:|---:|",
    ]
    for name, run in (("browsing alone", alone), (f"browsing + {args.pages} live pages", beside)):
        seconds = run["tally"].seconds
        lines.append(
            f"| {name} | {len(seconds):,} | {percentile(seconds, 0.5) * 1000:.0f} ms |"
            f" {percentile(seconds, 0.95) * 1000:.0f} ms | {run['cpu'] / run['seconds']:.2f} |"
            f" {run['rss']:.0f} MB |"
        )
    change = (p95b / p95a - 1) * 100 if p95a else float("nan")
    lines += [
        "",
        f"The browsing pages' p95 with the live pages open: {change:+.0f} % (target: within"
        " +20 %).",
        "",
        "| live pages | open | polls | redraws | commit → screen p50 | p95 | max |",
        "|---|---:|---:|---:|---:|---:|---:|",
    ]
    pages = beside["pages"]
    kinds = (("writer", "session being written"), ("requests", "request list"),
             ("pipeline", "dashboard"), ("ledger", "overview"),
             ("idle", "others (nothing written)"))  # fmt: skip
    parts, p95s = [], {}
    for kind, label in kinds:
        chosen = [p for p in pages if p.follows == kind]
        if not chosen:
            continue
        found = delays(pages, beside["notes"], kind) if kind != "idle" else []
        seconds = [f["delay"] for f in found]
        spread = (
            f"{percentile(seconds, 0.5):.2f} s | {percentile(seconds, 0.95):.2f} s |"
            f" {max(seconds):.2f} s"
            if found
            else "— | — | —"
        )
        lines.append(
            f"| {label} | {len(chosen) // args.rounds} | {sum(p.polls for p in chosen):,} |"
            f" {sum(p.fetches for p in chosen):,} | {spread} |"
        )
        polls = [t for p in chosen for t in p.poll_times]
        redraws = [t for p in chosen for t in p.redraw_times]
        keys = ("gap", "poll", "poll_app", "redraw", "redraw_app")
        median = {key: percentile([f[key] for f in found], 0.5) * 1000 for key in keys}
        if found:
            p95s[kind] = percentile(seconds, 0.95)
        parts.append(
            f"| {label} | {_ms(median['gap'])} | {_ms(median['poll'])} ({_ms(median['poll_app'])})"
            f" | {_ms(median['redraw'])} ({_ms(median['redraw_app'])})"
            f" | {_mean_ms(polls, 'app')} / {_mean_ms(polls, 'cpu')}"
            f" | {_mean_ms(redraws, 'app')} / {_mean_ms(redraws, 'cpu')} |"
        )
    requests = len(beside["tally"].seconds) + sum(
        len(p.poll_times) + len(p.redraw_times) for p in pages
    )
    (server_cpu, server_wait), (bench_cpu, bench_wait) = (
        beside["server_sched"],
        beside["bench_sched"],
    )
    lines += [
        "",
        "Where the delay goes (medians over the commits above: waiting for the next poll, the"
        " poll and the redraw as the page waited for them, with the server worker's own time in"
        " brackets, from its Server-Timing header; the rest of the wait is the queue in front of"
        " the two workers and the machine's load); and what each poll and redraw cost the server"
        " on average (worker time / CPU):",
        "",
        "| live pages | wait for the poll | poll (server) | redraw (server) | per poll"
        " | per redraw |",
        "|---|---:|---:|---:|---:|---:|",
        *parts,
        "",
        f"In the run with live pages, the server's processes ran {server_cpu:.0f} s on a CPU and"
        f" waited {server_wait:.0f} s for one ({server_wait / beside['seconds']:.1f} s per s: the"
        f" machine's load); this bench's own threads (its {args.clients} browsing clients and"
        f" {args.pages} pages, from their opening) ran {bench_cpu:.0f} s and waited"
        f" {bench_wait:.0f} s (requests: {requests:,}, so {bench_wait / requests * 1000:.0f} ms"
        " each: the bench's own wait for a core is not what delays the pages).",
        "",
        "Targets: " + "; ".join(targets(change, p95s)) + ".",
    ]
    errors = sum(p.errors for p in pages)
    lines += [
        "",
        f"Errors on the live pages: {errors}. Statuses of the browsing requests beside them:"
        f" {dict(sorted(beside['tally'].statuses.items()))}.",
        "",
        f"Idle live pages (pages of sessions and requests nobody writes), {args.pages} open, no"
        " browsing:",
        "",
        "| ledger | server CPU for all of them | per page | server RSS with them | without |",
        "|---|---:|---:|---:|---:|",
    ]
    for name, key in (("unchanged (no writer)", "still"), ("written every 50 ms", "moving")):
        run, base = idle[key], idle[key + "-base"]
        cpu = run["cpu_per_s"] - base["cpu_per_s"]
        lines.append(
            f"| {name} | {cpu * 1000:.0f} ms per s | {cpu * 1000 / args.pages:.1f} ms per s |"
            f" {run['rss']:.0f} MB | {base['rss']:.0f} MB |"
        )
    if sse:
        lines += [
            "",
            f"The road not taken, for comparison: {args.pages} server-sent-event streams on an ASGI"
            " server (bench/live_sse_prototype.py under uvicorn, no Django, so a lower bound):"
            f" {sse['idle'] * 1000:.0f} ms of CPU per second while the ledger is still,"
            f" {sse['busy'] * 1000:.0f} ms per second while it is written every 50 ms"
            f" ({sse['events']:,} events sent), {sse['rss']:.0f} MB resident"
            f" ({sse['rss'] - sse['base_rss']:.1f} MB for the streams). It would need a server of"
            " its own beside gunicorn's sync workers, and each event would still cost a page"
            " its check and its redraw: docs/decisions.md says why the pages poll instead.",
        ]
    return "\n".join(lines)


def targets(change: float, p95s: dict) -> list[str]:
    """Each of issue 29's targets, its figure here, and whether it is met."""
    said = []
    for name, figure, target, unit in (
        ("browsing p95 beside the live pages", change, 20, " %"),
        ("the written session's commit → screen p95", p95s.get("writer"), 2, " s"),
        ("the dashboard's p95", p95s.get("pipeline"), 10, " s"),
        ("the overview's p95", p95s.get("ledger"), 10, " s"),
    ):
        if figure is None or figure != figure:
            said.append(f"{name}: not measured")
            continue
        verdict = "**met**" if figure <= target else "**not met**"
        shown = f"{figure:+.0f}" if unit == " %" else f"{figure:.2f}"
        said.append(f"{name} {shown}{unit} (≤ {target}{unit}): {verdict}")
    return said


def _ms(value: float) -> str:
    return "—" if value != value else f"{value:.0f} ms"  # NaN: nothing measured


def _mean_ms(timings: list, name: str) -> str:
    if not timings:
        return "—"
    return f"{sum(getattr(t, name) for t in timings) / len(timings) * 1000:.1f} ms"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--seconds", type=float, default=60)
    parser.add_argument("--pages", type=int, default=50)
    parser.add_argument("--clients", type=int, default=8)
    parser.add_argument("--rounds", type=int, default=2,
                        help="turns the runs with and without live pages take")  # fmt: skip
    parser.add_argument("--hot", type=int, default=HOT_SESSION_PAGES,
                        help="how many of the pages follow the session being written")  # fmt: skip
    parser.add_argument("--hot-turns", type=int, default=3000,
                        help="grow the session being written to this many turns first")  # fmt: skip
    parser.add_argument("--keep-copy", action="store_true",
                        help="reuse var/bench/live-scale.sqlite3 if it is there")  # fmt: skip
    parser.add_argument("--old-rules", action="store_true",
                        help="the waits as first landed: the client's wait, no cap")  # fmt: skip
    parser.add_argument("--no-sse", action="store_true", help="skip the SSE prototype")
    parser.add_argument("--write-doc", action="store_true")
    parser.add_argument("--writer", nargs=3, help=argparse.SUPPRESS)
    args = parser.parse_args()
    global OLD_RULES
    OLD_RULES = args.old_rules
    if args.writer:
        write(Path(args.writer[0]), float(args.writer[1]), Path(args.writer[2]))
        return

    ensure_ledger(environment(LEDGER, DJANGO_DB, "ledgerweb.settings"))
    if not (args.keep_copy and COPY.exists()):
        print(f"copying {LEDGER.name} to {COPY.name} (the writer writes to it)", file=sys.stderr)
        for suffix in ("-wal", "-shm"):
            Path(f"{COPY}{suffix}").unlink(missing_ok=True)
        shutil.copyfile(LEDGER, COPY)
    env = environment(COPY, DJANGO_DB, "ledgerweb.settings")
    collect_static()
    if DJANGO_DB.exists():  # kept for its summaries: brought up to date
        subprocess.run([PYTHON, "manage.py", "migrate", "--noinput", "-v0"], cwd=ROOT, env=env,
                       check=True)  # fmt: skip
    else:
        prepare_django(env)
    # The background process keeps the charts' hours summarised (30 days); the dashboard and the
    # overview lean on that, as they do beside `make serve`. Kept in ledgerweb's database between
    # runs (the copy is the same ledger at the same path): the first run builds them (~15 min on
    # 2 cores), later ones only the hours the writer wrote to. Without a time limit per query.
    print("summarising the copy's last 30 days (the first time: ~15 min)", file=sys.stderr)
    subprocess.run([PYTHON, "manage.py", "ledger_rollup", "--days", "30"], cwd=ROOT,
                   env=env | {"LEDGER_QUERY_TIMEOUT_MS": "600000"}, check=True,
                   stdout=subprocess.DEVNULL)  # fmt: skip
    # A first step so the writer's session exists before the pages are chosen.
    write(COPY, time.time() + 0.5, BENCH / "live-writer-first.json")
    with closing(sqlite3.connect(f"file:{COPY}?mode=ro", uri=True)) as conn:
        (writer_session,) = conn.execute(
            "SELECT id FROM sessions WHERE routing_key = 'cursor:ledgerweb:live-demo'"
            " ORDER BY rowid DESC LIMIT 1"
        ).fetchone()
    grow(COPY, writer_session, args.hot_turns)
    hot_turns = [session_turns(COPY, writer_session)]
    server = start_server(env, WORKERS, BENCH / "live-gunicorn.log")
    loads = []
    try:
        # A first pass over every page (and every live page's page), unmeasured: the copy's pages
        # come from disk the first time, and the runs compare a warm server with a warm server.
        browsing_run(server, args.seconds / 2, args.clients, [], "warm")
        warm = pick_pages(args.pages, writer_session)
        stop = threading.Event()
        open_pages(server.url, warm, stop)
        stop.set()
        # The two runs take turns (--rounds of each, args.seconds in all): the machine's load
        # drifts over minutes (others work on it), and one run of each compared that drift.
        alone, beside, part = [], [], args.seconds / args.rounds
        for n in range(args.rounds):
            loads.append(load())
            alone.append(browsing_run(server, part, args.clients, [], f"alone-{n}"))
            tabs = pick_pages(args.pages, writer_session, args.hot)
            beside.append(browsing_run(server, part, args.clients, tabs, f"beside-{n}"))
        alone, beside = together(alone), together(beside)
        hot_turns.append(session_turns(COPY, writer_session))
        idle = {}
        for key, with_writer in (("still", False), ("moving", True)):
            quiet = max(20.0, args.seconds / 2)
            idle[key + "-base"] = idle_run(server, quiet, [], with_writer, key + "-base")
            idle[key] = idle_run(server, quiet, idle_pages(args.pages, writer_session),
                                 with_writer, key)  # fmt: skip
        loads.append(load())
    finally:
        server.stop()
    sse = None if args.no_sse else sse_run(max(20.0, args.seconds / 2), args.pages)
    report_text = report(args, alone, beside, idle, sse, "; ".join(loads), hot_turns)
    publish(HEADING, report_text, args.write_doc)


if __name__ == "__main__":
    main()
