"""ledgerweb's own database, SQLite against PostgreSQL (issue 19): the same ledger, the same
commands, each on a fresh Django database.

    .venv/bin/python -m bench.state_db_bench --write-doc [--scale N]

Builds a demo ledger (`ledger_demo --scale N`, in var/bench/), then for each engine: `migrate`,
`ledger_rollup --days 30` (every chart hour built and verified), `ledger_index` (the search index
from nothing), and a few searches (the /search/ page's engine queries, best of 5). PostgreSQL
is a throwaway server from the machine's binaries (tests/postgres_server.py), on a Unix socket.
"""

import argparse
import os
import subprocess
import sys
import time
from pathlib import Path

from tools.docfile import publish

ROOT = Path(__file__).resolve().parent.parent
BENCH = ROOT / "var" / "bench"
HEADING = "# Benchmarks: ledgerweb's own database on SQLite and PostgreSQL"
READING = """\
Reading: both engines find the same hits for every query: the same count of documents holding
its words, and the same first page once phrases are checked on the ledger's text (the same
digest; one tokenisation, cut in Python on PostgreSQL; the demo's rows hold `"tool call"`'s
words, never side by side). Chart hours build in comparable time (the figures move with the shared
machine's load; the reads of the ledger dominate). PostgreSQL's search index is the weak spot:
several times the size of FTS5's, which keeps only a contentless index without positions, where
PostgreSQL stores each document's distinct words in its tsvector and the GIN index over them;
and slower to build from nothing (the words are cut in Python, and GIN inserts are dearer than
FTS5's). Queries stay in milliseconds, past SQLite's fraction of one because PostgreSQL sorts
the matches by time where FTS5 walks them in that order. With the earlier layout (positions, an
item per field, text ids in search_row) the same ledger's index took 35.4 MB on SQLite and
83.9 MB on PostgreSQL.
"""
QUERIES = ("error", '"action needed from"', '"tool call"', "migrat*", "session_fork")
SEARCH = """
import hashlib, time, django; django.setup()
from search import engine, query, results
everything = engine.Filters([])
for text in {queries!r}:
    parsed = query.parse(text)
    match = parsed.match
    times = []
    for _ in range(5):
        started = time.perf_counter()
        engine.search(match, everything, None, 50)
        times.append(time.perf_counter() - started)
    hits = engine.count(match, everything, 10_000)
    # The first page as a user sees it (phrases checked on the ledger's text), as a digest.
    groups = results.run(parsed, everything, None).groups
    page = [(h.kind, h.item_id) for g in groups for h in g.hits]
    digest = hashlib.sha1(repr(page).encode()).hexdigest()[:8]
    print(f"{{text}}\t{{min(times) * 1000:.1f}}\t{{hits}}\t{{len(page)}}\t{{digest}}")
print(f"size\t{{engine.size_bytes() / 1e6:.1f}}")
"""


def timed(env: dict, *args: str) -> float:
    started = time.perf_counter()
    subprocess.run([sys.executable, "manage.py", *args], cwd=ROOT, env=env, check=True,
                   capture_output=True)  # fmt: skip
    return time.perf_counter() - started


def script_figures(env: dict, script: str) -> dict:
    """Run a Python script in that environment; its tab-separated lines as name → values."""
    out = subprocess.run([sys.executable, "-c", script], cwd=ROOT, env=env, check=True,
                         capture_output=True, text=True).stdout  # fmt: skip
    return {name: values for name, *values in (line.split("\t") for line in out.splitlines())}


def measure(env: dict) -> dict:
    figures = {"migrate": timed(env, "migrate", "--noinput", "-v0")}
    figures["rollup"] = timed(env, "ledger_rollup", "--days", "30")
    figures["index"] = timed(env, "ledger_index", "-v0")
    return figures | script_figures(env, SEARCH.format(queries=QUERIES))


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--scale", type=int, default=20)
    parser.add_argument("--write-doc", action="store_true")
    args = parser.parse_args()
    sys.path.insert(0, str(ROOT / "tests"))
    from postgres_server import PostgresServer

    BENCH.mkdir(parents=True, exist_ok=True)
    ledger = BENCH / f"state-db-{args.scale}.sqlite3"
    base = os.environ | {
        "DJANGO_SETTINGS_MODULE": "ledgerweb.settings", "SECRET_KEY": "bench-" + "x" * 40,
        "DEBUG": "1", "LEDGER_DB": str(ledger),
    }  # fmt: skip
    if not ledger.exists():
        timed(base, "ledger_demo", str(ledger), "--scale", str(args.scale))
    sqlite_db = BENCH / "state-db-django.sqlite3"
    for path in (sqlite_db, Path(f"{sqlite_db}-wal"), Path(f"{sqlite_db}-shm")):
        path.unlink(missing_ok=True)
    results = {"SQLite": measure(base | {"DJANGO_DB": str(sqlite_db)})}
    with PostgresServer() as server:
        url = server.create_database("bench")
        results["PostgreSQL 15"] = measure(base | {"DJANGO_DB": url})
    publish(HEADING, report(results, args.scale, ledger), args.write_doc)


def report(results: dict, scale: int, ledger: Path) -> str:
    lines = [
        HEADING, "",
        f"`.venv/bin/python -m bench.state_db_bench --write-doc --scale {scale}` "
        f"(demo ledger, {ledger.stat().st_size / 1e6:.0f} MB; {os.cpu_count()} cores, shared "
        "with other work: compare the columns, not runs). Seconds for each command, "
        "milliseconds for each search (best of 5; hits counted up to 10,000; page 1: the "
        "first page's hits once phrases are checked, and a digest of their ids).", "",
        "| | " + " | ".join(results) + " |",
        "|---|" + "---:|" * len(results),
    ]  # fmt: skip
    for step in ("migrate", "rollup", "index"):
        cells = [f"{r[step]:.1f}" for r in results.values()]
        lines.append(f"| `{step}` (s) | " + " | ".join(cells) + " |")
    for text in QUERIES:
        cells = [f"{r[text][0]} ms ({r[text][1]} hits; page 1: {r[text][2]}, {r[text][3]})"
                 for r in results.values()]  # fmt: skip
        lines.append(f"| search `{text}` | " + " | ".join(cells) + " |")
    lines.append("| index size (MB) | " + " | ".join(r["size"][0] for r in results.values()) + " |")
    return "\n".join(lines) + "\n\n" + READING


if __name__ == "__main__":
    main()
