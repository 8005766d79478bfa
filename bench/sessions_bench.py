"""Server time of the sessions pages on big ledgers: median and p95 over N runs, ledger queries.

    .venv/bin/python -m bench.sessions_bench --write-doc

Builds its ledgers once into var/bench/ (reused when present): the demo ledger at scale 13 (a
~5,000-turn session with a 600-tool-call turn), a copy with two sessions made of that session's
first 100 and 1,000 turns, and a copy whose sessions are multiplied to 100,000+ for the list.
Each ledger is measured in its own process (settings read LEDGER_DB at import): Django's test
Client, a superuser logged in with force_login, DEBUG off; the time is that of client.get().
"""

import argparse
import json
import math
import os
import platform
import sqlite3
import statistics
import subprocess
import sys
import time
from contextlib import closing
from datetime import UTC, datetime
from pathlib import Path

from tools.docfile import replace_section

ROOT = Path(__file__).resolve().parent.parent
BENCH = ROOT / "var" / "bench"
BASE = BENCH / "sessions.sqlite3"  # the demo ledger, as ledger_demo wrote it
DERIVED = BENCH / "sessions-derived.sqlite3"  # + sessions of the first 100 / 1,000 turns
LIST = BENCH / "sessions-100k.sqlite3"  # sessions (and their turns) multiplied
DOC = ROOT / "docs" / "benchmarks.md"
HEADING = "# Benchmarks: the sessions pages"
COMMAND = ".venv/bin/python -m bench.sessions_bench --write-doc"
# A fixed anchor time (2026-09-01 UTC) makes the demo ledger the same on every build.
DEMO_ARGS = ("--scale", "13", "--seed", "1", "--now", "1788220800000")
LONG_KEY = "cursor:ledgerweb:1"
PREFIXES = (100, 1000)
LIST_SESSIONS = 100_000
SEARCH = "priya"
ENV = {
    "DJANGO_SETTINGS_MODULE": "ledgerweb.settings",
    "SECRET_KEY": "bench",
    "DEBUG": "0",
    "HTTPS": "0",
    "ALLOWED_HOSTS": "testserver",
    "DJANGO_DB": str(BENCH / "django.sqlite3"),
}
TARGETS = {"session-5000": 500, "turn": 200, "list": 150}  # ms

SESSION_COLS = (
    "id, persona, routing_key, label, root_turn_id, current_turn_id, created_at, updated_at,"
    " status, source_event_id"
)
TURN_COLS = (
    "id, session_id, parent_turn_id, status, started_at, completed_at, prompt_tokens,"
    " completion_tokens, total_tokens, model, source_event_id"
)
MESSAGE_COLS = "id, turn_id, role, content, sequence, created_at"


# -- Ledgers -------------------------------------------------------------------------------------


def manage(*args: str) -> None:
    subprocess.run([sys.executable, "manage.py", *args], cwd=ROOT, env=os.environ | ENV, check=True)


def build_copy(src: Path, dst: Path, fill) -> None:
    """Copy src to dst and let fill(conn) add rows; a crash leaves no half-built dst."""
    tmp = dst.with_name(dst.name + ".tmp")
    tmp.unlink(missing_ok=True)
    conn = sqlite3.connect(tmp)
    with closing(sqlite3.connect(f"file:{src}?mode=ro", uri=True)) as source:
        source.backup(conn)
    conn.execute("PRAGMA journal_mode = DELETE")
    conn.execute("PRAGMA synchronous = OFF")
    conn.execute("PRAGMA cache_size = -400000")
    fill(conn)
    conn.commit()
    conn.execute("PRAGMA journal_mode = WAL")  # as ledger_demo leaves it
    conn.close()
    os.replace(tmp, dst)


