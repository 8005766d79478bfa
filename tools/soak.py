"""Soak: a live writer appends to the ledger while several clients browse every page through
gunicorn, over real HTTP on loopback.

    .venv/bin/python -m tools.soak                       # WAL, then rollback journal (DELETE)
    .venv/bin/python -m tools.soak --seconds 60 --clients 4 --journal wal --write-doc

Each run has two phases of equal length on a fresh ledger: the writer alone, then the writer
with the clients. The writer is its own process, committing one short transaction at a time as
an agent runtime does (a turn with its messages and a tool call, a pipeline request upserted
stage by stage, now and then a new session); it records how long each commit took, lock waits
included. The clients sign in through the login form and walk every page of the contract,
following the writer's newest session, turn and request. Counted: responses by status, 5xx,
"database is locked" in a response or in gunicorn's log, and the writer's commit latency
p50/p99 per phase. `make soak` runs the long form; tests/test_live_writer.py a short one.
"""

import argparse
import http.cookiejar
import json
import os
import re
import socket
import sqlite3
import subprocess
import sys
import tempfile
import threading
import time
import urllib.error
import urllib.parse
import urllib.request
from collections import Counter
from dataclasses import dataclass, field
from pathlib import Path

PROJECT = Path(__file__).resolve().parent.parent
PYTHON = sys.executable
GUNICORN = Path(sys.executable).with_name("gunicorn")
CHARTS = ("throughput", "failures", "stage-timings", "hooks", "sources", "tokens", "delivery")
LOCKED = "database is locked"
USER, PASSWORD = "soak", "soak-password-not-secret"
REQUEST_TIMEOUT_S = 60
WRITER_BUSY_TIMEOUT_S = 10  # a commit waiting longer than this fails and is counted


# -- The writer (a separate process) --------------------------------------------------------------


def write(path: Path, until: float, out: Path, pause_s: float) -> None:
    """Commit continuously until `until` (time.time()); write [(start, seconds, error), …]."""
    conn = sqlite3.connect(path, timeout=WRITER_BUSY_TIMEOUT_S, isolation_level=None)
    commits: list[tuple[float, float, str]] = []
    n, session, parent, request = 0, None, None, None
    while time.time() < until:
        n += 1
        now_ms = int(time.time() * 1000)
        start = time.time()
        t0 = time.perf_counter()
        error = ""
        try:
            conn.execute("BEGIN IMMEDIATE")
            if session is None or n % 50 == 0:
                session, parent = f"SOAK{n:08d}", None
                conn.execute(
                    "INSERT INTO sessions (id, persona, routing_key, label, created_at,"
                    " updated_at) VALUES (?, 'atlas', ?, ?, ?, ?)",
                    (session, f"imessage:+1555{n:07d}:default", f"Soak {n}", now_ms, now_ms),
                )
            turn = f"T{n:08d}"
            # Every 10th turn retries from the grandparent: the tree branches as real ones do.
            conn.execute(
                "INSERT INTO turns (id, session_id, parent_turn_id, status, started_at,"
                " completed_at, prompt_tokens, completion_tokens, total_tokens, model)"
                " VALUES (?, ?, ?, 'completed', ?, ?, 1200, 80, 1280, 'claude-sonnet-4-20250514')",
                (turn, session, parent, now_ms, now_ms + 900),
            )
            for seq, role in ((1, "user"), (2, "assistant")):
                conn.execute(
                    "INSERT INTO messages (id, turn_id, role, content, sequence, created_at)"
                    " VALUES (?, ?, ?, ?, ?, ?)",
                    (f"M{n:08d}{seq}", turn, role, f"{role} message of turn {n}", seq, now_ms),
                )
            conn.execute(
                "INSERT INTO tool_calls (id, turn_id, tool_name, parameters, result, status,"
                " started_at, completed_at, sequence) VALUES (?, ?, 'gog', '{\"q\": 1}',"
                " '{\"ok\": true}', 'completed', ?, ?, 1)",
                (f"C{n:08d}", turn, now_ms, now_ms + 300),
            )
            conn.execute(
                "UPDATE sessions SET root_turn_id = coalesce(root_turn_id, ?),"
                " current_turn_id = ?, updated_at = ? WHERE id = ?",
                (turn, turn, now_ms, session),
            )
            if request:  # the previous request reaches its last stage
                conn.execute(
                    "UPDATE nexus_requests SET stage = 'finalize', status = ?, completed_at = ?,"
                    " stage_timings = ?, error_stage = ?, error_message = ? WHERE id = ?",
                    ("failed" if n % 20 == 0 else "completed", now_ms,
                     json.dumps({"receiveEvent": 2, "runAgent": 850, "finalize": 3}),
                     "runAgent" if n % 20 == 0 else None,
                     f"timeout after {n % 7} s" if n % 20 == 0 else None, request),
                )  # fmt: skip
            request = f"R{n:08d}"
            conn.execute(
                "INSERT INTO nexus_requests (id, event_id, event_type, event_source, stage,"
                " status, principal_id, session_key, session_persona, hooks_matched,"
                " hooks_fired, turn_id, agent_model, agent_tokens_total, delivery_channel,"
                " started_at) VALUES (?, ?, 'message', ?, 'runAgent', 'processing', 'p1', ?,"
                " 'atlas', '[\"greet\"]', '[]', ?, 'claude-sonnet-4-20250514', 1280,"
                " 'imessage', ?)",
                (request, f"e{n}", ("imessage", "email", "discord")[n % 3], session, turn,
                 now_ms),
            )  # fmt: skip
            conn.execute("COMMIT")
            parent = turn if n % 10 else parent  # the next turn retries from here
        except sqlite3.OperationalError as exc:
            error = str(exc)
            if conn.in_transaction:
                conn.execute("ROLLBACK")
        commits.append((start, time.perf_counter() - t0, error))
        time.sleep(pause_s)
    conn.close()
    out.write_text(json.dumps(commits))


