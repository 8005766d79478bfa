"""A pasted Codex call_id (issue 26, item 4): what looking it up costs on a ledger of a million
tool calls that keep one, and what keeping them costs on disk.

    .venv/bin/python -m bench.codex_ids_bench [--runs 20] [--write-doc]

Builds var/bench/codex-ids.sqlite3 afresh (a minute or two): 1,000 Codex sessions of 100
turns with 10 tool calls each (1,000,000 calls), each call's call_id in tool_call_source_ids as
ledger_import keeps it: `call_` and 24 random letters, as the OpenAI API writes them, except
each session's first ten calls, numbered call-1 … call-10 as the real sample numbers its calls
(so `call-1` names 1,000 calls). Times the id jump's lookup (search/ids.py `find`, which the
search page runs first) for an id one call carries, an id 1,000 calls carry (the page lists the
newest 20) and an id none does, in this process, medians of --runs runs; and the page itself
for the one call (a redirect to it, as a person pasting it gets). --write-doc puts the figures
in docs/benchmarks.md.
"""

import argparse
import os
import random
import sqlite3
import statistics
import string
import subprocess
import sys
import time
from pathlib import Path

from bench.inprocess import bench_env, signed_in_client

ROOT = Path(__file__).resolve().parent.parent
LEDGER = ROOT / "var" / "bench" / "codex-ids.sqlite3"
DJANGO_DB = ROOT / "var" / "bench" / "codex-ids-django.sqlite3"
ENV = bench_env(LEDGER, DJANGO_DB)
SESSIONS, TURNS, CALLS = 1_000, 100, 10
NUMBERED = 10  # each session's first calls, named call-1 … call-10
T0 = 1_764_000_000_000
HEADING = "# Benchmarks: a pasted Codex call_id"
COMMAND = ".venv/bin/python -m bench.codex_ids_bench --write-doc"


def random_call_id(rng: random.Random) -> str:
    return "call_" + "".join(rng.choices(string.ascii_letters + string.digits, k=24))


def build_ledger() -> str:
    """The bench ledger; a call_id only one call carries (the bench pastes it)."""
    from ledgerfacts import schema

    LEDGER.parent.mkdir(parents=True, exist_ok=True)
    schema.create_ledger(LEDGER)
    rng = random.Random(26)
    db = sqlite3.connect(LEDGER, isolation_level=None)
    unique = None
    for s in range(SESSIONS):
        session, at = f"S{s:04d}", T0 + s * TURNS * CALLS * 1000
        turns, calls, source_ids = [], [], []
        for t in range(TURNS):
            turn = f"{session}-T{t:03d}"
            turns.append((turn, session, at + t * CALLS * 1000))
            for c in range(CALLS):
                n = t * CALLS + c
                call = f"{turn}-C{c}"
                calls.append((call, turn, at + n * 1000, c))
                call_id = f"call-{n + 1}" if n < NUMBERED else random_call_id(rng)
                source_ids.append((call, call_id))
                unique = unique or (call_id if n >= NUMBERED else None)
        db.execute("BEGIN")
        db.execute(
            "INSERT INTO sessions (id, persona, routing_key, status, created_at, updated_at)"
            " VALUES (?, 'codex', ?, 'active', ?, ?)",
            (session, f"shop:/home/ada/{session}", at, at),
        )
        db.executemany(
            "INSERT INTO turns (id, session_id, status, started_at) VALUES (?, ?, 'completed', ?)",
            turns,
        )
        db.executemany(
            "INSERT INTO tool_calls (id, turn_id, tool_name, parameters, status, started_at,"
            " sequence) VALUES (?, ?, 'shell', '{\"command\": [\"ls\"]}', 'completed', ?, ?)",
            calls,
        )
        db.executemany(
            "INSERT INTO tool_call_source_ids (tool_call_id, source_id) VALUES (?, ?)", source_ids
        )
        db.execute("COMMIT")
    db.close()
    return unique


def table_bytes(names: tuple[str, ...]) -> int:
    """The pages of these tables and indexes (SQLite's dbstat)."""
    db = sqlite3.connect(f"file:{LEDGER}?mode=ro", uri=True)
    try:
        marks = ", ".join("?" * len(names))
        (size,) = db.execute(
            f"SELECT sum(pgsize) FROM dbstat WHERE name IN ({marks})", names
        ).fetchone()
    finally:
        db.close()
    return size


def timed(what, runs: int) -> float:
    what()  # warm-up
    times = []
    for _ in range(runs):
        start = time.perf_counter()
        what()
        times.append(time.perf_counter() - start)
    return statistics.median(times) * 1000


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--runs", type=int, default=20)
    parser.add_argument("--write-doc", action="store_true")
    args = parser.parse_args()
    sys.path.insert(0, str(ROOT))
    started = time.perf_counter()
    if LEDGER.exists():
        LEDGER.unlink()
    unique = build_ledger()
    built_s = time.perf_counter() - started
    client = signed_in_client(ENV)
    from search import ids
    from tools.docfile import publish

    def page():
        response = client.get("/search/", {"q": unique})
        assert response.status_code == 302 and "#call-" in response["Location"], response

    assert len(ids.find(unique)) == 1 and len(ids.find("call-1")) == ids.PER_KIND
    rows = [
        ("an id one call carries (`call_…`)", timed(lambda: ids.find(unique), args.runs)),
        ("an id 1,000 calls carry (`call-1`: the newest 20)",
         timed(lambda: ids.find("call-1"), args.runs)),
        ("an id no call carries", timed(lambda: ids.find("call_nothing"), args.runs)),
        ("the search page for the one call (its redirect)", timed(page, args.runs)),
    ]  # fmt: skip
    kept = table_bytes(("tool_call_source_ids", "idx_tool_call_source_ids_source"))
    calls = table_bytes(("tool_calls",))
    commit = subprocess.run(["git", "rev-parse", "--short", "HEAD"], capture_output=True,
                            text=True, cwd=ROOT).stdout.strip()  # fmt: skip
    load = " / ".join(f"{x:.1f}" for x in os.getloadavg())
    text = "\n".join([
        HEADING, "",
        "```sh", COMMAND, "```", "",
        f"At {commit}, load average {load} (1/5/15 min) on 2 cores shared with other work; "
        f"{SESSIONS * TURNS * CALLS:,} tool calls in {SESSIONS:,} sessions, each keeping its "
        f"call_id (built in {built_s:.0f} s); medians of {args.runs} runs, in-process. The "
        "lookup (search/ids.py `find`) is the id jump's whole ledger work: every kind of id, "
        "a call_id among them (the pasted text, in capitals and in small letters, by the source "
        "id's index, joined to its call and turn by their keys).", "",
        "| pasted | time |", "|---|---|",
        *[f"| {what} | {ms:.2f} ms |" for what, ms in rows], "",
        f"Kept on disk: tool_call_source_ids and its index take {kept / 1e6:,.1f} MB for "
        f"{SESSIONS * TURNS * CALLS:,} call_ids ({kept / (SESSIONS * TURNS * CALLS):.0f} bytes "
        f"a call), beside {calls / 1e6:,.1f} MB for these calls' own rows (short parameters, "
        "no results: a real ledger's calls are far larger).",
    ])  # fmt: skip
    publish(HEADING, text, args.write_doc)


if __name__ == "__main__":
    main()
