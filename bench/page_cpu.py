"""CPU time per request of a few pages, in this process: what a gunicorn worker spends on them,
whatever the machine's load makes the wall time (issue 33: a loaded, shared machine).

    .venv/bin/python -m bench.page_cpu [--scale-50] [--runs 40] [--rounds 5] [--htmx] URL...
    .venv/bin/python -m bench.page_cpu --scale-50 --against /tmp/base /sessions/ ...
    .venv/bin/python -m bench.page_cpu --scale-50 --after-commit /sessions/ ...

Django's test client on a bench ledger and its Django database, as bench.profile_page sets them
up (`make bench` once first), signed in as a superuser, DEBUG off, static URLs without the
manifest. Each round asks each page --runs times after one warm-up request and takes
`time.process_time()` around each; a page's figure is the median over all rounds (and the
nearest-rank p95). With --against, a second checkout of ledgerweb (`git worktree add DIR main`;
the same ledger and Django database) is measured in a process of its own, round for round in
turns with this one, so that both see the same load: a before/after on a machine others share.
Each worker imports its checkout's ledgerweb.wsgi first, as gunicorn loads the application (its
worker set-up applies: gc.freeze), and times the garbage collector's full collections. With
--after-commit, each request follows a commit to the ledger (PRAGMA user_version set and
set back, untimed, as bench.scale_bench's rows "after a ledger commit"): what the page costs
when nothing a worker kept for the ledger's version can be used, as beside a busy runtime.
"""

import argparse
import gc
import json
import os
import sqlite3
import statistics
import subprocess
import sys
import time
from contextlib import closing
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent


def touch(ledger: Path) -> None:
    """Commit to the ledger without changing it: every reader's PRAGMA data_version moves."""
    with closing(sqlite3.connect(ledger)) as conn:
        (version,) = conn.execute("PRAGMA user_version").fetchone()
        conn.execute(f"PRAGMA user_version = {version + 1}")
        conn.execute(f"PRAGMA user_version = {version}")


def serve(root: Path, scale_50: bool, htmx: bool, after_commit: bool) -> None:
    """Worker: set up Django from the checkout at `root`, then for each line "URL RUNS" on stdin
    answer one JSON line with that page's CPU milliseconds per request."""
    os.chdir(root)
    sys.path.insert(0, str(root))
    from bench.inprocess import signed_in_client
    from bench.scale_bench import DJANGO_DBS, ENV
    from bench.scale_ledger import LARGE, SCALE_50

    ledger = SCALE_50 if scale_50 else LARGE
    client = signed_in_client(
        ENV | {"DJANGO_DB": str(DJANGO_DBS[ledger]), "LEDGER_DB": str(ledger.path)}
    )
    import ledgerweb.wsgi  # noqa: F401 (a worker's set-up, as gunicorn loads it: gc.freeze…)

    full_collections = _time_full_collections()
    headers = {"HX-Request": "true"} if htmx else {}
    print("ready", flush=True)
    for line in sys.stdin:
        url, runs = line.rsplit(" ", 1)
        response = client.get(url, headers=headers)  # warm-up (and the check)
        cpu = []
        full_collections.clear()
        for _ in range(int(runs)):
            if after_commit:
                touch(ledger.path)
            start = time.process_time()
            client.get(url, headers=headers)
            cpu.append((time.process_time() - start) * 1000)
        answer = {"status": response.status_code, "bytes": len(response.content), "cpu": cpu,
                  "gc": full_collections}  # fmt: skip
        print(json.dumps(answer), flush=True)


def _time_full_collections() -> list[float]:
    """The garbage collector's full collections from now on, each in ms (CPU), in a list."""
    took, started = [], []

    def callback(phase: str, info: dict) -> None:
        if info["generation"] != 2:
            return
        if phase == "start":
            started[:] = [time.process_time()]
        elif started:
            took.append((time.process_time() - started[0]) * 1000)

    gc.callbacks.append(callback)
    return took


def start(root: Path, args) -> subprocess.Popen:
    # This file runs in the other checkout too (it may not have it), on that checkout's code.
    command = [sys.executable, __file__, "--serve", str(root)]
    command += ["--scale-50"] * args.scale_50 + ["--htmx"] * args.htmx
    command += ["--after-commit"] * args.after_commit
    worker = subprocess.Popen(command, cwd=root, stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                              text=True)  # fmt: skip
    while (line := worker.stdout.readline()) and line.strip() != "ready":
        if not line:
            sys.exit(f"the worker in {root} stopped")
    return worker


def p95(values: list[float]) -> float:
    ordered = sorted(values)
    return ordered[max(0, -(-len(ordered) * 95 // 100) - 1)]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("urls", nargs="*")
    parser.add_argument("--scale-50", action="store_true", help="on the scale-50 ledger")
    parser.add_argument("--htmx", action="store_true", help="ask for the htmx partials")
    parser.add_argument("--runs", type=int, default=40, help="requests per page and round")
    parser.add_argument("--rounds", type=int, default=5)
    parser.add_argument("--against", type=Path, help="another checkout, measured in turns")
    parser.add_argument("--after-commit", action="store_true", help="a commit before each request")
    parser.add_argument("--serve", type=Path, help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.serve:
        serve(args.serve, args.scale_50, args.htmx, args.after_commit)
        return
    checkouts = {"this": ROOT} | ({"against": args.against.resolve()} if args.against else {})
    workers = {name: start(root, args) for name, root in checkouts.items()}
    cpu = {(name, url): [] for name in workers for url in args.urls}
    collections = {key: [] for key in cpu}
    seen = {}
    load = [os.getloadavg()[0]]
    for _ in range(args.rounds):
        for url in args.urls:
            for name, worker in workers.items():
                worker.stdin.write(f"{url} {args.runs}\n")
                worker.stdin.flush()
                answer = json.loads(worker.stdout.readline())
                cpu[name, url] += answer["cpu"]
                collections[name, url] += answer["gc"]
                seen[name, url] = (answer["status"], answer["bytes"])
        load.append(os.getloadavg()[0])
    for worker in workers.values():
        worker.stdin.close()
        worker.wait()
    htmx = " (htmx)" if args.htmx else ""
    htmx += ", each after a ledger commit" if args.after_commit else ""
    print(f"load average (1 min) while measuring: {min(load):.2f}-{max(load):.2f};"
          f" {args.rounds} rounds × {args.runs} requests{htmx}")  # fmt: skip
    for url in args.urls:
        for name in workers:
            values = cpu[name, url]
            status, size = seen[name, url]
            full = collections[name, url]
            gcs = f"{len(full)} full GC, max {max(full):.0f} ms" if full else "no full GC"
            print(f"{name:8s} {url}: CPU {statistics.median(values):.1f} ms median,"
                  f" p95 {p95(values):.1f} ms, max {max(values):.1f} ms; {gcs}"
                  f" ({status}, {size:,} bytes)")  # fmt: skip


if __name__ == "__main__":
    main()