# -- The server ------------------------------------------------------------------------------------


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


@dataclass
class Server:
    url: str
    process: subprocess.Popen
    log: Path

    def stop(self) -> str:
        self.process.terminate()
        try:
            self.process.wait(timeout=20)
        except subprocess.TimeoutExpired:
            self.process.kill()
            self.process.wait()
        return self.log.read_text(errors="replace")


def environment(ledger: Path, django_db: Path, settings: str) -> dict[str, str]:
    return os.environ | {
        "DJANGO_SETTINGS_MODULE": settings,
        "LEDGER_DB": str(ledger),
        "DJANGO_DB": str(django_db),
        "SECRET_KEY": "soak-" + "k3Yq9Lz2" * 6,
        "DEBUG": "0",
        "HTTPS": "0",
        "ALLOWED_HOSTS": "127.0.0.1",
        "LOG_LEVEL": "WARNING",
    }


def collect_static() -> None:
    """The production settings serve static files from STATIC_ROOT with a manifest, as
    `make serve` does: collect them once before the runs (the test settings need none)."""
    env = environment(Path("unused"), Path("unused"), "ledgerweb.settings")
    subprocess.run([PYTHON, "manage.py", "collectstatic", "--noinput", "-v0"], cwd=PROJECT,
                   env=env, check=True)  # fmt: skip


def prepare_django(env: dict[str, str]) -> None:
    """Django's own database with one superuser (the health page is for staff)."""
    manage = [PYTHON, "manage.py"]
    subprocess.run([*manage, "migrate", "--noinput", "-v0"], cwd=PROJECT, env=env, check=True)
    subprocess.run(
        [*manage, "createsuperuser", "--noinput", "--username", USER, "--email", ""],
        cwd=PROJECT, env=env | {"DJANGO_SUPERUSER_PASSWORD": PASSWORD}, check=True,
    )  # fmt: skip


def start_server(env: dict[str, str], workers: int, log: Path) -> Server:
    port = free_port()
    process = subprocess.Popen(
        [str(GUNICORN), "ledgerweb.wsgi", "--bind", f"127.0.0.1:{port}", "--workers",
         str(workers), "--timeout", "60", "--error-logfile", "-"],
        cwd=PROJECT, env=env, stdout=log.open("w"), stderr=subprocess.STDOUT,
    )  # fmt: skip
    url = f"http://127.0.0.1:{port}"
    deadline = time.time() + 30
    while time.time() < deadline:
        try:
            urllib.request.urlopen(url + "/healthz", timeout=2).read()
            return Server(url, process, log)
        except OSError:
            if process.poll() is not None:
                raise RuntimeError("gunicorn exited:\n" + log.read_text()) from None
            time.sleep(0.2)
    process.kill()
    raise RuntimeError("gunicorn did not answer /healthz within 30 s:\n" + log.read_text())