def add_prefix_session(conn: sqlite3.Connection, session_id: str, n: int) -> None:
    """A new session holding copies (new ids: suffix) of the first n turns of session_id by start
    time, with their messages, tool calls and compactions: the long session as it was back then,
    branches included."""
    s = f"-first{n}"
    conn.execute("DROP TABLE IF EXISTS temp.pick")
    conn.execute(
        "CREATE TEMP TABLE pick AS SELECT id, started_at FROM turns WHERE session_id = ?"
        " ORDER BY started_at, id LIMIT ?",
        (session_id, n),
    )
    head, last_start = conn.execute(
        "SELECT id, started_at FROM pick ORDER BY rowid DESC LIMIT 1"
    ).fetchone()
    p = {"s": s, "sid": session_id, "n": n, "head": head, "last": last_start}
    conn.execute(
        f"""INSERT INTO sessions ({SESSION_COLS})
            SELECT id || :s, persona, 'cursor:ledgerweb:first-' || :n,
                   label || ' (first ' || :n || ' turns)', root_turn_id || :s, :head || :s,
                   created_at, :last, status, source_event_id
            FROM sessions WHERE id = :sid""",
        p,
    )
    conn.execute(
        f"""INSERT INTO turns ({TURN_COLS})
            SELECT id || :s, session_id || :s, parent_turn_id || :s, status, started_at,
                   completed_at, prompt_tokens, completion_tokens, total_tokens, model,
                   source_event_id
            FROM turns WHERE id IN (SELECT id FROM pick)""",
        p,
    )
    conn.execute(
        f"""INSERT INTO messages ({MESSAGE_COLS})
            SELECT id || :s, turn_id || :s, role, content, sequence, created_at
            FROM messages WHERE turn_id IN (SELECT id FROM pick)""",
        p,
    )
    conn.execute(
        """INSERT INTO tool_calls (id, turn_id, tool_name, parameters, result, error, status,
                                   started_at, completed_at, sequence)
           SELECT id || :s, turn_id || :s, tool_name, parameters, result, error, status,
                  started_at, completed_at, sequence
           FROM tool_calls WHERE turn_id IN (SELECT id FROM pick)""",
        p,
    )
    suffixed = "(SELECT json_group_array(value || :s) FROM json_each({}))"
    conn.execute(
        f"""INSERT INTO compactions (turn_id, summary, summarized_turn_ids, kept_turn_ids, model,
                                     tokens_before, tokens_after, duration_ms, trigger_reason,
                                     created_at)
            SELECT turn_id || :s, summary, {suffixed.format("summarized_turn_ids")},
                   {suffixed.format("kept_turn_ids")}, model, tokens_before, tokens_after,
                   duration_ms, trigger_reason, created_at
            FROM compactions WHERE turn_id IN (SELECT id FROM pick)""",
        p,
    )
    dangling = conn.execute(
        """SELECT count(*) FROM turns WHERE session_id = :sid || :s
           AND parent_turn_id IS NOT NULL AND parent_turn_id NOT IN (SELECT id FROM turns)""",
        p,
    ).fetchone()[0]
    assert dangling == 0, f"{dangling} copied turns have no parent"


def multiply_sessions(conn: sqlite3.Connection) -> None:
    """Copies of every session (new ids: suffix -k), each copy k one history span further back in
    time, with copies of all their turns and of their heads' messages (what a list row reads);
    then ANALYZE."""
    n, first, last = conn.execute(
        "SELECT count(*), min(created_at), max(updated_at) FROM sessions"
    ).fetchone()
    span = last - first + 86_400_000
    conn.execute(f"CREATE TEMP TABLE s0 AS SELECT {SESSION_COLS} FROM sessions")
    conn.execute(f"CREATE TEMP TABLE t0 AS SELECT {TURN_COLS} FROM turns")
    conn.execute(
        f"""CREATE TEMP TABLE m0 AS SELECT {MESSAGE_COLS} FROM messages
            WHERE turn_id IN (SELECT current_turn_id FROM sessions)"""
    )
    for k in range(1, math.ceil(LIST_SESSIONS / n)):
        p = {"s": f"-{k}", "shift": k * span}
        conn.execute(
            f"""INSERT INTO sessions ({SESSION_COLS})
                SELECT id || :s, persona, routing_key || :s, label, root_turn_id || :s,
                       current_turn_id || :s, created_at - :shift, updated_at - :shift, status,
                       source_event_id
                FROM s0""",
            p,
        )
        conn.execute(
            f"""INSERT INTO turns ({TURN_COLS})
                SELECT id || :s, session_id || :s, parent_turn_id || :s, status,
                       started_at - :shift, completed_at - :shift, prompt_tokens,
                       completion_tokens, total_tokens, model, source_event_id
                FROM t0""",
            p,
        )
        conn.execute(
            f"""INSERT INTO messages ({MESSAGE_COLS})
                SELECT id || :s, turn_id || :s, role, content, sequence, created_at - :shift
                FROM m0""",
            p,
        )
    conn.commit()
    conn.execute("ANALYZE")


