"""export.json streamed (issue 25 item 3, issue 27 item 3): how long a big thread's export takes
and how much memory a worker holds while it streams one.

    .venv/bin/python -m bench.export_bench [--runs 3] [--write-doc]

Builds var/bench/export.sqlite3 once: a 20,000-turn thread (each turn a question, a tool call
with its result and an answer: 60,000 chat messages) and a turn holding a 24 MB tool result and
a 3 MB answer. Django's test client in this process, a superuser, DEBUG off; each export read to
its end as a client would, its bytes counted, not kept. Memory is tracemalloc's peak while
streaming (what Python allocated, not the process's size). --write-doc puts the figures in
docs/benchmarks.md.
"""

import argparse
import json
import os
import sqlite3
import statistics
import subprocess
import time
import tracemalloc
from pathlib import Path

from bench.inprocess import bench_env, signed_in_client

ROOT = Path(__file__).resolve().parent.parent
LEDGER = ROOT / "var" / "bench" / "export.sqlite3"
DJANGO_DB = ROOT / "var" / "bench" / "export-django.sqlite3"
ENV = bench_env(LEDGER, DJANGO_DB)
DEEP_TURNS = 20_000
T0 = 1_764_000_000_000
HEADING = "# Benchmarks: export.json, streamed"
# The same bench run at 2e00b4f (923b9e7~1, the export a JsonResponse), by hand, just before the
# figures above were first written, load average 10.2 (a baseline, not rerun by this script).
BEFORE = (
    "Before (2e00b4f, a JsonResponse with indent=2, load average 10.2): the 20,000-turn thread "
    "31.5 MB in 3.97 s, peak 158.6 MB; the 24 MB result's turn 75.7 MB in 0.63 s, peak "
    "179.1 MB."
)


def build_ledger() -> None:
    from ledgerfacts import schema

    LEDGER.parent.mkdir(parents=True, exist_ok=True)
    schema.create_ledger(LEDGER)
    db = sqlite3.connect(LEDGER, isolation_level=None)
    db.execute("BEGIN")
    turns, messages, calls = [], [], []
    for n in range(DEEP_TURNS):
        turn, start = f"D{n:05d}", T0 + n * 10_000
        turns.append((turn, "DEEP", f"D{n - 1:05d}" if n else None, start, start + 9_000))
        messages.append((f"M{turn}-1", turn, "user", f"question {n}", 1, start))
        messages.append((f"M{turn}-2", turn, "assistant", f"answer {n} " * 20, 2, start + 8_000))
        calls.append((f"C{turn}", turn, json.dumps({"query": f"q{n}"}),
                      json.dumps({"rows": [n] * 50}), start + 1_000, start + 7_000))  # fmt: skip
    turns.append(("B1", "BIG", None, T0, T0 + 60_000))
    messages.append(("MB1", "B1", "user", "dump it", 1, T0))
    messages.append(("MB2", "B1", "assistant", "z" * 3_000_000, 2, T0 + 50_000))
    result = json.dumps({"rows": ["é" * 100] * 120_000}, ensure_ascii=False)
    calls.append(("CB1", "B1", "{}", result, T0 + 1_000, T0 + 40_000))
    for session, root, head in (("DEEP", "D00000", f"D{DEEP_TURNS - 1:05d}"), ("BIG", "B1", "B1")):
        db.execute(
            "INSERT INTO sessions (id, persona, routing_key, label, root_turn_id, current_turn_id,"
            " created_at, updated_at) VALUES (?, 'atlas', ?, ?, ?, ?, ?, ?)",
            (session, f"bench:{session}", session, root, head, T0, T0),
        )
    db.executemany(
        "INSERT INTO turns (id, session_id, parent_turn_id, status, started_at, completed_at,"
        " prompt_tokens, completion_tokens, total_tokens, model)"
        " VALUES (?, ?, ?, 'completed', ?, ?, 1000, 50, 1050, 'claude-sonnet-4-20250514')",
        turns,
    )
    db.executemany(
        "INSERT INTO messages (id, turn_id, role, content, sequence, created_at)"
        " VALUES (?, ?, ?, ?, ?, ?)",
        messages,
    )
    db.executemany(
        "INSERT INTO tool_calls (id, turn_id, tool_name, parameters, result, status, started_at,"
        " completed_at, sequence) VALUES (?, ?, 'search', ?, ?, 'completed', ?, ?, 1)",
        calls,
    )
    db.execute("COMMIT")
    db.close()


def read_out(client, url: str, *, traced: bool = False) -> tuple[float, int, int]:
    """(seconds, bytes, peak bytes allocated, 0 when not traced) of one export read to its end.
    Tracing slows every allocation: the time is taken on runs without it."""
    if traced:
        tracemalloc.start()
    start = time.perf_counter()
    response = client.get(url)
    body = response.streaming_content if response.streaming else [response.content]
    size = sum(len(chunk) for chunk in body)  # (a JsonResponse before 923b9e7: no streaming)
    seconds = time.perf_counter() - start
    peak = 0
    if traced:
        _, peak = tracemalloc.get_traced_memory()
        tracemalloc.stop()
    assert response.status_code == 200, (url, response.status_code)
    return seconds, size, peak


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--runs", type=int, default=3)
    parser.add_argument("--write-doc", action="store_true")
    args = parser.parse_args()
    if not LEDGER.exists():
        build_ledger()
    client = signed_in_client(ENV)
    from tools.docfile import publish

    exports = {
        f"a {DEEP_TURNS:,}-turn thread": f"/sessions/DEEP/turns/D{DEEP_TURNS - 1:05d}/export.json",
        "a turn holding a 24 MB result and a 3 MB answer": "/sessions/BIG/turns/B1/export.json",
    }
    lines = []
    for what, url in exports.items():
        _, size, peak = read_out(client, url, traced=True)  # also the warm-up
        seconds = statistics.median(read_out(client, url)[0] for _ in range(args.runs))
        lines.append(f"| {what} | {size / 1e6:,.1f} MB | {seconds:.2f} s | {peak / 1e6:,.1f} MB |")
    commit = subprocess.run(["git", "rev-parse", "--short", "HEAD"], capture_output=True,
                            text=True, cwd=ROOT).stdout.strip()  # fmt: skip
    load = os.getloadavg()[0]
    text = "\n".join([
        HEADING, "",
        "```sh", ".venv/bin/python -m bench.export_bench --write-doc", "```", "",
        f"At {commit}, load average {load:.1f} on 2 cores shared with other work; medians of "
        f"{args.runs} runs, each export read to its end. Peak: what Python held at once while "
        "streaming (tracemalloc), against the export's size: the answer was a JsonResponse "
        "built whole before (the 24 MB export held as a dict, then as its JSON text, then as "
        "bytes).", "",
        "| export | size | time | peak memory |", "|---|---|---|---|", *lines, "",
        BEFORE,
    ])  # fmt: skip
    publish(HEADING, text, args.write_doc)


if __name__ == "__main__":
    main()