# -- The clients -----------------------------------------------------------------------------------


@dataclass
class Tally:
    statuses: Counter = field(default_factory=Counter)
    failures: list[str] = field(default_factory=list)  # 5xx, errors, "database is locked"
    locked: int = 0
    pages: set = field(default_factory=set)  # URL patterns visited
    seconds: list[float] = field(default_factory=list)
    lock: threading.Lock = field(default_factory=threading.Lock)

    def add(self, pattern: str, url: str, status: int, body: bytes, elapsed: float) -> None:
        with self.lock:
            self.statuses[status] += 1
            self.pages.add(pattern)
            self.seconds.append(elapsed)
            if LOCKED.encode() in body:
                self.locked += 1
                self.failures.append(f"{status} {url}: {LOCKED}")
            elif status >= 500:
                snippet = re.sub(rb"\s+", b" ", body[:300]).decode(errors="replace")
                self.failures.append(f"{status} {url}: {snippet}")


class Browser:
    """One signed-in person with a cookie jar, over real HTTP."""

    def __init__(self, base: str):
        self.base = base
        self.opener = urllib.request.build_opener(
            urllib.request.HTTPCookieProcessor(http.cookiejar.CookieJar())
        )

    def get(self, path: str, headers: dict | None = None) -> tuple[int, bytes]:
        request = urllib.request.Request(self.base + path, headers=headers or {})
        try:
            with self.opener.open(request, timeout=REQUEST_TIMEOUT_S) as response:
                return response.status, response.read()
        except urllib.error.HTTPError as error:
            return error.code, error.read()

    def sign_in(self) -> None:
        _, page = self.get("/accounts/login/")
        token = re.search(rb'name="csrfmiddlewaretoken" value="([^"]+)"', page).group(1)
        form = urllib.parse.urlencode(
            {"username": USER, "password": PASSWORD, "csrfmiddlewaretoken": token.decode()}
        ).encode()
        request = urllib.request.Request(
            self.base + "/accounts/login/", data=form, headers={"Referer": self.base + "/"}
        )
        with self.opener.open(request, timeout=REQUEST_TIMEOUT_S) as response:
            if response.url.rstrip("/").endswith("/accounts/login"):
                raise RuntimeError("the soak user could not sign in")


def newest(browser: Browser, tally: Tally) -> dict:
    """Ids to browse, read from the JSON twins: the writer's newest session, turn, request."""
    ids = {}
    for pattern, path in (("sessions json", "/sessions/?format=json"),
                          ("requests json", "/pipeline/requests/?format=json")):  # fmt: skip
        start = time.perf_counter()
        status, body = browser.get(path)
        tally.add(pattern, path, status, body, time.perf_counter() - start)
        if status != 200:
            continue
        data = json.loads(body)
        if "sessions" in data and data["sessions"]:
            session = data["sessions"][0]
            ids["session"] = session["id"]
            ids["turn"] = session.get("current_turn_id")
            ids["root"] = session.get("root_turn_id")
        elif data.get("requests"):
            ids["request"] = data["requests"][0]["id"]
    return ids