def prepare() -> list[str]:
    """Build the ledgers that are missing; return their names."""
    BENCH.mkdir(parents=True, exist_ok=True)
    manage("migrate", "--verbosity", "0")
    built = [p.name for p in (BASE, DERIVED, LIST) if not p.exists()]
    if not BASE.exists():
        manage("ledger_demo", str(BASE.relative_to(ROOT)), *DEMO_ARGS)
    if not DERIVED.exists():
        long_id = long_session_id(BASE)

        def add_prefix_sessions(conn):
            for n in PREFIXES:
                add_prefix_session(conn, long_id, n)

        build_copy(BASE, DERIVED, add_prefix_sessions)
    if not LIST.exists():
        build_copy(BASE, LIST, multiply_sessions)
    return built


def query(path: Path, sql: str, params=()):
    with closing(sqlite3.connect(f"file:{path}?mode=ro", uri=True)) as conn:
        return conn.execute(sql, params).fetchall()


def scalar(path: Path, sql: str, params=()):
    return query(path, sql, params)[0][0]


def long_session_id(path: Path) -> str:
    """The demo's long session (other sessions may happen to share its routing key)."""
    return scalar(
        path,
        """SELECT id FROM sessions s WHERE routing_key = ?
           ORDER BY (SELECT count(*) FROM turns WHERE session_id = s.id) DESC LIMIT 1""",
        (LONG_KEY,),
    )


# -- Cases ---------------------------------------------------------------------------------------


def case(page, ledger, size, url, target=None, headers=None) -> dict:
    return {"page": page, "ledger": ledger.name, "size": size, "url": url, "target": target,
            "headers": headers or {}}  # fmt: skip


def cases() -> list[tuple[Path, list[dict]]]:
    long_id = long_session_id(DERIVED)

    def turns_of(session_id):
        return scalar(DERIVED, "SELECT count(*) FROM turns WHERE session_id = ?", (session_id,))

    detail = [
        case("session page", DERIVED, f"{turns_of(sid):,} turns", f"/sessions/{sid}/",
             TARGETS["session-5000"] if sid == long_id else None)
        for sid in (*(f"{long_id}-first{n}" for n in PREFIXES), long_id)
    ]  # fmt: skip
    big_turn = scalar(
        DERIVED,
        """SELECT c.turn_id FROM tool_calls c JOIN turns t ON t.id = c.turn_id
           WHERE t.session_id = ? GROUP BY c.turn_id HAVING count(*) = 600""",
        (long_id,),
    )
    turn_url = f"/sessions/{long_id}/turns/{big_turn}/"
    turn = [
        # The turn's own URL as a full page is the session page (5,000-turn tree) with this
        # turn selected: it answers to the session page's target; the panel is the partial.
        case("session page at the 600-call turn (full page)", DERIVED, "600 tool calls",
             turn_url, TARGETS["session-5000"]),
        case("turn panel, htmx partial", DERIVED, "600 tool calls", turn_url, TARGETS["turn"],
             {"HX-Request": "true"}),
    ]  # fmt: skip
    head = scalar(DERIVED, "SELECT current_turn_id FROM sessions WHERE id = ?", (long_id,))
    depth = scalar(
        DERIVED,
        """WITH RECURSIVE up(id) AS (SELECT ? UNION
           SELECT parent_turn_id FROM turns JOIN up USING (id) WHERE parent_turn_id IS NOT NULL)
           SELECT count(*) FROM up""",
        (head,),
    )
    thread = case("thread page (head)", DERIVED, f"{depth:,} turns in thread",
                  f"/sessions/{long_id}/turns/{head}/thread/")  # fmt: skip
    rows = f"{scalar(LIST, 'SELECT count(*) FROM sessions'):,} sessions"
    listing = [
        case(f"session list{label}", LIST, rows, f"/sessions/{qs}", TARGETS["list"])
        for label, qs in (("", ""), (", persona=echo", "?persona=echo"),
                          (f", search q={SEARCH}", f"?q={SEARCH}"))
    ]  # fmt: skip
    return [(DERIVED, [*detail, *turn, thread]), (LIST, listing)]


