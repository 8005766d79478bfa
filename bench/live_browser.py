"""What following a session being written costs the reader's browser (issue 29).

    .venv/bin/python -m bench.live_browser [--seconds 20]

On bench.live_bench's copy of the large ledger (run it once first: its writer's session has
thousands of turns), served as `make serve` serves it: Chromium follows that session's page
while a writer commits every 50 ms, and Chromium's own counters say how much of its main thread
the page took (long tasks: 50 ms or more without a break, which a reader feels as a stutter)
and where (a CPU profile of the page's scripts, by function).
"""

import argparse
import json
import sqlite3
import threading
import time
from collections import Counter
from contextlib import closing

from playwright.sync_api import sync_playwright

from bench.live_bench import BENCH, COPY, DJANGO_DB, write
from tools.soak import PASSWORD, USER, collect_static, environment, start_server

LONG_TASKS = """() => {
    window.longTasks = [];
    new PerformanceObserver(list => list.getEntries().forEach(
        entry => window.longTasks.push(entry.duration))).observe({entryTypes: ['longtask']});
}"""


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--seconds", type=float, default=20)
    args = parser.parse_args()
    with closing(sqlite3.connect(f"file:{COPY}?mode=ro", uri=True)) as conn:
        (session,) = conn.execute(
            "SELECT id FROM sessions WHERE routing_key = 'cursor:ledgerweb:live-demo'"
            " ORDER BY rowid DESC LIMIT 1"
        ).fetchone()
        (turns,) = conn.execute(
            "SELECT count(*) FROM turns WHERE session_id = ?", (session,)
        ).fetchone()
    collect_static()
    server = start_server(environment(COPY, DJANGO_DB, "ledgerweb.settings"), 2,
                          BENCH / "live-browser.log")  # fmt: skip
    try:
        with sync_playwright() as playwright:
            browser = playwright.chromium.launch(executable_path="/usr/bin/chromium")
            page = browser.new_page(viewport={"width": 1280, "height": 900})
            page.goto(server.url + "/accounts/login/")
            page.fill("input[name=username]", USER)
            page.fill("input[name=password]", PASSWORD)
            page.click("button[type=submit]")
            page.goto(f"{server.url}/sessions/{session}/")
            page.evaluate(LONG_TASKS)
            cdp = page.context.new_cdp_session(page)
            cdp.send("Profiler.enable")
            cdp.send("Profiler.start")
            writer = threading.Thread(target=write, args=(
                COPY, time.time() + args.seconds, BENCH / "live-browser-writer.json"))  # fmt: skip
            writer.start()
            page.wait_for_timeout(args.seconds * 1000)
            writer.join()
            profile = cdp.send("Profiler.stop")["profile"]
            long_tasks = page.evaluate("window.longTasks")
            rows = page.locator(".tree-row").count()
            browser.close()
    finally:
        server.stop()
    print(json.dumps({
        "session_turns": turns, "rows_drawn": rows, "seconds": args.seconds,
        "long_tasks": len(long_tasks), "long_task_ms": round(sum(long_tasks)),
        "longest_ms": round(max(long_tasks, default=0)),
    }))  # fmt: skip
    print("main thread by function (ms):")
    for name, ms in busiest(profile)[:12]:
        print(f"  {ms:8.0f}  {name}")


def busiest(profile: dict) -> list[tuple[str, float]]:
    """Time sampled in each function itself (a CPU profile's samples and their time deltas)."""
    nodes = {node["id"]: node["callFrame"] for node in profile["nodes"]}
    spent: Counter = Counter()
    for sample, delta in zip(profile["samples"], profile["timeDeltas"], strict=False):
        frame = nodes[sample]
        where = frame["url"].rsplit("/", 1)[-1]
        spent[f"{frame['functionName'] or '(anonymous)'} {where}".strip()] += delta / 1000
    return [(name, ms) for name, ms in spent.most_common() if name not in ("(idle)",)]


if __name__ == "__main__":
    main()