def pages(ids: dict) -> list[tuple[str, str, dict]]:
    """(pattern, path, headers) of every page of the contract, for these ids."""
    found = [
        ("overview", "/", {}), ("overview json", "/?format=json", {}),
        ("session list", "/sessions/", {}), ("pipeline dashboard", "/pipeline/", {}),
        *[(f"chart {c}", f"/pipeline/charts/{c}/?window=24h", {"HX-Request": "true"})
          for c in CHARTS],
        ("request list", "/pipeline/requests/", {}),
        ("request list failed", "/pipeline/requests/?status=failed", {}),
        ("health", "/health/", {}), ("healthz", "/healthz", {}),
        ("admin sessions", "/admin/conversations/session/", {}),
        ("admin requests", "/admin/pipeline/nexusrequest/", {}),
    ]  # fmt: skip
    s, t = ids.get("session"), ids.get("turn")
    if s and t:
        found += [
            ("session", f"/sessions/{s}/", {}), ("session json", f"/sessions/{s}/?format=json", {}),
            ("turn", f"/sessions/{s}/turns/{t}/", {}),
            ("turn panel", f"/sessions/{s}/turns/{t}/", {"HX-Request": "true"}),
            ("thread", f"/sessions/{s}/turns/{t}/thread/", {}),
            ("export", f"/sessions/{s}/turns/{t}/export.json", {}),
            ("compare", f"/sessions/{s}/compare/?a={ids.get('root')}&b={t}", {}),
        ]  # fmt: skip
    if ids.get("request"):
        r = ids["request"]
        found += [("request", f"/pipeline/requests/{r}/", {}),
                  ("request json", f"/pipeline/requests/{r}/?format=json", {})]  # fmt: skip
    return found


def browse(base: str, until: float, tally: Tally, offset: float) -> None:
    """Walk every page until `until`; each client starts at its own `offset` (a fraction) of
    the list, so that together they cover it soon even in a short run."""
    browser = Browser(base)
    browser.sign_in()
    while time.time() < until:
        walk = pages(newest(browser, tally))
        start_at = int(offset * len(walk))
        for pattern, path, headers in walk[start_at:] + walk[:start_at]:
            if time.time() >= until:
                return
            start = time.perf_counter()
            try:
                status, body = browser.get(path, headers)
            except OSError as error:  # a reset or a timeout: as bad as a 5xx
                status, body = 599, str(error).encode()
            tally.add(pattern, path, status, body, time.perf_counter() - start)


# -- A run -----------------------------------------------------------------------------------------


@dataclass
class Result:
    journal: str
    seconds: float
    clients: int
    alone: list[float]  # commit latencies (s), writer alone
    with_readers: list[float]
    writer_errors: list[str]
    tally: Tally
    server_log_locked: int
    server_log_errors: list[str]
    health_says: str

    @property
    def fivexx(self) -> int:
        return sum(n for status, n in self.tally.statuses.items() if status >= 500)

    @property
    def locked(self) -> int:
        return (self.tally.locked + self.server_log_locked
                + sum(LOCKED in e for e in self.writer_errors))  # fmt: skip


def percentile(values: list[float], p: float) -> float:
    if not values:
        return float("nan")
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, max(0, round(p / 100 * len(ordered)) - 1))]


def run(seconds: float, clients: int, journal: str = "wal", workers: int = 2,
        settings: str = "ledgerweb.settings", pause_s: float = 0.005) -> Result:  # fmt: skip
    """One soak: `seconds` of the writer alone, then `seconds` with `clients` browsing."""
    sys.path.insert(0, str(PROJECT))
    from ledgerfacts import schema  # here: the writer process and --help need no Django

    with tempfile.TemporaryDirectory(prefix="ledgerweb-soak-") as folder:
        folder = Path(folder)
        ledger, django_db = folder / "ledger.sqlite3", folder / "django.sqlite3"
        schema.create_ledger(ledger)  # WAL
        if journal != "wal":
            with sqlite3.connect(ledger) as conn:
                conn.execute(f"PRAGMA journal_mode = {journal}")
        env = environment(ledger, django_db, settings)
        prepare_django(env)
        server = start_server(env, workers, folder / "gunicorn.log")
        try:
            start = time.time()
            middle, end = start + seconds, start + 2 * seconds
            out = folder / "commits.json"
            writer = subprocess.Popen(
                [PYTHON, "-m", "tools.soak", "--writer", str(ledger), "--until", str(end),
                 "--out", str(out), "--pause", str(pause_s)], cwd=PROJECT,
            )  # fmt: skip
            time.sleep(max(0.0, middle - time.time()))
            tally = Tally()
            threads = [threading.Thread(target=browse, args=(server.url, end, tally, i / clients))
                       for i in range(clients)]  # fmt: skip
            for t in threads:
                t.start()
            for t in threads:
                t.join()
            writer.wait(timeout=WRITER_BUSY_TIMEOUT_S * 3)
            health_says = _health_warning(server.url)
        finally:
            log = server.stop()
        commits = json.loads(out.read_text())
    in_window = [c for c in commits if c[0] < middle]
    return Result(
        journal=journal, seconds=seconds, clients=clients,
        alone=[c[1] for c in in_window if not c[2]],
        with_readers=[c[1] for c in commits if c[0] >= middle and not c[2]],
        writer_errors=[c[2] for c in commits if c[2]], tally=tally,
        server_log_locked=log.count(LOCKED),
        server_log_errors=[line for line in log.splitlines() if "Traceback" in line
                           or "[ERROR]" in line or "WORKER TIMEOUT" in line],
        health_says=health_says,
    )  # fmt: skip


