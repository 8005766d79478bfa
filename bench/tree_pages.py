"""The turn tree's pages with their map (issue 28) on the two big sessions: the 5,000-turn
session of the scale ledger (`make bench` builds it; var/bench/scale.sqlite3) and the
50,000-turn session WIDE of the huge ledger (tests/hostile.py, built into var/bench/huge.sqlite3
in a few seconds), in-process as a gunicorn worker serves them (one persistent ledger connection,
so a tree kept while the ledger is unchanged is reused), signed in as a superuser.

    .venv/bin/python -m bench.tree_pages [--code PATH] [--write-doc]

Per page: the first request (nothing kept for that session yet: read and lay out the tree, fold
it, draw its map) and the median of the next five, in milliseconds, and the answer's size.
`--code PATH` measures another checkout's code on the same ledgers (the "before" of a change:
pages it does not have answer 404 and are left out). Only reads the ledgers.
"""

import argparse
import os
import sqlite3
import statistics
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
BENCH = ROOT / "var" / "bench"
SCALE = BENCH / "scale.sqlite3"
HUGE = BENCH / "huge.sqlite3"
HEADING = "# Benchmarks: the turn tree with its map on the big sessions (issue 28)"
TARGET_SESSION_MS = 500  # the session page's target (bench/scale_bench.py)
RUNS = 6


def pages(ledger: Path) -> list[tuple[str, str]]:
    """(name, URL) of the tree's pages on the ledger's biggest session."""
    conn = sqlite3.connect(f"file:{ledger}?mode=ro", uri=True)
    session, turns = conn.execute(
        """SELECT session_id, count(*) FROM turns GROUP BY session_id
           ORDER BY count(*) DESC LIMIT 1"""
    ).fetchone()
    point = conn.execute(
        """SELECT parent_turn_id FROM turns WHERE session_id = ? AND parent_turn_id IS NOT NULL
           GROUP BY parent_turn_id HAVING count(*) > 1 ORDER BY count(*) DESC LIMIT 1""",
        (session,),
    ).fetchone()[0]
    head = conn.execute("SELECT current_turn_id FROM sessions WHERE id = ?", (session,)).fetchone()
    conn.close()
    base = f"/sessions/{session}/"
    return [
        (f"session page, {turns:,} turns (with its map)", base),
        ("the same, unfolded", f"{base}?unfold=all"),
        ("the head's turn page", f"{base}turns/{head[0]}/"),
        ("hoisted at its biggest branch point", f"{base}?hoist={point}"),
        ("that branch point's answers side by side", f"{base}turns/{point}/branches/"),
        ("its JSON twin (with the map)", f"{base}?format=json"),
    ]


def measure(ledger: Path, client) -> list[dict]:
    from builders import use_ledger

    use_ledger(ledger)
    results = []
    for name, url in pages(ledger):
        times = []
        for _ in range(RUNS):
            start = time.perf_counter()
            response = client.get(url)
            times.append((time.perf_counter() - start) * 1000)
        if response.status_code != 200:
            print(f"{url}: {response.status_code} (not measured)")
            continue  # a page this code does not have
        results.append({
            "ledger": ledger.name, "name": name, "url": url, "first": times[0],
            "median": statistics.median(times[1:]), "kb": len(response.content) / 1000,
        })  # fmt: skip
    return results


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--code", type=Path, default=ROOT, help="the checkout whose code runs")
    parser.add_argument("--write-doc", action="store_true")
    parser.add_argument(
        "--before", type=Path, help="a table this printed for other code, to show too"
    )
    args = parser.parse_args()
    BENCH.mkdir(parents=True, exist_ok=True)
    sys.path[:0] = [str(args.code), str(ROOT / "tests")]
    django_db = BENCH / f"tree-django-{args.code.resolve().name}.sqlite3"  # one per checkout
    os.environ.update(
        DJANGO_SETTINGS_MODULE="ledgerweb.settings", SECRET_KEY="bench", DEBUG="1",
        ALLOWED_HOSTS="testserver", DJANGO_DB=str(django_db),
        LEDGER_DB=str(HUGE), LEDGER_QUERY_TIMEOUT_MS="600000", LOG_LEVEL="ERROR", HTTPS="0",
    )  # fmt: skip
    if not HUGE.exists():
        from hostile import build_huge_ledger

        build_huge_ledger(HUGE)
    import django

    django.setup()
    from django.contrib.auth import get_user_model
    from django.core.management import call_command
    from django.test import Client

    call_command("migrate", verbosity=0)
    user, _ = get_user_model().objects.get_or_create(
        username="bench", defaults={"is_superuser": True, "is_staff": True}
    )
    client = Client()
    client.force_login(user)
    results = []
    for ledger in (SCALE, HUGE):
        if ledger.exists():
            results += measure(ledger, client)
        else:
            print(f"{ledger} is missing: `make bench` builds it")
    text = table(results, args.code)
    print(text)
    if args.write_doc:
        from tools.docfile import replace_section

        before = args.before.read_text() if args.before else ""
        replace_section(HEADING, doc(text, before))
        print("wrote docs/benchmarks.md")


def table(results: list[dict], code: Path) -> str:
    lines = [
        f"Code: `{code}`; load average {os.getloadavg()[0]:.1f} on {os.cpu_count()} cores.",
        "",
        "| ledger | page | first ms | median ms | KB | target |",
        "|---|---|--:|--:|--:|---|",
    ]
    for r in results:
        verdict = "met" if r["median"] < TARGET_SESSION_MS else "**missed**"
        lines.append(
            f"| {r['ledger']} | {r['name']} | {r['first']:.0f} | {r['median']:.0f}"
            f" | {r['kb']:.0f} | < {TARGET_SESSION_MS} ms: {verdict} |"
        )
    return "\n".join(lines)


def doc(text: str, before: str = "") -> str:
    if before:
        before = f"Before (the code before issue 28):\n\n{before}\n\nAfter:\n"
    return f"""{HEADING}

Command: `.venv/bin/python -m bench.tree_pages --write-doc` (run by `make bench`). In-process
(Django's test client, as one gunicorn worker: a tree kept while the ledger is unchanged is
reused), signed in as a superuser; the first request of a page reads and lays out the tree,
folds it and draws its map, the median is of the five after it. Pages a checkout does not have
are left out (before issue 28, `?hoist=` was ignored: the whole page again).

{before}
{text}
"""


if __name__ == "__main__":
    main()