# -- Measuring (in a child process per ledger) ---------------------------------------------------


def superuser_client():
    """Django's test client, signed in as the bench's superuser (created when missing)."""
    from django.contrib.auth import get_user_model
    from django.test import Client

    user, _ = get_user_model().objects.get_or_create(
        username="bench", defaults={"is_superuser": True, "is_staff": True}
    )
    client = Client()
    client.force_login(user)
    return client


def measure(ledger: Path, todo: list[dict], runs: int, warmup: int) -> list[dict]:
    os.environ.update(ENV, LEDGER_DB=str(ledger))
    sys.path.insert(0, str(ROOT))
    import django

    django.setup()
    from django.db import connections
    from django.test.utils import CaptureQueriesContext

    client = superuser_client()
    results = []
    for c in todo:

        def get(c=c):
            response = client.get(c["url"], headers=c["headers"])
            assert response.status_code == 200, (c["url"], response.status_code)
            return response

        for _ in range(warmup):
            get()
        with CaptureQueriesContext(connections["ledger"]) as queries:
            html = get().content
        n_queries = len(queries)  # now: the next request clears the connection's query log
        times = []
        for _ in range(runs):
            start = time.perf_counter()
            get()
            times.append((time.perf_counter() - start) * 1000)
        times.sort()
        p95 = times[math.ceil(0.95 * len(times)) - 1]  # nearest rank
        results.append(c | {"median": statistics.median(times), "p95": p95,
                            "queries": n_queries, "kb": len(html) / 1024})  # fmt: skip
    return results


def run_child(ledger: Path, todo: list[dict], runs: int, warmup: int) -> list[dict]:
    args = ["--measure", str(ledger), "--runs", str(runs), "--warmup", str(warmup)]
    out = subprocess.run(
        [sys.executable, "-m", "bench.sessions_bench", *args],
        cwd=ROOT, input=json.dumps(todo), capture_output=True, text=True, check=False,
    )  # fmt: skip
    if out.returncode:
        sys.exit(f"measuring {ledger.name} failed:\n{out.stderr}")
    return json.loads(out.stdout)


# -- Report --------------------------------------------------------------------------------------


def table(results: list[dict]) -> str:
    lines = [
        "| page | ledger | turns/rows | median ms | p95 ms | ledger queries | HTML KB | target |",
        "|---|---|---|--:|--:|--:|--:|---|",
    ]
    for r in results:
        target = "—"
        if r["target"]:
            verdict = "met" if r["p95"] < r["target"] else "MISSED"
            target = f"< {r['target']} ms: **{verdict}**"
        lines.append(
            f"| {r['page']} (`{r['url']}`) | {r['ledger']} | {r['size']} | {r['median']:.1f} "
            f"| {r['p95']:.1f} | {r['queries']} | {r['kb']:.0f} | {target} |"
        )
    return "\n".join(lines)


def machine() -> str:
    cpu = next(
        (line.split(":", 1)[1].strip() for line in Path("/proc/cpuinfo").read_text().splitlines()
         if line.startswith("model name")), platform.processor() or "unknown",
    )  # fmt: skip
    kb = int(Path("/proc/meminfo").read_text().split()[1])
    import django

    return (
        f"{cpu}, {os.cpu_count()} cores, {kb / 1024**2:.1f} GiB RAM; Python "
        f"{platform.python_version()}, Django {django.get_version()}, SQLite "
        f"{sqlite3.sqlite_version}"
    )