def _health_warning(base: str) -> str:
    """What the overview and the health page tell the user about the journal mode."""
    browser = Browser(base)
    browser.sign_in()
    said = []
    for path in ("/", "/health/"):
        _, body = browser.get(path)
        text = re.sub(r"<[^>]+>", "", body.decode(errors="replace"))
        text = re.sub(r"\s+", " ", text)
        for pattern in (
            r"Not in WAL mode\. [^.]*\.",
            r"the ledger is in \w+ mode, not WAL[^.0-9]*",
        ):
            said += [f"{path} says “{m.strip()}”" for m in re.findall(pattern, text)]
    return " | ".join(said)


# -- Reporting -------------------------------------------------------------------------------------


def ms(seconds: float) -> str:
    return f"{seconds * 1000:.1f}"


def summary(r: Result) -> str:
    pages_per_s = sum(r.tally.statuses.values()) / r.seconds
    return "\n".join([
        f"journal={r.journal} clients={r.clients} phases={r.seconds:.0f} s + {r.seconds:.0f} s",
        f"  writer alone:        {len(r.alone):6d} commits, p50 {ms(percentile(r.alone, 50))} ms,"
        f" p99 {ms(percentile(r.alone, 99))} ms, max {ms(max(r.alone, default=0))} ms",
        f"  writer with readers: {len(r.with_readers):6d} commits,"
        f" p50 {ms(percentile(r.with_readers, 50))} ms, p99 {ms(percentile(r.with_readers, 99))}"
        f" ms, max {ms(max(r.with_readers, default=0))} ms",
        f"  writer errors: {len(r.writer_errors)} {Counter(r.writer_errors).most_common(3)}",
        f"  responses: {sum(r.tally.statuses.values())} ({pages_per_s:.1f}/s),"
        f" statuses {dict(sorted(r.tally.statuses.items()))},"
        f" page p50 {ms(percentile(r.tally.seconds, 50))} ms,"
        f" p99 {ms(percentile(r.tally.seconds, 99))} ms",
        f"  5xx: {r.fivexx}; 'database is locked': {r.locked}"
        f" (responses {r.tally.locked}, server log {r.server_log_locked})",
        f"  server log errors: {len(r.server_log_errors)}",
        *[f"    {f}" for f in r.tally.failures[:5]],
        f"  pages visited: {len(r.tally.pages)}",
        f"  the user is told: {r.health_says or '(nothing about the journal mode)'}",
    ])  # fmt: skip


def reading(results: list[Result]) -> list[str]:
    """What the figures say, computed from them."""
    said = []
    for r in results:
        said.append(
            f"- **{r.journal}**: with {r.clients} clients browsing, the writer's commit p50 went "
            f"from {ms(percentile(r.alone, 50))} to {ms(percentile(r.with_readers, 50))} ms and "
            f"its p99 from {ms(percentile(r.alone, 99))} to {ms(percentile(r.with_readers, 99))}"
            f" ms; it committed {len(r.with_readers) / max(1, len(r.alone)):.0%} as many steps "
            f"as alone; {r.fivexx} responses were 5xx, {r.locked} said 'database is locked', "
            f"{len(r.writer_errors)} commits failed."
            + (f" The user is told: {r.health_says}." if r.health_says else "")
        )
    return said + [
        "- In WAL mode readers never take a lock the writer waits for; what the readers cost the "
        "writer here is CPU (gunicorn's workers and the writer share two cores). In "
        "rollback-journal (DELETE) mode every page's read transaction holds a shared lock that "
        "the writer's COMMIT must wait out, and readers wait while the writer commits: "
        "nothing fails within the busy timeouts (5 s for pages, 10 s for this writer), but the "
        "writer slows down, which an agent runtime feels as latency on every message. The "
        "overview and the health page say so and give the one-line fix."
    ]