def code_version() -> str:
    """The commit measured, and the files changed on top of it (bench/ and docs/ aside)."""
    git = ["git", "-C", str(ROOT)]
    head = subprocess.run([*git, "rev-parse", "--short", "HEAD"], capture_output=True, text=True)
    status = subprocess.run([*git, "status", "--short"], capture_output=True, text=True)
    changed = [
        line[3:]
        for line in status.stdout.splitlines()
        if not line[3:].startswith(("bench/", "docs/"))
    ]
    extra = f" plus uncommitted changes to {', '.join(changed)}" if changed else ""
    return f"commit {head.stdout.strip()}{extra}"


def load() -> str:
    return " / ".join(f"{x:.2f}" for x in os.getloadavg())


def run_header(heading: str, command: str, before: dict) -> str:
    """The lines every benchmark section starts with: command, date, machine, code, load."""
    code = before["code"]
    if code_version() != code:
        code += f" (**changed during the run**, now: {code_version()})"
    now = datetime.now(UTC).strftime("%Y-%m-%d %H:%M UTC")
    return f"""{heading}

```sh
{command}
```

- Date: {now}
- Machine: {machine()}
- Code: {code}
- Load average (1/5/15 min): {before["load"]} before, {load()} after
"""


def doc(results: list[dict], runs: int, warmup: int, seconds: float, before: dict,
        built: list[str]) -> str:  # fmt: skip
    header = run_header(HEADING, COMMAND, before)
    ledgers = f"building {', '.join(built)}" if built else "ledgers reused"
    return f"""{header}- Runs: {warmup} warm-up requests, then {runs} timed requests per page
  (median and nearest-rank p95); whole run {seconds:.0f} s, {ledgers}.

What is timed is the **server time**: `django.test.Client.get()` in-process (every middleware,
the view, the template, the session and auth lookups in Django's own database), with `DEBUG=0`,
a superuser logged in with `force_login`. No network, no browser. "ledger queries" counts the
statements on the `ledger` alias for one request (`CaptureQueriesContext`, in a separate
untimed request). A target counts as met when the p95 is below it.

{table(results)}

## Ledgers

Built by the script into `var/bench/` on its first run (about a minute) and reused afterwards:

- `sessions.sqlite3`: `manage.py ledger_demo var/bench/sessions.sqlite3 {" ".join(DEMO_ARGS)}`.
  Its long session (`{LONG_KEY}`) has ~5,000 turns in branches, the head ~4,650 turns deep, a
  turn with exactly 600 tool calls. No other session has more than ~50 turns.
- `{DERIVED.name}`: a copy of it with two more sessions holding copies (new ids) of the long
  session's first 100 and first 1,000 turns by start time (branches included), with their
  messages, tool calls and compactions. The session, turn panel and thread pages are measured
  on it.
- `{LIST.name}`: a copy of it whose sessions are copied until there are at least
  {LIST_SESSIONS:,} (new ids by suffix; copy k moved k history spans back in time, so the
  first pages still show the original, newest sessions), with copies of all their turns and of
  their heads' messages, then `ANALYZE`. The list pages are measured on it; the search
  (`q={SEARCH}`, a label word) matches a few percent of the sessions.
"""


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--runs", type=int, default=20)
    parser.add_argument("--warmup", type=int, default=3)
    parser.add_argument("--write-doc", action="store_true", help=f"write {DOC.relative_to(ROOT)}")
    parser.add_argument("--measure", type=Path, help=argparse.SUPPRESS)  # the child process
    args = parser.parse_args()
    if args.measure:
        todo = json.loads(sys.stdin.read())
        print(json.dumps(measure(args.measure, todo, args.runs, args.warmup)))
        return
    start, before = time.monotonic(), {"load": load(), "code": code_version()}
    built = prepare()
    results = []
    for ledger, todo in cases():
        results += run_child(ledger, todo, args.runs, args.warmup)
    print(table(results))
    if args.write_doc:
        seconds = time.monotonic() - start
        replace_section(HEADING, doc(results, args.runs, args.warmup, seconds, before, built))
        print(f"wrote {DOC.relative_to(ROOT)}")


if __name__ == "__main__":
    main()