def write_doc(results: list[Result], command: str) -> None:
    import platform

    from tools.docfile import replace_section

    commit = subprocess.run(["git", "rev-parse", "--short", "HEAD"], cwd=PROJECT,
                            capture_output=True, text=True).stdout.strip()  # fmt: skip
    lines = [
        "# Benchmarks: live writer",
        "",
        "```sh",
        command,
        "```",
        "",
        f"- Date: {time.strftime('%Y-%m-%d %H:%M UTC', time.gmtime())}; code: commit {commit}",
        f"- Machine: {os.cpu_count()} cores; Python {platform.python_version()}, "
        f"SQLite {sqlite3.sqlite_version}; load average before: "
        + " / ".join(f"{x:.2f}" for x in os.getloadavg()),
        "- gunicorn (production settings, 2 sync workers) on loopback; each client signs in "
        "through the login form and walks every page of the contract (overview, session list "
        "and page, turn page and htmx panel, thread, export, compare, dashboard and its 7 "
        "charts, request list and page, health, healthz, two admin lists, JSON twins), "
        "following the writer's newest session, turn and request.",
        "- The writer is a separate process: one `BEGIN IMMEDIATE … COMMIT` per step (a turn, "
        "two messages, a tool call, the session head moved, a request inserted and the "
        "previous one finalized; a new session every 50 steps), 5 ms apart. Commit latency is "
        "measured from BEGIN to the end of COMMIT, lock waits included.",
        "",
        "| journal | clients | phase | commits | commit p50 ms | commit p99 ms | max ms "
        "| responses | 5xx | database is locked |",
        "|---|--:|---|--:|--:|--:|--:|--:|--:|--:|",
    ]
    for r in results:
        lines.append(f"| {r.journal} | — | writer alone, {r.seconds:.0f} s | {len(r.alone)} | "
                     f"{ms(percentile(r.alone, 50))} | {ms(percentile(r.alone, 99))} | "
                     f"{ms(max(r.alone, default=0))} | — | — | — |")  # fmt: skip
        lines.append(
            f"| {r.journal} | {r.clients} | with readers, {r.seconds:.0f} s | "
            f"{len(r.with_readers)} | {ms(percentile(r.with_readers, 50))} | "
            f"{ms(percentile(r.with_readers, 99))} | {ms(max(r.with_readers, default=0))} | "
            f"{sum(r.tally.statuses.values())} | {r.fivexx} | {r.locked} |"
        )
    lines += ["", *reading(results), "", "What each run reported:", "", "```"]
    lines += [summary(r) for r in results]
    lines += ["```"]
    replace_section("# Benchmarks: live writer", "\n".join(lines))


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--seconds", type=float, default=90, help="length of each phase")
    parser.add_argument("--clients", type=int, default=4)
    parser.add_argument("--workers", type=int, default=2, help="gunicorn workers")
    parser.add_argument("--journal", choices=["wal", "delete", "both"], default="both")
    parser.add_argument("--write-doc", action="store_true", help="update docs/benchmarks.md")
    # The writer process's own arguments.
    parser.add_argument("--writer", type=Path, help=argparse.SUPPRESS)
    parser.add_argument("--until", type=float, help=argparse.SUPPRESS)
    parser.add_argument("--out", type=Path, help=argparse.SUPPRESS)
    parser.add_argument("--pause", type=float, default=0.005, help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.writer:
        write(args.writer, args.until, args.out, args.pause)
        return
    journals = ["wal", "delete"] if args.journal == "both" else [args.journal]
    collect_static()
    results = []
    for journal in journals:
        result = run(args.seconds, args.clients, journal, args.workers)
        print(summary(result), flush=True)
        results.append(result)
    if args.write_doc:
        args_ = " ".join(sys.argv[1:])
        write_doc(
            results, f"make soak SOAK_ARGS=--write-doc  # .venv/bin/python -m tools.soak {args_}"
        )
    wal = [r for r in results if r.journal == "wal"]
    sys.exit(1 if any(r.fivexx or r.locked or r.writer_errors for r in wal) else 0)


if __name__ == "__main__":
    main()
